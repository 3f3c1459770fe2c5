"""Each person's current conversation, kept on the server so that a reload or a second tab finds it again.

One JSON file per person in ``DATA_DIR/conversations/`` (mode 600): the conversation's turns, each the chat
messages the app rendered for it (the question, and the answer or answers, as the chat shows them) and the
question as recorded for follow-ups. Only what the app itself rendered is kept, never what a page sends back,
so a restored chat is escaped exactly as the live one was. At most ``MAX_TURNS`` turns and ``MAX_KEPT_CHARS``
characters are kept (the oldest turns go first), so nobody fills the disk. The anonymous visitor of an
``--allow-anonymous`` app has nothing kept: the app never asks for it (``kept_for``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.json_file import write_json

log = logging.getLogger(__name__)

CONVERSATIONS_DIR = "conversations"
MAX_TURNS = 50  # turns kept per person; older ones are dropped
MAX_MESSAGE_CHARS = 200_000  # a longer message is kept as a notice that it was too long
MAX_KEPT_CHARS = 2_000_000  # all the messages of one person's file; the oldest turns go first beyond it
VERSION = 1
ROLES = ("user", "assistant")
TOO_LONG = '<div class="notice notice-warning">This message was too long to keep.</div>'
# A name used as it is for a file: what account names may be (pipeline.accounts), "local" included. Anything
# else is hashed, with a "_" in front, which no such name starts with: no two people share a file.
_PLAIN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


@dataclass
class Turn:
    """One question of a conversation: its chat messages (``{"role", "content"}``, as the app rendered them) and
    the question the conversation recorded for follow-ups (None when no run recorded one: a refused question,
    a replayed trace)."""

    messages: list[dict] = field(default_factory=list)
    asked: str | None = None

    def chars(self) -> int:
        return sum(len(m["content"]) for m in self.messages)


def file_key(person: str) -> str:
    """``person``'s name made safe as a file name: an account name as it is, anything else (a slash, "..",
    capitals, a long name) as a hash of it."""
    person = str(person)
    if _PLAIN.fullmatch(person):
        return person
    return "_" + hashlib.sha256(person.encode("utf-8")).hexdigest()[:32]


def kept_for(person) -> str | None:
    """Whose name a person's conversation is kept under: a signed-in person's (the one local person of a
    personal app too); None for nobody (a request with no account) and the anonymous visitor."""
    return person.name if person is not None and person.signed_in else None


class ConversationStore:
    """The kept conversations of a data directory, one file per person."""

    def __init__(self, data_dir: Path) -> None:
        self.folder = Path(data_dir) / CONVERSATIONS_DIR
        self._lock = threading.Lock()

    def path_of(self, person: str) -> Path:
        path = self.folder / f"{file_key(person)}.json"
        if path.parent != self.folder:  # cannot happen with file_key; kept as the guard it is
            raise ValueError(f"Not a safe name for a file: {person!r}")
        return path

    def load(self, person: str) -> list[Turn]:
        """``person``'s conversation, oldest turn first; empty when none is kept, or when the file cannot be read
        or is not one (said in the log, never to the person: they start a new conversation)."""
        path = self.path_of(person)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return _turns(data)
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("the kept conversation %s cannot be read (%s): starting a new one", path, exc)
            return []

    def append(self, person: str, turn: Turn) -> None:
        """Add ``turn`` to ``person``'s conversation (keeping the bounds). A failure to write is logged: the
        person's chat goes on, only a reload would not find this turn."""
        turn = Turn([_bounded(m) for m in turn.messages
                     if isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str)],
                    turn.asked if isinstance(turn.asked, str) else None)
        with self._lock:
            turns = self.load(person) + [turn]
            turns = turns[-MAX_TURNS:]
            while len(turns) > 1 and sum(t.chars() for t in turns) > MAX_KEPT_CHARS:
                turns.pop(0)
            self._write(person, turns)

    def clear(self, person: str) -> None:
        """Start ``person`` on a new conversation: the kept one is gone."""
        with self._lock:
            self._remove(person)

    def remove(self, person: str) -> None:
        """Forget ``person``'s conversation (their account is removed, or a new account takes the name)."""
        with self._lock:
            self._remove(person)

    def _remove(self, person: str) -> None:
        path = self.path_of(person)
        try:
            path.unlink(missing_ok=True)
            path.with_name(path.name + ".tmp").unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot delete the kept conversation %s: %s", path, exc)

    def _write(self, person: str, turns: list[Turn]) -> None:
        path = self.path_of(person)
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_json(path, {"version": VERSION, "turns": [{"messages": t.messages, "asked": t.asked}
                                                            for t in turns]}, mode=0o600)
        except OSError as exc:
            log.warning("cannot keep the conversation in %s: %s", path, exc)


def _bounded(message: dict) -> dict:
    content = message["content"]
    return {"role": message["role"], "content": content if len(content) <= MAX_MESSAGE_CHARS else TOO_LONG}


def _turns(data) -> list[Turn]:
    """The turns of a kept file; raises ValueError for anything that is not what ``_write`` writes."""
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise ValueError("not a kept conversation")
    turns = []
    for entry in data["turns"]:
        messages, asked = entry["messages"], entry.get("asked")
        if not isinstance(messages, list) or not (asked is None or isinstance(asked, str)):
            raise ValueError("a turn is malformed")
        for message in messages:
            if (not isinstance(message, dict) or message.get("role") not in ROLES
                    or not isinstance(message.get("content"), str)):
                raise ValueError("a message is malformed")
        turns.append(Turn([{"role": m["role"], "content": m["content"]} for m in messages], asked))
    return turns[-MAX_TURNS:]
