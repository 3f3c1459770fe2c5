"""Kinds of step of a tree of interpretations (Tree of Clarifications): a node, the expansion that proposed it,
and the verdicts and prunings noted on a node."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import ExpandPayload, NodePayload, PrunePayload, VerifyPayload
from pipeline.steps.kind import (StepKind, listed_passages, no_passages, one_line, passage_lines, passages_card,
                                 passages_html, titled)
from pipeline.steps.look import QUESTION, KindStyle, Paint, passages_line

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _node_title(step: "StepEvent") -> str:
    return step.payload.question


def _node_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: NodePayload = step.payload
    lines = [(f"→ {one_line(p.answer)} " if p.answer else "") + f"[{p.state}]"
             + (f" ({p.prune_kind})" if p.prune_kind else "")]
    if p.reason:
        lines.append(one_line(p.reason))
    if p.score is not None:
        lines.append(f"verification score {p.score:.2f}")
    return lines


def _node_card(step: "StepEvent", state: "RunState") -> str:
    p: NodePayload = step.payload
    out = []
    if p.answer:
        out.append(f'<div class="rv-node-answer">→ {esc(p.answer)}</div>')
    score = f" · score {p.score:.2f}" if p.score is not None else ""
    reason = (f" ({esc(p.prune_kind)})" if p.prune_kind else "") + (f": {esc(p.reason)}" if p.reason else "")
    out.append(f'<span class="rv-badge badge-{esc(p.state)}">{esc(p.state)}</span>'
               f'<span class="rv-muted">{reason}{score}</span>')
    return "".join(out)


def _node_label(step: "StepEvent", state: "RunState") -> list[str]:
    p: NodePayload = step.payload
    return [p.question] + ([f"→ {p.answer}"] if p.answer else [])


def _node_details(step: "StepEvent", state: "RunState") -> list[str]:
    p: NodePayload = step.payload
    lines = []
    if p.state == "pruned":
        lines.append(f"Pruned{f' ({p.prune_kind})' if p.prune_kind else ''}: {p.reason}")
    elif p.reason:
        lines.append(p.reason[:1].upper() + p.reason[1:])
    if p.score is not None:
        lines.append(f"verification score {p.score:.2f}")
    return lines


def _expand_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: ExpandPayload = step.payload
    lines = [f"reads for: {one_line(p.query)}"]
    lines += [f"proposed: {one_line(c.question)} → {one_line(c.answer)}" for c in p.candidates]
    return lines + ([one_line(p.message)] if p.message else []) + passage_lines(p.passages)


def _expand_card(step: "StepEvent", state: "RunState") -> str:
    p: ExpandPayload = step.payload
    out = f'<div class="rv-query">reads for: {esc(p.query)}</div>'
    if p.candidates:
        items = "".join(f"<li>{esc(c.question)} → {esc(c.answer)}</li>" for c in p.candidates)
        out += (f'<details class="rv-more"><summary>{len(p.candidates)} proposed '
                f'interpretations</summary><ul>{items}</ul></details>')
    if p.message:
        out += f'<div class="rv-muted">{esc(p.message)}</div>'
    return out + passages_card()(step, state)


def _expand_details(step: "StepEvent", state: "RunState") -> list[str]:
    p: ExpandPayload = step.payload
    proposed = "; ".join(f"{c.question} → {c.answer}" for c in p.candidates)
    return ([f"Proposed: {proposed}"] if proposed else []) + ([p.message] if p.message else []) \
        + passages_line(p.passages)


def _verify_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: VerifyPayload = step.payload
    evidence = p.evidence
    numbers = ", ".join(f"{name} {value:.2f}" for name, value in (("P(True)", evidence.p_true),
                                                                 ("relevance", evidence.relevance))
                        if value is not None)
    where = f"; evidence: {one_line(evidence.passage.label())}" if evidence.passage else ""
    return [f"Verifier: {'keep' if p.keep else 'prune'}, score {p.score:.2f} ({one_line(p.reason)}) by "
            f"{p.verifier or 'the verifier'}" + (f"; {numbers}" if numbers else "") + where]


def _verify_card(step: "StepEvent", state: "RunState") -> str:
    p: VerifyPayload = step.payload
    evidence = p.evidence.model_dump(exclude={"passage"}, exclude_none=True)
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in evidence.items())
    body = passages_html([p.evidence.passage], "evidence passage") if p.evidence.passage else ""
    verdict = "keep" if p.keep else "prune"
    return (f'<details class="rv-verdict verdict-{verdict}"><summary>Verifier: {verdict}, score '
            f'{p.score:.2f} ({esc(p.verifier)}): {esc(p.reason)}</summary><table>{rows}</table>{body}</details>')


def _said_by_node(step: "StepEvent", state: "RunState") -> bool:
    """A pruning whose node shows the same reason already (its badge, its lines)."""
    parent = state.steps.get(step.parent_id)
    return not step.payload.undo and parent is not None and getattr(parent.payload, "reason", None) == step.payload.reason


def _prune_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: PrunePayload = step.payload
    if _said_by_node(step, state):
        return []
    return [f"{'Pruning undone' if p.undo else 'Pruned'} ({p.prune_kind}): {one_line(p.reason)}"]


def _prune_card(step: "StepEvent", state: "RunState") -> str:
    p: PrunePayload = step.payload
    if _said_by_node(step, state):
        return ""
    return (f'<div class="rv-prune">{"Pruning undone" if p.undo else "Pruned"} ({esc(p.prune_kind)}): '
            f'{esc(p.reason)}</div>')


_ROOT = KindStyle("question", "box", QUESTION)
_CANDIDATE = KindStyle("being verified", "box", Paint("#ffffff", "#9ca3af", dash="4 3"), icon="?")
_KEPT = KindStyle("kept", "pill", Paint("#e3f4e8", "#2e8540", width=2), icon="✓")
_PRUNED = KindStyle("pruned", "notched", Paint("#fdecea", "#b03a2e", text="#7f1d1d", dash="5 3"), icon="✗")
_RESTORED = KindStyle("restored", "hexagon", Paint("#e8f0fe", "#1a56db", width=2), icon="↺")

KINDS = (
    StepKind("node", NodePayload, "step", title=_node_title, lines=_node_lines, card=_node_card,
             style=KindStyle("interpretation", label=_node_label, details=_node_details, variants={
                 "root": _ROOT, "candidate": _CANDIDATE, "kept": _KEPT, "pruned": _PRUNED, "restored": _RESTORED}),
             passages=no_passages),
    StepKind("expand", ExpandPayload, "step", title=titled, lines=_expand_lines, card=_expand_card,
             style=KindStyle("clarification call", "dot", Paint("#6b8afd", "#3b5bdb"), details=_expand_details,
                             inline=True),
             passages=listed_passages),
    StepKind("verify", VerifyPayload, "note", title=titled, lines=_verify_lines, card=_verify_card, style=None,
             passages=no_passages, drawn_as="a line in its node's tooltip"),
    StepKind("prune", PrunePayload, "note", title=titled, lines=_prune_lines, card=_prune_card, style=None,
             passages=no_passages, drawn_as="its node's look (pruned or restored) and tooltip"),
)
