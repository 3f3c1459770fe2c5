"""The Ask tab's logic: one browser session's question, run by the run service and streamed into the chat and
the reasoning view. Only presentation lives here; follow-ups, Auto, the run context and traces are the
service's."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.service import Conversation, RunRequest, RunService
from pipeline.web import WebSource
from ui.answer import answer_message
from ui.view import render


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


def trace_dir(data_dir: Path, session: Session) -> Path:
    """Where a session's traces are saved."""
    return Path(data_dir) / "traces" / session.id


def run_question(service: RunService, session: Session, history: list, request: RunRequest, traces: Path):
    """Run the session's pending question (recorded by the Ask handler, which also appended it to ``history``).
    Yields ``(history, view html, trace files)`` after every event; never raises: every failure is an event
    the chat shows. Stops writing when the person starts a new conversation."""
    try:
        yield from _run(service, session, history, request, traces)
    finally:
        session.running = False


def _run(service: RunService, session: Session, history: list, request: RunRequest, traces: Path):
    generation = session.generation
    run = service.start(request, conversation=session.conversation, cancel=session.cancel, web=session.web,
                        trace_dir=trace_dir(traces, session))
    history = history + [{"role": "assistant", "content": answer_message(run.state, run.id)}]
    yield history, render(run.state), None
    for _event in run:
        if session.generation != generation:
            continue  # a new conversation began: let the stopped run end without touching the chat
        history[-1] = {"role": "assistant", "content": answer_message(run.state, run.id)}
        yield history, render(run.state), None
    if session.generation != generation:
        return
    history[-1] = {"role": "assistant", "content": answer_message(run.state, run.id)}
    yield history, render(run.state), [str(p) for p in run.trace_files] or None
