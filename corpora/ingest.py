"""Ingesting user files into a collection: every file gets its own outcome, and a bad file never stops the rest.

A file is stored whole or not at all: its passages carry the file's passage count (``file_passages``), an
ingest that dies part-way is completed by the next ingest of the same file (status ``completed``) or removed
when the collection is next opened by a new process (``CollectionStore.open``).

Each file is read in a child process with a memory and a time limit (``corpora.isolated``): a compressed bomb, a
malformed file or a parser bug fails that file alone, with a one-line reason. An ingest can be stopped
(``cancel``): the file being read or stored is dropped whole, the files stored before it stay.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from langchain_core.documents import Document

from corpora.isolated import ParseLimits, ReadCancelled, read_isolated
from corpora.loaders import UnreadableFile
from corpora.splitting import file_sha256
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
    - ``failed``: nothing of it was stored; ``message`` says why (unreadable, over a limit of reading, or
      another file of the same name is in the collection and ``replace`` was not asked for);
    - ``cancelled``: the ingest was stopped before this file was stored whole; nothing of it was stored.
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
    limits: ParseLimits = ParseLimits(),
    cancel: threading.Event | None = None,
) -> list[FileOutcome]:
    """Ingest ``(path, display name)`` pairs; one outcome per file, in the order the files finished.

    Files are keyed by their display name (see ``safe_source_name``; ``keep_folders`` keeps relative folder
    parts). A file whose name is in the collection with other content fails unless ``replace``, which removes
    the other one once the new one is stored. Every file is read first, each in a child process within
    ``limits`` (``corpora.isolated``), then the readable ones are stored. ``progress(done, total, what)``
    reports passages embedded; ``on_file(outcome)`` is called as soon as each file is done.

    ``cancel`` (set from another thread) stops the ingest: checked before each file, while a file is read (its
    child is killed) and after each batch of passages stored (the file being stored is removed again). The
    files stored before stay; every file not stored gets the outcome ``cancelled``."""
    outcomes: list[FileOutcome] = []

    def finish(outcome: FileOutcome) -> None:
        outcomes.append(outcome)
        if on_file:
            on_file(outcome)

    def stopped() -> bool:
        return cancel is not None and cancel.is_set()

    def stop_the_rest(names: list[str]) -> list[FileOutcome]:
        for name in names:
            finish(FileOutcome(name, "cancelled", message=f"{name}: not added: the ingest was stopped."))
        return outcomes

    named = [(Path(path), safe_source_name(display, keep_folders)) for path, display in files]
    pending: list[tuple[str, str, list[Document]]] = []
    for index, (path, name) in enumerate(named):
        try:
            if stopped():
                raise ReadCancelled(name)
            prepared = _passages_of(path, name, max_bytes, limits, cancel)
        except ReadCancelled:
            return stop_the_rest([n for n, _, _ in pending] + [n for _, n in named[index:]])
        if isinstance(prepared, FileOutcome):
            finish(prepared)
        else:
            pending.append(prepared)

    total = sum(len(p) for _, _, p in pending)
    done = 0
    earlier: dict[str, str] = {}  # name -> content hash, of the files of this call
    for index, (name, digest, passages) in enumerate(pending):
        if stopped():
            return stop_the_rest([n for n, _, _ in pending[index:]])

        def report(n: int, of: int, base: int = done, what: str = name) -> None:
            if progress:
                progress(base + n, total, what)
            if n < of and stopped():  # batches are left: drop the file (after its last one it is whole)
                raise _Stopped

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
        if outcome.status == "cancelled":
            return stop_the_rest([n for n, _, _ in pending[index + 1:]])
    return outcomes


class _Stopped(Exception):
    """Raised from the progress hook of a file being stored when the ingest is stopped: the file is rolled back."""


def _passages_of(path: Path, name: str, max_bytes: int, limits: ParseLimits,
                 cancel: threading.Event | None) -> FileOutcome | tuple[str, str, list[Document]]:
    """The file's name, content hash and passages (read in a child process, ``corpora.isolated``); or its failed
    outcome, with the reason. Raises ``ReadCancelled`` when ``cancel`` is set while it is read."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise UnreadableFile(f"{name}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit for one file.")
        digest = file_sha256(path.read_bytes())
        passages = read_isolated(path, name, digest, limits, cancel)
    except UnreadableFile as exc:
        return FileOutcome(name, "failed", message=str(exc))
    except OSError as exc:
        return FileOutcome(name, "failed", message=f"{name}: cannot be read ({exc}).")
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
        if isinstance(exc, _Stopped):
            return FileOutcome(name, "cancelled", message=f"{name}: not added: the ingest was stopped while it was "
                                                          "stored; nothing of it was kept.")
        return FileOutcome(name, "failed", message=f"{name}: could not be stored ({exc}); nothing of it was kept.")
    if others:
        removed = collection.delete_source(name, keep_sha256=digest)
        return FileOutcome(name, "replaced", len(passages),
                           f"{name}: the other {name} ({removed} passages) was removed.")
    if mine is not None:
        return FileOutcome(name, "completed", len(passages), (
            f"{name}: an earlier ingest had stopped part-way; its {added} missing passages were added."))
    return FileOutcome(name, "added", len(passages))
