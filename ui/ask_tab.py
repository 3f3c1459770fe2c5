"""The Ask tab's logic: one question's run for one browser session, streamed into the chat and the view."""

from __future__ import annotations

import logging
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from corpora.store import CollectionError
from models.errors import ModelError
from pipeline.conversation import with_context
from pipeline.methods import METHODS, run_method
from pipeline.routing import choose_method
from pipeline.runtime import Runtime
from pipeline.settings import IRCoTSettings, Settings, ToCSettings
from pipeline.web import WebSource
from ui.answer import answer_message
from ui.traces import save_trace
from ui.view import RunView, esc

log = logging.getLogger(__name__)

AUTO = "auto"


@dataclass
class Session:
    """What one browser session owns: its Stop switch, its web cache, its pending question, whether a run is
    going on, which conversation is current, and where its traces go."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    cancel: threading.Event = field(default_factory=threading.Event)
    web: WebSource = field(default_factory=WebSource)
    question: str = ""
    running: bool = False  # one question at a time per session: Ask is refused until this run ends
    conversation: int = 0  # bumped by "New conversation": an older run stops writing into the chat
    asked: list[str] = field(default_factory=list)  # questions run in this conversation (follow-ups join them)

    def trace_dir(self, runtime: Runtime) -> Path:
        base = Path(runtime.config.data_dir) / "traces" if runtime.config.data_dir else Path(tempfile.gettempdir())
        return base / self.id


@dataclass(frozen=True)
class Knobs:
    """The settings panel's values for one run."""

    method: str = AUTO
    collections: tuple[str, ...] = ()
    use_web: bool = False
    model: str | None = None
    top_k: int = Settings().top_k
    answer_style: str = "long"
    toc_max_depth: int = ToCSettings().max_depth
    toc_max_valid_nodes: int = ToCSettings().max_valid_nodes
    toc_keep_threshold: float = ToCSettings().keep_threshold
    ircot_k: int = IRCoTSettings().k
    ircot_max_steps: int = IRCoTSettings().max_steps
    ircot_reader: str = IRCoTSettings().reader

    def settings(self) -> Settings:
        return Settings(
            top_k=int(self.top_k), answer_style=self.answer_style, use_web=bool(self.use_web),
            toc=ToCSettings(max_depth=int(self.toc_max_depth), max_valid_nodes=int(self.toc_max_valid_nodes),
                            keep_threshold=float(self.toc_keep_threshold)),
            ircot=IRCoTSettings(k=int(self.ircot_k), max_steps=int(self.ircot_max_steps), reader=self.ircot_reader),
        )


def pick_method(question: str, method: str) -> tuple[str, str]:
    """The method to run and the line the view shows about it."""
    if method != AUTO:
        return method, f"Method: {METHODS[method].LABEL}"
    choice = choose_method(question, set(METHODS))
    return choice.method, f"Auto picked {METHODS[choice.method].LABEL} because {choice.reason}."


def run_question(runtime: Runtime, session: Session, history: list, knobs: Knobs):
    """Run the session's pending question (recorded by the Ask handler, which also appended it to ``history``).
    Yields ``(history, view html, trace files)`` after every event; never raises: every failure becomes a
    message in the chat. Stops writing when the person starts a new conversation."""
    try:
        yield from _run(runtime, session, history, knobs)
    finally:
        session.running = False


def _run(runtime: Runtime, session: Session, history: list, knobs: Knobs):
    conversation = session.conversation
    question, follow_up = with_context(session.question, session.asked)
    session.asked.append(question)
    name, header = pick_method(question, knobs.method)
    view = RunView(f"{follow_up} {header}" if follow_up else header)
    run_id = uuid.uuid4().hex[:12]
    history = history + [{"role": "assistant", "content": answer_message(view, run_id)}]
    yield history, view.html(), None
    try:
        ctx = runtime.context(list(knobs.collections), settings=knobs.settings(), web=session.web,
                              model=knobs.model or None)
    except (CollectionError, ModelError, ValueError) as exc:
        history[-1] = {"role": "assistant", "content": f'<div class="notice notice-error">Cannot answer: '
                                                       f'{esc(str(exc))}</div>'}
        view.close()
        yield history, view.html(), None
        return
    ctx.cancel = session.cancel
    for event in run_method(name, question, ctx, run_id=run_id):
        view.add(event)
        if session.conversation != conversation:
            continue  # a new conversation began: let the stopped run end without touching the chat
        history[-1] = {"role": "assistant", "content": answer_message(view, run_id)}
        yield history, view.html(), None
    if session.conversation != conversation:
        return
    view.close()
    history[-1] = {"role": "assistant", "content": answer_message(view, run_id)}
    try:
        files = [str(p) for p in save_trace(view, question, session.trace_dir(runtime))]
    except OSError as exc:
        log.warning("could not save the trace: %s", exc)
        files = None
    yield history, view.html(), files
