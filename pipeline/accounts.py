"""Who uses the app: the people of a shared server, their password hashes and roles, and the person a request
comes from in each of the app's three modes.

- *personal* (the default on loopback): one local person, who owns everything;
- *shared*: accounts in ``DATA_DIR/users.json``, passwords kept as Argon2id hashes (argon2-cffi), a login page;
- *anonymous* (``--allow-anonymous``): everyone who reaches the port is the same visitor, who may read the
  public collections and nothing else.

Accounts are managed with ``python -m pipeline users add|remove|list``; the app reads the file at each login.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from pipeline.json_file import read_json, write_json

USERS_FILE = "users.json"
MIN_PASSWORD_CHARS = 8
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,30}[a-z0-9]$")
_HASHER = PasswordHasher()
# Verified against when the name is unknown, so that a wrong name takes as long as a wrong password.
_DUMMY_HASH = _HASHER.hash("not a password of anybody")

PERSONAL, SHARED, ANONYMOUS = "personal", "shared", "anonymous"


class AccountError(ValueError):
    """An account cannot be added, removed or used as asked; the message says why."""


@dataclass(frozen=True)
class Person:
    """Someone using the app. ``admin`` may see and change every collection; ``signed_in`` is False only for
    the anonymous visitor, who may not create or change anything."""

    name: str
    admin: bool = False
    signed_in: bool = True


LOCAL = Person("local", admin=True)
VISITOR = Person("visitor", admin=False, signed_in=False)


def validate_user_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise AccountError(f"'{name}' is not a valid user name: use 3-32 lowercase letters, digits, '.', '_' or "
                           "'-', starting and ending with a letter or digit.")
    if name in (LOCAL.name, VISITOR.name):
        raise AccountError(f"'{name}' is reserved.")
    return name


class Accounts:
    """The accounts of a shared server, in ``DATA_DIR/users.json`` (mode 600): name -> Argon2id hash and role.
    Read at every call, so ``pipeline users`` changes take effect at the next login without a restart."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / USERS_FILE
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict]:
        return read_json(self.path, AccountError).get("users", {})

    def _write(self, users: dict[str, dict]) -> None:
        write_json(self.path, {"users": users}, mode=0o600)

    def add(self, name: str, password: str, admin: bool = False) -> Person:
        """Add an account; raises AccountError for a taken or invalid name or a short password."""
        validate_user_name(name)
        if len(password or "") < MIN_PASSWORD_CHARS:
            raise AccountError(f"A password needs at least {MIN_PASSWORD_CHARS} characters.")
        with self._lock:
            users = self._read()
            if name in users:
                raise AccountError(f"There is already an account named '{name}'.")
            users[name] = {"hash": _HASHER.hash(password), "role": "admin" if admin else "user"}
            self._write(users)
        return Person(name, admin=admin)

    def remove(self, name: str) -> None:
        """Remove an account. Its collections stay, owned by nobody but the admins, until given to someone."""
        with self._lock:
            users = self._read()
            if name not in users:
                raise AccountError(f"There is no account named '{name}'.")
            del users[name]
            self._write(users)

    def people(self) -> list[Person]:
        return [Person(name, admin=entry.get("role") == "admin") for name, entry in sorted(self._read().items())]

    def person(self, name: str | None) -> Person | None:
        """The account ``name``, or None when there is none (never signed in, or removed since)."""
        entry = self._read().get(name or "")
        return Person(name, admin=entry.get("role") == "admin") if entry else None

    def check(self, name: str, password: str) -> bool:
        """Whether ``password`` is ``name``'s. Gradio's login calls this."""
        entry = self._read().get(name or "")
        try:
            return _HASHER.verify(entry["hash"] if entry else _DUMMY_HASH, password or "") and entry is not None
        except (VerificationError, InvalidHashError):
            return False


@dataclass(frozen=True)
class People:
    """How the app tells who sent a request: ``mode`` is personal, shared or anonymous."""

    mode: str = PERSONAL
    accounts: Accounts | None = None

    def of(self, username: str | None) -> Person | None:
        """The person behind a request signed in as ``username`` (Gradio's ``request.username``); None when
        nobody may act (a shared server's request with no account behind it)."""
        if self.mode == PERSONAL:
            return LOCAL
        if self.mode == ANONYMOUS:
            return VISITOR
        return self.accounts.person(username) if self.accounts and username else None

    def auth(self):
        """Gradio's ``auth`` argument: the password check of a shared server, else None (no login page)."""
        return self.accounts.check if self.mode == SHARED and self.accounts else None
