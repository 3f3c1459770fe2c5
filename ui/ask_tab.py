"""The Ask tab's logic: one browser session's question, run by the run service and streamed into the chat and
the reasoning view. Only presentation lives here; follow-ups, Auto, the run context and traces are the
service's."""

from __future__ import annotations

import contextlib
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.methods import METHODS
from pipeline.runtime import model_queue_position
from pipeline.fold import RunState
from pipeline.service import Conversation, Run, RunRequest, RunService
from pipeline.web import WebSource
from ui.answer import answer_message
from ui.background import in_background
from ui.picture import Column, compare_html, picture_html, picture_placeholder, reasoning_html
from pipeline.escaping import md_safe


WAKE_S = 0.5  # while a run yields no step for this long, the chat checks whether it waits for the model


@dataclass
class Session:
    """What one browser session owns: its Stop switch, its web cache, its pending question, whether a run is
    going on, its conversation, and which conversation is current (bumped by "New conversation")."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    cancel: threading.Event = field(default_factory=threading.Event)
    web: WebSource = field(default_factory=WebSource)
    question: str = ""
    running: bool = False  # one question at a time per session: Ask is refused until this run ends
    generation: int = 0  # bumped by "New conversation": an older run stops writing into the chat
    conversation: Conversation = field(default_factory=Conversation)
    person: str = "local"  # whose session it is (set at each question): their traces go in their own folder
    refusal: str = ""  # why the question just sent may not be asked now (a limit): ``admit`` says so
    last: RunState | None = None  # the run last shown with an answer, which the person may steer (ui.steer)
    edits: list[str] | None = None  # the changes ticked for the rewrite now waiting for its turn
    offers: list[str] = field(default_factory=list)  # the "Did you mean?" readings shown under the last answer


def trace_dir(data_dir: Path, session: Session) -> Path:
    """Where a session's traces are saved: one folder per person, one below it per session."""
    return Path(data_dir) / "traces" / session.person / session.id


def run_question(service: RunService, session: Session, history: list, request: RunRequest, traces: Path):
    """Run the session's pending question (recorded by the Ask handler, which also appended it to ``history``).
    Yields ``(history, view html, picture html, comparison html, trace files)`` after every event; never
    raises: every failure is an event the chat shows. Stops writing when the person starts a new
    conversation."""
    try:
        yield from _run(service, session, history, request, traces)
    finally:
        session.running = False


def _run(service: RunService, session: Session, history: list, request: RunRequest, traces: Path):
    run = service.start(request, conversation=session.conversation, cancel=session.cancel, web=session.web,
                        trace_dir=trace_dir(traces, session))
    yield from _stream(run, session, history)


def run_steered(run: Run, session: Session, history: list):
    """Stream a run resumed with the person's edits (``ui.steer``) into the chat as ``run_question`` streams a
    run: the rewritten answer is a new chat answer under the person's line that asked for it."""
    try:
        yield from _stream(run, session, history)
    finally:
        session.running = False


def _stream(run: Run, session: Session, history: list):
    generation = session.generation
    session.last = None  # the run it showed is being replaced
    history = history + [{"role": "assistant", "content": answer_message(run.state, run.id)}]
    yield history, reasoning_html(run.state, run.id), picture_html(run.state, run.id), "", None
    waiting = None
    for event in in_background(run, WAKE_S, on_close=session.cancel.set):
        if session.generation != generation:
            continue  # a new conversation began: let the stopped run end without touching the chat
        if event is None:  # no step for a while: say so when the run waits for the model
            now = model_queue_position(session.cancel)
            if now == waiting:
                continue
            waiting = now
        with run.lock:  # the run folds its next event in the background meanwhile
            history[-1] = {"role": "assistant", "content": answer_message(run.state, run.id, waiting)}
            steps, picture = reasoning_html(run.state, run.id), picture_html(run.state, run.id)
        yield history, steps, picture, "", None
    if session.generation != generation:
        return
    history[-1] = {"role": "assistant", "content": answer_message(run.state, run.id)}
    if run.state.final_answer is not None:
        session.last = run.state
    yield (history, reasoning_html(run.state, run.id), picture_html(run.state, run.id), "",
           [str(p) for p in run.trace_files] or None)


def run_comparison(service: RunService, session: Session, history: list, request: RunRequest,
                   methods: list[str], traces: Path):
    """Run the session's pending question with each of ``methods`` in turn (the run service's ``Comparison``):
    one chat answer per method, the running method's picture, every method's steps in the list, and the
    methods' pictures and answers side by side. Yields as ``run_question`` does."""
    try:
        yield from _compare(service, session, history, request, methods, traces)
    finally:
        session.running = False


def _compare(service: RunService, session: Session, history: list, request: RunRequest, methods: list[str],
             traces: Path):
    generation = session.generation
    session.last = None  # a comparison's answers are steered from their saved traces (Replay), not here
    comparison = service.compare(request, methods, conversation=session.conversation, cancel=session.cancel,
                                 web=session.web, trace_dir=trace_dir(traces, session))
    columns = [Column(m, METHODS[m].label if m in METHODS else m) for m in comparison.methods]
    current = None

    def frame(files=None):
        runs = list(comparison.runs)
        with contextlib.ExitStack() as held:  # the running method folds its next event in the background
            for each in runs:
                held.enter_context(each.lock)
            run = current or (runs[-1] if runs else None)
            question = run.state.question if run and run.state.question else request.question
            lists = "".join(reasoning_html(r.state, r.id) for r in runs)
            picture = picture_html(run.state, run.id) if run else picture_placeholder("Comparing methods…")
            return history, lists, picture, compare_html(question, columns), files

    yield frame()
    for item in in_background(comparison, WAKE_S, on_close=session.cancel.set):
        if session.generation != generation or item is None:
            continue  # a new conversation began: let the stopped runs end without touching the chat
        run, _event = item
        # The runs list may already hold the next run (it is filled in the background): find this one's place.
        column = columns[next(i for i, r in enumerate(comparison.runs) if r is run)]
        if run is not current:  # the next method's turn: its column and its chat answer
            current = run
            column.state, column.run_id = run.state, run.id
            history = history + [{}]
        with run.lock:
            history[-1] = _labelled(column.label, answer_message(run.state, run.id))
        yield frame()
    if session.generation != generation:
        return
    yield frame([str(p) for p in comparison.trace_files] or None)


def _labelled(label: str, message: str) -> dict:
    """A chat answer of one method of a comparison, headed by the method's name."""
    return {"role": "assistant", "content": f"**{md_safe(label)}**\n\n{message}"}
