"""OneR: retrieve the top-k passages once with the question and answer once, citing them (baseline)."""

from __future__ import annotations

from typing import Iterator

from pipeline.answering import retrieve_step, stream_answer
from pipeline.context import RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.prompting import format_passages, load_prompt

NAME = "oner"
LABEL = "OneR (retrieve once)"


def run(question: str, ctx: RunContext, tracer: Tracer) -> Iterator[StepEvent]:
    """Retrieve with the question, then stream an answer citing the passages as [1], [2]..."""
    passages = yield from retrieve_step(ctx, tracer, question)
    ctx.check_cancelled()
    values = {"question": question, "passages": format_passages(passages) or "(no passages found)"}
    yield from stream_answer(ctx, tracer, load_prompt("oner_answer"), values, passages)
