"""IRCoT (Trivedi et al., ACL 2023): chain-of-thought sentences interleaved with retrieval, for multi-hop
questions. Each new reasoning sentence is the query that fetches the next passages; a reader then answers
from everything collected.

Events: the first retrieval, then one ``hop`` per reasoning step, each the child of the step before (so the
steps draw as a chain) and carrying its sentence, its query and the passages it brought in; then the answer.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import ChatResult, llm_cost
from pipeline.answering import cited_numbers, retrieve_step, stream_answer
from pipeline.context import RunContext
from pipeline.events import EventKind, Status, StepEvent, Tracer, passage_payload
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.retrieval import deduplicate
from pipeline.text import first_sentence, has_complete_sentence, strip_citations

NAME = "ircot"
LABEL = "IRCoT (reasoning interleaved with retrieval)"

_ANSWER_IS = re.compile(r"answer is\s*:?\s*(.*)", re.IGNORECASE | re.DOTALL)
_CONCLUDING = re.compile(r"^(so|thus|therefore|hence|in conclusion)\b", re.IGNORECASE)


def clean_query(sentence: str) -> str | None:
    """The retrieval query a reasoning sentence makes, or None when it makes none: an empty sentence, or one
    that only concludes ("So ...", "Thus ...", "... the answer is ...") asks for nothing new."""
    text = strip_citations(sentence).strip(" .")
    if not re.search(r"\w\w", text) or _CONCLUDING.match(text) or _ANSWER_IS.search(text):
        return None
    return text


def extract_answer(text: str) -> str | None:
    """The short answer after "answer is" in ``text`` (without citations or a closing period), or None."""
    match = _ANSWER_IS.search(text)
    if not match:
        return None
    answer = strip_citations(match.group(1).strip().splitlines()[0] if match.group(1).strip() else "")
    return answer.strip(" .\"'*") or None


def run(question: str, ctx: RunContext, tracer: Tracer) -> Iterator[StepEvent]:
    """Retrieve K passages with the question, then reason one sentence at a time, retrieving K more with each
    sentence, until a sentence gives the answer or the step limit; then answer from the collected passages."""
    cfg = ctx.settings.ircot
    root = tracer.new_id("r")
    # The retrieval event numbers these passages as the prompts will: the retriever already de-duplicates.
    pool = yield from retrieve_step(ctx, tracer, question, k=min(cfg.k, cfg.max_passages), step_id=root)
    prompt = load_prompt("ircot_reason")
    sentences: list[str] = []
    parent, conclusion = root, None

    for step in range(1, cfg.max_steps + 1):
        ctx.check_cancelled()
        hop = tracer.new_id("h")
        yield tracer.event(EventKind.HOP, f"Step {step}", id=hop, parent_id=parent, status=Status.RUNNING,
                           payload={"step": step})
        try:
            result = _reason(ctx, prompt, question, pool, sentences, prompt.texts["next_step"])
        except LLMCallError as exc:  # e.g. the prompt outgrew the context: answer from what was collected
            message = f"Reasoning stopped at step {step}: {exc}"
            yield tracer.event(EventKind.HOP, f"Step {step}", id=hop, parent_id=parent, status=Status.FAILED,
                               payload={"step": step, "passages": [], "stop": message})
            yield tracer.event(EventKind.WARNING, message, parent_id=hop, payload={"message": message})
            break
        sentence = first_sentence(result.text)
        query = clean_query(sentence)
        payload = {"step": step, "sentence": sentence, "query": query, "passages": [], "duplicates": 0}
        stop_reason = None
        if not sentence:
            stop_reason = "The model wrote no further reasoning."
        elif sentence in sentences:
            stop_reason = "The model repeated an earlier step."
        else:
            sentences.append(sentence)
            conclusion = extract_answer(sentence)
            if conclusion is not None:
                stop_reason = "The reasoning reached an answer."
        if query and stop_reason is None:
            if len(pool) >= cfg.max_passages:
                payload["note"] = f"No retrieval: {cfg.max_passages} passages already collected."
            else:
                added, payload["duplicates"] = yield from _new_passages(ctx, tracer, hop, query, pool)
                payload["passages"] = [passage_payload(p, len(pool) + i) for i, p in enumerate(added, 1)]
                pool += added
        payload["pool_size"] = len(pool)
        if stop_reason:
            payload["stop"] = stop_reason
        yield tracer.event(EventKind.HOP, f"Step {step}: {sentence or '(nothing)'}", id=hop, parent_id=parent,
                           payload=payload, **llm_cost(result))
        parent = hop
        if stop_reason:
            break

    ctx.check_cancelled()
    if cfg.reader == "direct":
        read = pool
        if cfg.reader_passages and len(pool) > cfg.reader_passages and ctx.reranker is not None:
            query = " ".join([question, *map(strip_citations, sentences)])
            read = ctx.reranker.rerank(query, pool, cfg.reader_passages)
        values = {"question": question, "passages": format_passages(read) or "(no passages found)"}
        yield from stream_answer(ctx, tracer, answer_prompt("oner_answer", ctx.settings.answer_style), values,
                                 read, parent_id=parent,
                                 extra={"reader": "direct", "reasoning": sentences,
                                        "collected": [passage_payload(p, i) for i, p in enumerate(pool, 1)]})
        return
    yield from _conclude(ctx, tracer, prompt, question, pool, sentences, conclusion, parent)


def _new_passages(ctx: RunContext, tracer: Tracer, hop: str, query: str, pool: list[Document]):
    """Up to K passages for ``query`` that are not (near-)copies of collected ones, within the cap; yields a
    warning per failed source; returns them and how many retrieved passages were copies."""
    cfg = ctx.settings.ircot
    # Ask for enough that K new ones remain once those already collected are dropped.
    retrieved = ctx.retrieve(query, cfg.k + len(pool))
    for warning in retrieved.warnings:
        yield tracer.event(EventKind.WARNING, warning, parent_id=hop, payload={"message": warning})
    new = deduplicate(retrieved.passages, against=pool)
    return new[: min(cfg.k, cfg.max_passages - len(pool))], len(retrieved.passages) - len(new)


def _reason(ctx: RunContext, prompt, question: str, pool: list[Document], sentences: list[str],
            task: str, *, first_only: bool = True) -> ChatResult:
    values = {
        "question": question,
        "passages": format_passages(pool) or "(no passages found)",
        "reasoning": " ".join(sentences) or "(none yet)",
        "task": task,
    }
    options = prompt.options(ctx.settings.temperature)
    if first_only:  # only the first sentence is kept: stop generating once it is complete
        options = replace(options, until=has_complete_sentence)
    return ctx.llm.chat(prompt.messages(**values), options)


def _conclude(ctx: RunContext, tracer: Tracer, prompt, question: str, pool: list[Document],
              sentences: list[str], conclusion: str | None, parent: str) -> Iterator[StepEvent]:
    """The chain-of-thought reader: the chain's own conclusion, or one more call to reach one."""
    step = tracer.new_id("a")
    yield tracer.event(EventKind.ANSWER, "Answer", id=step, parent_id=parent, status=Status.RUNNING)
    cost: dict = {"llm_calls": 0}
    reasoning = list(sentences)
    if conclusion is None:
        result = _reason(ctx, prompt, question, pool, sentences, prompt.texts["conclude"], first_only=False)
        cost = llm_cost(result)
        reasoning.append(" ".join(result.text.split()))
        conclusion = extract_answer(result.text) or first_sentence(result.text)
    text = conclusion if ctx.settings.answer_style == "short" else " ".join(reasoning)
    yield tracer.event(
        EventKind.ANSWER,
        "Answer",
        id=step,
        parent_id=parent,
        payload={
            "answer": text,
            "short_answer": conclusion,
            "citations": cited_numbers(" ".join(reasoning), len(pool)),
            "passages": [passage_payload(p, i) for i, p in enumerate(pool, 1)],
            "reader": "cot",
            "reasoning": reasoning,
        },
        **cost,
    )

