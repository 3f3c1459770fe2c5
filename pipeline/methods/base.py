"""What a method declares to be a plug-in (``MethodSpec``), and the safe way to run one.

A method is a generator of step events, ``run(question, ctx, tracer, settings)``, given its own typed settings.
It declares its name and label, its settings model, the prompt files it uses (their versions go into evaluation
results), what the view should call its structure, why Auto would choose it, what the evaluation records from
its folded run and any extra evaluation scores it has. UI controls and CLI flags for its settings are generated
from the settings model.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Literal, TypeVar

from pydantic import BaseModel

from models.errors import LLMCallError, ModelError
from pipeline.context import Cancelled, RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.payloads import ErrorPayload, WarningPayload
from pipeline.settings import NoSettings

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalItem
    from pipeline.fold import RunState
    from pipeline.resume import Steering

log = logging.getLogger(__name__)

Structure = Literal["answer", "tree", "chain", "graph", "timeline"]

S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True)
class MethodSpec(Generic[S]):
    """A method as the app, the CLI and the evaluation know it.

    - ``run``: the method itself, given the question, the run's context, the tracer that makes its events and
      its settings (an instance of ``settings``).
    - ``summary``: one line for people: what it does and when it helps.
    - ``chosen_because``: Auto's reason for choosing it ("it asks for one plain fact ..."); empty when Auto
      never picks it.
    - ``record``: what the evaluation keeps of a folded run besides the answer and scores (a tree's nodes, a
      chain's sentences, a walk's visits), under keys of the method's choosing.
    - ``scores``: extra evaluation scores from an item and the folded run.
    - ``edits``: the edits a person may make to a finished run of it (``pipeline.edits``): every method takes
      ``drop_passage``; a tree of interpretations takes ``prune``, ``restore`` and ``edit_reading`` as well.
    - ``reanswer``: the method's own answer step run again after edits (``pipeline.resume``), given the
      ``Steering`` (the run folded with the edits, the answer they change, the passages dropped); None: the
      generic reader (``pipeline.resume.read_again``) writes the new answer.
    """

    name: str
    label: str
    run: Callable[[str, RunContext, Tracer, S], Iterator[StepEvent]]
    summary: str = ""
    chosen_because: str = ""
    settings: type[S] = NoSettings
    structure: Structure = "answer"
    prompts: tuple[str, ...] = ()
    record: Callable[["RunState"], dict[str, Any]] | None = None
    scores: Callable[["EvalItem", "RunState"], dict[str, float]] | None = None
    edits: tuple[str, ...] = ("drop_passage",)
    reanswer: Callable[["Steering", RunContext, Tracer, S], Iterator[StepEvent]] | None = None

    def prompt_versions(self) -> dict[str, Any]:
        from pipeline.prompting import load_prompt

        return {name: load_prompt(name).version for name in self.prompts}


def run_method(spec: MethodSpec, question: str, ctx: RunContext, run_id: str | None = None,
               tracer: Tracer | None = None) -> Iterator[StepEvent]:
    """Run ``spec`` on ``question`` with its settings from ``ctx.settings``. Stopping, model failures and bugs
    end the run with a warning or error event instead of an exception, so every consumer shows the same clear
    message."""
    tracer = tracer or Tracer(spec.name, run_id)
    settings = ctx.settings.for_method(spec.name, spec.settings)
    yield from guarded(lambda: spec.run(question, ctx, tracer, settings), tracer,
                       f"method {spec.name} failed on {question!r}")


def guarded(steps: Callable[[], Iterator[StepEvent]], tracer: Tracer, failure: str) -> Iterator[StepEvent]:
    """The events of ``steps()``, a method's run or a resumed run's recomputed steps, with stopping, model
    failures and bugs ending them in a warning or error event instead of an exception; ``failure`` says in the
    server log what failed on a bug."""
    try:
        yield from steps()
    except Cancelled:
        yield tracer.event(WarningPayload(message="The run was stopped.", stopped=True), "Stopped")
    except (LLMCallError, ModelError) as exc:
        yield tracer.event(ErrorPayload(message=str(exc)), "Model error")
    except Exception:  # a bug: its detail (paths, addresses) goes to the server log only, under a reference
        reference = uuid.uuid4().hex[:8]
        log.exception("[%s] %s", reference, failure)
        yield tracer.event(ErrorPayload(message=f"Something went wrong inside the app (reference {reference}); "
                                                "the operator can find the details in the server log under "
                                                "that reference."), "Internal error")
