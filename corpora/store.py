"""Document collections in Chroma (embedded under the data directory, or a ``chroma run`` server), each with a
BM25 index kept in step.

A collection records the name and dimension of the embedder that filled it, and is never opened with another.

Every passage of an ingested file carries the file's content hash (``file_sha256``) and the number of passages of
that file version (``file_passages``): a file version is complete when that many passages with its source and hash
are stored. An embedded data directory is used by one process at a time (an ``flock`` on ``.rqa.lock``), so a file
version found incomplete when a collection is first opened comes from an ingest that died, and is removed.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import chromadb
import numpy as np
from chromadb.api.types import EmbeddingFunction
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document

from corpora.bm25_index import BM25Index, fingerprint
from corpora.graph_store import CollectionGraph
from models.embeddings import SentenceEmbeddings

try:
    import fcntl
except ImportError:  # not POSIX: no data-directory lock
    fcntl = None

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,62}[A-Za-z0-9]$")
_ADD_BATCH = 64
_READ_PAGE = 5000
LOCK_FILE = ".rqa.lock"
FILE_PASSAGES = "file_passages"  # metadata: passages of the passage's file version (absent: older collections)

# Process-wide: the data directories whose lock this process holds (resolved path -> open lock file), and the
# embedded collections already checked for ingests that died (resolved path, collection name).
_held_locks: dict[Path, int] = {}
_recovered: set[tuple[Path, str]] = set()
_process_lock = threading.Lock()


class CollectionError(ValueError):
    """A collection cannot be created, opened or changed as asked; the message says why."""


class _ChromaEmbedder(EmbeddingFunction):
    """Our embedder in Chroma's interface, so Chroma never falls back to its own (downloading) default."""

    def __init__(self, embeddings: SentenceEmbeddings) -> None:
        self._embeddings = embeddings

    def __call__(self, input):  # noqa: A002 - Chroma's parameter name
        return self._embeddings.embed_documents(list(input))

    @staticmethod
    def name() -> str:
        return "research-qa"

    def is_legacy(self) -> bool:  # configuration is ours to check (embedder name and dimension in metadata)
        return True


def validate_collection_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise CollectionError(
            f"'{name}' is not a valid collection name: use 3-64 letters, digits, '.', '_' or '-', starting and "
            "ending with a letter or digit."
        )
    return name


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _lock_data_dir(folder: Path) -> None:
    """Hold an exclusive lock on ``folder`` for the life of this process (released by the kernel when the
    process ends, however it ends); ``CollectionError`` when another process holds it."""
    if fcntl is None:
        return
    with _process_lock:
        if folder in _held_locks:
            return
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)  # a file system without locks: work as before, unguarded
                log.warning("Cannot lock the data directory %s (%s); do not open it from two processes.",
                            folder, exc)
                return
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f"another process (pid {holder})" if holder.isdigit() else "another process"
            raise CollectionError(
                f"The data directory {folder} is in use by {who}. Fix: stop that process, use another "
                "--data-dir, or share collections between processes through a Chroma server with --chroma-url."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held_locks[folder] = fd


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


class CollectionStore:
    """All collections of one Chroma database (embedded under ``data_dir``, or a server at ``chroma_url``)."""

    def __init__(self, data_dir: Path, embeddings: SentenceEmbeddings, chroma_url: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.embeddings = embeddings
        self.chroma_url = chroma_url
        settings = Settings(anonymized_telemetry=False)
        if chroma_url:
            match = re.match(r"^(https?)://([^:/]+)(?::(\d+))?/?$", chroma_url)
            if not match:
                raise CollectionError(f"'{chroma_url}' is not a Chroma server URL like http://127.0.0.1:8000.")
            scheme, host, port = match.groups()
            try:
                self.client = chromadb.HttpClient(
                    host=host, port=int(port or 8000), ssl=scheme == "https", settings=settings
                )
                self.client.heartbeat()
            except Exception as exc:  # chromadb raises several unrelated types for an absent server
                raise CollectionError(
                    f"No Chroma server answers at {chroma_url} ({exc}). Fix: start it with `chroma run --path "
                    "DIR --port PORT`, or leave the Chroma URL empty to use the embedded store."
                ) from exc
            self._bm25_root = self.data_dir / "bm25" / re.sub(r"[^A-Za-z0-9]+", "_", f"{host}_{port}")
        else:
            try:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                _lock_data_dir(self.data_dir.resolve())
                self.client = chromadb.PersistentClient(path=str(self.data_dir / "chroma"), settings=settings)
            except CollectionError:
                raise
            except Exception as exc:  # PermissionError, OSError, and chromadb's own errors for a bad database
                raise CollectionError(
                    f"Cannot use the data directory {self.data_dir} ({_one_line(exc) or type(exc).__name__}). "
                    "Fix: make it writable, or choose another with --data-dir or $RQA_DATA_DIR."
                ) from exc
            self._bm25_root = self.data_dir / "bm25" / "local"
        self._chroma_ef = _ChromaEmbedder(embeddings)
        self._open: dict[str, PassageCollection] = {}
        self._lock = threading.RLock()

    def bm25_folder(self, name: str) -> Path:
        return self._bm25_root / name

    def graph_folder(self, name: str) -> Path:
        """Where collection ``name`` keeps its passage graph: beside its BM25 index."""
        return self._bm25_root.parent.parent / "graph" / self._bm25_root.name / name

    def names(self) -> list[str]:
        return sorted(c.name if hasattr(c, "name") else str(c) for c in self.client.list_collections())

    def exists(self, name: str) -> bool:
        return name in self.names()

    def _expected_metadata(self) -> dict:
        return {"embedder": self.embeddings.name, "dimension": self.embeddings.dimension}

    def create(self, name: str) -> PassageCollection:
        """Create an empty collection (or open it when it exists with the same embedder)."""
        validate_collection_name(name)
        with self._lock:
            if self.exists(name):
                return self.open(name)
            raw = self.client.create_collection(
                name=name,
                embedding_function=self._chroma_ef,
                metadata=self._expected_metadata(),
                configuration={"hnsw": {"space": "cosine"}},
            )
            self._open[name] = PassageCollection(self, name, raw)
            self._mark_recovered(name)
            return self._open[name]

    def _mark_recovered(self, name: str) -> bool:
        """Record that collection ``name`` was checked for ingests that died; False when it already was in
        this process, and always in server mode (another process may be ingesting: nothing is removed)."""
        if self.chroma_url:
            return False
        key = (self.data_dir.resolve(), name)
        with _process_lock:
            if key in _recovered:
                return False
            _recovered.add(key)
            return True

    def open(self, name: str) -> PassageCollection:
        """Open an existing collection, refusing one filled by another embedder."""
        with self._lock:
            if name in self._open:
                return self._open[name]
            if not self.exists(name):
                known = ", ".join(self.names()) or "none yet"
                raise CollectionError(f"There is no collection '{name}' (collections: {known}).")
            raw = self.client.get_collection(name=name, embedding_function=self._chroma_ef)
            stored = raw.metadata or {}
            expected = self._expected_metadata()
            if {k: stored.get(k) for k in expected} != expected:
                raise CollectionError(
                    f"Collection '{name}' was built with the embedder {stored.get('embedder')!r} "
                    f"({stored.get('dimension')}-d), not {expected['embedder']!r} ({expected['dimension']}-d). "
                    "Open it with that embedder, or re-ingest its files into a new collection."
                )
            collection = PassageCollection(self, name, raw)
            if self._mark_recovered(name):
                try:
                    collection.recover()
                except BaseException:
                    with _process_lock:
                        _recovered.discard((self.data_dir.resolve(), name))
                    raise
            self._open[name] = collection
            return collection

    def delete(self, name: str) -> None:
        with self._lock:
            if not self.exists(name):
                raise CollectionError(f"There is no collection '{name}'.")
            self.client.delete_collection(name)
            collection = self._open.pop(name, None)
            if collection is not None:
                collection._graph.drop()
            shutil.rmtree(self.graph_folder(name), ignore_errors=True)
            BM25Index(ids=[], index=None, fingerprint_="").save(self.bm25_folder(name))

    def summaries(self) -> list[CollectionSummary]:
        out = []
        for name in self.names():
            try:
                files = self.open(name).files()
            except CollectionError:
                continue
            out.append(CollectionSummary(name=name, passages=sum(files.values()), files=files))
        return out

    def open_many(self, names: Iterable[str]) -> list[PassageCollection]:
        return [self.open(name) for name in names]
