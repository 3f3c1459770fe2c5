"""Tree of Clarifications (Kim et al., EMNLP 2023): a breadth-first tree of clarified interpretations of an
ambiguous question, pruned by verification and de-duplication, merged into one cited long-form answer.

Events: every tree node is a ``node`` step (question, answer, depth, state: root, candidate, kept, pruned,
restored); its parent is the ``expand`` step that proposed it (with the re-ranked passages and the model call),
whose parent is the node it expanded. Verdicts are ``verify`` events and prunings (and their undoing) ``prune``
events under their node.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generator, Iterator, Literal

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field

from models.errors import LLMCallError
from models.llm import llm_cost
from models.rerankers import RankFusionReranker
from models.structured import generate_structured
from pipeline.answering import retrieve_step, stream_answer
from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods.base import MethodSpec
from pipeline.payloads import (ExpandPayload, NodePayload, PassageRef, PrunePayload, QAPair, VerifyPayload,
                               WarningPayload, passage_refs)
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.text import normalize_answer
from pipeline.untrusted import format_passage
from pipeline.verification import EvidenceVerifier, Verifier

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalItem
    from pipeline.fold import RunState


class ToCSettings(BaseModel):
    """Tree of Clarifications (Kim et al., EMNLP 2023). Defaults are the paper's unless noted; the noted ones
    (clarify, keep_threshold, cover_answers) are the configuration measured on all 100 ASQA dev items."""

    model_config = ConfigDict(extra="forbid")

    pool_size: int = Field(20, ge=5, le=100, description="Passages retrieved for the ambiguous question, the pool "
                           "every node re-ranks. The paper retrieves 100 from Wikipedia + Bing; 20 suits the "
                           "local collections and keeps re-ranking fast on 2 cores (this app's choice).")
    passages_per_prompt: int = Field(5, ge=1, le=10, description="Top-5 re-ranked passages per RAC prompt (Sec. "
                                     "3.1); the 1.5B model does worse past 5 short passages (docs/design-notes.md).")
    demos: int = Field(3, ge=0, le=8, description="Nearest-neighbour demos per RAC prompt. The paper uses 5; 3 "
                       "keeps the prompt within the 2-core time budget (this app's choice).")
    max_valid_nodes: int = Field(10, ge=1, le=20, description="Stop after 10 valid nodes (Sec. 3.2).")
    max_depth: int = Field(3, ge=1, le=5, description="Maximum tree depth (Sec. 3.2).")
    max_failed_expansions: int = Field(3, ge=1, le=10, description="Stop after 3 expansions in a row add no "
                                       "valid node (Sec. 3.2).")
    max_llm_calls: int = Field(19, ge=3, le=60, description="Fewer than 20 LLM calls per question (Sec. 4).")
    min_valid_nodes: int = Field(2, ge=1, le=10, description="With fewer survivors, pruning is undone from the "
                                 "nodes closest to the root (Sec. 3.3; the threshold is this app's choice).")
    answer_passages: int = Field(5, ge=1, le=10, description="Answer-containing passages in the answer prompt "
                                 "(Sec. 3.3).")
    keep_threshold: float = Field(0.6, ge=0.0, le=1.0, description="A node is kept when its verification score "
                                  "(mean of P(True) and the question's relevance to the ambiguous question) "
                                  "reaches this (this app's choice, calibrated on ASQA dev items 51-72 with "
                                  "benchmarks/verifier_calibration.py; docs/benchmarks.md).")
    clarify: Literal["enumerate", "per_passage"] = Field(
        "per_passage",
        description="enumerate: one call lists every reading found in the passages (the paper's RAC, Sec. 3.1); "
        "per_passage (default): one short call per passage names the reading that passage answers (small models "
        "extract better than they enumerate; this app's variant, measured in docs/benchmarks.md).")
    diversity: float = Field(0.0, ge=0.0, le=0.9, description="Maximal marginal relevance when choosing a node's "
                             "passages: 0 takes the best-ranked ones; higher values trade rank for passages unlike "
                             "those already chosen, so that different readings get read (this app's choice). "
                             "Measured at 0.3 on ASQA's first 50 items: STR-EM 43.5 against 48.0 at 0 "
                             "(docs/benchmarks.md), so it is off.")
    cover_answers: bool = Field(True, description="Add to the long answer every kept interpretation's answer "
                                "that the model left out, with its passage cited (this app's choice, measured "
                                "with the two above in docs/benchmarks.md).")


class Clarification(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(max_length=200)
    answer: str = Field(max_length=80)


class PassageReading(BaseModel):
    """The one-passage clarification's reply: the reading a passage answers and its answer (both empty when it
    answers none)."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(max_length=200)
    answer: str = Field(max_length=80)


class Clarifications(BaseModel):
    """The clarification step's reply: up to 4 interpretations, or none when there is nothing to clarify."""

    model_config = ConfigDict(extra="forbid")
    disambiguations: list[Clarification] = Field(max_length=4)


@dataclass
class Node:
    id: str
    question: str
    answer: str | None
    depth: int
    parent_id: str | None
    state: str = "candidate"
    reason: str = ""
    prune_kind: str = ""  # duplicate, no-clarification, no-short-answer, no-evidence, verification, budget
    score: float | None = None
    evidence: Document | None = None
    source: Document | None = None  # the passage a one-passage clarification read it from

    @property
    def valid(self) -> bool:
        return self.state in ("kept", "restored")


def _node_event(tracer: Tracer, node: Node, llm_calls_used: int | None = None) -> StepEvent:
    status = Status.DONE if node.state != "candidate" else Status.RUNNING
    payload = NodePayload(question=node.question, answer=node.answer, depth=node.depth, state=node.state,
                          reason=node.reason, score=node.score, prune_kind=node.prune_kind,
                          llm_calls_used=llm_calls_used)
    return tracer.event(payload, node.question, id=node.id, parent_id=node.parent_id, status=status)


def _pairs(reply: Clarifications) -> list[tuple[str, str]]:
    pairs = [(" ".join(c.question.split()), " ".join(c.answer.split())) for c in reply.disambiguations]
    return [(q, a) for q, a in pairs if q and a]


def _same_answer(a: str, b: str) -> bool:
    """Equal after normalisation, or one contained in the other as whole words ("May 28, 2013" and
    "Tuesday, May 28, 2013")."""
    a, b = normalize_answer(a), normalize_answer(b)
    return bool(a and b) and (a == b or f" {a} " in f" {b} " or f" {b} " in f" {a} ")


def _duplicate_of(node: Node, nodes: list[Node], by_question: bool = True) -> Node | None:
    """An earlier node (not pruned) asking the same question (unless not ``by_question``) or giving the same
    answer.

    Embedding similarity is no test of sameness here: all-MiniLM-L6-v2 rates "Who won the 2024 Tour de
    France?" and "... 2023 ..." 0.975 similar, and such questions are exactly the interpretations to keep.
    """
    question = normalize_answer(node.question)
    for other in nodes:
        if other is node or other.state == "pruned":
            continue
        if by_question and normalize_answer(other.question) == question:
            return other
        if other.answer and _same_answer(other.answer, node.answer or ""):
            return other
    return None


def run(question: str, ctx: RunContext, tracer: Tracer, verifier: Verifier | None = None) -> Iterator[StepEvent]:
    """Build the tree for ``question``, then stream the long-form answer (see the module docstring)."""
    settings: ToCSettings = ctx.method_settings
    embeddings = ctx.require_embeddings()
    reranker = ctx.reranker or RankFusionReranker(embeddings)
    verifier = verifier or EvidenceVerifier(ctx.llm, embeddings, settings.keep_threshold, ctx.settings.temperature)
    calls = 0

    root = Node(tracer.new_id("n"), question, None, 0, None, state="root")
    nodes = [root]
    yield _node_event(tracer, root)
    pool = yield from retrieve_step(ctx, tracer, question, parent_id=root.id, k=settings.pool_size,
                                    title="Retrieve passages for the question")
    expand = _Expander(ctx, tracer, question, settings, reranker, embeddings)

    queue = deque([root])
    failed_in_row = 0
    stop_reason = "every node was expanded"
    while queue:
        if sum(n.valid for n in nodes) >= settings.max_valid_nodes:
            stop_reason = f"{settings.max_valid_nodes} valid nodes"
            break
        if failed_in_row >= settings.max_failed_expansions:
            stop_reason = f"{failed_in_row} expansions in a row added no valid node"
            break
        if settings.max_llm_calls - calls < expand.calls_needed + 1:  # one expansion, and the answer
            stop_reason = f"the budget of {settings.max_llm_calls} LLM calls"
            break
        node = queue.popleft()
        if node.depth >= settings.max_depth or (expand.per_passage and node.depth >= 1):
            continue  # one-passage readings are leaves: their passages were read already
        ctx.check_cancelled()
        proposals, used = yield from expand(node, pool, nodes)
        calls += used
        if proposals is None:  # the expansion failed (its warning is an event)
            failed_in_row += 1
            continue

        added = 0
        for clarified, answer, source, expansion in proposals:
            child = Node(tracer.new_id("n"), clarified, answer, node.depth + 1, expansion, source=source)
            nodes.append(child)
            yield _node_event(tracer, child)
            # A one-passage reading is known by its answer: the model often words two readings alike.
            duplicate = _duplicate_of(child, nodes, by_question=source is None)
            if duplicate is not None:
                yield from _prune(tracer, child, "duplicate", f"duplicate of “{duplicate.question}”")
                continue
            if source is None and normalize_answer(clarified) == normalize_answer(question):
                yield from _prune(tracer, child, "no-clarification", "repeats the question without clarifying it")
                continue
            if settings.max_llm_calls - calls < 2:  # one verification, and the answer
                yield from _prune(tracer, child, "budget", "not verified: the LLM-call budget is spent")
                continue
            ctx.check_cancelled()
            if source is not None and len(answer.split()) > MAX_ANSWER_WORDS:
                yield from _prune(tracer, child, "no-short-answer",
                                  f"the passage gave a description ({len(answer.split())} words), not a short answer")
                continue
            ranked = reranker.rerank(clarified, pool, len(pool))
            verdict = verifier.verify(question, clarified, answer, ranked, source=source)
            cost = {}
            if verdict.call is not None:
                calls += 1
                cost = llm_cost(verdict.call)
            payload = VerifyPayload(keep=verdict.keep, score=verdict.score, reason=verdict.reason,
                                    evidence=verdict.evidence, verifier=verifier.name)
            yield tracer.event(payload, f"{'Keep' if verdict.keep else 'Prune'}: {verdict.reason}",
                               parent_id=child.id, **cost)
            child.score = verdict.score
            evidence_id = verdict.evidence.passage.id if verdict.evidence.passage else None
            child.evidence = next((p for p in ranked if p.id == evidence_id), None)
            if verdict.keep:
                child.state = "kept"
                added += 1
                queue.append(child)
                yield _node_event(tracer, child)
            else:
                kind = "verification" if child.evidence is not None else "no-evidence"
                yield from _prune(tracer, child, kind, verdict.reason)
            if sum(n.valid for n in nodes) >= settings.max_valid_nodes:
                break
        failed_in_row = 0 if added else failed_in_row + 1

    yield from _undo_pruning(tracer, nodes, settings.min_valid_nodes)
    root.reason = f"stopped: {stop_reason}"
    yield _node_event(tracer, root, llm_calls_used=calls)
    yield from _answer(ctx, tracer, question, root, nodes, pool, settings)


MAX_ANSWER_WORDS = 12  # a one-passage reading with a longer "answer" copied a description, not a short answer

# What an expansion proposes: (clarified question, answer, the passage it was read from or None, the id of the
# expand step that proposed it).
Proposal = tuple[str, str, "Document | None", str]


class _Expander:
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


def _prune(tracer: Tracer, node: Node, kind: str, reason: str) -> Iterator[StepEvent]:
    node.state, node.prune_kind, node.reason = "pruned", kind, reason
    yield tracer.event(PrunePayload(prune_kind=kind, reason=reason), f"Pruned: {reason}", parent_id=node.id)
    yield _node_event(tracer, node)


def _undo_pruning(tracer: Tracer, nodes: list[Node], minimum: int) -> Iterator[StepEvent]:
    """With some but too few survivors, restore verification-pruned nodes closest to the root first."""
    valid = sum(n.valid for n in nodes)
    if valid == 0 or valid >= minimum:
        return
    restorable = sorted((n for n in nodes if n.state == "pruned" and n.prune_kind == "verification"),
                        key=lambda n: n.depth)  # stable: BFS order within a depth
    for node in restorable[: minimum - valid]:
        node.state = "restored"
        node.reason = f"restored (was: {node.reason}): fewer than {minimum} nodes survived"
        yield tracer.event(PrunePayload(prune_kind=node.prune_kind, reason=node.reason, undo=True),
                           "Pruning undone: too few nodes survived", parent_id=node.id)
        yield _node_event(tracer, node)


def _answer(ctx: RunContext, tracer: Tracer, question: str, root: Node, nodes: list[Node],
            pool: list[Document], settings) -> Iterator[StepEvent]:
    chosen = [n for n in nodes if n.valid][: settings.max_valid_nodes]
    if not chosen:
        passages = pool[: ctx.settings.top_k]
        values = {"question": question, "passages": format_passages(passages) or "(no passages found)"}
        yield from stream_answer(ctx, tracer, answer_prompt("oner_answer", ctx.settings.answer_style), values,
                                 passages, parent_id=root.id,
                                 title="Answer (treated as unambiguous: no interpretation survived)",
                                 extra={"unambiguous": True, "interpretations": []})
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
                                 parent_id=root.id, title="Answer (short: from the kept interpretations' passages)",
                                 extra={"unambiguous": False, "interpretations": interpretations})
        return
    lines = "\n".join(f"- {n.question} {n.answer}" for n in chosen)
    values = {"question": question, "passages": format_passages(passages), "interpretations": lines}
    cover = (lambda text: cover_interpretations(text, chosen, passages)) if settings.cover_answers else None
    # Each answer passage holds one interpretation's answer, not necessarily the ambiguous question's terms
    # ("WW1" where passages say "First World War"): the support check reads what OneR would read as well, and
    # accepts a kept interpretation's question, restated in the passages' words, in place of the question.
    retrieved = passages + [p for p in pool[: ctx.settings.top_k] if p.id not in {q.id for q in passages}]
    yield from stream_answer(ctx, tracer, load_prompt("toc_answer"), values, passages, parent_id=root.id,
                             title="Answer", finish=cover, support_passages=retrieved,
                             support_questions=[n.question for n in chosen],
                             extra={"unambiguous": False, "interpretations": interpretations})


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


def clarification_scores(item: "EvalItem", state: "RunState") -> dict[str, float]:
    """Answer-F1 of kept and of pruned clarified answers against all gold short answers of the item's
    qa_pairs (each node scored alone, averaged per item). Duplicates are left out: they are pruned for
    redundancy, not for being wrong."""
    from pipeline.evaluation import metrics

    golds = [a for pair in item.qa_pairs for a in pair.get("short_answers", [])]
    nodes = [n for n in state.nodes() if n.answer is not None]
    if not golds:
        return {}
    out = {}
    kept = [metrics.answer_f1(n.answer, golds) for n in nodes if n.state in ("kept", "restored")]
    pruned = [metrics.answer_f1(n.answer, golds) for n in nodes
              if n.state == "pruned" and n.prune_kind != "duplicate"]
    if kept:
        out["kept_dq_answer_f1"] = statistics.fmean(kept)
    if pruned:
        out["pruned_dq_answer_f1"] = statistics.fmean(pruned)
    return out


METHOD = MethodSpec(
    name="toc", label="Tree of Clarifications", run=run,
    summary="Finds the readings an ambiguous question may have, verifies each against the passages and "
            "merges them into one cited answer.",
    settings=ToCSettings, structure="tree",
    prompts=("toc_clarify", "toc_read_passage", "toc_verify", "toc_answer", "oner_answer", "oner_answer_short"),
    scores=clarification_scores,
)
