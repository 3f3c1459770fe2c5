"""How long a passage is in model tokens, and cutting a text into pieces of at most ``MAX_PASSAGE_TOKENS``.

The count is the embedder's: the word pieces of all-MiniLM-L6-v2's own tokenizer (``tokenizer.json`` of the
packaged model folder that ``models.embeddings.bundled_embedder_path`` finds), read offline by the fast
``tokenizers`` library on first use and kept for the process (the forkserver of ``corpora.isolated`` loads it
once, ``corpora.tokenizer_preload``, so that a child reading a file inherits it). Nothing is downloaded.

Words and characters do not bound it: a Korean syllable is two or three word pieces (the tokenizer splits it
into its jamo), and Cyrillic, Arabic, Devanagari, hex and base64-like words and URLs come out nearly letter by
letter, so a passage of 1,280 characters could hold 1,000 word pieces, of which the embedder reads 254.

The count is a proxy for the LLM's tokens too, with one change: a word the vocabulary lacks (all of Thai, emoji,
any word over 100 characters), which the embedder reads as a single ``[UNK]``, counts one token per character
(so the count is never below the embedder's). Counted as one, Thai passages of up to 1,280 characters were at most
72 word pieces but up to 1,195 tokens of the default LLM (Qwen2.5's tokenizer). Measured on the texts of
``tests/test_passage_tokens.py`` (100,000 characters of each; the LLM's tokenizer read from its GGUF file alone,
no model run), the LLM's tokens over this count, passage by passage, average 1.16 for English demo texts (at most
1.44), 1.04 to 1.25 for URLs, hex and base64-like words (at most 1.48), about 1.4 for Chinese, Japanese and Hindi
(at most 1.56), 0.98 for Thai (at most 1.07) and under 1 for Korean, Arabic and Russian: no passage of them was
over 364 LLM tokens.

Without the tokenizer (the model package or ``tokenizers`` not installed) the count is estimated from the
characters, conservatively: every character but spaces one token, or as many as it has in Unicode NFD form (a
Hangul syllable is two or three jamo). A word piece holds at least one such character, and an ``[UNK]`` counts
its characters, so the estimate is never below the count with the tokenizer, and usually far above it: English
passages are then cut to at most 254 characters besides spaces (34 words on average and at most 58 in 300 demo
texts, against 118 and 160 with the tokenizer), and their ids differ from those the tokenizer gives.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
import unicodedata
from itertools import repeat

log = logging.getLogger(__name__)

# all-MiniLM-L6-v2 embeds the first 256 word pieces of a text (its max_seq_length, sentence_bert_config.json),
# [CLS] and [SEP] included, and silently drops the rest: a passage holds at most 254 of its own. No margin below
# that: the count is the embedder's tokenizer on the passage's exact text, the count the embedder makes.
MAX_PASSAGE_TOKENS = 254

# Where a piece may end, best first: after a sentence end (Latin or CJK), after a semicolon or comma, at a space.
# Each is a boundary of the tokenizer's words (it splits at spaces and punctuation), so the piece before it holds
# exactly the word pieces it held within the whole text.
_ENDS = (". ", "。", "！", "？", "! ", "? ", "; ", "；", ", ", "，", " ")
_NON_SPACE = re.compile(r"\S")


@functools.cache
def passage_tokenizer():
    """The embedder's tokenizer (``tokenizers.Tokenizer``, without truncation or padding), or None when it cannot
    be loaded: then ``token_starts`` estimates (see the module's docstring)."""
    try:
        from tokenizers import Tokenizer

        from models.embeddings import bundled_embedder_path

        tokenizer = Tokenizer.from_file(str(bundled_embedder_path() / "tokenizer.json"))
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - not installed (ImportError, ModelError) or an unreadable file
        log.warning("No embedder tokenizer (%s): passage tokens are estimated from characters.", exc)
        return None
    tokenizer.no_truncation()  # tokenizer.json truncates at 128 and pads to 128
    tokenizer.no_padding()
    return tokenizer


def token_starts(text: str) -> list[int]:
    """The character offset in ``text`` at which each of its tokens starts, in order (no special tokens; several
    tokens of one character share its offset). A word the vocabulary lacks, one ``[UNK]`` for the embedder,
    counts a token for each of its characters (see the module's docstring)."""
    tokenizer = passage_tokenizer()
    if tokenizer is None:
        return estimated_starts(text)
    encoding = tokenizer.encode(text, add_special_tokens=False)
    unknown = _unknown_id(tokenizer)
    if unknown not in encoding.ids:
        return [start for start, _ in encoding.offsets]
    starts: list[int] = []
    for token, (start, end) in zip(encoding.ids, encoding.offsets):
        starts.extend(range(start, end) if token == unknown and end > start else (start,))
    return starts


def count_tokens(text: str) -> int:
    """``text``'s length in tokens: the embedder's word pieces (without [CLS] and [SEP]), a word it lacks
    counted by its characters."""
    return len(token_starts(text))


@functools.cache
def _unknown_id(tokenizer) -> int:
    return tokenizer.token_to_id("[UNK]")


@functools.lru_cache(maxsize=65_536)
def _weight(char: str) -> int:
    return 0 if char.isspace() else len(unicodedata.normalize("NFD", char))


def estimated_starts(text: str) -> list[int]:
    """``token_starts`` without the tokenizer: each character but spaces starts as many tokens as it has
    characters in NFD form (an upper bound of the word pieces, see the module's docstring)."""
    if text.isascii():
        return [match.start() for match in _NON_SPACE.finditer(text)]
    starts: list[int] = []
    for i, char in enumerate(text):
        starts.extend(repeat(i, _weight(char)))
    return starts


def within_tokens(text: str, limit: int = MAX_PASSAGE_TOKENS) -> list[str]:
    """``text`` in pieces of at most ``limit`` tokens, in order, nothing lost but the spaces at a cut: ``[text]``
    when it fits. A longer text is cut into as few pieces as the bound allows, of about equal size: each cut at
    the best end (``_ENDS``) in the half of a piece before its target size, else at the start of the target's
    token (inside a word). ``text`` is counted once; a cut inside a word counts the piece before it (to check it)
    and the text after it again. For a text of at most ``MAX_PASSAGE_CHARS`` (a passage) that is a few counts of
    a short text, so splitting a file stays linear in its length."""
    pieces: list[str] = []
    starts = token_starts(text)
    while len(starts) > limit:
        target = -(-len(starts) // -(-len(starts) // limit))  # equal shares of as few pieces as fit
        cut, between_words = _cut(text, starts, target)
        if between_words:  # the tokens on either side are those of the whole text
            pieces.append(text[:cut].rstrip())
            rest = text[cut:]
            text = rest.lstrip()
            moved = cut + len(rest) - len(text)
            starts = [start - moved for start in starts[bisect.bisect_left(starts, cut):]]
            continue
        # A cut inside a word can turn the word piece across it into several: check, and cut earlier.
        while target > 1 and count_tokens(text[:cut]) > limit:
            target -= max(1, target // 8)
            cut, _ = _cut(text, starts, target)
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
        starts = token_starts(text)
    if text:
        pieces.append(text)
    return [piece for piece in pieces if piece]


def _cut(text: str, starts: list[int], target: int) -> tuple[int, bool]:
    """Where to end the piece of ``text`` that holds at most ``target`` tokens (``starts`` of its tokens), and
    whether that is between two of the tokenizer's words: after the best end between the piece's tokens
    ``target // 2`` and ``target``, else where token ``target`` starts."""
    low, high = starts[target // 2], starts[target]
    for end in _ENDS:
        at = text.rfind(end, low, high)
        if at > 0:
            return at + len(end.rstrip()), True
    return max(high, 1), False
