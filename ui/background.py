"""Iterating a run in a worker thread, so that whoever shows it can wake up while the run waits (for the model,
a server, a web page) and say so, instead of being blocked with it."""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
_END = object()


def in_background(items: Iterable[T], every_s: float, on_close: Callable[[], None] | None = None
                  ) -> Iterator[T | None]:
    """The items of ``items``, produced in a worker thread, with a ``None`` whenever ``every_s`` seconds pass
    without one. An exception of the producer is raised here. When the consumer stops early (a closed browser
    tab closes its generator), ``on_close`` is called (e.g. the run's Stop) and the worker is left to end."""
    handoff: queue.Queue = queue.Queue()

    def produce() -> None:
        try:
            for item in items:
                handoff.put((item, None))
            handoff.put((_END, None))
        except BaseException as exc:  # handed to the consumer, raised there
            handoff.put((_END, exc))

    threading.Thread(target=produce, name="run-in-background", daemon=True).start()
    finished = False
    try:
        while True:
            try:
                item, error = handoff.get(timeout=every_s)
            except queue.Empty:
                yield None
                continue
            if item is _END:
                finished = True
                if error is not None:
                    raise error
                return
            yield item
    finally:
        if not finished and on_close is not None:
            on_close()
