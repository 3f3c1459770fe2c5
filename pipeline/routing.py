"""Auto: pick a method for a question, and say why.

Two stages, both free of model calls. First, cues that a question needs several hops (IRCoT): it compares two
things ("..., A or B?", "both", "the same"), reaches one entity through another ("the director of the film
X"), or is long (13 words or more: chained questions carry their bridge in words). Otherwise the nearest
labelled questions vote: ``routing_examples.yaml`` holds questions written by hand for this app (none from an
evaluation file), each labelled with the method that suits it (IRCoT, ToC for ambiguous questions with several
readings, OneR for plain single-fact ones); the method with the largest similarity-weighted vote among the
``k`` nearest (embedding cosine) wins. Accuracy: ``benchmarks/routing_accuracy.py`` (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import yaml
from langchain_core.embeddings import Embeddings

EXAMPLES = Path(__file__).with_name("routing_examples.yaml")

# Why a label suits a question, in words for the view ("Auto picked X because ...").
_WHY = {
    "ircot": "it chains or compares facts from more than one source",
    "toc": "it may have several readings (a version, a time, a person...)",
    "oner": "it asks for one plain fact that one retrieval can find",
}


_COMPARISON = re.compile(
    r"\b(first|earlier|later|older|younger|longer|shorter|larger|smaller|bigger|higher|recently)\b.*\bor\b|"
    r"\band\b.*\b(same|both)\b|\b(both|same)\b.*\band\b|,[^,]+\bor\b[^,]+\?\s*$",
    re.IGNORECASE,
)
_RELATION = (r"(director|author|founder|creator|father|mother|wife|husband|spouse|son|daughter|performer|"
             r"composer|producer|publisher|owner|capital|birthplace|country|city|team|company|band)")
_NESTED = re.compile(
    rf"\b{_RELATION}\s+of\s+(the\s+)?\w*\s*{_RELATION}\s+of\b|"
    r"\b(of|by|for|in|from)\s+the\s+\w+(\s+\w+)?\s+(who|that|which|whose|where)\b|"
    rf"\bthe\s+{_RELATION}\s+of\s+(the\s+)?"
    r"[\w'\"-]+.*\b(born|die|died|live|lived|located|founded|released|published|start|play|played|work|worked)\b",
    re.IGNORECASE,
)
LONG_QUESTION_WORDS = 13


def multi_hop_cue(question: str) -> str | None:
    """Why ``question`` needs several hops, or None when nothing in its wording says so."""
    if _COMPARISON.search(question):
        return "it compares or combines two things, so it needs facts from several passages"
    if _NESTED.search(question):
        return "it asks about something described through something else, so it takes more than one hop"
    if len(question.split()) >= LONG_QUESTION_WORDS:
        return (f"it is long ({len(question.split())} words), as questions that chain facts through a bridge "
                "entity are")
    return None


@dataclass(frozen=True)
class Choice:
    method: str
    reason: str


@functools.lru_cache(maxsize=None)
def labelled_questions(path: Path = EXAMPLES) -> tuple[tuple[str, str], ...]:
    """``(question, method)`` pairs of the labelled file."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    return tuple((q, method) for method, questions in spec.items() for q in questions)


class Router:
    """Nearest labelled questions vote for a method. ``embeddings`` may be a zero-argument function returning
    the embedder, so that building a router costs nothing until Auto is first used."""

    def __init__(self, embeddings: Embeddings | Callable[[], Embeddings], k: int = 7,
                 examples: Path = EXAMPLES) -> None:
        self._embeddings = embeddings
        self.k = k
        self._path = examples
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    def _embedder(self) -> Embeddings:
        return self._embeddings if isinstance(self._embeddings, Embeddings) else self._embeddings()

    @property
    def examples(self) -> tuple[tuple[str, str], ...]:
        return labelled_questions(self._path)

    def _matrix(self) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                vectors = np.asarray(self._embedder().embed_documents([q for q, _ in self.examples]))
                self._vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            return self._vectors

    def scores(self, question: str, available: set[str] | None = None) -> dict[str, float]:
        """Each method's similarity-weighted vote among the ``k`` nearest labelled questions."""
        matrix = self._matrix()
        query = np.asarray(self._embedder().embed_query(question))
        similarity = matrix @ (query / np.linalg.norm(query))
        allowed = [i for i, (_, m) in enumerate(self.examples) if available is None or m in available]
        nearest = sorted(allowed, key=lambda i: -similarity[i])[: self.k]
        votes: dict[str, float] = defaultdict(float)
        for i in nearest:
            votes[self.examples[i][1]] += float(similarity[i])
        return dict(votes)

    def choose(self, question: str, available: set[str] | None = None) -> Choice:
        """The method Auto runs for ``question`` (among ``available``, all labelled ones when None)."""
        cue = multi_hop_cue(question)
        if cue and (available is None or "ircot" in available):
            return Choice("ircot", cue)
        votes = self.scores(question, available)
        if not votes:
            return Choice("oner" if available is None or "oner" in available else sorted(available)[0],
                          "no labelled question matches the available methods")
        method = max(votes, key=votes.get)
        share = votes[method] / sum(votes.values())
        return Choice(method, f"{_WHY.get(method, 'it resembles questions this method answers well')} "
                              f"({share:.0%} of the weight of the {self.k} most similar labelled questions).")
