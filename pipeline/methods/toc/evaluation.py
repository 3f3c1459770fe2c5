"""What the evaluation scores and keeps of a Tree of Clarifications run."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from pipeline import metrics
from pipeline.payloads import NodePayload, VerifyPayload

if TYPE_CHECKING:
    from pipeline.evaluation.data import EvalItem
    from pipeline.fold import RunState


def clarification_scores(item: "EvalItem", state: "RunState") -> dict[str, float]:
    """Answer-F1 of kept and of pruned clarified answers against all gold short answers of the item's
    qa_pairs (each node scored alone, averaged per item). Duplicates are left out: they are pruned for
    redundancy, not for being wrong."""
    golds = [a for pair in item.qa_pairs for a in pair.get("short_answers", [])]
    nodes = [n for n in state.payloads(NodePayload, done=False) if n.answer is not None]
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


def tree_record(state: "RunState") -> dict:
    """What the evaluation keeps of a tree: every answered node with its state and its verdict's numbers."""
    nodes = []
    for step_id, node in state.steps_of(NodePayload):
        if node.answer is None:
            continue
        verdicts = state.notes_on(step_id, VerifyPayload)
        evidence = verdicts[-1].evidence if verdicts else None
        numbers = {} if evidence is None else {k: v for k, v in (("p_true", evidence.p_true),
                                                                ("relevance", evidence.relevance)) if v is not None}
        nodes.append({**node.model_dump(include={"question", "answer", "depth", "state", "prune_kind", "score"}),
                      **numbers})
    return {"tree": nodes} if nodes else {}
