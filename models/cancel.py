"""Stopping model work within a fraction of a second: a blocking stream read from a worker thread, and a
wrapper that checks a run's Stop switch on every token."""

from __future__ import annotations

import queue
import threading
import time
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

    Fairness is counted in *shares*: a run, or every run of one person once ``share`` names them. Each share is
    charged the seconds its calls held the model while another call waited (and ``CALL_CHARGE`` per call),
    forgotten with a half-life of ``HALF_LIFE_S``: using the model while nobody else wants it costs nobody
    anything. The next call is the waiting one whose share was served least recently (then the first come). So a
    person with two questions running does not get two turns for each one of another person's, and a run's first
    call does not wait behind every later call of a long run. (Serving the share charged least first was tried:
    with four people asking at once, the OneR answers then came at up to 3.1× their lone time.)

    A long call gives way too: between tokens its holder asks ``should_yield`` and, when a call of a share
    charged at least ``MARGIN_S`` (8 s) less waits, saves its state and waits its turn again (``yield_turn``). So
    somebody asking one question while another person floods the server does not wait for the flooder's long
    answers to end, and people asking at once with the same history get their calls through whole."""

    _MEMORY = 1000  # shares whose charge is remembered
    CALL_CHARGE = 0.05  # seconds charged per call on top of the time it held the model: a turn is never free
    HALF_LIFE_S = 60.0  # a share's charge halves in this many seconds
    # How much less a waiting share must have been charged to make the running call give way: about one OneR
    # answer's model time, so that people asking at once each get their short answer through in one piece
    # while somebody who has held the model for long gives way (benchmarks four_people and flood).
    MARGIN_S = 8.0
    MIN_SLICE_S = 0.25  # a call that gave way, or was just served, runs at least this long before it gives way

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._next_ticket = 0
        self._serving: int | None = None  # the ticket being served
        self._serving_share: object = None
        self._served_since = 0.0
        self._contended_s = 0.0  # how long the call being served has held the model while another call waited
        self._contended_mark = 0.0  # when _contended_s was last brought up to date
        self._waiting: dict[int, tuple[object, threading.Event | None]] = {}  # ticket -> (share, Stop switch)
        self._served_cancel: threading.Event | None = None
        self._turns = 0
        self._last_turn: dict[object, int] = {}  # share -> the turn it last had
        self._charge: dict[object, tuple[float, float]] = {}  # share -> (seconds charged, when)
        self._shares: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Stop switch -> share
        self.gave_way = 0  # how many times a call gave way to another (for tests and benchmarks)

    def share(self, cancel: threading.Event, name: str) -> None:
        """Count the calls of the run(s) with Stop switch ``cancel`` as ``name``'s (a person's) share."""
        with self._cond:
            self._shares[cancel] = ("share", name)

    def acquire(self, cancel: threading.Event | None = None, poll_s: float = POLL_S) -> None:
        with self._cond:
            self._wait_turn(cancel, poll_s)

    def release(self) -> None:
        with self._cond:
            self._charge_serving()
            self._advance()

    def should_yield(self) -> bool:
        """Whether the call being served should give way now (asked by its holder between tokens): a call of
        another share waits whose share was charged at least ``MARGIN_S`` less, counting this call's time so far."""
        with self._cond:
            if self._serving is None or not self._waiting:
                return False
            now = self._clock()
            if now - self._served_since < self.MIN_SLICE_S:
                return False
            self._count_contention(now)
            mine = self._charged(self._serving_share, now) + self._contended_s
            return any(share != self._serving_share and self._charged(share, now) + self.MARGIN_S < mine
                       for share, _cancel in self._waiting.values())

    def yield_turn(self, cancel: threading.Event | None = None, poll_s: float = POLL_S) -> None:
        """Give the model to the waiting call that comes first and wait for the next turn. On ``Cancelled`` the
        caller no longer holds the gate."""
        with self._cond:
            self._charge_serving()
            self._serving = None
            self._wait_turn(cancel, poll_s)

    def _wait_turn(self, cancel: threading.Event | None, poll_s: float) -> None:
        """Join the line and wait until served (the lock is held)."""
        ticket = self._next_ticket
        self._next_ticket += 1
        share = self._shares.get(cancel, cancel) if cancel is not None else ("call", ticket)
        self._count_contention(self._clock())
        self._waiting[ticket] = (share, cancel)
        if self._serving is None:
            self._advance()
        while self._serving != ticket:
            if cancel is not None and cancel.is_set():
                self._count_contention(self._clock())
                del self._waiting[ticket]
                if self._serving is None:
                    self._advance()
                raise Cancelled()
            self._cond.wait(poll_s)

    def _charged(self, share: object, now: float) -> float:
        seconds, when = self._charge.get(share, (0.0, now))
        return seconds * 0.5 ** ((now - when) / self.HALF_LIFE_S)

    def _count_contention(self, now: float) -> None:
        """Bring the served call's contended time up to ``now`` (the lock is held; call it before the waiting
        calls change)."""
        if self._serving is not None and self._waiting:
            self._contended_s += now - self._contended_mark
        self._contended_mark = now

    def _charge_serving(self) -> None:
        """Charge the share being served for the time it held the model while others waited (the lock is
        held)."""
        if self._serving is None:
            return
        now = self._clock()
        self._count_contention(now)
        self._charge[self._serving_share] = (
            self._charged(self._serving_share, now) + self._contended_s + self.CALL_CHARGE, now)
        if len(self._charge) > self._MEMORY:  # forget the shares charged least
            for old in sorted(self._charge, key=lambda s: self._charged(s, now))[: self._MEMORY // 2]:
                del self._charge[old]
                self._last_turn.pop(old, None)

    def _order(self) -> list[int]:
        """The waiting tickets in the order they would be served (the lock is held)."""
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
            self._serving, self._served_cancel, self._serving_share = None, None, None
            return
        ticket = self._order()[0]
        self._count_contention(self._clock())
        share, cancel = self._waiting.pop(ticket)
        self._turns += 1
        self._last_turn[share] = self._turns
        self._serving, self._served_cancel, self._serving_share = ticket, cancel, share
        self._served_since = self._contended_mark = self._clock()
        self._contended_s = 0.0
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

    def give_way(self, cancel: threading.Event | None, suspend: Callable[[], T],
                 resume: Callable[[T], None]) -> bool:
        """Between two tokens of the call being served: when it should give way, ``suspend()`` its state, wait
        for the next turn and ``resume`` it. True when it gave way. On ``Cancelled`` the gate is not held."""
        if not self.should_yield():
            return False
        state = suspend()
        with self._cond:
            self.gave_way += 1
        self.yield_turn(cancel)
        resume(state)
        return True
