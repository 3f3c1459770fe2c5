"""Tree of Clarifications (Kim et al., EMNLP 2023): a breadth-first tree of clarified interpretations of an
ambiguous question, pruned by verification and de-duplication, merged into one cited long-form answer.

Events: every tree node is a ``node`` step (question, answer, depth, state: root, candidate, kept, pruned,
restored); its parent is the ``expand`` step that proposed it (with the re-ranked passages and the model call),
whose parent is the node it expanded. Verdicts are ``verify`` events and prunings (and their undoing) ``prune``
events under their node.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generator, Iterator

from langchain_core.documents import Document

from models.llm import llm_cost
from models.rerankers import RankFusionReranker
from pipeline.answering import retrieve_step
from pipeline.context import RunContext
from pipeline.events import Status, StepEvent, Tracer
from pipeline.methods.toc.answer import kept_readings, write_answer
from pipeline.methods.toc.clarify import MAX_ANSWER_WORDS, Expander
from pipeline.methods.toc.settings import ToCSettings
from pipeline.methods.toc.verification import EvidenceVerifier, Verifier
from pipeline.payloads import NodePayload, PrunePayload, VerifyPayload
from pipeline.text import normalize_answer


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


def run(question: str, ctx: RunContext, tracer: Tracer, settings: ToCSettings,
        verifier: Verifier | None = None) -> Iterator[StepEvent]:
    """Build the tree for ``question``, then stream the long-form answer (see the module docstring)."""
    embeddings = ctx.require_embeddings()
    reranker = ctx.reranker or RankFusionReranker(embeddings)
    verifier = verifier or EvidenceVerifier(ctx.llm, embeddings, settings.keep_threshold, ctx.settings.temperature)
    calls = 0

    root = Node(tracer.new_id("n"), question, None, 0, None, state="root")
    nodes = [root]
    yield _node_event(tracer, root)
    pool = yield from retrieve_step(ctx, tracer, question, parent_id=root.id, k=settings.pool_size,
                                    title="Retrieve passages for the question")
    expand = Expander(ctx, tracer, question, settings, reranker, embeddings)

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
        room = settings.max_valid_nodes - sum(n.valid for n in nodes)
        kept, calls = yield from grow(ctx, tracer, settings, verifier, reranker, expand, question, node, nodes,
                                      pool, calls, room)
        queue.extend(kept or [])
        failed_in_row = 0 if kept else failed_in_row + 1

    yield from _undo_pruning(tracer, nodes, settings.min_valid_nodes)
    root.reason = f"stopped: {stop_reason}"
    yield _node_event(tracer, root, llm_calls_used=calls)
    yield from write_answer(ctx, tracer, question, kept_readings(nodes, settings), pool, settings, parent_id=root.id)


def grow(ctx: RunContext, tracer: Tracer, settings: ToCSettings, verifier: Verifier, reranker, expand: Expander,
         question: str, node: Node, nodes: list[Node], pool: list[Document], calls: int, room: int
         ) -> Generator[StepEvent, None, tuple[list[Node] | None, int]]:
    """Expand ``node`` once (``expand``): each reading it proposes becomes a node of ``nodes``, judged (pruned or
    verified) as it comes, until ``room`` of them are kept. Returns the kept new readings (None when the expansion
    failed: its warning is an event) and the LLM calls spent so far, ``calls`` being those spent before."""
    proposals, used = yield from expand(node, pool, nodes)
    calls += used
    if proposals is None:
        return None, calls
    kept: list[Node] = []
    for clarified, answer, source, expansion in proposals:
        child = Node(tracer.new_id("n"), clarified, answer, node.depth + 1, expansion, source=source)
        nodes.append(child)
        yield _node_event(tracer, child)
        calls += yield from _judge(ctx, tracer, settings, verifier, reranker, question, child, nodes, pool, calls)
        if child.state == "kept":
            kept.append(child)
        if len(kept) >= room:
            break
    return kept, calls


def _judge(ctx: RunContext, tracer: Tracer, settings: ToCSettings, verifier: Verifier, reranker, question: str,
           child: Node, nodes: list[Node], pool: list[Document], calls: int) -> Generator[StepEvent, None, int]:
    """Prune a proposed node (a duplicate, a restatement, over budget, a description for an answer) or verify it
    and keep or prune it by the verdict; return the LLM calls that took."""
    source, clarified, answer = child.source, child.question, child.answer or ""
    # A one-passage reading is known by its answer: the model often words two readings alike.
    duplicate = _duplicate_of(child, nodes, by_question=source is None)
    if duplicate is not None:
        yield from _prune(tracer, child, "duplicate", f"duplicate of “{duplicate.question}”")
        return 0
    if source is None and normalize_answer(clarified) == normalize_answer(question):
        yield from _prune(tracer, child, "no-clarification", "repeats the question without clarifying it")
        return 0
    if settings.max_llm_calls - calls < 2:  # one verification, and the answer
        yield from _prune(tracer, child, "budget", "not verified: the LLM-call budget is spent")
        return 0
    ctx.check_cancelled()
    if source is not None and len(answer.split()) > MAX_ANSWER_WORDS:
        yield from _prune(tracer, child, "no-short-answer",
                          f"the passage gave a description ({len(answer.split())} words), not a short answer")
        return 0
    ranked = reranker.rerank(clarified, pool, len(pool))
    verdict = verifier.verify(question, clarified, answer, ranked, source=source)
    cost = {} if verdict.call is None else llm_cost(verdict.call)
    payload = VerifyPayload(keep=verdict.keep, score=verdict.score, reason=verdict.reason,
                            evidence=verdict.evidence, verifier=verifier.name)
    yield tracer.event(payload, f"{'Keep' if verdict.keep else 'Prune'}: {verdict.reason}", parent_id=child.id,
                       **cost)
    child.score = verdict.score
    evidence_id = verdict.evidence.passage.id if verdict.evidence.passage else None
    child.evidence = next((p for p in ranked if p.id == evidence_id), None)
    if verdict.keep:
        child.state = "kept"
        yield _node_event(tracer, child)
    else:
        yield from _prune(tracer, child, "verification" if child.evidence is not None else "no-evidence",
                          verdict.reason)
    return 0 if verdict.call is None else 1


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
