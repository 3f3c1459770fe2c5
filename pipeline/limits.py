"""Fair shares of a server that several people use: how many questions each person may have running at once,
and how costly a question they may ask."""

from __future__ import annotations

import threading
from collections import Counter

from pipeline.settings import Settings


class RunsPerPerson:
    """Counts each person's running questions and refuses one beyond ``limit`` (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def take(self, person: str) -> bool:
        """Count one more run of ``person``; False (and nothing counted) when they are at the limit."""
        with self._lock:
            if self.limit and self._running[person] >= self.limit:
                return False
            self._running[person] += 1
            return True

    def give_back(self, person: str) -> None:
        """A run of ``person`` taken with ``take`` has ended."""
        with self._lock:
            self._running[person] -= 1
            if self._running[person] <= 0:
                del self._running[person]

    def running(self, person: str) -> int:
        with self._lock:
            return self._running[person]


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
