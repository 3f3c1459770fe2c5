"""Tree of Clarifications' long-form answer: from the kept interpretations and their passages, every kept
answer covered."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from langchain_core.documents import Document

from pipeline.answering import stream_answer
from pipeline.context import RunContext
from pipeline.events import StepEvent, Tracer
from pipeline.payloads import QAPair, TreeExtras
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.text import normalize_answer

if TYPE_CHECKING:
    from pipeline.methods.toc.tree import Node


def kept_readings(nodes: list[Node], settings) -> list[Node]:
    """The readings an answer is written from: the kept and restored ones, in tree order, at most
    ``max_valid_nodes``."""
    return [n for n in nodes if n.valid][: settings.max_valid_nodes]


def write_answer(ctx: RunContext, tracer: Tracer, question: str, chosen: list[Node], pool: list[Document],
                 settings, *, parent_id: str | None) -> Iterator[StepEvent]:
    """ToC's answer step: the long answer from the ``chosen`` readings (their questions, answers and evidence
    passages) and the retrieved ``pool``, under ``parent_id`` (the tree's root). The tree calls it once its
    readings are kept or pruned; a run resumed with edits calls it alone with the readings the edits leave
    (``pipeline.methods.toc.steer``). Without a reading, the question is answered as unambiguous from the pool;
    with short answers, from the readings' passages then the pool's."""
    if not chosen:
        passages = pool[: ctx.settings.top_k]
        values = {"question": question, "passages": format_passages(passages) or "(no passages found)"}
        yield from stream_answer(ctx, tracer, answer_prompt("oner_answer", ctx.settings.answer_style), values,
                                 passages, parent_id=parent_id,
                                 title="Answer (treated as unambiguous: no interpretation survived)",
                                 extras=TreeExtras(unambiguous=True))
        return
    passages: list[Document] = []
    for node in chosen:
        if node.evidence is not None and node.evidence.id not in {p.id for p in passages}:
            passages.append(node.evidence)
    passages = passages[: settings.answer_passages]
    interpretations = [QAPair(question=n.question, answer=n.answer or "") for n in chosen]
    if ctx.settings.answer_style == "short":
        # A short-answer file (HotpotQA and the like, which Auto may send here) is scored on one phrase, not on a
        # long answer: answer the question itself from the kept interpretations' passages, then the pool's.
        passages = (passages + [p for p in pool if p.id not in {q.id for q in passages}])[: ctx.settings.top_k]
        values = {"question": question, "passages": format_passages(passages)}
        yield from stream_answer(ctx, tracer, answer_prompt("oner_answer", "short"), values, passages,
                                 parent_id=parent_id, title="Answer (short: from the kept interpretations' passages)",
                                 extras=TreeExtras(unambiguous=False, interpretations=interpretations))
        return
    lines = "\n".join(f"- {n.question} {n.answer}" for n in chosen)
    values = {"question": question, "passages": format_passages(passages), "interpretations": lines}
    cover = (lambda text: cover_interpretations(text, chosen, passages)) if settings.cover_answers else None
    # Each answer passage holds one interpretation's answer, not necessarily the ambiguous question's terms
    # ("WW1" where passages say "First World War"): the support check reads what OneR would read as well, and
    # accepts a kept interpretation's question, restated in the passages' words, in place of the question.
    retrieved = passages + [p for p in pool[: ctx.settings.top_k] if p.id not in {q.id for q in passages}]
    # The covering sentences repeat the readings' answers, read from their own passages (which may be past the
    # answer's few): the answer check reads those passages' instructions too.
    checked = list(retrieved)
    for read in (p for n in chosen for p in (n.source, n.evidence) if p is not None):
        if read.id not in {p.id for p in checked}:
            checked.append(read)
    prompt = load_prompt("toc_answer_brief" if settings.answer_length == "brief" else "toc_answer")
    yield from stream_answer(ctx, tracer, prompt, values, passages, parent_id=parent_id,
                             title="Answer", finish=cover, support_passages=retrieved, check_passages=checked,
                             support_questions=[n.question for n in chosen],
                             extras=TreeExtras(unambiguous=False, interpretations=interpretations))


def cover_interpretations(text: str, chosen: list[Node], passages: list[Document]) -> str:
    """``text`` with a sentence added for each kept interpretation whose answer it does not mention: the
    clarified question and its answer, citing the passage that holds the answer."""
    numbers = {p.id: i for i, p in enumerate(passages, 1)}
    added = []
    for node in chosen:
        answer = node.answer or ""
        if not answer or _same_answer_in(answer, text):
            continue
        cite = f" [{numbers[node.evidence.id]}]" if node.evidence is not None and node.evidence.id in numbers else ""
        added.append(f"{node.question.rstrip()} {answer.rstrip('.')}{cite}.")
    return " ".join([text.rstrip(), *added]) if added else text


def _same_answer_in(answer: str, text: str) -> bool:
    """Whether ``text`` mentions ``answer`` (normalised, as whole words)."""
    needle = normalize_answer(answer)
    return bool(needle) and f" {needle} " in f" {normalize_answer(text)} "
