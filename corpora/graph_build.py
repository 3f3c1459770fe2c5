"""Building and extending a passage graph (``corpora.graph``) from a collection's passages.

``update_graph`` takes the graph as it was (or None) and every passage the collection now holds, and changes only
what the difference needs: passages that left are removed (the passages whose nearest neighbours they were get
new ones), new passages get their structure nodes, sequence edges, salient keywords weighted with the fitted
vocabulary and IDF, k nearest neighbours (queried for the new passages only; an old passage gains a new one as
neighbour when it is nearer than its current k-th), and title edges both ways (new passages naming old
documents, old passages naming new documents). Passages that lost a keyword neighbour are linked again to their
best remaining ones. The keyword model is refitted over everything when the collection has grown by half since the
last fit, or shrunk to two thirds of it (its vocabulary and IDF would describe passages that are gone): adding one
file to a large collection never rebuilds the graph.
"""

from __future__ import annotations

import heapq
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from langchain_core.documents import Document

from corpora.graph import PASSAGE_KINDS, Edge, NodeInfo, PassageGraph, document_key, page_key
from corpora.keywords import KeywordModel, passage_text, stop_words

KNN_K = 10  # nearest neighbours per passage (the paper's k; Supp. 8.2)
KEYWORD_LINKS = 10  # keyword neighbours kept per passage: those sharing the most IDF weight of salient keywords
KEYWORD_MAX_PASSAGES = 50  # a keyword salient in more passages than this is too common to link on
# Two passages must share at least two salient keywords: in a pool of a thousand passages one shared word
# ("rome", "board") links unrelated pages (checked on the HotpotQA closed corpus); the paper's pools held 12
# documents, where any shared keyword was enough.
KEYWORD_MIN_SHARED = 2
REFIT_GROWTH = 1.5  # refit the vocabulary and IDF once the collection has half again the passages fitted on

# passage ids, and how many neighbours each -> {id: [(neighbour id, cosine similarity), ...] best first}
Nearest = Callable[[list[str], int], dict[str, list[tuple[str, float]]]]

_WORDS = re.compile(r"\w+(?:['’-]\w+)*")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")  # "Struggle for Rome (board game)"


@dataclass(frozen=True)
class PassageRecord:
    """One stored passage as the graph reads it: id, text and the metadata the store keeps."""

    id: str
    text: str
    metadata: dict

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or "")

    @property
    def source(self) -> str:
        return str(self.metadata.get("source") or "")

    def number(self, field: str) -> int:
        value = self.metadata.get(field)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else -1

    def node(self) -> NodeInfo:
        table = self.number("table")
        return NodeInfo(key=self.id, kind="table" if table > 0 else "passage", source=self.source,
                        title=self.title, doc=document_key(self.source, self.title),
                        position=self.number("position"), page=self.number("page"), table=table)


def records_of(data: dict) -> list[PassageRecord]:
    """Records from a store read (``{"ids", "documents", "metadatas"}``)."""
    return [PassageRecord(key, text or "", meta or {})
            for key, text, meta in zip(data["ids"], data["documents"], data["metadatas"])]


def records_from_documents(docs: Iterable[Document]) -> list[PassageRecord]:
    return [PassageRecord(doc.id or f"#{i}", doc.page_content, dict(doc.metadata)) for i, doc in enumerate(docs)]


@dataclass(frozen=True)
class GraphChange:
    """What one update did."""

    added: int
    removed: int
    refitted: bool
    seconds: float


def update_graph(graph: PassageGraph | None, records: list[PassageRecord], nearest: Nearest | None, *,
                 k: int = KNN_K, refit: bool = False) -> tuple[PassageGraph, GraphChange]:
    """The graph of ``records`` (every passage the collection holds now), made from ``graph`` by changing what
    differs. ``graph`` itself is not changed (readers may be walking it). ``nearest`` finds the nearest passages
    by embedding (None: no knn edges); ``refit`` refits the keyword model whatever the growth."""
    started = time.perf_counter()
    new = graph.copy() if graph is not None else PassageGraph(knn_k=k)
    current = {r.id: r for r in records}
    removed = [key for key in new.passage_keys() if key not in current]
    added = [r for r in current.values() if r.id not in new.index]
    fitted_on = max(new.keywords.fitted_on, 1) if new.keywords is not None else 0
    refit = refit or not fitted_on / REFIT_GROWTH <= len(current) <= REFIT_GROWTH * fitted_on
    if not removed and not added and not refit:
        return new, GraphChange(0, 0, False, time.perf_counter() - started)

    lost_knn, lost_keyword, touched = _remove(new, removed)
    new_docs = _add_structure(new, added)
    touched |= {r.node().doc for r in added}
    for doc in touched:
        if doc in new:
            _link_sequence(new, doc)

    if refit:
        new.keywords = KeywordModel.fit([passage_text(r.title, r.text) for r in current.values()])
        new.salient = dict(zip(current, new.keywords.salient([passage_text(r.title, r.text)
                                                              for r in current.values()])))
        new.clear_edges(Edge.KEYWORD)
        _link_keywords(new, list(current))
    else:
        if added:
            new.salient.update(zip((r.id for r in added),
                                   new.keywords.salient([passage_text(r.title, r.text) for r in added])))
        _link_keywords(new, [r.id for r in added] + sorted(key for key in lost_keyword if key in new))

    if nearest is not None:
        targets = [r.id for r in added] + sorted(key for key in lost_knn if key in new)
        reverse = _link_knn(new, targets, nearest, k)
        _link_knn(new, sorted(reverse - set(targets)), nearest, k)

    _link_titles(new, current, [r.id for r in added], new_docs)
    return new, GraphChange(len(added), len(removed), refit, time.perf_counter() - started)


def _remove(graph: PassageGraph, keys: list[str]) -> tuple[set[str], set[str], set[str]]:
    """Remove passages (and documents and pages left empty); return the passages that lost a nearest
    neighbour, those that lost a keyword neighbour, and the documents that lost a passage."""
    gone = set(keys)
    lost_knn: set[str] = set()
    lost_keyword: set[str] = set()
    touched: set[str] = set()
    if not keys:
        return lost_knn, lost_keyword, touched
    for key in keys:
        info = graph.info(key)
        touched.add(info.doc)
        lost_knn.update(graph.predecessors(key, Edge.KNN))
        lost_keyword.update(graph.predecessors(key, Edge.KEYWORD))
        graph.remove_node(key)
    for info in graph.nodes():
        if info.kind in ("document", "page") and not graph.successors(info.key, Edge.MEMBER):
            graph.remove_node(info.key)
    return lost_knn - gone, lost_keyword - gone, touched


def _add_structure(graph: PassageGraph, records: list[PassageRecord]) -> list[str]:
    """Add passage nodes with their document and page nodes and member edges; return new document keys."""
    new_docs = []
    for record in records:
        node = record.node()
        if node.doc not in graph:
            graph.add_node(NodeInfo(key=node.doc, kind="document", source=node.source, title=node.title))
            new_docs.append(node.doc)
        graph.add_node(node)
        graph.link(node.doc, node.key, Edge.MEMBER)
        if node.page > 0:
            page = page_key(node.source, node.page)
            graph.add_node(NodeInfo(key=page, kind="page", source=node.source, title=node.title, doc=node.doc,
                                    page=node.page))
            graph.link(page, node.key, Edge.MEMBER)
    return new_docs


def _link_sequence(graph: PassageGraph, doc: str) -> None:
    """Join a document's text passages in position order, both ways (tables join through their page)."""
    members = [key for key in graph.members(doc) if graph.info(key).kind == "passage"]
    for key in members:
        for other in graph.successors(key, Edge.SEQUENCE):
            graph.unlink(key, other, Edge.SEQUENCE)
    for first, second in zip(members, members[1:]):
        graph.link(first, second, Edge.SEQUENCE)
        graph.link(second, first, Edge.SEQUENCE)


def _link_keywords(graph: PassageGraph, keys: list[str]) -> None:
    """Link each passage of ``keys`` both ways to the ``KEYWORD_LINKS`` passages sharing the most IDF weight of
    its salient keywords (keywords salient in both; at least ``KEYWORD_MIN_SHARED`` of them)."""
    if not keys:
        return
    postings: dict[int, list[str]] = {}
    for key, terms in graph.salient.items():
        for term in terms.tolist():
            postings.setdefault(term, []).append(key)
    idf = graph.keywords.idf
    for key in keys:
        scores: dict[str, float] = {}
        shared: dict[str, int] = {}
        for term in graph.salient.get(key, np.zeros(0, dtype=np.int32)).tolist():
            holders = postings.get(term, ())
            if len(holders) > KEYWORD_MAX_PASSAGES:
                continue
            weight = float(idf[term])
            for other in holders:
                if other != key:
                    scores[other] = scores.get(other, 0.0) + weight
                    shared[other] = shared.get(other, 0) + 1
        eligible = [(other, score) for other, score in scores.items() if shared[other] >= KEYWORD_MIN_SHARED]
        for other, _ in heapq.nlargest(KEYWORD_LINKS, eligible, key=lambda kv: (kv[1], kv[0])):
            graph.link(key, other, Edge.KEYWORD)
            graph.link(other, key, Edge.KEYWORD)


def _link_knn(graph: PassageGraph, keys: list[str], nearest: Nearest, k: int) -> set[str]:
    """Give each passage of ``keys`` its k nearest passages as directed knn edges; return the other passages
    that one of them is nearer to than their own k-th neighbour (their lists need recomputing)."""
    if not keys:
        return set()
    found = nearest(keys, k + 1)
    reverse: set[str] = set()
    for key in keys:
        for other in graph.successors(key, Edge.KNN):
            graph.unlink(key, other, Edge.KNN)
        top = [(other, sim) for other, sim in found.get(key, [])
               if other != key and other in graph and graph.info(other).kind in PASSAGE_KINDS][:k]
        for other, _ in top:
            graph.link(key, other, Edge.KNN)
        graph.knn_floor[key] = top[-1][1] if len(top) >= k else -1.0
        reverse.update(other for other, sim in top if sim > graph.knn_floor.get(other, -1.0))
    return reverse


def title_tokens(title: str) -> tuple[str, ...] | None:
    """The words a mention of ``title`` must contain (a trailing qualifier such as "(board game)" dropped), or
    None for a title too common to link on (only stop words, or one word of fewer than four letters)."""
    words = tuple(_POSSESSIVE.sub("", w).lower() for w in _WORDS.findall(_QUALIFIER.sub("", title)))
    if not words or all(w in stop_words() for w in words) or (len(words) == 1 and len(words[0]) < 4):
        return None
    return words


class TitleIndex:
    """Finds the documents whose titles a text names (case-insensitive; a capitalised title must be named
    capitalised, so "Catan" does not match "catan" inside another word's sense)."""

    def __init__(self, docs: Iterable[NodeInfo]) -> None:
        self._by_first: dict[str, list[tuple[tuple[str, ...], str, bool]]] = {}
        for doc in docs:
            words = title_tokens(doc.title)
            if words:
                self._by_first.setdefault(words[0], []).append((words, doc.key, doc.title[:1].isupper()))

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def first_words(self) -> set[str]:
        return set(self._by_first)

    def mentions(self, text: str) -> set[str]:
        words = _WORDS.findall(text)
        lower = [_POSSESSIVE.sub("", w).lower() for w in words]
        found = set()
        for i, word in enumerate(lower):
            for tokens, doc, capital in self._by_first.get(word, ()):
                if tuple(lower[i : i + len(tokens)]) == tokens and (not capital or words[i][:1].isupper()):
                    found.add(doc)
        return found


def _link_titles(graph: PassageGraph, records: dict[str, PassageRecord], added: list[str],
                 new_docs: list[str]) -> None:
    """Title edges from new passages to every document they name, and from old passages to new documents."""
    def link(key: str, docs: set[str]) -> None:
        own = graph.info(key).doc
        for doc in docs - {own}:
            graph.link(key, doc, Edge.TITLE)

    every = TitleIndex(graph.nodes("document"))
    for key in added:
        link(key, every.mentions(records[key].text))
    fresh = TitleIndex(graph.info(doc) for doc in new_docs if doc in graph)
    if not fresh:
        return
    firsts = fresh.first_words()
    new_keys = set(added)
    for key, record in records.items():
        if key in new_keys:
            continue
        lowered = record.text.lower()
        if any(word in lowered for word in firsts):  # cheap filter before tokenising
            link(key, fresh.mentions(record.text))


def numpy_nearest(ids: list[str], vectors: np.ndarray) -> Nearest:
    """Exact nearest neighbours over normalised ``vectors`` (row i is ``ids[i]``): for small pools."""
    row = {key: i for i, key in enumerate(ids)}

    def nearest(keys: list[str], n: int) -> dict[str, list[tuple[str, float]]]:
        out = {}
        for key in keys:
            sims = vectors @ vectors[row[key]]
            order = np.argsort(-sims, kind="stable")[: n + 1]
            out[key] = [(ids[j], float(sims[j])) for j in order if j != row[key]][:n]
        return out
    return nearest


def pool_graph(docs: list[Document], vectors: np.ndarray | None, k: int = KNN_K) -> PassageGraph:
    """An in-memory graph over a small pool of passages (the per-question setting); ``vectors`` are the
    passages' normalised embeddings in order (None: no knn edges)."""
    records = records_from_documents(docs)
    nearest = numpy_nearest([r.id for r in records], vectors) if vectors is not None and len(records) else None
    return update_graph(None, records, nearest, k=k)[0]
