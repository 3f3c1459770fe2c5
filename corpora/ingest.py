"""Ingesting user files into a collection: every file gets its own outcome, and a bad file never stops the rest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from langchain_core.documents import Document

from corpora.loaders import UnreadableFile, load_file
from corpora.splitting import file_sha256, split_file
from corpora.store import PassageCollection

MAX_FILE_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class FileOutcome:
    """What happened to one file: ``added``, ``replaced`` (an older version of the same name was removed),
    ``unchanged`` (already ingested) or ``failed`` (``message`` says why; nothing of it was stored)."""

    name: str
    status: str
    passages: int = 0
    message: str = ""


def safe_source_name(name: str) -> str:
    """The file's own name, without any directory part a client may have sent."""
    base = Path(str(name).replace("\\", "/")).name.strip()
    return base or "unnamed"


def ingest_files(
    collection: PassageCollection,
    files: list[tuple[Path, str]],
    progress: Callable[[int, int, str], None] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> list[FileOutcome]:
    """Ingest ``(path, display name)`` pairs. ``progress(done, total, what)`` reports passages embedded."""
    outcomes: list[FileOutcome] = []
    pending: list[tuple[str, list[Document], bool]] = []
    for path, display in files:
        name = safe_source_name(display)
        try:
            size = Path(path).stat().st_size
            if size > max_bytes:
                raise UnreadableFile(
                    f"{name}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit for one file."
                )
            data = Path(path).read_bytes()
            loaded = load_file(path, display_name=name)
        except UnreadableFile as exc:
            outcomes.append(FileOutcome(name, "failed", message=str(exc)))
            continue
        except OSError as exc:
            outcomes.append(FileOutcome(name, "failed", message=f"{name}: cannot be read ({exc})."))
            continue
        digest = file_sha256(data)
        passages = split_file(loaded, source=name, content_sha256=digest)
        if not passages:
            outcomes.append(FileOutcome(name, "failed", message=f"{name}: contains no text."))
            continue
        old = collection.source_hashes(name)
        if old == {digest}:
            outcomes.append(FileOutcome(name, "unchanged", len(passages), f"{name}: already in the collection."))
            continue
        pending.append((name, passages, bool(old)))

    total = sum(len(p) for _, p, _ in pending)
    done = 0
    for name, passages, replaces in pending:
        if replaces:
            collection.delete_source(name)

        def report(n: int, _of: int, base: int = done, what: str = name) -> None:
            if progress:
                progress(base + n, total, what)

        added = collection.add(passages, progress=report)
        done += len(passages)
        status = "replaced" if replaces else ("added" if added else "unchanged")
        note = "" if added else f"{name}: the same content is already in the collection."
        outcomes.append(FileOutcome(name, status, added if added else len(passages), note))
    return outcomes
