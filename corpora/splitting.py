"""Splitting loaded files into passages of about 100-200 words, each with its provenance and a content id.

Every passage is bounded three ways, each cut keeping all of the text (but the spaces at it):

- about ``PASSAGE_WORDS`` words (``passage_length``: words, CJK characters, and characters over
  ``CHARS_PER_WORD``), cut by the recursive splitter at paragraph, sentence and comma ends;
- at most ``MAX_PASSAGE_CHARS`` characters (``_within_chars``, at spaces);
- at most ``MAX_PASSAGE_TOKENS`` (254) word pieces of the embedder's own tokenizer, the part of a text
  all-MiniLM-L6-v2 reads (``corpora.passage_tokens.within_tokens``: at sentence ends or spaces, else at a
  token's start). Korean, Cyrillic, Arabic, hex or base64-like words and URLs are nearly a word piece a letter,
  so the first two bounds let 1,000 through. A word the vocabulary lacks (Thai, emoji) counts a token per
  character, which keeps the count a proxy for the LLM's tokens too (measured in ``corpora.passage_tokens``);
  without the tokenizer installed the count is estimated from characters.

English prose is within the token bound as the first two bounds cut it, so its passages and their ids are those of
before the token bound: of the 4,127 passages they cut from the demo corpus's 3,626 texts (joined per title and
split as files), 7 were over it (5 the embedder truncated, 2 over only by IPA pronunciations, words its
vocabulary lacks, which count a token per character), and only their 7 texts split differently now
(``tests/test_passage_tokens.py::test_english_prose_splits_exactly_as_before_the_token_bound``). Table passages
are bounded the same way (``corpora.tables``).
"""

from __future__ import annotations

import hashlib
import re

from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from corpora.loaders import LoadedFile
from corpora.passage_tokens import MAX_PASSAGE_TOKENS, within_tokens  # noqa: F401 - the bound, named here too
from corpora.tables import table_passages

# About 100-200 words per passage (issue #2; DPR-style 100-word passages are the field's usual unit, and the
# 1.5B model reads 3-5 short passages better than fewer long ones, docs/design-notes.md).
PASSAGE_WORDS = 160
OVERLAP_WORDS = 20


# Han, kana, hangul and the CJK punctuation and full-width forms: text written without spaces between words.
_CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
# A passage's length is at least its characters over this (English averages about six characters a word), so a
# text without spaces (a base64 blob, a long URL list) is cut too.
CHARS_PER_WORD = 8
# No passage is longer than this, whatever its words: the splitter sums the lengths of the pieces it merges, and
# 160 words of 15 letters each count as 160 words (each under CHARS_PER_WORD twice) but make 2,560 characters.
MAX_PASSAGE_CHARS = PASSAGE_WORDS * CHARS_PER_WORD


def passage_length(text: str) -> int:
    """A text's length in the splitter's units, about words: words between spaces, each CJK character one more
    (a Chinese or Japanese character is about one token), and never less than the characters over
    ``CHARS_PER_WORD``. Counting spaces alone kept 200,000 characters of Chinese as one passage."""
    words = len(text.split()) + len(_CJK.findall(text))
    return max(words, len(text) // CHARS_PER_WORD)


def make_splitter(words: int = PASSAGE_WORDS, overlap: int = OVERLAP_WORDS) -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(
        chunk_size=words,
        chunk_overlap=overlap,
        length_function=passage_length,
        # Sentence ends and commas of Latin and CJK scripts, then spaces, then anywhere.
        separators=["\n\n", "\n", ". ", "。", "！", "？", "; ", "；", ", ", "，", "、", " ", ""],
        keep_separator="end",
    )


def content_id(title: str, text: str) -> str:
    """The id of a passage given as a title and a text (demo and dataset passages): a hash of both, so the
    same passage has the same id wherever it comes from."""
    return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:32]


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _within_chars(text: str, limit: int = MAX_PASSAGE_CHARS) -> list[str]:
    """``text`` (spaces normalised) in pieces of at most ``limit`` characters, cut at the last space of each
    (anywhere when its second half has none)."""
    pieces = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit + 1)
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def split_file(
    loaded: LoadedFile,
    *,
    source: str,
    content_sha256: str,
    splitter: RecursiveCharacterTextSplitter | None = None,
) -> list[Document]:
    """Passages of one file. Ids derive from the file's content hash and the passage position, so the same
    file ingested twice (under any name) yields the same ids and adds nothing. Each passage's metadata holds
    ``file_passages``, the number of passages of the file."""
    splitter = splitter or make_splitter()
    passages: list[Document] = []
    for page in loaded.pages:
        chunks = [piece for text in splitter.split_text(page.text) for part in _within_chars(" ".join(text.split()))
                  for piece in within_tokens(part)]
        for chunk in chunks:
            position = len(passages)
            metadata = {
                "title": loaded.title,
                "source": source,
                "position": position,
                "file_sha256": content_sha256,
            }
            if page.number is not None:
                metadata["page"] = page.number
            passages.append(
                Document(page_content=chunk, metadata=metadata, id=f"{content_sha256[:24]}-{position:05d}")
            )
    passages += table_passages(loaded.title, loaded.tables, source=source, content_sha256=content_sha256,
                               start=len(passages))  # each table a passage of its own (corpora/tables.py)
    for passage in passages:  # the file version is complete when this many of its passages are stored
        passage.metadata["file_passages"] = len(passages)
    return passages
