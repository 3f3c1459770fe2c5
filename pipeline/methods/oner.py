"""OneR: retrieve the top-k passages once with the question and answer once, citing them (baseline). The answer
prompt shows each passage as its window for the question (``Settings.passage_window``, ``pipeline.windows``); the
citations and the support check keep the whole passages. Auto's quick answer is this method's (``answer_once``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generator, Iterator

from langchain_core.documents import Document

from pipeline.answering import retrieve_step, stream_answer
from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods.base import MethodSpec
from pipeline.payloads import AnswerPayload
from pipeline.prompting import Prompt, answer_prompt, format_passages
from pipeline.settings import NoSettings
from pipeline.windows import windows

if TYPE_CHECKING:
    from pipeline.resume import Steering


@dataclass(frozen=True)
class OneAnswer:
    """What one retrieval and one answer produced: the passages, the prompt and values the answer was written
    from (a follow-up call can continue that conversation and reuse its cached prefix), and the finished answer
    step (None when none was written)."""

    passages: list[Document]
    prompt: Prompt
    values: dict[str, str]
    answer: StepEvent | None


def answer_once(question: str, ctx: RunContext, tracer: Tracer) -> Generator[StepEvent, None, OneAnswer]:
    """Retrieve with the question, then stream an answer citing the passages as [1], [2]...; return what it
    produced (``found = yield from answer_once(...)``)."""
    passages = yield from retrieve_step(ctx, tracer, question)
    ctx.check_cancelled()
    return (yield from answer_from(question, passages, ctx, tracer))


def answer_from(question: str, passages: list[Document], ctx: RunContext, tracer: Tracer,
                parent_id: str | None = None, extras=None) -> Generator[StepEvent, None, OneAnswer]:
    """OneR's answer step alone: stream an answer to ``question`` from ``passages``, citing them as [1], [2]...;
    return what it produced. ``answer_once`` calls it after its retrieval; a resumed run calls it with the
    passages its edits left (``reanswer``, and ``pipeline.resume.read_again`` with the method's ``extras``)."""
    shown = windows(question, passages, ctx.settings.passage_window, ctx.embeddings)
    values = {"question": question, "passages": format_passages(shown) or "(no passages found)"}
    prompt = answer_prompt("oner_answer", ctx.settings.answer_style)
    answer = None
    for event in stream_answer(ctx, tracer, prompt, values, passages, parent_id=parent_id, extras=extras):
        if isinstance(event.payload, AnswerPayload) and event.status == Status.DONE:
            answer = event
        yield event
    return OneAnswer(passages, prompt, values, answer)


def reanswer(steering: "Steering", ctx: RunContext, tracer: Tracer, settings: NoSettings) -> Iterator[StepEvent]:
    """OneR after edits: its answer step again, from the answer's passages less those dropped (no retrieval)."""
    yield from answer_from(steering.question, steering.kept_passages(), ctx, tracer,
                           parent_id=steering.answer.parent_id)


def run(question: str, ctx: RunContext, tracer: Tracer, settings: NoSettings) -> Iterator[StepEvent]:
    """Retrieve with the question, then stream an answer citing the passages as [1], [2]..."""
    yield from answer_once(question, ctx, tracer)


METHOD = MethodSpec(
    name="oner", label="OneR (retrieve once)", run=run,
    summary="One retrieval with the question, one cited answer: right for single-fact questions.",
    chosen_because="it asks for one plain fact that one retrieval can find",
    prompts=("oner_answer", "oner_answer_short"), reanswer=reanswer,
)
