"""Tree of Clarifications after a person's edits: the tree rebuilt from the run's folded state, the readings a
person asked to expand clarified once more (``tree.grow``, over the run's retrieved pool: their new readings
verified as the tree's were), then the long answer written again by ``answer.write_answer``, from the readings the
edits leave kept. No other clarification or verification call is made again.

What the trace holds is enough: each reading's ``node`` step (its question, answer and state, edited ones
included), its verdict's evidence passage (``verify`` notes), the passage a one-passage clarification read it from
(its ``expand`` step's proposals, in the order its readings were made) and the retrieved pool (the root's
``retrieve`` step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from langchain_core.documents import Document

from models.rerankers import RankFusionReranker
from pipeline.context import RunContext
from pipeline.edits import ExpandNode
from pipeline.events import StepEvent, Tracer
from pipeline.methods.toc.answer import kept_readings, write_answer
from pipeline.methods.toc.clarify import Expander
from pipeline.methods.toc.settings import ToCSettings
from pipeline.methods.toc.tree import Node, grow
from pipeline.methods.toc.verification import EvidenceVerifier
from pipeline.payloads import ExpandPayload, NodePayload, PassageRef, RetrievePayload, VerifyPayload
from pipeline.support import answer_passage

if TYPE_CHECKING:
    from pipeline.fold import RunState
    from pipeline.resume import Steering


def rebuild(state: "RunState", dropped: frozenset[str] = frozenset()) -> tuple[str, list[Node], list[Document]]:
    """The tree of the run's last root as the method holds it: (root step id, every node in the order it was
    made, the retrieved pool), with the passages whose keys are in ``dropped`` left out of the pool and of the
    readings' evidence. A reading whose answer its evidence passage does not hold (a person rewrote the answer)
    takes the first pool passage that does, or none."""
    from pipeline.resume import passage_key

    roots = [i for i, p in state.steps_of(NodePayload) if p.state == "root"]
    if not roots:
        raise ValueError("The run has no tree of interpretations.")
    root = roots[-1]
    retrieved = next((state.steps[i].payload for i in state.children.get(root, [])
                      if isinstance(state.steps[i].payload, RetrievePayload)), None)
    pool = [p.document() for p in (retrieved.passages if retrieved else []) if passage_key(p) not in dropped]
    by_key = {passage_key(p): p for p in pool}

    def doc(ref: PassageRef | None) -> Document | None:
        if ref is None or passage_key(ref) in dropped:
            return None
        return by_key.get(passage_key(ref)) or ref.document()

    nodes = []
    for step_id, p in state.steps_of(NodePayload):
        if not _under(state, step_id, root):
            continue
        step = state.steps[step_id]
        node = Node(step_id, p.question, p.answer, p.depth, step.parent_id, state=p.state, reason=p.reason,
                    prune_kind=p.prune_kind, score=p.score)
        if p.state != "root":
            verdicts = state.notes_on(step_id, VerifyPayload)
            node.evidence = doc(verdicts[-1].evidence.passage) if verdicts else None
            node.source = doc(_source(state, step_id))
            if node.answer and (node.evidence is None or answer_passage(node.answer, [node.evidence]) is None):
                node.evidence = answer_passage(node.answer, pool)
        nodes.append(node)
    return root, nodes, pool


def _under(state: "RunState", step_id: str, root: str) -> bool:
    seen = 0
    while step_id is not None and seen < 500:
        if step_id == root:
            return True
        step = state.steps.get(step_id)
        step_id, seen = (step.parent_id if step else None), seen + 1
    return False


def _source(state: "RunState", step_id: str) -> PassageRef | None:
    """The passage a one-passage clarification read the reading from: its expand step's proposal in the place the
    reading has among that step's readings."""
    parent = state.steps.get(state.steps[step_id].parent_id or "")
    if parent is None or not isinstance(parent.payload, ExpandPayload):
        return None
    siblings = [i for i in state.children.get(parent.id, []) if isinstance(state.steps[i].payload, NodePayload)]
    proposals = parent.payload.candidates
    place = siblings.index(step_id)
    number = proposals[place].passage if place < len(proposals) else None
    passages = parent.payload.passages
    return passages[number - 1] if number is not None and 0 < number <= len(passages) else None


def reanswer(steering: "Steering", ctx: RunContext, tracer: Tracer, settings: ToCSettings) -> Iterator[StepEvent]:
    """ToC after edits: the long answer, from the kept readings of the tree as edited (pruned ones left out,
    restored ones back, rewritten ones as rewritten, those a person asked to expand clarified once more, their new
    kept readings added) and the pool less the dropped passages."""
    root, nodes, pool = rebuild(steering.state, steering.dropped)
    chosen = kept_readings(nodes, settings)
    expansions = [edit.node for edit in steering.edits if isinstance(edit, ExpandNode)]
    if expansions:
        embeddings = ctx.require_embeddings()
        reranker = ctx.reranker or RankFusionReranker(embeddings)
        verifier = EvidenceVerifier(ctx.llm, embeddings, settings.keep_threshold, ctx.settings.temperature)
        expand = Expander(ctx, tracer, steering.question, settings, reranker, embeddings)
        expand.read.update(p.id for _, e in steering.state.steps_of(ExpandPayload) for p in e.passages if p.id)
        by_id = {node.id: node for node in nodes}
        calls = 0
        for node in filter(None, map(by_id.get, expansions)):  # (a reading of an earlier root is not in the tree)
            ctx.check_cancelled()
            kept, calls = yield from grow(ctx, tracer, settings, verifier, reranker, expand, steering.question,
                                          node, nodes, pool, calls, settings.max_valid_nodes)
            chosen += kept or []  # a person's new readings are answered, past the tree's own cap
    yield from write_answer(ctx, tracer, steering.question, chosen, pool, settings, parent_id=root)
