"""Stopping model work within a fraction of a second: a blocking stream read from a worker thread, and a
wrapper that checks a run's Stop switch on every token."""

from __future__ import annotations

import queue
import threading
from dataclasses import replace
from typing import Callable, Iterator, TypeVar

from models.errors import Cancelled
from models.llm import ChatModel, ChatResult, GenerationOptions, Message

T = TypeVar("T")
POLL_S = 0.1
_END = object()


def iterate_cancellable(make_items: Callable[[], Iterator[T]], cancel: threading.Event | None,
                        poll_s: float = POLL_S) -> Iterator[T]:
    """Yield ``make_items()``'s items, raising ``Cancelled`` within ``poll_s`` of ``cancel`` being set even
    while the producer blocks (a server that does not answer). The producer runs in a daemon thread; after a
    cancel it is abandoned and ends on its own (its next item, or its client's read timeout)."""
    if cancel is None:
        yield from make_items()
        return
    items: queue.Queue = queue.Queue(maxsize=64)
    abandoned = threading.Event()

    def produce() -> None:
        iterator = None
        try:
            iterator = make_items()
            for item in iterator:
                if abandoned.is_set():
                    break
                items.put((item, None))
            items.put((_END, None))
        except BaseException as exc:  # handed to the consumer, re-raised there
            items.put((_END, exc))
        finally:
            close = getattr(iterator, "close", None)
            if abandoned.is_set() and close:
                close()

    threading.Thread(target=produce, name="cancellable-producer", daemon=True).start()
    try:
        while True:
            try:
                item, error = items.get(timeout=poll_s)
            except queue.Empty:
                if cancel.is_set():
                    raise Cancelled() from None
                continue
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
            if cancel.is_set():
                raise Cancelled()
    finally:
        abandoned.set()


def wait_cancellable(wait: Callable[[float], T], cancel: threading.Event | None, poll_s: float = POLL_S) -> T:
    """Call ``wait(timeout)`` (which raises ``TimeoutError`` while not done) until it returns, raising
    ``Cancelled`` once ``cancel`` is set."""
    while True:
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        try:
            return wait(poll_s)
        except TimeoutError:
            continue


class CancellableModel(ChatModel):
    """One run's view of a shared model: every call carries the run's Stop switch (backends check it while a
    prompt is read and per token) and is checked again on every piece it yields."""

    def __init__(self, model: ChatModel, cancel: threading.Event) -> None:
        self.model = model
        self.cancel = cancel
        self.name = model.name

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        if self.cancel.is_set():
            raise Cancelled()
        items = self.model.stream(messages, replace(options, cancel=self.cancel))
        try:
            for item in items:
                yield item
                if self.cancel.is_set():
                    raise Cancelled()
        finally:
            items.close()

    def backend_settings(self) -> dict:
        return self.model.backend_settings()

    def __getattr__(self, name: str):  # count_tokens, render_prompt and other backend extras
        return getattr(self.model, name)


class CallGate:
    """One model call at a time, first come first served, with a wait that a Stop ends at once.

    In-process models share one gate: two llama.cpp calls at once on 2 cores only slow each other down. Runs
    hold it per call, not per question, so nobody waits on another person's retrieval, web search or model
    load. A call is known by its run's Stop switch, so a run can be told its place in the line (``ahead_of``)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next_ticket = 0
        self._serving = 0
        self._abandoned: set[int] = set()  # tickets of waiters that were stopped before their turn
        self._owners: dict[int, threading.Event] = {}  # ticket -> the Stop switch of the run waiting or served

    def acquire(self, cancel: threading.Event | None = None, poll_s: float = POLL_S) -> None:
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            if cancel is not None:
                self._owners[ticket] = cancel
            while ticket != self._serving:
                if cancel is not None and cancel.is_set():
                    self._abandoned.add(ticket)
                    self._owners.pop(ticket, None)
                    raise Cancelled()
                self._cond.wait(poll_s)

    def release(self) -> None:
        with self._cond:
            self._owners.pop(self._serving, None)
            self._serving += 1
            while self._serving in self._abandoned:
                self._abandoned.discard(self._serving)
                self._serving += 1
            self._cond.notify_all()

    def ahead_of(self, cancel: threading.Event) -> int | None:
        """How many calls come before the waiting call of the run with Stop switch ``cancel`` (the one being
        served included); 0 while its own call is served; None when it neither waits nor is served."""
        with self._cond:
            tickets = [t for t, owner in self._owners.items() if owner is cancel]
            if not tickets:
                return None
            ticket = min(tickets)
            return sum(1 for t in range(self._serving, ticket) if t not in self._abandoned)
