"""Document collections in Chroma (embedded under the data directory, or a ``chroma run`` server), each with a
BM25 index kept in step.

A collection records the name and dimension of the embedder that filled it, and is never opened with another.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import chromadb
from chromadb.api.types import EmbeddingFunction
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document

from corpora.bm25_index import BM25Index, fingerprint
from models.embeddings import SentenceEmbeddings

Progress = Callable[[int, int], None]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,62}[A-Za-z0-9]$")
_ADD_BATCH = 64
_READ_PAGE = 5000


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

    # -- reading ---------------------------------------------------------------------------------------
    def count(self) -> int:
        return self._raw.count()

    def _all(self, include: list[str]) -> dict:
        """Every passage's id (and the ``include`` fields), read in pages: one read of a large collection
        exceeds SQLite's limit on query variables."""
        out: dict[str, list] = {"ids": [], **{field: [] for field in include}}
        offset = 0
        while True:
            page = self._raw.get(include=include, limit=_READ_PAGE, offset=offset)
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

    def _rebuild_bm25(self) -> None:
        data = self._all(["documents", "metadatas"])
        texts = [f"{(m or {}).get('title', '')}\n{t}" for t, m in zip(data["documents"], data["metadatas"])]
        self._bm25 = BM25Index.build(data["ids"], texts)
        self._bm25.save(self.store.bm25_folder(self.name))

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
                self._rebuild_bm25()
            return len(new)

    def _existing_ids(self, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), _READ_PAGE):
            found.update(self._raw.get(ids=ids[start : start + _READ_PAGE], include=[])["ids"])
        return found

    def delete_source(self, source: str) -> int:
        """Delete every passage of one source file; return how many were deleted."""
        with self._lock:
            ids = self._raw.get(where={"source": source}, include=[])["ids"]
            if ids:
                self._raw.delete(ids=ids)
                self._rebuild_bm25()
            return len(ids)

    def source_hashes(self, source: str) -> set[str]:
        metadatas = self._raw.get(where={"source": source}, include=["metadatas"])["metadatas"] or []
        return {str(m.get("file_sha256")) for m in metadatas}


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
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(self.data_dir / "chroma"), settings=settings)
            self._bm25_root = self.data_dir / "bm25" / "local"
        self._chroma_ef = _ChromaEmbedder(embeddings)
        self._open: dict[str, PassageCollection] = {}
        self._lock = threading.RLock()

    def bm25_folder(self, name: str) -> Path:
        return self._bm25_root / name

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
            return self._open[name]

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
            self._open[name] = PassageCollection(self, name, raw)
            return self._open[name]

    def delete(self, name: str) -> None:
        with self._lock:
            if not self.exists(name):
                raise CollectionError(f"There is no collection '{name}'.")
            self.client.delete_collection(name)
            self._open.pop(name, None)
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
