"""Whether the passages a run found can answer its question at all, so that a method says "the collections do not
answer this" instead of guessing.

The check is lexical and costs no model call: the question's key terms (its words without stop words and
question words; names and numbers count double) must appear in the passages (title or text, compared by stem).
A passage about another subject rarely names the question's subject; a 1.5B model given one answers anyway
(the issue's example: asked who played the Weasley brothers, it named characters from a passage about Lord
Voldemort). The threshold is a measured choice (``benchmarks/abstention.py``, docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from langchain_core.documents import Document

from pipeline.untrusted import neutralise

_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*", re.UNICODE)
# Words that say what kind of answer is wanted, not what the question is about.
_QUESTION_WORDS = frozenset(
    "who whom whose what which when where why how much many did does do is are was were has have had will would "
    "can could should name called known first last also".split())


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | _QUESTION_WORDS


@functools.lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _stems(words: list[str]) -> list[str]:
    return _stemmer().stemWords([w.lower().replace("’", "'").removesuffix("'s") for w in words])


@dataclass(frozen=True)
class Support:
    """How much of the question the passages mention: ``coverage`` in 0..1 (weighted share of key terms
    found), the key terms no passage mentions, and whether that is enough (``supported``)."""

    coverage: float
    missing: list[str] = field(default_factory=list)
    supported: bool = True


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


def check_support(question: str, passages: list[Document], threshold: float) -> Support:
    """Whether ``passages`` mention enough of ``question``'s key terms (``threshold``: weighted share)."""
    terms = key_terms(question)
    if not terms:
        return Support(1.0)
    if not passages:
        return Support(0.0, [t for t, _ in terms], threshold <= 0)
    text = " ".join(f"{p.metadata.get('title', '')} {neutralise(p.page_content).text}" for p in passages)
    present = set(_stems(_WORD.findall(text)))
    found = [stem in present for stem in _stems([t for t, _ in terms])]
    total = sum(w for _, w in terms)
    coverage = sum(w for (_, w), hit in zip(terms, found) if hit) / total
    missing = [t for (t, _), hit in zip(terms, found) if not hit]
    return Support(round(coverage, 4), missing, coverage >= threshold)


def abstention(support: Support, passages: list[Document]) -> str:
    """What a method answers when the passages do not support an answer: that the collections do not answer
    the question, what they lack, and what was found instead (cited)."""
    lacking = ", ".join(f"“{term}”" for term in support.missing[:5])
    found = "; ".join(f"{_title(p)} [{i}]" for i, p in enumerate(passages[:3], 1))
    text = "The selected sources do not answer this question"
    text += f": no passage found mentions {lacking}." if lacking else "."
    if found:
        text += f" The closest passages are about: {found}."
    return text


def _title(passage: Document) -> str:
    title = neutralise(str(passage.metadata.get("title") or "")).text
    return title or neutralise(passage.page_content).text[:60]


# How the model says that the passages hold no answer (the answer prompts ask it to say so).
_UNANSWERABLE = re.compile(
    r"\b(?:passages?|sources?|context|documents?|text|information)\b[^.]{0,40}?\b(?:do(?:es)?|did)\s+not\s+"
    r"(?:contain|mention|provide|say|state|include|specify|give|answer)\b|\bno (?:information|mention|answer)\b"
    r"|\bnot (?:mentioned|provided|stated|specified|given) in the\b|\bcannot be (?:determined|answered)\b"
    r"|^\W*(?:unknown|not (?:known|available)|n/?a)\W*$", re.IGNORECASE)


def says_unanswerable(answer: str) -> bool:
    """Whether the answer says that the passages do not answer the question."""
    return bool(_UNANSWERABLE.search(answer))
