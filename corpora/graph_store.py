"""A collection's passage graph on disk and in memory, kept in step with its passages.

The store calls ``CollectionGraph.sync`` after every change of a collection's passages (a file added, replaced or
deleted, an interrupted ingest removed), with the passages it has just read for the BM25 index, so the graph is
built or extended at ingest time and never while a question is answered. A failed sync loses no passage: the
graph stays as it was (its fingerprint then differs from the collection's, which the KGP method reports) and the
next change, or ``python -m pipeline graph COLLECTION``, brings it up to date. Readers get the graph that was
current when they asked; a sync builds a new one and swaps it in.
"""

from __future__ import annotations

import logging
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from corpora.graph import PassageGraph
from corpora.graph_build import GraphChange, Nearest, records_of, update_graph

if TYPE_CHECKING:
    from corpora.store import PassageCollection

log = logging.getLogger(__name__)

_QUERY_BATCH = 256  # passages whose neighbours one Chroma query asks for


@dataclass(frozen=True)
class GraphStatus:
    """Whether a collection has a graph and whether it holds exactly the collection's passages."""

    exists: bool
    current: bool
    graph_fingerprint: str | None = None


def chroma_nearest(collection: "PassageCollection") -> Nearest:
    """Nearest neighbours from the collection's own HNSW index, with the embeddings it already stores."""
    def nearest(keys: list[str], n: int) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = {}
        for start in range(0, len(keys), _QUERY_BATCH):
            batch = keys[start : start + _QUERY_BATCH]
            vectors = collection.vectors(batch)
            found = [key for key in batch if key in vectors]
            if not found:
                continue
            for key, hits in zip(found, collection.nearest(np.stack([vectors[key] for key in found]), n + 1)):
                out[key] = [(other, sim) for other, sim in hits if other != key][:n]
        return out
    return nearest


class CollectionGraph:
    """The graph of one open collection: loaded from its folder on first use, replaced on every sync."""

    def __init__(self, collection: "PassageCollection", folder: Path) -> None:
        self.collection = collection
        self.folder = folder
        self._lock = threading.Lock()
        self._graph: PassageGraph | None = None
        self._fingerprint: str | None = None
        self._loaded = False

    def get(self) -> PassageGraph | None:
        """The current graph, or None when none was built yet."""
        with self._lock:
            if not self._loaded:
                self._graph = PassageGraph.load(self.folder)
                self._fingerprint = self._graph.fingerprint() if self._graph is not None else None
                self._loaded = True
            return self._graph

    def status(self, passages_fingerprint: str) -> GraphStatus:
        """Compare the graph with the collection's passages (``BM25Index.fingerprint``)."""
        graph = self.get()
        return GraphStatus(graph is not None, graph is not None and self._fingerprint == passages_fingerprint,
                           self._fingerprint)

    def sync(self, data: dict, refit: bool = False) -> GraphChange:
        """Bring the graph in step with ``data`` (every passage of the collection: ids, documents, metadatas)
        and save it. Raises what building or saving raised; the previous graph then stays in use."""
        graph, change = update_graph(self.get(), records_of(data), chroma_nearest(self.collection), refit=refit)
        if change.added or change.removed or change.refitted or not self.folder.exists():
            graph.save(self.folder)
        with self._lock:
            self._graph, self._fingerprint = graph, graph.fingerprint()
        if change.added or change.removed:
            log.info("Graph of '%s': +%d -%d passages%s in %.1f s", self.collection.name, change.added,
                     change.removed, ", keywords refitted" if change.refitted else "", change.seconds)
        return change

    def drop(self) -> None:
        """Forget the graph and delete its folder (the collection was deleted)."""
        with self._lock:
            self._graph, self._fingerprint, self._loaded = None, None, True
        shutil.rmtree(self.folder, ignore_errors=True)
