"""One document collection: its passages in Chroma with a BM25 index kept in step, its passage graph, and the
file versions it holds (see ``corpora.store`` for how collections are kept and opened)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
from langchain_chroma import Chroma
from langchain_core.documents import Document

from corpora.bm25_index import BM25Index, fingerprint
from corpora.graph_store import CollectionGraph

if TYPE_CHECKING:
    from corpora.store import CollectionStore

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
_ADD_BATCH = 64
_READ_PAGE = 5000
FILE_PASSAGES = "file_passages"  # metadata: passages of the passage's file version (absent: older collections)


@dataclass(frozen=True)
class FileVersion:
    """The stored passages of one version (content hash) of one source file."""

    source: str
    sha256: str | None
    stored: int
    expected: int | None  # None: stored before passages carried their file's passage count

    @property
    def complete(self) -> bool:
        return self.expected is None or self.stored >= self.expected


@dataclass(frozen=True)
class CollectionSummary:
    name: str
    passages: int
    files: dict[str, int]


class PassageCollection:
    """One collection: its passages in Chroma (dense search through LangChain) and its BM25 index."""

    def __init__(self, store: "CollectionStore", name: str, chroma_collection) -> None:
        self.store = store
        self.name = name
        self._raw = chroma_collection
        self._vectors = Chroma(
            client=store.client,
            collection_name=name,
            embedding_function=store.embeddings,
            create_collection_if_not_exists=False,
        )
        self._lock = threading.RLock()
        self._bm25: BM25Index | None = None
        self._graph = CollectionGraph(self, store.graph_folder(name))  # the passage graph of KGP, kept in step

    # -- reading ---------------------------------------------------------------------------------------
    def count(self) -> int:
        return self._raw.count()

    def _all(self, include: list[str], where: dict | None = None) -> dict:
        """Every passage's id (and the ``include`` fields), or those matching ``where``, read in pages: one
        read of a large collection exceeds SQLite's limit on query variables."""
        out: dict[str, list] = {"ids": [], **{field: [] for field in include}}
        offset = 0
        while True:
            page = self._raw.get(where=where, include=include, limit=_READ_PAGE, offset=offset)
            for key in out:
                out[key].extend(page[key] or [])
            if len(page["ids"]) < _READ_PAGE:
                return out
            offset += _READ_PAGE

    def files(self) -> dict[str, int]:
        """Passage counts per source file."""
        metadatas = self._all(["metadatas"])["metadatas"] or []
        return dict(Counter(str(m.get("source", "?")) for m in metadatas))

    def get(self, ids: list[str]) -> list[Document]:
        if not ids:
            return []
        found = self._raw.get(ids=ids, include=["documents", "metadatas"])
        by_id = {
            key: Document(page_content=text, metadata={**(meta or {}), "collection": self.name}, id=key)
            for key, text, meta in zip(found["ids"], found["documents"], found["metadatas"])
        }
        return [by_id[key] for key in ids if key in by_id]

    def matching(self, where: dict, limit: int = 500) -> list[Document]:
        """Up to ``limit`` passages whose metadata match ``where`` (a Chroma filter such as ``{"title": "Emma"}``),
        in storage order: the pages of the web agent's local web (``pipeline.methods.webagent.browsing.local``)."""
        found = self._raw.get(where=where, include=["documents", "metadatas"], limit=limit)
        return [Document(page_content=text, metadata={**(meta or {}), "collection": self.name}, id=key)
                for key, text, meta in zip(found["ids"], found["documents"], found["metadatas"])]

    def dense_search(self, query: str, k: int) -> list[Document]:
        if self.count() == 0:
            return []
        hits = self._vectors.similarity_search_with_score(query, k=min(k, self.count()))
        return [
            Document(page_content=d.page_content, metadata={**d.metadata, "collection": self.name}, id=d.id)
            for d, _distance in hits
        ]

    def bm25_search(self, query: str, k: int) -> list[Document]:
        ranked = self.bm25().search(query, k)
        return self.get([key for key, _ in ranked])

    def bm25(self) -> BM25Index:
        """The BM25 index, loaded from disk or rebuilt when it does not match the collection's passages."""
        with self._lock:
            if self._bm25 is None:
                ids = self._all([])["ids"]
                saved = BM25Index.load(self.store.bm25_folder(self.name))
                if saved is not None and saved.fingerprint == fingerprint(ids):
                    self._bm25 = saved
                else:
                    self._rebuild_bm25()
            return self._bm25

    def _rebuild_bm25(self) -> dict:
        data = self._all(["documents", "metadatas"])
        texts = [f"{(m or {}).get('title', '')}\n{t}" for t, m in zip(data["documents"], data["metadatas"])]
        self._bm25 = BM25Index.build(data["ids"], texts)
        self._bm25.save(self.store.bm25_folder(self.name))
        return data

    def _changed(self) -> None:
        """After passages were added or deleted: rebuild the BM25 index and extend the passage graph with the
        same read. A graph that cannot be updated is logged and left as it was: the passages are stored, and the
        next change or ``python -m pipeline graph`` catches up."""
        data = self._rebuild_bm25()
        try:
            self._graph.sync(data)
        except Exception:  # noqa: BLE001 - the ingest itself succeeded
            log.exception("Could not update the passage graph of collection '%s'", self.name)

    # -- the passage graph (Knowledge Graph Prompting) ----------------------------------------------------
    def graph(self):
        """The collection's passage graph (``corpora.graph.PassageGraph``), or None when none was built."""
        return self._graph.get()

    def graph_status(self):
        """Whether the graph exists and holds exactly this collection's passages (``GraphStatus``)."""
        return self._graph.status(self.bm25().fingerprint)

    def update_graph(self, refit: bool = False):
        """Build the graph, or extend it to the collection's passages (``refit``: refit the keyword model
        too); returns the ``GraphChange``."""
        with self._lock:
            return self._graph.sync(self._all(["documents", "metadatas"]), refit=refit)

    def vectors(self, ids: list[str]) -> dict:
        """The stored embeddings of ``ids`` (those that exist), by id."""
        out = {}
        for start in range(0, len(ids), _READ_PAGE):
            found = self._raw.get(ids=ids[start : start + _READ_PAGE], include=["embeddings"])
            out.update((key, np.asarray(v, dtype=np.float32)) for key, v in zip(found["ids"], found["embeddings"]))
        return out

    def nearest(self, vectors, k: int) -> list[list[tuple[str, float]]]:
        """The ``k`` nearest passages to each of ``vectors`` (ids and cosine similarity, best first)."""
        if not len(vectors) or self.count() == 0:
            return [[] for _ in range(len(vectors))]
        hits = self._raw.query(query_embeddings=vectors, n_results=min(k, self.count()), include=["distances"])
        return [[(key, 1.0 - float(d)) for key, d in zip(keys, dists)]
                for keys, dists in zip(hits["ids"], hits["distances"])]

    # -- writing ---------------------------------------------------------------------------------------
    def add(self, passages: list[Document], progress: Progress | None = None) -> int:
        """Add passages whose ids are not in the collection yet; return how many were added."""
        with self._lock:
            existing = self._existing_ids([p.id for p in passages])
            new = [p for p in {p.id: p for p in passages}.values() if p.id not in existing]
            # Batches of similar length pad little: 3x faster than arrival order on mixed-length passages.
            new.sort(key=lambda p: len(p.page_content))
            for start in range(0, len(new), _ADD_BATCH):
                batch = new[start : start + _ADD_BATCH]
                self._vectors.add_documents(batch, ids=[p.id for p in batch])
                if progress:
                    progress(start + len(batch), len(new))
            if new or self._bm25 is None:
                self._changed()
            return len(new)

    def _existing_ids(self, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _READ_PAGE):
            found.update(self._raw.get(ids=ids[start : start + _READ_PAGE], include=[])["ids"])
        return found

    def _delete_ids(self, ids: list[str]) -> int:
        """Delete passages by id (no BM25 rebuild: the caller does it)."""
        for start in range(0, len(ids), _READ_PAGE):
            self._raw.delete(ids=ids[start : start + _READ_PAGE])
        return len(ids)

    def delete_source(self, source: str, keep_sha256: str | None = None) -> int:
        """Delete every passage of one source file (but those of its version ``keep_sha256``, if given);
        return how many were deleted."""
        with self._lock:
            data = self._all(["metadatas"], where={"source": source})
            ids = [key for key, meta in zip(data["ids"], data["metadatas"])
                   if keep_sha256 is None or (meta or {}).get("file_sha256") != keep_sha256]
            if ids:
                self._delete_ids(ids)
                self._changed()
            return len(ids)

    def delete_version(self, source: str, sha256: str) -> int:
        """Delete the passages of one version of one source file; return how many were deleted."""
        with self._lock:
            ids = self._all([], where={"$and": [{"source": source}, {"file_sha256": sha256}]})["ids"]
            if ids:
                self._delete_ids(ids)
                self._changed()
            return len(ids)

    def _versions(self, where: dict) -> tuple[list[FileVersion], dict[tuple[str, str | None], list[str]]]:
        data = self._all(["metadatas"], where=where)
        ids: dict[tuple[str, str | None], list[str]] = {}
        expected: dict[tuple[str, str | None], int | None] = {}
        for key, meta in zip(data["ids"], data["metadatas"]):
            meta = meta or {}
            sha = meta.get("file_sha256")
            version = (str(meta.get("source", "?")), None if sha is None else str(sha))
            ids.setdefault(version, []).append(key)
            count = meta.get(FILE_PASSAGES)
            if isinstance(count, int) and not isinstance(count, bool):
                expected[version] = max(count, expected.get(version) or 0)
            else:
                expected.setdefault(version, None)
        versions = [FileVersion(source, sha, len(keys), expected[(source, sha)])
                    for (source, sha), keys in ids.items()]
        return versions, ids

    def file_versions(self, source: str) -> list[FileVersion]:
        """The stored versions of one source file (normally one; complete or not)."""
        return self._versions({"source": source})[0]

    def content_versions(self, sha256: str) -> list[FileVersion]:
        """Where the file content with this hash is stored (under which source names)."""
        return self._versions({"file_sha256": sha256})[0]

    def source_hashes(self, source: str) -> set[str]:
        return {str(v.sha256) for v in self.file_versions(source)}

    def recover(self) -> int:
        """Delete the passages of incomplete file versions (left by an ingest that died part-way); return
        how many were deleted. Only safe while no other process may be ingesting into the collection."""
        with self._lock:
            versions, ids = self._versions({FILE_PASSAGES: {"$gte": 1}})
            broken = [v for v in versions if not v.complete]
            removed = sum(self._delete_ids(ids[(v.source, v.sha256)]) for v in broken)
            for version in broken:
                log.warning("Collection '%s': removed %d of %d passages of '%s', left by an ingest that stopped "
                            "part-way; ingest the file again.", self.name, version.stored, version.expected,
                            version.source)
            if removed:
                self._changed()
            return removed
