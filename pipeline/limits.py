"""Fair shares of a server that several people use: how many questions each person may have running at once."""

from __future__ import annotations

import threading
from collections import Counter


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
