"""The one way to run a question, used alike by the browser, the CLI and the evaluation; and to resume a
finished run with a person's edits (``RunService.resume``).

Given a question, a conversation, settings and a cancel switch, the service resolves a follow-up, picks the
method (Auto included), builds the run context once, runs the method and saves the trace. Every outcome is an
event: the first says which method runs and why (``route``), a question that cannot run ends in an ``error``.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from corpora.store import CollectionError
from models.errors import Cancelled, ModelError
from pipeline import auto
from pipeline.context import RunContext
from pipeline.conversation import with_context
from pipeline.edits import Edit
from pipeline.events import StepEvent, Tracer
from pipeline.fold import RunState
from pipeline.methods import METHODS, MethodSpec, run_method
from pipeline.methods.oner import METHOD as ONER
from pipeline.payloads import ErrorPayload, RoutePayload, WarningPayload
from pipeline.resume import Resumption
from pipeline.runtime import MAX_QUESTION_CHARS
from pipeline.settings import Settings
from pipeline.trace import save_trace
from pipeline.web import WebSource

log = logging.getLogger(__name__)

AUTO = "auto"


@dataclass(frozen=True)
class RunRequest:
    """What a person asked for: the question, the method (or ``auto``), the collections, the model choice
    (None: the runtime's default) and the settings (web search included)."""

    question: str
    method: str = AUTO
    collections: tuple[str, ...] = ()
    model: str | None = None
    settings: Settings = field(default_factory=Settings)


@dataclass
class Conversation:
    """The questions run so far in one conversation (a follow-up is joined with the last one)."""

    asked: list[str] = field(default_factory=list)


# Builds a run's context from the request, the session's web source and the run's Stop switch (which ends a wait
# for the model to load); raises CollectionError, ModelError or ValueError with a message for people when it
# cannot, Cancelled when stopped.
ContextBuilder = Callable[[RunRequest, "WebSource | None", threading.Event], RunContext]


class Run:
    """One question's run. Iterate it for its events; ``state`` folds them as they pass, and ``trace_files``
    holds the saved trace once the iteration ended."""

    def __init__(self, run_id: str, request: RunRequest, events: Iterator[StepEvent], trace_dir: Path | None,
                 resumed_from: str | None = None) -> None:
        self.id = run_id
        self.request = request
        self.state = RunState()
        # Held while an event is folded into ``state``: a page drawing the state from another thread holds it too.
        self.lock = threading.RLock()
        self.trace_files: list[Path] = []
        self.resumed_from = resumed_from  # a run resumed with edits: the run id of the trace it continues
        self._events = events
        self._trace_dir = trace_dir

    def __iter__(self) -> Iterator[StepEvent]:
        for event in self._events:
            with self.lock:
                self.state.add(event)
            yield event
        with self.lock:
            self.state.close()
        self.trace_files = _save(self.state, self._trace_dir, self.id, self.resumed_from)


class RunService:
    """Runs questions. ``build_context`` makes a run's context (the app's runtime does it from collections and
    a model choice); traces go to ``trace_dir`` when given. Auto is ``pipeline.auto``."""

    def __init__(self, build_context: ContextBuilder | None = None, trace_dir: Path | None = None,
                 max_question_chars: int = MAX_QUESTION_CHARS, max_run_seconds: float = 0) -> None:
        self.build_context = build_context
        self.trace_dir = trace_dir
        self.max_question_chars = max_question_chars
        self.max_run_seconds = max_run_seconds  # a run still going after this long is stopped (0: no limit)

    @classmethod
    def for_runtime(cls, runtime, trace_dir: Path | None = None) -> "RunService":
        """A service over the app's runtime: its collections, models and embedder."""
        def build(request: RunRequest, web: WebSource | None, cancel: threading.Event) -> RunContext:
            return runtime.context(list(request.collections), settings=request.settings, web=web,
                                   model=request.model, cancel=cancel)
        return cls(build, trace_dir, runtime.config.max_question_chars, runtime.config.max_run_seconds)

    def start(self, request: RunRequest, *, conversation: Conversation | None = None,
              cancel: threading.Event | None = None, web: WebSource | None = None,
              context: RunContext | None = None, run_id: str | None = None,
              trace_dir: Path | None = None) -> Run:
        """A run of ``request`` (nothing happens until it is iterated). ``context`` replaces the built one
        (the evaluation gives each item its own corpus); ``trace_dir`` replaces the service's."""
        run_id = run_id or uuid.uuid4().hex[:12]
        events = self._events(request, run_id, conversation, cancel or threading.Event(), web, context)
        return Run(run_id, request, events, trace_dir or self.trace_dir)

    def resume(self, trace: RunState | Iterable[StepEvent], edits: Sequence[Edit], *,
               settings: Settings | None = None, model: str | None = None, cancel: threading.Event | None = None,
               web: WebSource | None = None, context: RunContext | None = None, run_id: str | None = None,
               trace_dir: Path | None = None, collections: Sequence[str] | None = None) -> Run:
        """A finished run resumed with a person's ``edits`` (``pipeline.edits``): what the browser's buttons on
        a step and ``pipeline ask --from-trace`` call. ``trace`` is the run's events (a saved trace, or the
        ``Run.state`` of a run just shown) or its folded state.

        The edits are checked at once: ``EditError`` (a ``ValueError``, one line for people) when one does not
        fit the run, before any model is loaded or any event made. Iterated, the run yields the original run's
        events as they were, then one ``edit`` step per edit, then the recomputed steps (``pipeline.resume``:
        only the method's answer step, from what the edits leave); ``state`` folds them all, and the trace is
        saved under this run's new id, so the original's stays as it was. ``settings`` (default: the defaults)
        and ``model`` are the answer step's, as a run's; Stop (``cancel``) and the time limit work as in a run.
        ``context`` replaces the built one. No collection is opened unless the edits make the run retrieve (a
        chain continued from a rewritten step): then ``collections``, by default those the trace's passages came
        from (``trace_collections``); the caller checks that the person may read them."""
        resumption = Resumption(trace, edits)
        original = resumption.original
        run_id = run_id or uuid.uuid4().hex[:12]
        if not resumption.retrieves:
            collections = ()
        elif collections is None:
            collections = trace_collections(original)
        request = RunRequest(question=resumption.question, method=resumption.method, collections=tuple(collections),
                             settings=settings or Settings(), model=model)
        events = self._resumed(resumption, request, run_id, cancel or threading.Event(), web, context)
        resumed_from = next((e.run_id for e in reversed(original.events)), None)
        return Run(run_id, request, events, trace_dir or self.trace_dir, resumed_from=resumed_from)

    def _resumed(self, resumption: Resumption, request: RunRequest, run_id: str, cancel: threading.Event,
                 web: WebSource | None, context: RunContext | None) -> Iterator[StepEvent]:
        original = resumption.original.events
        yield from original
        tracer = Tracer.continuing(original, resumption.method, run_id)
        state = RunState.of(original)
        for event in resumption.edit_events(tracer):
            state.add(event)
            yield event
        deadline = Deadline(self.max_run_seconds, cancel)
        try:
            try:
                ctx = context if context is not None else self._context(request, web, cancel)
            except Cancelled:
                yield deadline.explained(tracer.event(WarningPayload(message="The run was stopped.", stopped=True),
                                                      "Stopped"))
                return
            except (CollectionError, ModelError, ValueError) as exc:
                yield tracer.event(ErrorPayload(message=str(exc)), "Cannot answer")
                return
            ctx.stop_with(cancel)
            for event in resumption.recompute(state, ctx, tracer):
                yield deadline.explained(event)
        finally:
            deadline.cancel()

    def compare(self, request: RunRequest, methods: list[str], *, conversation: Conversation | None = None,
                cancel: threading.Event | None = None, web: WebSource | None = None,
                trace_dir: Path | None = None) -> "Comparison":
        """Runs of ``request``'s question with each of ``methods`` in turn (see ``Comparison``)."""
        return Comparison(self, request, methods, conversation, cancel or threading.Event(), web,
                          trace_dir or self.trace_dir)

    def choose(self, method: str) -> tuple[MethodSpec, str]:
        """The method to run and the reason shown (for Auto: it answers with OneR first, ``pipeline.auto``)."""
        if method == AUTO:
            return ONER, auto.QUICK_REASON
        if method not in METHODS:
            raise ValueError(f"Unknown method '{method}'. Choose one of: auto, {', '.join(METHODS)}.")
        return METHODS[method], ""

    def _events(self, request: RunRequest, run_id: str, conversation: Conversation | None,
                cancel: threading.Event, web: WebSource | None, context: RunContext | None) -> Iterator[StepEvent]:
        asked = (request.question or "").strip()
        problem = self.problem(asked)
        tracer = Tracer(request.method, run_id)
        if problem:
            yield tracer.event(ErrorPayload(message=problem), "Cannot answer")
            return
        question, follow_up = with_context(asked, conversation.asked if conversation else [])
        if conversation is not None:
            conversation.asked.append(question)
        try:
            spec, reason = self.choose(request.method)
        except ValueError as exc:
            yield tracer.event(ErrorPayload(message=str(exc)), "Cannot answer")
            return
        tracer.method = spec.name
        yield tracer.event(RoutePayload(method=spec.name, label=spec.label, structure=spec.structure,
                                        question=question, reason=reason, auto=request.method == AUTO,
                                        follow_up=follow_up), spec.label)
        deadline = Deadline(self.max_run_seconds, cancel)
        try:
            for event in self._run(request, spec, question, web, cancel, context, tracer):
                yield deadline.explained(event)
        finally:
            deadline.cancel()

    def _run(self, request: RunRequest, spec: MethodSpec, question: str, web: WebSource | None,
             cancel: threading.Event, context: RunContext | None, tracer: Tracer) -> Iterator[StepEvent]:
        try:
            ctx = context if context is not None else self._context(request, web, cancel)
        except Cancelled:
            yield tracer.event(WarningPayload(message="The run was stopped.", stopped=True), "Stopped")
            return
        except (CollectionError, ModelError, ValueError) as exc:
            yield tracer.event(ErrorPayload(message=str(exc)), "Cannot answer")
            return
        ctx.stop_with(cancel)
        yield from run_method(auto.AUTO if request.method == AUTO else spec, question, ctx, tracer=tracer)

    def problem(self, question: str) -> str | None:
        """Why ``question`` cannot be asked (empty, or over the length limit), or None: checked again by every
        run, and by the browser before a question leaves its box."""
        if not question:
            return "Type a question first."
        if len(question) > self.max_question_chars:
            return (f"The question is {len(question):,} characters long; the limit is "
                    f"{self.max_question_chars:,}. Ask it in fewer words.")
        return None

    def _context(self, request: RunRequest, web: WebSource | None, cancel: threading.Event) -> RunContext:
        if self.build_context is None:
            raise ValueError("This service has no way to build a run context.")
        return self.build_context(request, web, cancel)


class Deadline:
    """Presses a run's Stop when it has run ``seconds`` (0: never), so that no question holds the server for
    ever; the run's "stopped" step then says it was this limit, not a person."""

    def __init__(self, seconds: float, cancel: threading.Event) -> None:
        self.seconds = seconds
        self.fired = False
        self._cancel = cancel
        self._timer = threading.Timer(seconds, self._fire) if seconds > 0 else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        if not self._cancel.is_set():  # a person's own Stop came first: theirs is the reason
            self.fired = True
            self._cancel.set()

    def explained(self, event: StepEvent) -> StepEvent:
        """``event``, or, for the warning that ends a run this deadline stopped, one that says so."""
        if self.fired and isinstance(event.payload, WarningPayload) and event.payload.stopped:
            message = (f"This server stops a question after {self.seconds:g} s (--max-run-seconds); what the run "
                       "had found by then is shown.")
            return event.model_copy(update={"payload": WarningPayload(message=message, stopped=True),
                                            "title": "Time limit"})
        return event

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


class Comparison:
    """Several methods on one question, one run after another (they share one model, so they take turns), each
    streaming its events as it goes. Iterate it for ``(run, event)`` pairs; ``runs`` holds the runs started so
    far. The question is resolved once (a follow-up is joined with the previous question once, and recorded
    once in the conversation); Stop ends the running method and starts no other."""

    def __init__(self, service: RunService, request: RunRequest, methods: list[str],
                 conversation: Conversation | None, cancel: threading.Event, web: WebSource | None,
                 trace_dir: Path | None) -> None:
        self.request = request
        self.methods = list(dict.fromkeys(methods))
        self.runs: list[Run] = []
        self._service, self._conversation, self._cancel = service, conversation, cancel
        self._web, self._trace_dir = web, trace_dir

    def __iter__(self) -> Iterator[tuple[Run, StepEvent]]:
        # Each run resolves the question against the conversation as it was before the comparison (the same
        # answer every time); only the first run's record of it is kept.
        before = list(self._conversation.asked) if self._conversation is not None else None
        for index, method in enumerate(self.methods):
            if index and self._cancel.is_set():
                break
            conversation = self._conversation if index == 0 or before is None else Conversation(list(before))
            run = self._service.start(replace(self.request, method=method), conversation=conversation,
                                      cancel=self._cancel, web=self._web, trace_dir=self._trace_dir)
            self.runs.append(run)
            for event in run:
                yield run, event

    @property
    def trace_files(self) -> list[Path]:
        return [path for run in self.runs for path in run.trace_files]


def trace_collections(state: RunState) -> tuple[str, ...]:
    """The collections a run's passages came from, in the order first met (web pages have none)."""
    names = [p.collection for event in state.events for p in getattr(event.payload, "passages", None) or []
             if getattr(p, "collection", None)]
    return tuple(dict.fromkeys(names))


def _save(state: RunState, folder: Path | None, run_id: str | None = None,
          resumed_from: str | None = None) -> list[Path]:
    if folder is None or not state.events:
        return []
    header = state.route.describe() if state.route else ""
    if resumed_from:
        header = f"{header} · Resumed with your edits from run {resumed_from}".lstrip(" ·")
    try:
        return save_trace(state, folder, header, picture=True, run_id=run_id)
    except OSError as exc:
        log.warning("could not save the trace: %s", exc)
        return []
