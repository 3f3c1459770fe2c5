"""Ingesting user files into a collection: every file gets its own outcome, and a bad file never stops the rest.

A file is stored whole or not at all: its passages carry the file's passage count (``file_passages``), an
ingest that dies part-way is completed by the next ingest of the same file (status ``completed``) or removed
when the collection is next opened by a new process (``CollectionStore.open``).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from langchain_core.documents import Document

from corpora.loaders import UnreadableFile, load_file
from corpora.splitting import file_sha256, split_file
from corpora.store import PassageCollection
from pipeline.escaping import BIDI_CONTROLS

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 50 * 1024 * 1024

# Bidirectional overrides, embeddings, isolates and marks: a name holding them can display as another name.
_BIDI = re.compile("[" + BIDI_CONTROLS + "]")


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one file:

    - ``added``: stored;
    - ``replaced``: stored, and the collection's other file of the same name removed (``replace=True``);
    - ``completed``: an earlier ingest of this same file had stopped part-way; its missing passages were added;
    - ``unchanged``: already in the collection (under this name or another), nothing added;
    - ``failed``: nothing of it was stored; ``message`` says why (unreadable, or another file of the same
      name is in the collection and ``replace`` was not asked for).
    """

    name: str
    status: str
    passages: int = 0
    message: str = ""


def safe_source_name(name: str, keep_folders: bool = False) -> str:
    """The name a file is shown and stored under: the file's own name, without any directory part a client
    may have sent (with ``keep_folders``, a relative path such as ``docs/README.md``, without empty, ``.`` or
    ``..`` parts), and without control or bidirectional-override characters that would disguise it."""
    text = _BIDI.sub("", str(name))
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Zl", "Zp"))
    parts = [p.strip() for p in text.replace("\\", "/").split("/")]
    parts = [p for p in parts if p and p not in (".", "..")]
    if not keep_folders:
        parts = parts[-1:]
    return "/".join(parts) or "unnamed"


def ingest_files(
    collection: PassageCollection,
    files: list[tuple[Path, str]],
    progress: Callable[[int, int, str], None] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
    *,
    replace: bool = False,
    on_file: Callable[[FileOutcome], None] | None = None,
    keep_folders: bool = False,
) -> list[FileOutcome]:
    """Ingest ``(path, display name)`` pairs; one outcome per file, in the order the files finished.

    Files are keyed by their display name (see ``safe_source_name``; ``keep_folders`` keeps relative folder
    parts). A file whose name is in the collection with other content fails unless ``replace``, which removes
    the other one once the new one is stored. ``progress(done, total, what)`` reports passages embedded;
    ``on_file(outcome)`` is called as soon as each file is done."""
    outcomes: list[FileOutcome] = []

    def finish(outcome: FileOutcome) -> None:
        outcomes.append(outcome)
        if on_file:
            on_file(outcome)

    pending: list[tuple[str, str, list[Document]]] = []
    for path, display in files:
        prepared = _passages_of(Path(path), safe_source_name(display, keep_folders), max_bytes)
        if isinstance(prepared, FileOutcome):
            finish(prepared)
        else:
            pending.append(prepared)

    total = sum(len(p) for _, _, p in pending)
    done = 0
    earlier: dict[str, str] = {}  # name -> content hash, of the files of this call
    for name, digest, passages in pending:

        def report(n: int, _of: int, base: int = done, what: str = name) -> None:
            if progress:
                progress(base + n, total, what)

        if earlier.get(name, digest) != digest:
            outcome = FileOutcome(name, "failed", message=(
                f"{name}: another file of the same name is among the files being added; rename one of them."))
        else:
            outcome = _store_file(collection, name, digest, passages, replace, report)
        earlier.setdefault(name, digest)
        done += len(passages)
        if progress:
            progress(done, total, name)
        finish(outcome)
    return outcomes


def _passages_of(path: Path, name: str, max_bytes: int) -> FileOutcome | tuple[str, str, list[Document]]:
    """The file's name, content hash and passages; or its failed outcome, with the reason."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise UnreadableFile(f"{name}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit for one file.")
        data = path.read_bytes()
        loaded = load_file(path, display_name=name)
    except UnreadableFile as exc:
        return FileOutcome(name, "failed", message=str(exc))
    except OSError as exc:
        return FileOutcome(name, "failed", message=f"{name}: cannot be read ({exc}).")
    digest = file_sha256(data)
    passages = split_file(loaded, source=name, content_sha256=digest)
    if not passages:
        return FileOutcome(name, "failed", message=f"{name}: contains no text.")
    return name, digest, passages


def _store_file(collection: PassageCollection, name: str, digest: str, passages: list[Document], replace: bool,
                report: Callable[[int, int], None]) -> FileOutcome:
    """Store one file's passages, whole: the steps are ordered so that a process dying at any point leaves
    the file absent or complete (and an older file of the same name in place until the new one is whole)."""
    versions = collection.file_versions(name)
    mine = next((v for v in versions if v.sha256 == digest), None)
    others = [v for v in versions if v.sha256 != digest]
    if others and not replace:
        held = sum(v.stored for v in others)
        return FileOutcome(name, "failed", message=(
            f"a different {name} is already in '{collection.name}' ({held} passages); rename the file, or "
            "tick 'Replace files with the same name' / pass --replace to replace it."))
    if mine is None:
        elsewhere = [v for v in collection.content_versions(digest) if v.source != name]
        for version in elsewhere:
            if version.complete:
                return FileOutcome(name, "unchanged", len(passages),
                                   f"{name}: the same content is already in the collection as {version.source}.")
        for version in elsewhere:  # the remains of an ingest of this content that stopped part-way
            collection.delete_version(version.source, digest)
    if mine is not None and mine.complete and not others:
        return FileOutcome(name, "unchanged", len(passages), f"{name}: already in the collection.")

    try:
        added = collection.add(passages, progress=report)
    except BaseException as exc:  # roll back what this call stored: never a half file
        try:
            collection.delete_version(name, digest)
        except Exception:  # noqa: BLE001 - the next process's open() removes what is left
            log.exception("Could not remove the partly stored file %s", name)
        if not isinstance(exc, Exception):
            raise
        return FileOutcome(name, "failed", message=f"{name}: could not be stored ({exc}); nothing of it was kept.")
    if others:
        removed = collection.delete_source(name, keep_sha256=digest)
        return FileOutcome(name, "replaced", len(passages),
                           f"{name}: the other {name} ({removed} passages) was removed.")
    if mine is not None:
        return FileOutcome(name, "completed", len(passages), (
            f"{name}: an earlier ingest had stopped part-way; its {added} missing passages were added."))
    return FileOutcome(name, "added", len(passages))
