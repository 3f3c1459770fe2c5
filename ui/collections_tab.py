"""The Collections tab's logic: list, create and delete collections; add and delete files, per-file errors; who
may read a collection. Every function takes the person asking and checks, here in the backend, that they may."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from corpora.ingest import ingest_files, safe_source_name
from corpora.isolated import ParseLimits
from corpora.store import CollectionError, validate_collection_name
from pipeline.access import PRIVATE, VISIBILITIES
from pipeline.accounts import Person
from pipeline.runtime import Runtime
from pipeline.escaping import esc

_STATUS = {"added": "added", "replaced": "replaced (the other file of that name removed)",
           "completed": "completed (an earlier ingest had stopped part-way)", "unchanged": "already there",
           "failed": "not added", "cancelled": "stopped"}
_STORED = ("added", "replaced", "completed", "unchanged")


OWNER_HEADERS = ["collection", "files", "passages", "owner", "who can read it"]
_READERS = {PRIVATE: "its owner", "shared": "everyone signed in", "public": "everyone"}


def names(runtime: Runtime, person: Person) -> list[str]:
    """The collections ``person`` may read."""
    return runtime.access.readable(person, runtime.store.names())


def collection_rows(runtime: Runtime, person: Person) -> list[list]:
    """One row per collection ``person`` may read: name, files, passages, owner, who can read it."""
    rows = []
    for summary in runtime.store.summaries():
        if runtime.access.can_read(person, summary.name):
            entry = runtime.access.entry(summary.name)
            rows.append([summary.name, len(summary.files), summary.passages, entry.owner or "(admins)",
                         _READERS[entry.visibility]])
    return rows


def file_rows(runtime: Runtime, person: Person, name: str | None) -> list[list]:
    """One row per file of collection ``name``: file name, passages; none when ``person`` may not read it."""
    if not name or not runtime.store.exists(name) or not runtime.access.can_read(person, name):
        return []
    return [[file, count] for file, count in sorted(runtime.store.open(name).files().items())]


def create_collection(runtime: Runtime, person: Person, name: str) -> str:
    runtime.access.check_create(person)
    limit = runtime.config.max_collections_per_person
    if limit and not person.admin and len(runtime.access.owned_by(person.name)) >= limit:
        raise CollectionError(f"You have {limit} collections, the most one person may have here: delete one "
                              "first, or ask an admin.")
    name = (name or "").strip()
    validate_collection_name(name)
    if runtime.store.exists(name):
        raise CollectionError(f"A collection named '{name}' already exists.")
    runtime.store.create(name)
    runtime.access.set(name, owner=person.name, visibility=PRIVATE)
    return f"Created the collection '{name}' (only you can read it)."


def set_visibility(runtime: Runtime, person: Person, name: str | None, visibility: str | None) -> str:
    """Let the owner (or an admin) say who may read collection ``name``."""
    if not name:
        raise CollectionError("Choose a collection.")
    if visibility not in VISIBILITIES:
        raise CollectionError(f"Choose who can read it: {', '.join(VISIBILITIES)}.")
    runtime.access.check_change(person, name)
    runtime.access.set(name, visibility=visibility)
    return f"'{name}' can now be read by {_READERS[visibility]}."


def add_files(runtime: Runtime, person: Person, name: str | None, uploads: list,
              progress: Callable[[int, int, str], None], replace: bool = False,
              cancel: threading.Event | None = None) -> str:
    """Ingest uploaded files into collection ``name``; an HTML report with one line per file (errors included:
    the other files still go in). A file whose name is in the collection with other content is refused unless
    ``replace``. Each file is read in a child process within the server's limits (``parse_memory_mb``,
    ``parse_seconds``). Setting ``cancel`` (a Stop button, ``IngestStops``) stops the ingest: the files stored
    by then stay, the rest are reported as stopped."""
    if not name:
        raise CollectionError("Choose or create a collection first.")
    runtime.access.check_change(person, name)
    if not uploads:
        raise CollectionError("Choose one or more files to add.")
    files = [(Path(_path(u)), _display_name(u)) for u in uploads]
    sizes = {safe_source_name(display): _size(path) for path, display in files}
    _check_upload_bytes(runtime, person, sum(sizes.values()))
    limits = ParseLimits(memory_mb=runtime.config.parse_memory_mb, seconds=runtime.config.parse_seconds)
    outcomes = ingest_files(runtime.store.open(name), files, progress=progress, replace=replace, limits=limits,
                            cancel=cancel)
    for outcome in outcomes:
        if outcome.status in ("added", "replaced", "completed") and outcome.name in sizes:
            runtime.access.record_file(name, outcome.name, sizes[outcome.name])
    lines = []
    for outcome in outcomes:
        if outcome.status in ("failed", "cancelled"):  # the message names the file too (the CLI prints it alone)
            detail = esc(outcome.message.removeprefix(f"{outcome.name}: "))
        else:
            detail = f"{outcome.passages} passage{'s' * (outcome.passages != 1)}"
        lines.append(f'<li class="outcome outcome-{outcome.status}"><b>{esc(outcome.name)}</b>: '
                     f'{_STATUS.get(outcome.status, outcome.status)} — {detail}</li>')
    stored = sum(o.status in _STORED for o in outcomes)
    summary = f"{stored} of {len(outcomes)} files are in '{esc(name)}'."
    stopped = sum(o.status == "cancelled" for o in outcomes)
    if stopped:
        summary += f" The ingest was stopped: {stopped} not added."
    return f'<div class="ingest-report"><p>{summary}</p><ul>{"".join(lines)}</ul></div>'


class IngestStops:
    """The Stop switch of each browser session's ingest, keyed by the session (``gr.Request.session_hash``):
    ``running(key)`` holds a fresh switch while that session's ingest runs (pass it to ``add_files``), and
    ``stop(key)`` sets it. A Stop with no ingest of that session running changes nothing (so it cannot stop a
    later ingest)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._switches: dict[str, threading.Event] = {}

    @contextmanager
    def running(self, key: str) -> Iterator[threading.Event]:
        switch = threading.Event()
        with self._lock:
            self._switches[key] = switch
        try:
            yield switch
        finally:
            with self._lock:
                if self._switches.get(key) is switch:
                    del self._switches[key]

    def stop(self, key: str) -> bool:
        """Stop the ingest of session ``key``; whether one was running."""
        with self._lock:
            switch = self._switches.get(key)
        if switch is None:
            return False
        switch.set()
        return True


def stop_ingest(stops: IngestStops, key: str) -> str:
    """The Stop button's message: the ingest of this browser session is being stopped, or none is running."""
    if stops.stop(key):
        return ("Stopping the ingest: the file being read or stored is dropped whole; the files already added "
                "stay. The report follows.")
    return "No ingest of yours is running here."


def delete_file(runtime: Runtime, person: Person, name: str | None, file: str | None) -> str:
    if not name or not file:
        raise CollectionError("Choose a collection and one of its files.")
    runtime.access.check_change(person, name)
    removed = runtime.store.open(name).delete_source(file)
    if not removed:
        raise CollectionError(f"'{file}' is not in '{name}'.")
    runtime.access.forget_file(name, file)
    return f"Deleted '{file}' ({removed} passages) from '{name}'."


def delete_collection(runtime: Runtime, person: Person, name: str | None, confirmed: bool) -> str:
    if not name:
        raise CollectionError("Choose a collection.")
    runtime.access.check_change(person, name)
    if not confirmed:
        raise CollectionError(f"Tick 'Yes, delete' to delete the whole collection '{name}'.")
    runtime.store.delete(name)
    runtime.access.forget(name)
    return f"Deleted the collection '{name}'."


def _check_upload_bytes(runtime: Runtime, person: Person, adding: int) -> None:
    """Refuse files that would take ``person`` (not an admin) over the server's bytes per person."""
    limit = runtime.config.max_upload_bytes_per_person
    if not limit or person.admin:
        return
    kept = runtime.access.bytes_owned_by(person.name)
    if kept + adding > limit:
        raise CollectionError(f"These files ({adding / 1e6:.1f} MB) would bring your documents to "
                              f"{(kept + adding) / 1e6:.1f} MB; the limit here is {limit / 1e6:g} MB per person. "
                              "Delete some files first, or ask an admin. Nothing was added.")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # unreadable: ingest reports it


def _path(upload) -> str:
    return upload if isinstance(upload, str) else getattr(upload, "name", None) or upload["path"]


def _display_name(upload) -> str:
    """The name the person's file had (Gradio keeps it as the last part of the temporary path)."""
    original = getattr(upload, "orig_name", None) or (upload.get("orig_name") if isinstance(upload, dict) else None)
    return original or Path(_path(upload)).name
