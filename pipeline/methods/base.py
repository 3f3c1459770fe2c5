"""What a method declares to be a plug-in (``MethodSpec``), and the safe way to run one.

A method is a generator of step events; it declares its name and label, its settings model, the prompt files
it uses (their versions go into evaluation results), what the view should call its structure, and any extra
evaluation scores it has. UI controls and CLI flags for its settings are generated from the settings model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal

from pydantic import BaseModel

from models.errors import LLMCallError, ModelError
from pipeline.context import Cancelled, RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.payloads import ErrorPayload, WarningPayload
from pipeline.settings import NoSettings

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalItem
    from pipeline.fold import RunState

log = logging.getLogger(__name__)

Structure = Literal["answer", "tree", "chain", "graph", "timeline"]


@dataclass(frozen=True)
class MethodSpec:
    """A method as the app, the CLI and the evaluation know it."""

    name: str
    label: str
    run: Callable[[str, RunContext, Tracer], Iterator[StepEvent]]
    summary: str = ""  # one line for people: what it does and when it helps
    settings: type[BaseModel] = NoSettings
    structure: Structure = "answer"
    prompts: tuple[str, ...] = ()
    scores: Callable[["EvalItem", "RunState"], dict[str, float]] | None = None

    def prompt_versions(self) -> dict[str, Any]:
        from pipeline.prompting import load_prompt

        return {name: load_prompt(name).version for name in self.prompts}


def run_method(spec: MethodSpec, question: str, ctx: RunContext, run_id: str | None = None,
               tracer: Tracer | None = None) -> Iterator[StepEvent]:
    """Run ``spec`` on ``question``. Stopping, model failures and bugs end the run with a warning or error
    event instead of an exception, so every consumer shows the same clear message."""
    tracer = tracer or Tracer(spec.name, run_id)
    ctx.method_settings = ctx.settings.for_method(spec.name, spec.settings)
    try:
        yield from spec.run(question, ctx, tracer)
    except Cancelled:
        yield tracer.event(WarningPayload(message="The run was stopped."), "Stopped")
    except (LLMCallError, ModelError) as exc:
        yield tracer.event(ErrorPayload(message=str(exc)), "Model error")
    except Exception as exc:  # a bug: logged with its traceback, shown to the person as an error step
        log.exception("method %s failed on %r", spec.name, question)
        yield tracer.event(ErrorPayload(message=f"{type(exc).__name__}: {exc}"), "Internal error")
