"""Steps shared by methods: retrieving with events, and streaming a cited answer token by token."""

from __future__ import annotations

from typing import Generator, Iterator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import ChatResult, GenerationOptions, llm_cost
from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.payloads import AnswerPayload, RetrievePayload, TokenPayload, WarningPayload, passage_refs
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
    yield tracer.event(RetrievePayload(query=query), title, id=step, parent_id=parent_id, status=Status.RUNNING)
    result = ctx.retrieve(query, k)
    for warning in result.warnings:
        yield tracer.event(WarningPayload(message=warning), warning, parent_id=step)
    yield tracer.event(RetrievePayload(query=query, passages=passage_refs(result.passages)), title, id=step,
                       parent_id=parent_id)
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
    consumers append their text) and a final ``answer`` event with the text, citations and cost. ``extra``
    holds further ``AnswerPayload`` fields (a chain's reasoning, a tree's interpretations)."""
    step = tracer.new_id("a")
    yield tracer.event(AnswerPayload(), title, id=step, parent_id=parent_id, status=Status.RUNNING)
    options = GenerationOptions(
        max_tokens=ctx.settings.answer_max_tokens or prompt.max_tokens, temperature=ctx.settings.temperature
    )
    result: ChatResult | None = None
    for piece in ctx.llm.stream(prompt.messages(**values), options):
        ctx.check_cancelled()
        if isinstance(piece, ChatResult):
            result = piece
        else:
            yield tracer.event(TokenPayload(text=piece), title, id=step, parent_id=parent_id,
                               status=Status.RUNNING)
    if result is None:
        raise LLMCallError(f"{ctx.llm.name} ended without a result.")
    text = result.text.strip()
    cited = cited_numbers(text, len(passages))
    payload = AnswerPayload(answer=text, citations=cited, passages=passage_refs(passages),
                            finish_reason=result.finish_reason, **(extra or {}))
    yield tracer.event(payload, title, id=step, parent_id=parent_id, **llm_cost(result))
