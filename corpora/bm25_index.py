"""A BM25 index kept beside each collection, rebuilt whenever the collection's passages change."""

from __future__ import annotations

import hashlib
from pathlib import Path

import bm25s

from corpora.manifest import read_manifest, save_with_manifest
from models.lexical import bm25_top, build_bm25


def fingerprint(ids: list[str]) -> str:
    """Identifies a collection's content by its passage ids (which are content hashes)."""
    digest = hashlib.sha256()
    for key in sorted(ids):
        digest.update(key.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class BM25Index:
    """BM25 over ``title + text`` of a collection's passages, searchable by passage id."""

    def __init__(self, ids: list[str], index: bm25s.BM25 | None, fingerprint_: str) -> None:
        self.ids = ids
        self.index = index
        self.fingerprint = fingerprint_

    @classmethod
    def build(cls, ids: list[str], texts: list[str]) -> "BM25Index":
        return cls(list(ids), build_bm25(texts) if ids else None, fingerprint(ids))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if self.index is None:
            return []
        return [(self.ids[row], score) for row, score in bm25_top(self.index, query, k, len(self.ids))]

    def save(self, folder: Path) -> None:
        def write(tmp: Path) -> None:
            if self.index is not None:
                self.index.save(str(tmp / "bm25"))

        save_with_manifest(folder, {"fingerprint": self.fingerprint, "ids": self.ids}, write)

    @classmethod
    def load(cls, folder: Path) -> "BM25Index | None":
        """The saved index in ``folder``, or None when there is none or it cannot be read."""
        try:
            manifest = read_manifest(folder)
            index = bm25s.BM25.load(str(folder / "bm25")) if manifest["ids"] else None
        except (OSError, ValueError, KeyError):
            return None
        return cls(manifest["ids"], index, manifest["fingerprint"])
