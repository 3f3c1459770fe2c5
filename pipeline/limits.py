"""Fair shares of a server that several people use: how many questions each person may have waiting or running,
how many may wait on the whole server, and how costly a question they may ask."""

from __future__ import annotations

import threading

from pipeline.settings import Settings


class Ticket:
    """One question let in by ``Admission``: waiting for its turn until ``start``, then running until ``leave``."""

    def __init__(self, person: str) -> None:
        self.person = person
        self.started = False
        self.left = False


class Admission:
    """Who may ask now, checked when a question is sent, before it waits for its turn.

    - Each person may have ``per_person`` questions waiting or being answered at once, over all their tabs
      (0: no limit).
    - At most ``max_waiting`` questions wait for a turn on the whole server (0: no limit); one more is refused at
      once with how many are ahead, instead of joining a queue that never ends.

    ``enter`` lets a question in (a ``Ticket``) or says why not; ``start`` marks its turn; ``leave`` ends it
    (called more than once, or for a ticket that never started, it counts once)."""

    def __init__(self, per_person: int = 0, max_waiting: int = 0) -> None:
        self.per_person = per_person
        self.max_waiting = max_waiting
        self._tickets: list[Ticket] = []
        self._lock = threading.Lock()

    def enter(self, person: str) -> Ticket | str:
        """A ticket for ``person``'s question, or the message saying why it cannot be asked now."""
        with self._lock:
            mine = sum(t.person == person for t in self._tickets)
            if self.per_person and mine >= self.per_person:
                return (f"You already have {mine} question{'s' if mine != 1 else ''} waiting or being answered "
                        "(in other tabs): wait for one to finish, or stop it, then ask again.")
            waiting = sum(not t.started for t in self._tickets)
            if self.max_waiting and waiting >= self.max_waiting:
                return (f"The server is busy: {waiting} questions are waiting ahead of yours. Try again in a "
                        "minute.")
            ticket = Ticket(person)
            self._tickets.append(ticket)
            return ticket

    def start(self, ticket: Ticket | None) -> None:
        """``ticket``'s question has its turn: it no longer counts as waiting."""
        if ticket is None:
            return
        with self._lock:
            ticket.started = True

    def leave(self, ticket: Ticket | None) -> None:
        """``ticket``'s question ended, or will never run (its page was closed while it waited)."""
        if ticket is None:
            return
        with self._lock:
            if not ticket.left:
                ticket.left = True
                self._tickets.remove(ticket)

    def counts(self, person: str | None = None) -> tuple[int, int]:
        """(waiting, running) questions: of ``person``, or of everyone."""
        with self._lock:
            mine = [t for t in self._tickets if person is None or t.person == person]
            running = sum(t.started for t in mine)
            return len(mine) - running, running


# The settings that cost the most per question, capped for people who are not admins on a shared server: the
# web agent's action budget and ToC's model calls (up to 100 and 60 otherwise).
COSTLY = {"webagent.max_steps": "the web agent's actions", "toc.max_llm_calls": "ToC's model calls"}


def cap_costly(settings: Settings, caps: dict[str, int]) -> tuple[Settings, list[str]]:
    """``settings`` with each setting of ``caps`` (dotted names, as ``COSTLY``) lowered to its cap when above it,
    and one line per change for the person."""
    from pipeline.methods import settings_models

    models = settings_models()
    lowered, notes = {}, []
    for key, cap in caps.items():
        method, _, field = key.partition(".")
        chosen = getattr(settings.for_method(method, models[method]), field)
        if cap and chosen > cap:
            lowered[key] = cap
            notes.append(f"{COSTLY.get(key, key)}: {chosen} lowered to {cap}, this server's limit")
    return (settings.changed(lowered, models) if lowered else settings), notes
