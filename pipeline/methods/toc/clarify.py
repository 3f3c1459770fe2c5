"""Expanding a node of the tree: retrieval-augmented clarification over the node's passages (the paper's RAC, or
one short call per passage), proposing the node's children."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import llm_cost
from models.structured import generate_structured
from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods.toc.settings import Clarifications, PassageReading, ToCSettings
from pipeline.payloads import ExpandPayload, QAPair, WarningPayload, passage_refs
from pipeline.prompting import format_passages, load_prompt
from pipeline.text import normalize_answer
from pipeline.untrusted import format_passage

if TYPE_CHECKING:
    from pipeline.methods.toc.tree import Node


def _pairs(reply: Clarifications) -> list[tuple[str, str]]:
    pairs = [(" ".join(c.question.split()), " ".join(c.answer.split())) for c in reply.disambiguations]
    return [(q, a) for q, a in pairs if q and a]


MAX_ANSWER_WORDS = 12  # a one-passage reading with a longer "answer" copied a description, not a short answer

# What an expansion proposes: (clarified question, answer, the passage it was read from or None, the id of the
# expand step that proposed it).
Proposal = tuple[str, str, "Document | None", str]


class Expander:
    """Expands a node: retrieval-augmented clarification over the node's passages, as one ``expand`` step (or
    one per passage read, ``per_passage``), proposing the child nodes."""

    def __init__(self, ctx: RunContext, tracer: Tracer, question: str, settings: ToCSettings, reranker,
                 embeddings) -> None:
        self.ctx, self.tracer, self.settings, self.reranker = ctx, tracer, settings, reranker
        self.per_passage = settings.clarify == "per_passage"
        self.prompt = load_prompt("toc_read_passage" if self.per_passage else "toc_clarify")
        self.demos = [] if self.per_passage else self.prompt.select_demos(question, embeddings, settings.demos)
        self.read: set[str] = set()  # passages already read by a one-passage clarification

    @property
    def calls_needed(self) -> int:
        """LLM calls one expansion may take (a constrained retry included)."""
        return self.settings.passages_per_prompt if self.per_passage else 2

    def _passages(self, node: Node, pool: list[Document]) -> list[Document]:
        candidates = pool
        if self.per_passage:  # a deeper node reads passages no node has read yet
            fresh = [p for p in pool if p.id not in self.read]
            candidates = fresh or pool
        k = self.settings.passages_per_prompt
        if self.settings.diversity > 0 and hasattr(self.reranker, "diverse"):
            return self.reranker.diverse(node.question, candidates, k, self.settings.diversity)
        return self.reranker.rerank(node.question, candidates, k)

    def __call__(self, node: Node, pool: list[Document], nodes: list[Node]
                 ) -> Generator[StepEvent, None, tuple[list[Proposal] | None, int]]:
        top = self._passages(node, pool)
        if self.per_passage:
            return (yield from self._per_passage(node, top))
        return (yield from self._enumerate(node, top))

    def _enumerate(self, node: Node, top: list[Document]):
        ctx, tracer = self.ctx, self.tracer
        expansion = tracer.new_id("e")
        title = f"Clarify: {node.question}"
        passages = passage_refs(top)
        yield tracer.event(ExpandPayload(query=node.question, passages=passages), title, id=expansion,
                           parent_id=node.id, status=Status.RUNNING)
        messages = self.prompt.messages(self.demos, passages=format_passages(top), question=node.question)
        try:
            reply, results = generate_structured(ctx.llm, messages, self.prompt.options(ctx.settings.temperature),
                                                 Clarifications)
        except LLMCallError as exc:
            yield tracer.event(ExpandPayload(query=node.question, passages=passages, message=str(exc)), title,
                               id=expansion, parent_id=node.id, status=Status.FAILED, llm_calls=2)
            yield tracer.event(WarningPayload(message=str(exc)), "Clarification failed", parent_id=expansion)
            return None, 2
        pairs = _pairs(reply)
        payload = ExpandPayload(query=node.question, passages=passages,
                                candidates=[QAPair(question=q, answer=a) for q, a in pairs],
                                constrained_retry=len(results) > 1)
        yield tracer.event(payload, title, id=expansion, parent_id=node.id, **llm_cost(*results))
        return [(q, a, None, expansion) for q, a in pairs], len(results)

    def _per_passage(self, node: Node, top: list[Document]):
        """One ``expand`` step for the node, updated after each passage is read; each reading with an answer is a
        proposal whose source is its passage."""
        ctx, tracer = self.ctx, self.tracer
        expansion = tracer.new_id("e")
        title = f"Clarify, one passage at a time: {node.question}"
        passages = passage_refs(top)
        candidates: list[QAPair] = []
        proposals: list[Proposal] = []
        results: list = []
        failures: list[str] = []
        yield tracer.event(ExpandPayload(query=node.question, passages=passages), title, id=expansion,
                           parent_id=node.id, status=Status.RUNNING)
        for number, passage in enumerate(top, 1):
            ctx.check_cancelled()
            self.read.add(passage.id)
            messages = self.prompt.messages(question=node.question, passage=format_passage(passage))
            try:
                reply, used = generate_structured(ctx.llm, messages, self.prompt.options(ctx.settings.temperature),
                                                  PassageReading)
            except LLMCallError as exc:
                results += [None, None]
                failures.append(f"passage [{number}]: {exc}")
                continue
            results += used
            clarified, answer = " ".join(reply.question.split()), " ".join(reply.answer.split())
            if answer and normalize_answer(clarified) in ("", normalize_answer(node.question)):
                # The model restated the question: the reading is the one this passage answers.
                page = " ".join(str(passage.metadata.get("title") or "").split()) or f"passage {number}"
                clarified = f"{node.question.rstrip(' ?')} ({page})?"
            if clarified and answer:
                candidates.append(QAPair(question=clarified, answer=answer, passage=number))
                proposals.append((clarified, answer, passage, expansion))
            yield tracer.event(ExpandPayload(query=node.question, passages=passages, candidates=list(candidates)),
                               title, id=expansion, parent_id=node.id, status=Status.RUNNING)
        done = [r for r in results if r is not None]
        payload = ExpandPayload(query=node.question, passages=passages, candidates=candidates,
                                constrained_retry=len(results) > len(top), message="; ".join(failures))
        cost = llm_cost(*done)
        cost["llm_calls"] = len(results)
        yield tracer.event(payload, title, id=expansion, parent_id=node.id, **cost)
        for failure in failures:
            yield tracer.event(WarningPayload(message=failure), "Clarification failed", parent_id=expansion)
        return proposals, len(results)
