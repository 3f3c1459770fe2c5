"""The methods, each one generator shared by the UI, the CLI and the evaluation, and the safe way to run one."""

from __future__ import annotations

import logging

from types import ModuleType
from typing import Iterator

from models.errors import LLMCallError, ModelError
from pipeline.context import Cancelled, RunContext
from pipeline.events import EventKind, Status, StepEvent, Tracer
from pipeline.methods import ircot, nor, oner, toc

log = logging.getLogger(__name__)

METHODS: dict[str, ModuleType] = {module.NAME: module for module in (nor, oner, toc, ircot)}


def run_method(name: str, question: str, ctx: RunContext, run_id: str | None = None) -> Iterator[StepEvent]:
    """Run method ``name`` on ``question``. Stopping, model failures and bugs end the run with a warning or
    error event instead of an exception, so every consumer shows the same clear message."""
    if name not in METHODS:
        raise ValueError(f"Unknown method '{name}'. Choose one of: {', '.join(METHODS)}.")
    tracer = Tracer(name, run_id)
    question = question.strip()
    if not question:
        yield tracer.event(EventKind.ERROR, "Empty question", status=Status.FAILED,
                           payload={"message": "Type a question first."})
        return
    try:
        yield from METHODS[name].run(question, ctx, tracer)
    except Cancelled:
        yield tracer.event(EventKind.WARNING, "Stopped", payload={"message": "The run was stopped."})
    except (LLMCallError, ModelError) as exc:
        yield tracer.event(EventKind.ERROR, "Model error", status=Status.FAILED, payload={"message": str(exc)})
    except Exception as exc:  # a bug: logged with its traceback, shown to the person as an error step
        log.exception("method %s failed on %r", name, question)
        yield tracer.event(EventKind.ERROR, "Internal error", status=Status.FAILED,
                           payload={"message": f"{type(exc).__name__}: {exc}"})
