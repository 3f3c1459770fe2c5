"""The passage graph of a collection (Knowledge Graph Prompting, Wang et al., AAAI 2024): passages and tables,
plus structure nodes for documents and pages, joined by typed edges.

Edges (one per ordered pair of nodes, its types a bit mask):

- ``sequence``: a passage and the next one of the same document (position order), both ways;
- ``keyword``: passages sharing salient TF-IDF keywords (``corpora.keywords``), both ways;
- ``knn``: a passage to its k nearest passages by embedding (directed, k=10 as the paper);
- ``title``: a passage to the document node whose title it names;
- member edges from a document node to its passages and tables, and from a page node to its passages and
  tables (``page`` when the walk uses them, ``document`` for a title's document).

The graph lives in rustworkx (2M typed edges in about 45 MB, where networkx needs about 510 MB; measured for
this module). It is built and extended by ``corpora.graph_build`` and saved beside the collection's BM25 index.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntFlag
from pathlib import Path

import numpy as np
import rustworkx as rx

from corpora.bm25_index import fingerprint
from corpora.keywords import KeywordModel
from corpora.manifest import read_manifest, save_with_manifest

FORMAT = 1  # of the saved files; another value is rebuilt, never misread
MAX_TITLE_MEMBERS = 50  # passages of a named document offered to the walk (in position order)


class Edge(IntFlag):
    SEQUENCE = 1
    KEYWORD = 2
    KNN = 4
    TITLE = 8
    MEMBER = 16


PASSAGE_KINDS = ("passage", "table")
EDGE_NAMES = {Edge.SEQUENCE: "sequence", Edge.KEYWORD: "keyword", Edge.KNN: "knn", Edge.TITLE: "title"}


@dataclass(frozen=True)
class NodeInfo:
    """A node: a passage or table (``key`` is the passage id), or a ``document`` or ``page`` structure node."""

    key: str
    kind: str  # passage | table | document | page
    source: str = ""
    title: str = ""
    doc: str = ""  # the document key (source and title) of a passage, table or page
    position: int = -1
    page: int = -1
    table: int = -1
    order: int = 0  # insertion order: documents without positions keep the order their passages came in

    def describe(self) -> str:
        """A short name for people: "Table 2 of report.pdf (p. 3)", "Page 3 of report.pdf", a title."""
        where = self.source or self.title
        if self.kind == "page":
            return f"Page {self.page} of {where}"
        if self.kind == "table":
            page = f" (p. {self.page})" if self.page > 0 else ""
            return f"Table {self.table} of {where}{page}"
        return self.title or where or self.key


def document_key(source: str, title: str) -> str:
    """A document is a file (its passages share a title) or, in a corpus of titled passages such as the demo
    and evaluation corpora, the passages of one title from one source."""
    return f"doc:{source}\x1f{title}"


def page_key(source: str, page: int) -> str:
    return f"page:{source}\x1f{page}"


@dataclass(frozen=True)
class Neighbour:
    """A passage reachable from a node in one step, by every edge type that leads there; ``via`` names the
    title or page an edge went through, ``keywords`` the salient keywords a keyword edge shares (stemmed)."""

    key: str
    edges: tuple[str, ...]
    via: str = ""
    keywords: tuple[str, ...] = ()

    @property
    def edge(self) -> str:
        return "+".join(self.edges)


@dataclass
class PassageGraph:
    """The graph, with the state that extending it needs (the fitted keyword model, each passage's salient
    keywords, each passage's k-th nearest-neighbour similarity)."""

    graph: rx.PyDiGraph = field(default_factory=lambda: rx.PyDiGraph(multigraph=False))
    index: dict[str, int] = field(default_factory=dict)
    keywords: KeywordModel | None = None
    salient: dict[str, np.ndarray] = field(default_factory=dict)
    knn_floor: dict[str, float] = field(default_factory=dict)
    knn_k: int = 10
    next_order: int = 0
    _stats: dict[str, int] | None = field(default=None, repr=False, compare=False)  # cleared by every change

    # -- nodes and edges --------------------------------------------------------------------------------
    def copy(self) -> "PassageGraph":
        """An independent copy to extend while readers keep walking this one."""
        return PassageGraph(self.graph.copy(), dict(self.index), self.keywords, dict(self.salient),
                            dict(self.knn_floor), self.knn_k, self.next_order)

    def info(self, key: str) -> NodeInfo:
        return self.graph[self.index[key]]

    def __contains__(self, key: str) -> bool:
        return key in self.index

    def add_node(self, info: NodeInfo) -> int:
        if info.key in self.index:
            return self.index[info.key]
        info = replace(info, order=self.next_order)
        self.next_order += 1
        self._stats = None
        self.index[info.key] = self.graph.add_node(info)
        return self.index[info.key]

    def remove_node(self, key: str) -> None:
        self._stats = None
        self.graph.remove_node(self.index.pop(key))
        self.salient.pop(key, None)
        self.knn_floor.pop(key, None)

    def link(self, source: str, target: str, edge: Edge) -> None:
        """Add ``edge`` to the types of the edge source -> target."""
        u, v = self.index[source], self.index[target]
        if u == v:
            return
        self._stats = None
        if self.graph.has_edge(u, v):
            self.graph.update_edge(u, v, int(self.graph.get_edge_data(u, v)) | int(edge))
        else:
            self.graph.add_edge(u, v, int(edge))

    def unlink(self, source: str, target: str, edge: Edge) -> None:
        u, v = self.index[source], self.index[target]
        if not self.graph.has_edge(u, v):
            return
        self._stats = None
        mask = int(self.graph.get_edge_data(u, v)) & ~int(edge)
        if mask:
            self.graph.update_edge(u, v, mask)
        else:
            self.graph.remove_edge(u, v)

    def successors(self, key: str, edge: Edge) -> list[str]:
        """Targets of ``key``'s out-edges that have type ``edge``."""
        return [self.graph[v].key for _, v, mask in self.graph.out_edges(self.index[key]) if mask & edge]

    def predecessors(self, key: str, edge: Edge) -> list[str]:
        return [self.graph[u].key for u, _, mask in self.graph.in_edges(self.index[key]) if mask & edge]

    def clear_edges(self, edge: Edge) -> None:
        """Remove type ``edge`` from every edge (before a full rebuild of that type)."""
        self._stats = None
        for index, (u, v, mask) in list(self.graph.edge_index_map().items()):
            if mask & edge:
                rest = mask & ~int(edge)
                if rest:
                    self.graph.update_edge_by_index(index, rest)
                else:
                    self.graph.remove_edge_from_index(index)

    # -- what the walk reads ------------------------------------------------------------------------------
    def nodes(self, kind: str | None = None) -> list[NodeInfo]:
        return [self.graph[i] for i in self.graph.node_indices() if kind is None or self.graph[i].kind == kind]

    def passage_keys(self) -> list[str]:
        return [info.key for info in self.nodes() if info.kind in PASSAGE_KINDS]

    def members(self, key: str) -> list[str]:
        """Passages and tables of a document or page node, in document order."""
        infos = [self.info(k) for k in self.successors(key, Edge.MEMBER)]
        infos.sort(key=lambda i: (i.position if i.position >= 0 else 10**9, i.order))
        return [i.key for i in infos]

    def neighbours(self, key: str) -> list[Neighbour]:
        """Every passage one step from ``key``: its sequence, keyword and knn neighbours, the passages of the
        documents it names (title edges; the first ``MAX_TITLE_MEMBERS``), and the other passages and tables
        of its page."""
        found: dict[str, tuple[list[str], list[str]]] = {}

        def add(target: str, edge: str, via: str = "") -> None:
            if target == key:
                return
            edges, vias = found.setdefault(target, ([], []))
            if edge not in edges:
                edges.append(edge)
            if via and via not in vias:
                vias.append(via)

        node = self.index[key]
        for _, v, mask in self.graph.out_edges(node):
            target = self.graph[v]
            if target.kind in PASSAGE_KINDS:
                for flag in (Edge.SEQUENCE, Edge.KEYWORD, Edge.KNN):
                    if mask & flag:
                        add(target.key, EDGE_NAMES[flag])
            elif target.kind == "document" and mask & Edge.TITLE:
                for member in self.members(target.key)[:MAX_TITLE_MEMBERS]:
                    add(member, "title", target.title)
        for u, _, mask in self.graph.in_edges(node):
            parent = self.graph[u]
            if parent.kind == "page" and mask & Edge.MEMBER:
                for member in self.members(parent.key):
                    add(member, "page", f"p. {parent.page}")
        return [Neighbour(k, tuple(edges), "; ".join(vias),
                          self.shared_keywords(key, k) if "keyword" in edges else ())
                for k, (edges, vias) in found.items()]

    def shared_keywords(self, a: str, b: str) -> tuple[str, ...]:
        """The salient keywords two passages share (stemmed vocabulary terms), the most salient for ``a``
        first."""
        if self.keywords is None or a not in self.salient or b not in self.salient:
            return ()
        theirs = set(self.salient[b].tolist())
        return tuple(self.keywords.vocabulary[t] for t in self.salient[a].tolist() if t in theirs)

    def tables(self) -> list[NodeInfo]:
        return self.nodes("table")

    def pages(self) -> list[NodeInfo]:
        return self.nodes("page")

    def stats(self) -> dict[str, int]:
        """Node counts by kind and edge counts by type (an edge of several types counts for each); counted once
        per version of the graph (every walk names them, and at 100k passages a count reads 2M edges)."""
        if self._stats is not None:
            return dict(self._stats)
        out: dict[str, int] = {}
        for info in self.nodes():
            out[f"{info.kind}_nodes"] = out.get(f"{info.kind}_nodes", 0) + 1
        masks = np.fromiter((w for _, _, w in self.graph.weighted_edge_list()), dtype=np.int64)
        for flag in Edge:
            out[f"{flag.name.lower()}_edges"] = int(np.count_nonzero(masks & int(flag)))
        out["edges"] = len(masks)
        self._stats = out
        return dict(out)

    def fingerprint(self) -> str:
        """Identifies the passages the graph holds (as ``corpora.bm25_index.fingerprint`` does a collection)."""
        return fingerprint(self.passage_keys())

    # -- on disk -----------------------------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """Write ``manifest.json`` (nodes, vocabulary) and ``graph.npz`` (edges, IDF, salient keywords) into
        ``folder``, replacing it whole (written beside it, then renamed)."""
        indices = list(self.graph.node_indices())
        position = {node: row for row, node in enumerate(indices)}
        infos = [self.graph[i] for i in indices]
        edges = self.graph.weighted_edge_list()
        src = np.fromiter((position[u] for u, _, _ in edges), dtype=np.int32, count=len(edges))
        dst = np.fromiter((position[v] for _, v, _ in edges), dtype=np.int32, count=len(edges))
        mask = np.fromiter((w for _, _, w in edges), dtype=np.uint8, count=len(edges))
        salient = [self.salient.get(info.key, np.zeros(0, dtype=np.int32)) for info in infos]
        pointer = np.cumsum([0] + [len(s) for s in salient]).astype(np.int64)
        manifest = {
            "format": FORMAT, "fingerprint": self.fingerprint(), "knn_k": self.knn_k,
            "next_order": self.next_order,
            "nodes": [[i.key, i.kind, i.source, i.title, i.doc, i.position, i.page, i.table, i.order] for i in infos],
            "vocabulary": self.keywords.vocabulary if self.keywords else None,
            "fitted_on": self.keywords.fitted_on if self.keywords else 0,
        }

        def write(tmp: Path) -> None:
            np.savez(tmp / "graph.npz", src=src, dst=dst, mask=mask, salient_ptr=pointer,
                     salient=np.concatenate(salient) if salient else np.zeros(0, dtype=np.int32),
                     idf=self.keywords.idf if self.keywords else np.zeros(0, dtype=np.float32),
                     knn_floor=np.array([self.knn_floor.get(i.key, -1.0) for i in infos], dtype=np.float32))

        save_with_manifest(folder, manifest, write)

    @classmethod
    def load(cls, folder: Path) -> "PassageGraph | None":
        """The graph saved in ``folder``, or None when there is none or it cannot be read."""
        try:
            manifest = read_manifest(folder)
            if manifest.get("format") != FORMAT:
                return None
            with np.load(folder / "graph.npz", allow_pickle=False) as arrays:
                data = {name: arrays[name] for name in arrays.files}
            return cls._parse(manifest, data)
        except (OSError, ValueError, KeyError, TypeError, IndexError):  # damaged or foreign: rebuilt, never misread
            return None

    @classmethod
    def _parse(cls, manifest: dict, data: dict) -> "PassageGraph":
        out = cls(knn_k=int(manifest["knn_k"]), next_order=int(manifest["next_order"]))
        infos = [NodeInfo(*row) for row in manifest["nodes"]]
        indices = out.graph.add_nodes_from(infos)
        out.index = {info.key: int(i) for info, i in zip(infos, indices)}
        out.graph.extend_from_weighted_edge_list(
            list(zip(np.asarray(indices)[data["src"]].tolist(), np.asarray(indices)[data["dst"]].tolist(),
                     data["mask"].tolist())))
        if manifest["vocabulary"] is not None:
            out.keywords = KeywordModel(manifest["vocabulary"], data["idf"], int(manifest["fitted_on"]))
        pointer, salient = data["salient_ptr"], data["salient"]
        for row, info in enumerate(infos):
            if info.kind in PASSAGE_KINDS:
                out.salient[info.key] = salient[pointer[row] : pointer[row + 1]].astype(np.int32)
                floor = float(data["knn_floor"][row])
                if floor >= 0:
                    out.knn_floor[info.key] = floor
        return out


def describe_stats(stats: dict[str, int]) -> str:
    """``stats`` for people: "4,027 passages, 12 tables, 31,920 edges (knn 40,270, keyword ...)"."""
    parts = [f"{stats.get('passage_nodes', 0):,} passages"]
    if stats.get("table_nodes"):
        parts.append(f"{stats['table_nodes']:,} tables")
    if stats.get("page_nodes"):
        parts.append(f"{stats['page_nodes']:,} pages")
    types = ", ".join(f"{name} {stats.get(f'{name}_edges', 0):,}" for name in ("knn", "keyword", "sequence", "title"))
    return f"{', '.join(parts)}; {stats.get('edges', 0):,} edges ({types})"


