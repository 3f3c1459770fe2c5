"""Tree of Clarifications (Kim et al., EMNLP 2023): a breadth-first tree of clarified interpretations of an
ambiguous question, pruned by verification and de-duplication, merged into one cited long-form answer.

Events: every tree node is an ``expand`` event whose payload has ``node`` (question, answer, depth) and
``state`` (root, candidate, kept, pruned, restored); its parent is the expansion that produced it, itself an
``expand`` event (with the re-ranked passages and the model call) whose parent is the node it expanded.
Verdicts are ``verify`` events and prunings (and their undoing) ``prune`` events under their node.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Iterator

from langchain_core.documents import Document

from models.errors import LLMCallError
from models.llm import llm_cost
from models.rerankers import RankFusionReranker
from models.structured import generate_json
from pipeline.answering import retrieve_step, stream_answer
from pipeline.context import RunContext
from pipeline.demos import selector
from pipeline.events import EventKind, Status, StepEvent, Tracer, passage_payload
from pipeline.prompting import answer_prompt, format_passages, load_prompt
from pipeline.text import normalize_answer
from pipeline.verification import EvidenceVerifier, Verifier

NAME = "toc"
LABEL = "Tree of Clarifications"


@dataclass
class Node:
    id: str
    question: str
    answer: str | None
    depth: int
    parent_id: str | None
    state: str = "candidate"
    reason: str = ""
    prune_kind: str = ""  # duplicate, no-clarification, no-evidence, verification, budget
    score: float | None = None
    evidence: Document | None = None

    @property
    def valid(self) -> bool:
        return self.state in ("kept", "restored")


def _node_event(tracer: Tracer, node: Node, **payload: Any) -> StepEvent:
    status = Status.DONE if node.state != "candidate" else Status.RUNNING
    return tracer.event(
        EventKind.EXPAND, node.question, id=node.id, parent_id=node.parent_id, status=status,
        payload={"node": {"question": node.question, "answer": node.answer, "depth": node.depth},
                 "state": node.state, "reason": node.reason, "score": node.score, **payload},
    )


def _clarify_messages(question: str, passages: list[Document], demos: list[dict]) -> list[dict[str, str]]:
    import json

    prompt = load_prompt("toc_clarify")
    messages = prompt.messages(passages=format_passages(passages), question=question)
    turns = []
    for demo in demos:
        demo_passages = "\n".join(f"[{i}] {text}" for i, text in enumerate(demo["passages"], 1))
        turns.append({"role": "user", "content": f"Passages:\n{demo_passages}\n\nQuestion: {demo['question']}"})
        turns.append({"role": "assistant", "content": json.dumps({"disambiguations": demo["disambiguations"]})})
    system = [m for m in messages if m["role"] == "system"]
    return system + turns + [m for m in messages if m["role"] != "system"]


def _parse_pairs(reply: Any) -> list[tuple[str, str]]:
    items = reply.get("disambiguations") if isinstance(reply, dict) else None
    if not isinstance(items, list):
        raise LLMCallError(f"The model replied in the wrong format (no 'disambiguations' list): {reply!r:.200}")
    pairs = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("question"), str) and isinstance(item.get("answer"), str):
            q, a = " ".join(item["question"].split()), " ".join(item["answer"].split())
            if q and a:
                pairs.append((q, a))
    return pairs


def _same_answer(a: str, b: str) -> bool:
    """Equal after normalisation, or one contained in the other as whole words ("May 28, 2013" and
    "Tuesday, May 28, 2013")."""
    a, b = normalize_answer(a), normalize_answer(b)
    return bool(a and b) and (a == b or f" {a} " in f" {b} " or f" {b} " in f" {a} ")


def _duplicate_of(node: Node, nodes: list[Node]) -> Node | None:
    """An earlier node (not pruned) asking the same question or giving the same answer.

    Embedding similarity is no test of sameness here: all-MiniLM-L6-v2 rates "Who won the 2024 Tour de
    France?" and "... 2023 ..." 0.975 similar, and such questions are exactly the interpretations to keep.
    """
    question = normalize_answer(node.question)
    for other in nodes:
        if other is node or other.state == "pruned":
            continue
        if normalize_answer(other.question) == question:
            return other
        if other.answer and _same_answer(other.answer, node.answer or ""):
            return other
    return None


def run(question: str, ctx: RunContext, tracer: Tracer, verifier: Verifier | None = None) -> Iterator[StepEvent]:
    """Build the tree for ``question``, then stream the long-form answer (see the module docstring)."""
    settings = ctx.settings.toc
    embeddings = ctx.require_embeddings()
    reranker = ctx.reranker or RankFusionReranker(embeddings)
    verifier = verifier or EvidenceVerifier(ctx.llm, embeddings, settings.keep_threshold, ctx.settings.temperature)
    clarify = load_prompt("toc_clarify")
    calls = 0

    root = Node(tracer.new_id("n"), question, None, 0, None, state="root")
    nodes = [root]
    yield _node_event(tracer, root)
    pool = yield from retrieve_step(ctx, tracer, question, parent_id=root.id, k=settings.pool_size,
                                    title="Retrieve passages for the question")
    demos = selector("toc_clarify", embeddings).select(question, settings.demos)

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
        if settings.max_llm_calls - calls < 3:  # one expansion (two calls if retried), and the answer
            stop_reason = f"the budget of {settings.max_llm_calls} LLM calls"
            break
        node = queue.popleft()
        if node.depth >= settings.max_depth:
            continue
        ctx.check_cancelled()

        top = reranker.rerank(node.question, pool, settings.passages_per_prompt)
        expansion = tracer.new_id("e")
        title = f"Clarify: {node.question}"
        passages = [passage_payload(p, i) for i, p in enumerate(top, 1)]
        yield tracer.event(EventKind.EXPAND, title, id=expansion, parent_id=node.id, status=Status.RUNNING,
                           payload={"query": node.question, "passages": passages})
        try:
            reply, results = generate_json(ctx.llm, _clarify_messages(node.question, top, demos),
                                           clarify.options(ctx.settings.temperature))
            calls += len(results)
            pairs = _parse_pairs(reply)
        except LLMCallError as exc:
            calls += 2
            failed_in_row += 1
            yield tracer.event(EventKind.EXPAND, title, id=expansion, parent_id=node.id, status=Status.FAILED,
                               payload={"query": node.question, "passages": passages, "message": str(exc)},
                               llm_calls=2)
            yield tracer.event(EventKind.WARNING, "Clarification failed", parent_id=expansion,
                               payload={"message": str(exc)})
            continue
        yield tracer.event(EventKind.EXPAND, title, id=expansion, parent_id=node.id,
                           payload={"query": node.question, "passages": passages,
                                    "candidates": [{"question": q, "answer": a} for q, a in pairs],
                                    "constrained_retry": len(results) > 1},
                           **llm_cost(*results))

        added = 0
        for clarified, answer in pairs:
            child = Node(tracer.new_id("n"), clarified, answer, node.depth + 1, expansion)
            nodes.append(child)
            yield _node_event(tracer, child)
            duplicate = _duplicate_of(child, nodes)
            if duplicate is not None:
                yield from _prune(tracer, child, "duplicate", f"duplicate of “{duplicate.question}”")
                continue
            if normalize_answer(clarified) == normalize_answer(question):
                yield from _prune(tracer, child, "no-clarification", "repeats the question without clarifying it")
                continue
            if settings.max_llm_calls - calls < 2:  # one verification, and the answer
                yield from _prune(tracer, child, "budget", "not verified: the LLM-call budget is spent")
                continue
            ctx.check_cancelled()
            ranked = reranker.rerank(clarified, pool, len(pool))
            verdict = verifier.verify(question, clarified, answer, ranked)
            cost = {}
            if verdict.call is not None:
                calls += 1
                cost = llm_cost(verdict.call)
            yield tracer.event(EventKind.VERIFY, f"{'Keep' if verdict.keep else 'Prune'}: {verdict.reason}",
                               parent_id=child.id, payload={"keep": verdict.keep, "score": verdict.score,
                                                            "reason": verdict.reason, "evidence": verdict.evidence,
                                                            "verifier": verifier.name}, **cost)
            child.score = verdict.score
            child.evidence = next((p for p in ranked if p.id == verdict.evidence.get("passage", {}).get("id")),
                                  None)
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


def _prune(tracer: Tracer, node: Node, kind: str, reason: str) -> Iterator[StepEvent]:
    node.state, node.prune_kind, node.reason = "pruned", kind, reason
    yield tracer.event(EventKind.PRUNE, f"Pruned: {reason}", parent_id=node.id,
                       payload={"kind": kind, "reason": reason, "undo": False})
    yield _node_event(tracer, node, prune_kind=kind)


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
        yield tracer.event(EventKind.PRUNE, "Pruning undone: too few nodes survived", parent_id=node.id,
                           payload={"kind": node.prune_kind, "reason": node.reason, "undo": True})
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
    lines = "\n".join(f"- {n.question} {n.answer}" for n in chosen)
    values = {"question": question, "passages": format_passages(passages), "interpretations": lines}
    yield from stream_answer(ctx, tracer, load_prompt("toc_answer"), values, passages, parent_id=root.id,
                             title="Answer", extra={"unambiguous": False, "interpretations": [
                                 {"node": n.id, "question": n.question, "answer": n.answer} for n in chosen]})
