"""Who may do what with a collection: each has an owner and a visibility, kept in ``DATA_DIR/access.json``.

- ``private``: its owner (and the admins) only;
- ``shared``: every signed-in person may read it (list, search, ask over it); only its owner changes it;
- ``public``: everyone may read it, the anonymous visitor too (the demo corpus).

A collection with no entry (made before owners existed, or by the CLI without ``--owner``) belongs to the admins
and is private, except the demo collection, which is public. Every check the app makes on a collection goes
through ``CollectionAccess``; the UI shows only what it allows, but it is the backend handlers that call it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from corpora.demo import DEMO_COLLECTION
from corpora.store import CollectionError
from pipeline.accounts import Person
from pipeline.json_file import read_json, write_json

ACCESS_FILE = "access.json"
PRIVATE, SHARED, PUBLIC = "private", "shared", "public"
VISIBILITIES = (PRIVATE, SHARED, PUBLIC)
ADMINS = ""  # the owner of a collection nobody owns: only admins may change it


@dataclass(frozen=True)
class Entry:
    owner: str
    visibility: str


class CollectionAccess:
    """The owners and visibilities of a data directory's collections, and the checks made on them."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / ACCESS_FILE
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict]:
        return read_json(self.path, CollectionError)

    def _write(self, entries: dict[str, dict]) -> None:
        write_json(self.path, entries)

    def entry(self, name: str) -> Entry:
        found = self._read().get(name)
        if found:
            return Entry(found.get("owner", ADMINS), found.get("visibility", PRIVATE))
        return Entry(ADMINS, PUBLIC if name == DEMO_COLLECTION else PRIVATE)

    def set(self, name: str, owner: str | None = None, visibility: str | None = None) -> Entry:
        """Record ``name``'s owner and/or visibility (the other is kept)."""
        if visibility is not None and visibility not in VISIBILITIES:
            raise CollectionError(f"'{visibility}' is not a visibility: choose {', '.join(VISIBILITIES)}.")
        with self._lock:
            entries = self._read()
            old = self.entry(name)
            entries[name] = {**entries.get(name, {}), "owner": old.owner if owner is None else owner,
                             "visibility": old.visibility if visibility is None else visibility}
            self._write(entries)
        return self.entry(name)

    # The bytes of the files people uploaded, for the per-person limit (files stored before this ledger existed,
    # or by the command line, count nothing).

    def record_file(self, name: str, file: str, size: int) -> None:
        """Note that ``file`` of ``size`` bytes is now in collection ``name`` (replacing any earlier count)."""
        with self._lock:
            entries = self._read()
            entry = entries.setdefault(name, {"owner": self.entry(name).owner,
                                              "visibility": self.entry(name).visibility})
            entry.setdefault("bytes", {})[file] = int(size)
            self._write(entries)

    def forget_file(self, name: str, file: str) -> None:
        """``file`` was deleted from collection ``name``."""
        with self._lock:
            entries = self._read()
            if entries.get(name, {}).get("bytes", {}).pop(file, None) is not None:
                self._write(entries)

    def bytes_owned_by(self, owner: str) -> int:
        """The bytes of the files in the collections ``owner`` owns."""
        return sum(sum(found.get("bytes", {}).values()) for found in self._read().values()
                   if found.get("owner") == owner)

    def forget(self, name: str) -> None:
        """Drop ``name``'s entry (its collection was deleted), so a new collection of that name starts afresh."""
        with self._lock:
            entries = self._read()
            if entries.pop(name, None) is not None:
                self._write(entries)

    def owned_by(self, owner: str) -> list[str]:
        return sorted(name for name, found in self._read().items() if found.get("owner") == owner)

    # The checks.

    def can_read(self, person: Person, name: str) -> bool:
        entry = self.entry(name)
        return (person.admin or entry.visibility == PUBLIC or (person.signed_in and (
            entry.visibility == SHARED or entry.owner == person.name)))

    def can_change(self, person: Person, name: str) -> bool:
        return person.admin or (person.signed_in and self.entry(name).owner == person.name)

    def readable(self, person: Person, names: list[str]) -> list[str]:
        """The ones of ``names`` that ``person`` may read, in order."""
        return [name for name in names if self.can_read(person, name)]

    def check_read(self, person: Person, name: str) -> None:
        """Raise CollectionError unless ``person`` may read ``name``. A collection one may not read is
        answered as one that does not exist, so its name is not confirmed either."""
        if not self.can_read(person, name):
            raise CollectionError(f"There is no collection '{name}' you can use.")

    def check_change(self, person: Person, name: str) -> None:
        """Raise CollectionError unless ``person`` may add to, delete from or delete ``name``."""
        self.check_read(person, name)
        if not self.can_change(person, name):
            raise CollectionError(f"Only the owner of '{name}' can change it; you can read it.")

    def check_create(self, person: Person) -> None:
        if not person.signed_in:
            raise CollectionError("Sign in to create a collection: visitors can only ask questions.")
