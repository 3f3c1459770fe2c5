"""OneR: retrieve the top-k passages once with the question and answer once, citing them (baseline)."""

from __future__ import annotations

from typing import Iterator

from pipeline.answering import retrieve_step, stream_answer
from pipeline.context import RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.methods.base import MethodSpec
from pipeline.prompting import answer_prompt, format_passages
from pipeline.settings import NoSettings


def run(question: str, ctx: RunContext, tracer: Tracer, settings: NoSettings) -> Iterator[StepEvent]:
    """Retrieve with the question, then stream an answer citing the passages as [1], [2]..."""
    passages = yield from retrieve_step(ctx, tracer, question)
    ctx.check_cancelled()
    values = {"question": question, "passages": format_passages(passages) or "(no passages found)"}
    prompt = answer_prompt("oner_answer", ctx.settings.answer_style)
    yield from stream_answer(ctx, tracer, prompt, values, passages)


METHOD = MethodSpec(
    name="oner", label="OneR (retrieve once)", run=run,
    summary="One retrieval with the question, one cited answer: right for single-fact questions.",
    chosen_because="it asks for one plain fact that one retrieval can find",
    prompts=("oner_answer", "oner_answer_short"),
)
