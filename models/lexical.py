"""The sparse model: BM25 (bm25s) over English-stemmed tokens, shared by indexes and rerankers."""

from __future__ import annotations

import functools
import logging

import bm25s

logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG level


@functools.lru_cache(maxsize=1)
def stemmer():
    """The English Snowball stemmer (PyStemmer), one instance shared by the BM25 tokens, the keyword graph and the
    support check, so that they all stem alike."""
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: list[str]):
    """bm25s tokens of ``texts``: lower-cased, English stop words removed, stemmed."""
    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), show_progress=False)


def build_bm25(texts: list[str]) -> bm25s.BM25:
    """A BM25 index over ``texts`` (document i is row i)."""
    index = bm25s.BM25()
    index.index(tokenize(texts), show_progress=False)
    return index


def bm25_top(index: bm25s.BM25, query: str, k: int, n_docs: int) -> list[tuple[int, float]]:
    """Row numbers and scores of the ``k`` best documents for ``query`` (only those with a positive score)."""
    k = min(k, n_docs)
    if k <= 0:
        return []
    tokens = tokenize([query])
    if not tokens.ids or not tokens.ids[0]:
        return []
    rows, scores = index.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    return [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if s > 0]
