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
from pathlib import Path
from typing import Iterable

import chromadb
from chromadb.api.types import EmbeddingFunction
from chromadb.config import Settings

from corpora.bm25_index import BM25Index
from corpora.collection import CollectionSummary, PassageCollection
from models.embeddings import SentenceEmbeddings

try:
    import fcntl
except ImportError:  # not POSIX: no data-directory lock
    fcntl = None

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,62}[A-Za-z0-9]$")
LOCK_FILE = ".rqa.lock"

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
