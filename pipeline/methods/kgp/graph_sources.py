"""What a graph walk (KGP) reads: the passage graphs of the run's collections (built at ingest time) or of its
pool of passages (the per-question setting: a small graph built in memory), the passages and stored vectors
behind their nodes, and the ranking of a node's neighbours against a piece of text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from corpora.graph import NodeInfo, PassageGraph, describe_stats
from corpora.graph_build import pool_graph
from models.lexical import bm25_top, build_bm25
from models.rerankers import reciprocal_rank_fusion
from pipeline.payloads import GraphRef
from pipeline.retrieval import PoolRetriever
from pipeline.methods.kgp.structure_nodes import StructureAsk, named_sources


@dataclass
class GraphSource:
    """One walkable graph: a collection's (``name`` is the collection) or a pool's (``name`` None)."""

    name: str | None
    graph: PassageGraph
    fetch: Callable[[list[str]], list[Document]]  # passages by id, in the order asked (missing ones left out)
    vectors: Callable[[list[str]], dict[str, np.ndarray]]  # stored embeddings by id
    current: bool = True  # the graph holds exactly the collection's passages

    def ref(self) -> GraphRef:
        return GraphRef(collection=self.name or "the question's passages",
                        description=describe_stats(self.graph.stats()), current=self.current)


@dataclass
class WalkSources:
    """The graphs of a run, and the collections that have none (their passages can be seeds, never expanded)."""

    graphs: list[GraphSource] = field(default_factory=list)
    without_graph: list[str] = field(default_factory=list)
    unsupported: str = ""  # why no graph can exist for this run's sources

    def of(self, doc: Document) -> GraphSource | None:
        """The graph holding ``doc`` (a collection's, by the passage's collection; else the pool's)."""
        collection = doc.metadata.get("collection")
        for source in self.graphs:
            if (source.name is None or source.name == collection) and doc.id in source.graph:
                return source
        return None


def open_sources(retriever, embeddings: Embeddings | None) -> WalkSources:
    """The graphs behind ``retriever``: each collection's saved graph, or an in-memory graph of a pool."""
    if isinstance(retriever, PoolRetriever):
        return WalkSources(graphs=[_pool_source(retriever.passages, embeddings)])
    collections = getattr(retriever, "collections", None)
    if not collections:
        return WalkSources(unsupported="a graph walk needs a collection (or the evaluation's passages of a "
                           "question); the selected sources have no passage graph")
    out = WalkSources()
    for collection in collections:
        graph = collection.graph()
        if graph is None or not graph.passage_keys():
            out.without_graph.append(collection.name)
            continue
        out.graphs.append(GraphSource(collection.name, graph, collection.get, collection.vectors,
                                      collection.graph_status().current))
    return out


def _pool_source(passages: list[Document], embeddings: Embeddings | None) -> GraphSource:
    by_id = {doc.id: doc for doc in passages if doc.id}
    docs = list(by_id.values())
    vectors = None
    if embeddings is not None and docs:
        vectors = np.asarray(embeddings.embed_documents([d.page_content for d in docs]), dtype=np.float32)
    stored = {doc.id: vectors[i] for i, doc in enumerate(docs)} if vectors is not None else {}
    return GraphSource(None, pool_graph(docs, vectors),
                       lambda ids: [by_id[i] for i in ids if i in by_id],
                       lambda ids: {i: stored[i] for i in ids if i in stored})


def rank_by_text(text: str, docs: list[Document], vectors: dict[str, np.ndarray],
                 embeddings: Embeddings | None) -> list[tuple[Document, float | None]]:
    """``docs`` ordered by similarity to ``text``: BM25 over the candidates and cosine similarity of the stored
    embeddings, fused by reciprocal rank (as the app's retrieval fuses them); each with its cosine similarity
    (None without vectors)."""
    if not docs:
        return []
    keys = [str(i) for i in range(len(docs))]
    texts = [f"{d.metadata.get('title', '')}\n{d.page_content}" for d in docs]
    rankings = [[keys[row] for row, _ in bm25_top(build_bm25(texts), text, len(texts), len(texts))]]
    cosine: dict[str, float] = {}
    if embeddings is not None and all(d.id in vectors for d in docs):
        query = np.asarray(embeddings.embed_query(text), dtype=np.float32)
        sims = np.stack([vectors[d.id] for d in docs]) @ query
        cosine = {keys[i]: float(s) for i, s in enumerate(sims)}
        rankings.append(sorted(keys, key=lambda key: -cosine[key]))
    fused = reciprocal_rank_fusion(rankings)
    order = sorted(keys, key=lambda key: (-fused.get(key, 0.0), int(key)))
    return [(docs[int(key)], cosine.get(key)) for key in order]


@dataclass(frozen=True)
class StructureMatch:
    """A table or page node a structure question names, in one graph."""

    source: GraphSource
    node: NodeInfo


def find_structure(sources: WalkSources, ask: StructureAsk, question: str) -> tuple[list[StructureMatch], str]:
    """The tables or pages ``ask`` names, in the files the question names (any file when it names none), and a
    note for people when the choice was ambiguous or found nothing."""
    kind = "table" if ask.kind == "table" else "page"
    nodes = [StructureMatch(s, n) for s in sources.graphs for n in s.graph.nodes(kind)]
    # Every file of the graphs can be named, also one without such nodes: naming it must not widen the search.
    titles = {n.source: n.title for s in sources.graphs for n in s.graph.nodes("document") if n.source}
    titles.update({m.node.source: m.node.title for m in nodes})
    named = named_sources(question, set(titles), titles)
    scope = [m for m in nodes if not named or m.node.source in named]
    found = [m for m in scope if (m.node.table if kind == "table" else m.node.page) == ask.number]
    found.sort(key=lambda m: (m.node.source, m.node.page, m.node.position))
    files = sorted({m.node.source for m in found})
    where = " or ".join(sorted(named)) or "the selected collections"
    if not found:
        have = sorted({(m.node.table if kind == "table" else m.node.page) for m in scope})
        listing = f" (it has {kind}s {', '.join(map(str, have[:12]))})" if have and named else ""
        return [], f"No {ask.describe()} in {where}{listing}; answering from the content instead."
    if kind == "page" and len(files) > 1:
        chosen = files[0]
        return ([m for m in found if m.node.source == chosen],
                f"Several files have a page {ask.number} ({', '.join(files)}); answering from {chosen}. "
                "Name the file to choose another.")
    if len(files) > 1:
        return found, (f"Table {ask.number} exists in {len(files)} files ({', '.join(files)}); each is read. Name "
                       "the file to read one.")
    return found, ""
