"""Progress bars for long work in the terminal (ingestion, model assembly)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class ProgressBar:
    """A tqdm bar on stderr that appears only once there is progress to show; callable as a progress hook."""

    def __init__(self, desc: str, unit: str = "passage") -> None:
        self.desc, self.unit = desc, unit
        self._bar: tqdm | None = None

    def __call__(self, done: int, total: int, *_ignored) -> None:
        if self._bar is None:
            self._bar = tqdm(total=total, desc=self.desc, unit=self.unit, file=sys.stderr, leave=False)
        self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
