"""Steps shared by methods: retrieving with events, and streaming a cited answer token by token."""

from __future__ import annotations

from typing import Generator, Iterator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import ChatResult, GenerationOptions, llm_cost
from pipeline.context import RunContext
from pipeline.events import EventKind, Status, StepEvent, Tracer, passage_payload
from pipeline.prompting import Prompt
from pipeline.text import CITATION


def cited_numbers(text: str, n_passages: int) -> list[int]:
    """Passage numbers cited as [n] in ``text`` that exist, in order of first citation."""
    seen: list[int] = []
    for match in CITATION.finditer(text):
        number = int(match.group(1))
        if 1 <= number <= n_passages and number not in seen:
            seen.append(number)
    return seen


def retrieve_step(
    ctx: RunContext, tracer: Tracer, query: str, *, parent_id: str | None = None, title: str | None = None,
    k: int | None = None, step_id: str | None = None,
) -> Generator[StepEvent, None, list[Document]]:
    """Yield the retrieval step's events (and a warning per failed source); return the passages
    (``passages = yield from retrieve_step(...)``)."""
    step = step_id or tracer.new_id("r")
    title = title or f"Retrieve: {query}"
    yield tracer.event(EventKind.RETRIEVE, title, id=step, parent_id=parent_id, status=Status.RUNNING,
                       payload={"query": query})
    result = ctx.retrieve(query, k)
    for warning in result.warnings:
        yield tracer.event(EventKind.WARNING, warning, parent_id=step, payload={"message": warning})
    yield tracer.event(
        EventKind.RETRIEVE,
        title,
        id=step,
        parent_id=parent_id,
        payload={"query": query, "passages": [passage_payload(p, i) for i, p in enumerate(result.passages, 1)]},
    )
    return result.passages


def stream_answer(
    ctx: RunContext,
    tracer: Tracer,
    prompt: Prompt,
    values: dict[str, str],
    passages: list[Document],
    *,
    parent_id: str | None = None,
    title: str = "Answer",
    extra: dict | None = None,
) -> Iterator[StepEvent]:
    """Generate the answer, yielding one ``answer_token`` event per piece (all with the answer step's id:
    consumers append their text) and a final ``answer`` event with the text, citations and cost."""
    step = tracer.new_id("a")
    yield tracer.event(EventKind.ANSWER, title, id=step, parent_id=parent_id, status=Status.RUNNING)
    options = GenerationOptions(
        max_tokens=ctx.settings.answer_max_tokens or prompt.max_tokens, temperature=ctx.settings.temperature
    )
    result: ChatResult | None = None
    for piece in ctx.llm.stream(prompt.messages(**values), options):
        ctx.check_cancelled()
        if isinstance(piece, ChatResult):
            result = piece
        else:
            yield tracer.event(EventKind.ANSWER_TOKEN, title, id=step, parent_id=parent_id,
                               status=Status.RUNNING, payload={"text": piece})
    if result is None:
        raise LLMCallError(f"{ctx.llm.name} ended without a result.")
    text = result.text.strip()
    cited = cited_numbers(text, len(passages))
    yield tracer.event(
        EventKind.ANSWER,
        title,
        id=step,
        parent_id=parent_id,
        payload={
            "answer": text,
            "citations": cited,
            "passages": [passage_payload(p, i) for i, p in enumerate(passages, 1)],
            "finish_reason": result.finish_reason,
            **(extra or {}),
        },
        **llm_cost(result),
    )
