"""Re-ranking a pool of passages for a query. No trained cross-encoder is packaged, so the reranker fuses the
BM25 and dense ranks."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Protocol

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from models.lexical import bm25_top, build_bm25

RRF_K = 60  # the constant of Cormack et al. (2009), also the usual default in hybrid search


def reciprocal_rank_fusion(rankings: list[list[str]], k: int = RRF_K) -> dict[str, float]:
    """Fuse ranked lists of ids: each id scores the sum of 1 / (k + rank) over the lists it appears in."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores


class Reranker(Protocol):
    """Orders ``documents`` by relevance to ``query`` and keeps the best ``top_k``."""

    name: str

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]: ...


def _with_score(doc: Document, score: float) -> Document:
    return Document(page_content=doc.page_content, metadata={**doc.metadata, "rerank_score": score}, id=doc.id)


def _texts(documents: list[Document]) -> list[str]:
    return [f"{d.metadata.get('title', '')}\n{d.page_content}" for d in documents]


class RankFusionReranker:
    """BM25 over the pool and cosine similarity of embeddings, fused by reciprocal rank."""

    name = "bm25+dense rank fusion"

    MAX_VECTORS = 20_000  # cached passage vectors (about 30 MB), least recently used dropped first
    MAX_POOLS = 32  # cached BM25 indexes of pools

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        # A pool is re-ranked for many queries (ToC: once per node), so its vectors and BM25 index are kept.
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pools: OrderedDict[tuple[str, ...], Any] = OrderedDict()
        self._lock = threading.Lock()  # one reranker serves every session

    def _embed(self, documents: list[Document], texts: list[str]) -> np.ndarray:
        with self._lock:
            cached = {i: self._vectors[d.id] for i, d in enumerate(documents) if d.id in self._vectors}
            for i in cached:
                self._vectors.move_to_end(documents[i].id)
        missing = [i for i in range(len(documents)) if i not in cached]
        fresh = self.embeddings.embed_documents([texts[i] for i in missing]) if missing else []
        vectors = {**cached, **{i: np.asarray(v, dtype=np.float32) for i, v in zip(missing, fresh)}}
        with self._lock:
            for i in missing:
                if documents[i].id is not None:
                    self._vectors[documents[i].id] = vectors[i]
            while len(self._vectors) > self.MAX_VECTORS:
                self._vectors.popitem(last=False)
        return np.stack([vectors[i] for i in range(len(documents))])

    def _bm25(self, documents: list[Document], texts: list[str]):
        key = tuple(d.id or f"#{hash(t)}" for d, t in zip(documents, texts))
        with self._lock:
            if key in self._pools:
                self._pools.move_to_end(key)
                return self._pools[key]
        index = build_bm25(texts)
        with self._lock:
            self._pools[key] = index
            while len(self._pools) > self.MAX_POOLS:
                self._pools.popitem(last=False)
        return index

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]:
        if not documents:
            return []
        texts = _texts(documents)
        keys = [str(i) for i in range(len(documents))]
        sparse = [str(row) for row, _ in bm25_top(self._bm25(documents, texts), query, len(texts), len(texts))]
        doc_vectors = self._embed(documents, texts)
        query_vector = np.asarray(self.embeddings.embed_query(query))
        dense = [keys[i] for i in np.argsort(-(doc_vectors @ query_vector))]
        fused = reciprocal_rank_fusion([sparse, dense])
        order = sorted(keys, key=lambda key: -fused[key])[:top_k]
        return [_with_score(documents[int(key)], fused[key]) for key in order]

    def diverse(self, query: str, documents: list[Document], top_k: int, novelty: float) -> list[Document]:
        """The best ``top_k`` of ``documents`` for ``query`` chosen by maximal marginal relevance: with
        ``novelty`` > 0, a passage much like one already chosen gives way to a different one."""
        ranked = self.rerank(query, documents, len(documents))
        if novelty <= 0 or len(ranked) <= top_k:
            return ranked[:top_k]
        return maximal_marginal_relevance(ranked, self._embed(ranked, _texts(ranked)), top_k, novelty)


def maximal_marginal_relevance(ranked: list[Document], vectors: np.ndarray, top_k: int,
                                novelty: float) -> list[Document]:
    """``top_k`` of ``ranked`` (best first, with ``vectors`` in the same order), each chosen for its rank and
    for how unlike the passages already chosen it is (Carbonell and Goldstein 1998): a score of (1 - novelty) x
    relevance - novelty x (highest cosine to a chosen passage), relevance falling linearly with the rank."""
    if novelty <= 0 or len(ranked) <= top_k:
        return ranked[:top_k]
    units = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    relevance = 1.0 - np.arange(len(ranked)) / len(ranked)
    chosen: list[int] = [0]
    while len(chosen) < top_k:
        similarity = (units @ units[chosen].T).max(axis=1)
        score = (1 - novelty) * relevance - novelty * similarity
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return [ranked[i] for i in chosen]
