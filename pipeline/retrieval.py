"""Hybrid retrieval: BM25 and dense search over one or more collections fused by reciprocal rank, plus the web
when enabled. A failing web source becomes a warning; local results still come back."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langchain_core.documents import Document

from corpora.store import PassageCollection
from models.rerankers import Reranker, reciprocal_rank_fusion
from pipeline.web import WebSearchError, WebSource

CANDIDATES_PER_LIST = 4  # each ranker contributes k * this many candidates before fusion


@dataclass
class Retrieved:
    """Passages for one query, best first, and what went wrong on the way (as user-facing warnings)."""

    passages: list[Document]
    warnings: list[str] = field(default_factory=list)


NEAR_DUPLICATE = 0.8  # Jaccard of word 3-grams at which two passages count as copies (re-crawls, dataset overlap)


def _shingles(doc: Document) -> frozenset[tuple[str, ...]]:
    """Word 3-grams: one changed word breaks three of them, so short passages that differ in a year or a name
    stay apart while long copies with a small edit still match."""
    words = re.findall(r"\w+", doc.page_content.lower())
    return frozenset(zip(words, words[1:], words[2:])) if len(words) >= 3 else frozenset([tuple(words)])


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def deduplicate(docs: list[Document], against: list[Document] = ()) -> list[Document]:
    """``docs`` without passages that repeat, or nearly repeat, an earlier one or one of ``against`` (the same
    passage in two collections, or a lightly edited copy of it)."""
    kept: list[Document] = []
    seen = [_shingles(doc) for doc in against]
    seen_ids = {doc.id for doc in against if doc.id}
    for doc in docs:
        words = _shingles(doc)
        if doc.id and doc.id in seen_ids or any(_jaccard(words, other) >= NEAR_DUPLICATE for other in seen):
            continue
        kept.append(doc)
        seen.append(words)
        if doc.id:
            seen_ids.add(doc.id)
    return kept


class HybridRetriever:
    """Fuses BM25 and dense rankings from every selected collection, then appends web results if any."""

    def __init__(self, collections: list[PassageCollection], web: WebSource | None = None) -> None:
        self.collections = collections
        self.web = web

    def retrieve(self, query: str, k: int) -> Retrieved:
        rankings: list[list[str]] = []
        docs: dict[str, Document] = {}
        depth = max(k * CANDIDATES_PER_LIST, 20)
        for collection in self.collections:
            for ranked in (collection.bm25_search(query, depth), collection.dense_search(query, depth)):
                keys = []
                for doc in ranked:
                    key = f"{collection.name}/{doc.id}"
                    docs.setdefault(key, doc)
                    keys.append(key)
                rankings.append(keys)
        fused = reciprocal_rank_fusion(rankings)
        local = deduplicate([docs[key] for key in sorted(fused, key=lambda key: -fused[key])])
        warnings: list[str] = []
        web_docs: list[Document] = []
        if self.web is not None:
            try:
                web_docs = self.web.search(query, k)
            except WebSearchError as exc:
                warnings.append(f"{exc} Continuing with local sources only." if self.collections else str(exc))
        if web_docs and local:
            # Interleave so that neither source crowds the other out of the top k.
            merged = [d for pair in zip(local, web_docs) for d in pair]
            merged += local[len(web_docs):] + web_docs[len(local):]
        else:
            merged = local or web_docs
        return Retrieved(passages=deduplicate(merged)[:k], warnings=warnings)


class NextRetriever:
    """The passages ``retriever`` ranks after its first ``skip`` for a query: asking a question again of what
    its first retrieval did not show (IRCoT's ``hop_next``)."""

    def __init__(self, retriever: "HybridRetriever | PoolRetriever", skip: int) -> None:
        self.retriever = retriever
        self.skip = skip

    def retrieve(self, query: str, k: int) -> Retrieved:
        ranked = self.retriever.retrieve(query, self.skip + k)
        return Retrieved(passages=ranked.passages[self.skip:], warnings=ranked.warnings)


class PoolRetriever:
    """Retrieval restricted to a fixed set of passages (the per-question setting of multi-document QA): the
    reranker orders the pool for each query."""

    def __init__(self, passages: list[Document], reranker: Reranker) -> None:
        self.passages = deduplicate(passages)
        self.reranker = reranker

    def retrieve(self, query: str, k: int) -> Retrieved:
        return Retrieved(passages=self.reranker.rerank(query, self.passages, k))
