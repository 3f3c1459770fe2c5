"""NoR: the model answers from its own knowledge, with no retrieval (baseline)."""

from __future__ import annotations

from typing import Iterator

from pipeline.answering import stream_answer
from pipeline.context import RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.methods.base import MethodSpec
from pipeline.prompting import answer_prompt
from pipeline.settings import NoSettings


def run(question: str, ctx: RunContext, tracer: Tracer, settings: NoSettings) -> Iterator[StepEvent]:
    """Answer ``question`` from the model alone."""
    prompt = answer_prompt("nor_answer", ctx.settings.answer_style)
    yield from stream_answer(ctx, tracer, prompt, {"question": question}, passages=[], grounded=False)


METHOD = MethodSpec(
    name="nor", label="NoR (no retrieval)", run=run,
    summary="The model answers from what it knows, reading nothing (a baseline).",
    prompts=("nor_answer", "nor_answer_short"),
)
