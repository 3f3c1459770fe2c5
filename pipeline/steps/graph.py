"""Kinds of step of a graph walk (Knowledge Graph Prompting): the walk, a node it visited and the next piece of
evidence the model asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import EvidencePayload, VisitPayload, WalkPayload
from pipeline.steps.kind import StepKind, no_passages, one_line, passages_html, titled
from pipeline.steps.look import QUESTION, KindStyle, Paint, fields

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _walk_title(step: "StepEvent") -> str:
    p: WalkPayload = step.payload
    if p.mode == "retrieval" or step.status.value != "done":
        return step.title
    return f"{step.title}: {p.visited} passage{'s' if p.visited != 1 else ''} visited"


def _walk_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: WalkPayload = step.payload
    lines = [f"graph of {g.collection}: {one_line(g.description)}{'' if g.current else ' (out of date)'}"
             for g in p.graphs]
    if p.mode == "structure":
        lines.append(f"structure question: {one_line(p.target)}")
    elif p.mode == "content":
        lines.append(f"{p.seeds} seeds · {p.neighbours} neighbours each · budget {p.budget} passages · depth "
                     f"{p.depth}")
    else:
        lines.append("no graph: a plain retrieval")
    return lines


def _walk_card(step: "StepEvent", state: "RunState") -> str:
    p: WalkPayload = step.payload
    graphs = "".join(f'<div class="rv-muted">{esc(g.collection)}: {esc(g.description)}'
                     f'{"" if g.current else " (out of date)"}</div>' for g in p.graphs)
    bounds = "" if p.mode == "retrieval" else (
        f'<div class="rv-muted">{esc(p.target)}</div>' if p.mode == "structure" else
        f'<div class="rv-muted">{esc(p.seeds)} seeds · {esc(p.neighbours)} neighbours each · budget '
        f'{esc(p.budget)} passages · depth {esc(p.depth)}'
        + (f" · {esc(p.visited)} visited" if step.status.value == "done" else "") + "</div>")
    return graphs + bounds


def _walk_details(step: "StepEvent", state: "RunState") -> list[str]:
    graphs = "; ".join(g.description or g.collection for g in step.payload.graphs)
    return fields(step, "mode", "target", "seeds", "neighbours", "budget", "depth", "visited") + \
        ([f"graphs: {graphs}"] if graphs else [])


def _visit_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: VisitPayload = step.payload
    via = f" via {one_line(p.via)}" if p.via else ""
    score = f", score {p.score:.2f}" if p.score is not None else ""
    rank = f", rank {p.rank}" if p.rank is not None else ""
    where = one_line(p.passage.label() if p.passage else p.label)
    hop = f", hop through {one_line(p.bridge)}" if p.bridge else ""
    return [f"{'seed' if p.seed else p.edge + ' edge'}{via}{score}{rank}, depth {p.depth}{hop}: {where}"]


def _visit_card(step: "StepEvent", state: "RunState") -> str:
    p: VisitPayload = step.payload
    bits = [f'<span class="rv-badge badge-edge">{esc(p.edge)}</span>']
    if p.via:
        bits.append(f'<span class="rv-muted"> via {esc(p.via)}</span>')
    if p.score is not None:
        bits.append(f'<span class="rv-muted"> · score {p.score:.2f}</span>')
    if not p.seed:
        bits.append(f'<span class="rv-muted"> · depth {esc(p.depth)}</span>')
    if p.bridge:
        bits.append(f'<span class="rv-muted"> · hop through </span><strong>{esc(p.bridge)}</strong>')
    out = [f'<div>{"".join(bits)}</div>']
    if p.passage is not None:
        out.append(passages_html([p.passage], "table" if p.node_kind == "table" else "passage"))
    return "".join(out)


def _visit_details(step: "StepEvent", state: "RunState") -> list[str]:
    passage = step.payload.passage
    text = [passage.label(), passage.text[:300]] if passage is not None else []
    return fields(step, "edge", "via", "score", "rank", "depth", "bridge") + text


def _visit_variant(step: "StepEvent") -> str:
    p: VisitPayload = step.payload
    return "page" if p.node_kind == "page" else "seed" if p.seed else p.node_kind


def _evidence_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: EvidencePayload = step.payload
    lines = [f"? next evidence: {one_line(p.text) or '(nothing usable)'} -> {p.chosen} of {p.candidates} neighbours"]
    return lines + ([one_line(p.fallback)] if p.fallback else [])


def _evidence_card(step: "StepEvent", state: "RunState") -> str:
    p: EvidencePayload = step.payload
    out = [f'<div class="rv-query">{esc(p.text or "(nothing usable)")}</div>'] if p.text or p.fallback else []
    if step.status.value == "done":
        out.append(f'<div class="rv-muted">{esc(p.chosen)} of {esc(p.candidates)} neighbours visited</div>')
    if p.fallback:
        out.append(f'<div class="rv-muted">{esc(p.fallback)}</div>')
    return "".join(out)


def _evidence_details(step: "StepEvent", state: "RunState") -> list[str]:
    return fields(step, "text", "candidates", "chosen", "fallback")


KINDS = (
    StepKind("walk", WalkPayload, "step", title=_walk_title, lines=_walk_lines, card=_walk_card,
             style=KindStyle("graph walk", "box", QUESTION, details=_walk_details),
             passages=no_passages, reads_sources=True),
    # A visited passage is not counted as read: the walk's reader gets only some of them (the answer's).
    StepKind("visit", VisitPayload, "step", title=titled, lines=_visit_lines, card=_visit_card,
             style=KindStyle("visited passage", "doc", Paint("#f0fdfa", "#0f766e"), details=_visit_details,
                             variant_of=_visit_variant,
                             variants={"seed": KindStyle("seed passage", "doc", Paint("#ccfbf1", "#115e59", width=2.5)),
                                       "page": KindStyle("page", "box", Paint("#f8fafc", "#0f766e", width=2)),
                                       "table": KindStyle("table", "doc", Paint("#ecfeff", "#155e75", width=2))}),
             passages=no_passages),
    StepKind("evidence", EvidencePayload, "step", title=titled, lines=_evidence_lines, card=_evidence_card,
             style=KindStyle("evidence asked for", "pill", Paint("#fffbeb", "#b45309"), details=_evidence_details),
             passages=no_passages),
)
