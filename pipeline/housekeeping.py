"""Cleaning up after people on a schedule: saved traces older than the operator's limit are deleted every hour
(uploads left in Gradio's cache are Gradio's own ``delete_cache``, see ``ui.app.launch_options``)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

EVERY_S = 3600.0  # how often the cleaner looks


def delete_old_traces(folder: Path, days: float, now: float | None = None) -> int:
    """Delete every trace file under ``folder`` last changed more than ``days`` ago, and the folders left
    empty; the number of files deleted. Nothing is deleted when ``days`` is 0 or less."""
    folder = Path(folder)
    if days <= 0 or not folder.is_dir():
        return 0
    cutoff = (time.time() if now is None else now) - days * 86400
    deleted = 0
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        try:
            if path.is_symlink() or path.is_file():
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
                    deleted += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        except OSError as exc:  # a file in use or gone already: the next round tries again
            log.warning("could not clean %s: %s", path, exc)
    return deleted


class TraceCleaner:
    """A daemon thread that deletes traces older than ``days`` under ``folder`` now and every ``every_s``
    seconds, until ``stop``."""

    def __init__(self, folder: Path, days: float, every_s: float = EVERY_S) -> None:
        self.folder, self.days, self.every_s = Path(folder), days, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="trace-cleaner", daemon=True)

    def start(self) -> "TraceCleaner":
        if self.days > 0:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            deleted = delete_old_traces(self.folder, self.days)
            if deleted:
                log.info("deleted %d trace files older than %g days", deleted, self.days)
            self._stop.wait(self.every_s)
