"""Stopping model work within a fraction of a second: a blocking stream read from a worker thread, and a
wrapper that checks a run's Stop switch on every token."""

from __future__ import annotations

import queue
import threading
import weakref
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
    """One model call at a time, shared fairly, with a wait that a Stop ends at once.

    In-process models share one gate: two llama.cpp calls at once on 2 cores only slow each other down. Runs
    hold it per call, not per question, so nobody waits on another person's retrieval, web search or model
    load. A call is known by its run's Stop switch, so a run can be told its place in the line (``ahead_of``).

    The next call is the waiting one whose *share* was served least recently (then the first come): a share is
    a run, or every run of one person once ``share`` names them. So a person with two questions running does not
    get two turns for each one of another person's, and a run's first call does not wait behind every later call
    of a long run."""

    _MEMORY = 1000  # shares whose last turn is remembered

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next_ticket = 0
        self._serving: int | None = None  # the ticket being served
        self._waiting: dict[int, tuple[object, threading.Event | None]] = {}  # ticket -> (share, Stop switch)
        self._served_cancel: threading.Event | None = None
        self._turns = 0
        self._last_turn: dict[object, int] = {}  # share -> the turn it last had
        self._shares: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Stop switch -> share

    def share(self, cancel: threading.Event, name: str) -> None:
        """Count the calls of the run(s) with Stop switch ``cancel`` as ``name``'s (a person's) share."""
        with self._cond:
            self._shares[cancel] = ("share", name)

    def acquire(self, cancel: threading.Event | None = None, poll_s: float = POLL_S) -> None:
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            share = self._shares.get(cancel, cancel) if cancel is not None else ("call", ticket)
            self._waiting[ticket] = (share, cancel)
            if self._serving is None:
                self._advance()
            while self._serving != ticket:
                if cancel is not None and cancel.is_set():
                    del self._waiting[ticket]
                    raise Cancelled()
                self._cond.wait(poll_s)

    def release(self) -> None:
        with self._cond:
            self._advance()

    def _order(self) -> list[int]:
        """The waiting tickets in the order they would be served."""
        last = dict(self._last_turn)
        waiting = dict(self._waiting)
        order = []
        turn = self._turns
        while waiting:
            ticket = min(waiting, key=lambda t: (last.get(waiting[t][0], -1), t))
            turn += 1
            last[waiting.pop(ticket)[0]] = turn
            order.append(ticket)
        return order

    def _advance(self) -> None:
        """Serve the next waiting call, if any (the lock is held)."""
        if not self._waiting:
            self._serving, self._served_cancel = None, None
            return
        ticket = min(self._waiting, key=lambda t: (self._last_turn.get(self._waiting[t][0], -1), t))
        share, cancel = self._waiting.pop(ticket)
        self._turns += 1
        self._last_turn[share] = self._turns
        if len(self._last_turn) > self._MEMORY:  # forget the shares served longest ago
            for old in sorted(self._last_turn, key=self._last_turn.get)[: self._MEMORY // 2]:
                del self._last_turn[old]
        self._serving, self._served_cancel = ticket, cancel
        self._cond.notify_all()

    def ahead_of(self, cancel: threading.Event) -> int | None:
        """How many calls come before the waiting call of the run with Stop switch ``cancel`` (the one being
        served included); 0 while its own call is served; None when it neither waits nor is served."""
        with self._cond:
            if self._serving is not None and self._served_cancel is cancel:
                return 0
            order = self._order()
            mine = [i for i, t in enumerate(order) if self._waiting[t][1] is cancel]
            if not mine:
                return None
            return mine[0] + (self._serving is not None)
