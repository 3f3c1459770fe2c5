"""Whether the passages a run found can answer its question at all, so that a method says "the collections do not
answer this" instead of guessing.

The check costs no model call. Lexically, one passage must mention enough of the question's key terms (its words
without stop words and question words; names and numbers count double; title or text, compared by stem). A
passage about another subject rarely names the question's subject; a 1.5B model given one answers anyway (the
issue's example: asked who played the Weasley brothers, it named characters from a passage about Lord
Voldemort). Terms are counted per passage, not over all of them, because five passages about other things
together name almost anything ("capital" in one, "Chile" in another). A question worded unlike its passages
("WW1" for "the First World War", or a comparison whose two names are in two passages) is still answered when
one passage is close to it in meaning (embedding cosine). Both thresholds are measured choices
(``benchmarks/abstention.py``, docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from models.lexical import stemmer
from pipeline.text import normalize_answer, sentence_spans, strip_citations
from pipeline.untrusted import neutralise

_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*", re.UNICODE)
_PART = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)  # hyphens split: "1985" is in "1896-1985"
# Words that say what kind of answer is wanted, not what the question is about.
_QUESTION_WORDS = frozenset(
    "who whom whose what which when where why how much many did does do is are was were has have had will would "
    "can could should name called known first last also".split())


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | _QUESTION_WORDS


def _stems(words: list[str]) -> list[str]:
    return stemmer().stemWords([w.lower().replace("’", "'").removesuffix("'s") for w in words])


@dataclass(frozen=True)
class Support:
    """How much of the question the passages mention: ``coverage`` in 0..1 (the weighted share of key terms that
    the best passage mentions), the key terms no passage mentions, the best passage's cosine similarity to the
    question (None when not computed: the lexical check sufficed, or no embedder was given), and whether that is
    enough (``supported``)."""

    coverage: float
    missing: list[str] = field(default_factory=list)
    supported: bool = True
    similarity: float | None = None


def key_terms(question: str) -> list[tuple[str, float]]:
    """The question's key terms with their weights: content words once, names and numbers twice."""
    words = _WORD.findall(question)
    out: dict[str, float] = {}
    for position, word in enumerate(words):
        if word.lower() in _stop_words() or len(word) < 2 and not word.isdigit():
            continue
        name = any(ch.isdigit() for ch in word) or (position > 0 and word[0].isupper())
        out[word] = max(out.get(word, 0.0), 2.0 if name else 1.0)
    return list(out.items())


def check_support(question: str, passages: list[Document], threshold: float, embeddings: Embeddings | None = None,
                  min_similarity: float = 1.0) -> Support:
    """Whether ``passages`` support an answer to ``question``: one passage mentions at least ``threshold`` (a
    weighted share) of its key terms, or, with ``embeddings``, one passage's cosine similarity to the question
    reaches ``min_similarity`` (1 or more: never)."""
    return best_support([question], passages, threshold, embeddings, min_similarity)


def best_support(questions: list[str], passages: list[Document], threshold: float,
                 embeddings: Embeddings | None = None, min_similarity: float = 1.0) -> Support:
    """The best support ``passages`` give any of ``questions`` (a question and its restatements, such as ToC's
    kept interpretations): by key terms first; only when no question's terms suffice, by similarity, with the
    passages embedded once."""
    checks = [_by_terms(q, passages, threshold) for q in questions]
    best = max(checks, key=lambda s: (s.supported, s.coverage))
    if best.supported or embeddings is None or min_similarity >= 1.0 or not passages:
        return best
    vectors = _unit(np.asarray(embeddings.embed_documents([_passage_text(p) for p in passages]), dtype=float))
    queries = _unit(np.asarray([embeddings.embed_query(q) for q in questions], dtype=float))
    similarities = (queries @ vectors.T).max(axis=1)
    closest = int(np.argmax(similarities))
    similarity = round(float(similarities[closest]), 4)
    return replace(checks[closest], similarity=similarity, supported=similarity >= min_similarity)


def best_similarity(question: str, passages: list[Document], embeddings: Embeddings) -> float:
    """The highest cosine similarity between ``question`` and a passage (its title and text)."""
    vectors = _unit(np.asarray(embeddings.embed_documents([_passage_text(p) for p in passages]), dtype=float))
    query = _unit(np.asarray([embeddings.embed_query(question)], dtype=float))
    return float((vectors @ query[0]).max())


def _by_terms(question: str, passages: list[Document], threshold: float) -> Support:
    """The lexical check: the weighted share of the key terms that the best single passage mentions."""
    terms = key_terms(question)
    if not terms:
        return Support(1.0)
    if not passages:
        return Support(0.0, [t for t, _ in terms], threshold <= 0)
    stems = _stems([t for t, _ in terms])
    total = sum(w for _, w in terms)
    coverage, anywhere = 0.0, set()
    for passage in passages:
        present = passage_stems(passage)
        found = {stem for stem in stems if stem in present}
        anywhere |= found
        coverage = max(coverage, sum(w for (_, w), stem in zip(terms, stems) if stem in found) / total)
    missing = [t for (t, _), stem in zip(terms, stems) if stem not in anywhere]
    return Support(round(coverage, 4), missing, coverage >= threshold)


def unsourced_names(answer: str, passages: list[Document], question: str = "") -> list[str]:
    """The names and numbers in ``answer`` (capitalised words and words with digits, stop words left out) that
    neither the question nor any of ``passages`` mentions (compared by stem): what the model most likely took
    from its own knowledge rather than the sources ("Leonardo da Vinci" cited to a passage on Mona Hopton Bell)."""
    texts = [question, *(_passage_text(passage) for passage in passages)]
    known = set(_stems([w for text in texts for w in _PART.findall(text)]))
    # A number written with thousands separators ("2,141,000") is one number, found as written or without them.
    numbers = {n.replace(",", "") for text in texts for n in _NUMBER.findall(text)}
    answer = strip_citations(answer)
    out: list[str] = []
    grouped_parts: set[str] = set()
    for number in _GROUPED.findall(answer):
        grouped_parts.update(number.split(","))
        if number.replace(",", "") not in numbers and number not in out:
            out.append(number)
    names = [w for w in _PART.findall(answer) if w not in grouped_parts
             and (w[0].isupper() or any(ch.isdigit() for ch in w)) and w.lower() not in _stop_words() and len(w) > 1]
    for word, stem in zip(names, _stems(names)):
        if stem not in known and word not in numbers and word not in out:
            out.append(word)
    return out


_GROUPED = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d])")
_NUMBER = re.compile(_GROUPED.pattern + r"|\d+")


def answer_passage(answer: str, passages: list[Document]) -> Document | None:
    """The first (most relevant) passage whose normalised text contains the normalised answer; for an answer of
    several parts ("50, 100", "Paris and Lyon") that no passage holds as written, the first that holds each part
    ("The default weight is 50, and the maximum is 100")."""
    needle = normalize_answer(answer)
    if not needle:
        return None
    # The text the model read: an answer that only an injected instruction holds has no evidence.
    texts = [f" {normalize_answer(_read_text(passage))} " for passage in passages]
    for passage, text in zip(passages, texts):
        if needle in text:
            return passage
    parts = [normalize_answer(part) for part in _PARTS.split(answer)]
    parts = [part for part in parts if part]
    if len(parts) > 1:
        for passage, text in zip(passages, texts):
            if all(f" {part} " in text for part in parts):
                return passage
    return None


_PARTS = re.compile(r"\s*(?:[,;/&]|\band\b)\s*", re.IGNORECASE)


def _read_text(passage: Document) -> str:
    return f"{passage.metadata.get('title', '')} {neutralise(passage.page_content).text}"


def coverage(question: str, passage: Document) -> float:
    """The weighted share of ``question``'s key terms that ``passage`` mentions (names and numbers count
    double; 1 for a question without key terms)."""
    return _by_terms(question, [passage], 1.0).coverage


def passage_stems(passage: Document) -> set[str]:
    """The stems of ``passage``'s title and text as the model reads them: what the term checks look for."""
    return set(_stems(_WORD.findall(_passage_text(passage))))


def _passage_text(passage: Document) -> str:
    return f"{passage.metadata.get('title', '')}. {neutralise(passage.page_content).text}"


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def abstention(support: Support, passages: list[Document]) -> str:
    """What a method answers when the passages do not support an answer: that the collections do not answer
    the question, what they lack, and what was found instead (cited)."""
    lacking = ", ".join(f"“{term}”" for term in support.missing[:5])
    found = "; ".join(f"{_title(p)} [{i}]" for i, p in enumerate(passages[:3], 1))
    text = "The selected sources do not answer this question"
    text += f": no passage found mentions {lacking}." if lacking else ": no passage found is about all of it."
    if found:
        text += f" The closest passages are about: {found}."
    return text


def _title(passage: Document) -> str:
    title = neutralise(str(passage.metadata.get("title") or "")).text
    return title or neutralise(passage.page_content).text[:60].strip() or "an untitled, empty passage"


# How the model says that the passages hold no answer (the answer prompts ask it to say so).
_UNANSWERABLE = re.compile(
    r"\b(?:passages?|sources?|context|documents?|text|information)\b[^.]{0,40}?\b(?:do(?:es)?|did)\s+not\s+"
    r"(?:contain|mention|provide|say|state|include|specify|give|answer)\b|\bno (?:information|mention|answer)\b"
    r"|\bnot (?:mentioned|provided|stated|specified|given) in the\b|\bcannot be (?:determined|answered)\b"
    r"|^\W*(?:unknown|not (?:known|available)|n/?a)\W*$", re.IGNORECASE)


def says_unanswerable(answer: str) -> bool:
    """Whether the answer says that the passages do not answer the question."""
    return bool(_UNANSWERABLE.search(answer))


CITE_BY_TERMS = 0.6  # the share of a sentence's key terms its passages must mention to be cited to them
_SECOND_GAIN = 0.15  # a second passage is cited too when it adds this share of the key terms the first lacks


def cite_by_terms(answer: str, passages: list[Document], threshold: float = CITE_BY_TERMS) -> str:
    """``answer``, which cites no passage, with ``[n]`` added before the end of each sentence whose key terms
    (``key_terms``: names and numbers count double, compared by stem) are mostly mentioned by one passage, or by two
    together (the second cited when it adds at least ``_SECOND_GAIN`` of them); a sentence no passage covers to
    ``threshold`` is left uncited. For a model that wrote a right answer without its citations (a person cannot
    check an answer that points nowhere); the caller says that the markers were added."""
    texts = [passage_stems(p) for p in passages]
    out = []
    for line in answer.split("\n"):
        pieces, last = [], 0
        for start, end in sentence_spans(line):
            sentence = line[start:end]
            numbers = _covering(sentence, texts, threshold)
            if numbers:
                body = sentence.rstrip()
                cut = _before_end_mark(body)
                marks = "".join(f" [{n}]" for n in numbers)
                sentence = body[:cut].rstrip() + marks + body[cut:] + sentence[len(body):]
            pieces.append(line[last:start] + sentence)
            last = end
        out.append("".join(pieces) + line[last:])
    return "\n".join(out)


def _before_end_mark(sentence: str) -> int:
    """Where a citation goes in ``sentence`` (no trailing space): before its closing punctuation and the quote
    marks after it, else at its end."""
    quotes = len(sentence)
    while quotes > 0 and sentence[quotes - 1] in "\"'”’":
        quotes -= 1
    stop = quotes
    while stop > 0 and sentence[stop - 1] in ".!?":
        stop -= 1
    return stop if 0 < stop < quotes else len(sentence)


def _covering(sentence: str, texts: list[set[str]], threshold: float) -> list[int]:
    """The numbers (1-based) of the one or two passages whose stems cover ``threshold`` of the sentence's key
    terms, the best first; [] when none do."""
    terms = key_terms(sentence)
    if not terms or not texts:
        return []
    weights: dict[str, float] = {}
    for (_, weight), stem in zip(terms, _stems([t for t, _ in terms])):
        weights[stem] = max(weights.get(stem, 0.0), weight)
    total = sum(weights.values())

    def share(stems: set[str]) -> float:
        return sum(w for s, w in weights.items() if s in stems) / total

    best = max(range(len(texts)), key=lambda i: share(texts[i]))
    second = max((i for i in range(len(texts)) if i != best), key=lambda i: share(texts[best] | texts[i]),
                 default=None)
    alone = share(texts[best])
    both = share(texts[best] | texts[second]) if second is not None else alone
    if both < threshold:
        return []
    return [best + 1] if alone >= threshold and both - alone < _SECOND_GAIN else [best + 1, second + 1]
