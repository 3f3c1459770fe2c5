"""How each kind of step looks in the picture: one table entry per kind (``KINDS``), and a fallback for kinds
the table does not know, which shows the step's title. A nicer look for a new kind is one entry here.

A style gives the legend's name, a shape, colours, an optional leading icon and the text of the box (its
paragraphs; the first one may wrap). ``variants`` picks another look by the payload's ``state`` (a ToC node is
kept, pruned or restored); ``inline`` draws a step as a small dot on the way to its children (a model call
that proposes them); ``satellites`` draws the passages a step brought in beside it (in chains and timelines).
Colours are written into the SVG, so an exported picture needs no stylesheet and every look differs in shape
or dash as well as colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Literal, Mapping

from pipeline.events import StepEvent
from pipeline.fold import RunState
from pipeline.payloads import (AnswerPayload, ExpandPayload, HopPayload, NodePayload, PassageRef,
                               RetrievePayload)

Shape = Literal["box", "pill", "notched", "hexagon", "doc", "dot"]


@dataclass(frozen=True)
class Paint:
    fill: str
    stroke: str
    text: str = "#1f2937"
    dash: str = ""  # stroke-dasharray, "" for a solid line
    width: float = 1.5


@dataclass(frozen=True)
class KindStyle:
    legend: str
    shape: Shape = "box"
    paint: Paint = Paint("#f8fafc", "#94a3b8")
    icon: str = ""
    label: Callable[[StepEvent, RunState], list[str]] | None = None  # None: the step's title
    details: Callable[[StepEvent, RunState], list[str]] | None = None  # extra tooltip lines
    inline: bool = False
    satellites: bool = False
    variants: Mapping[str, "KindStyle"] = field(default_factory=dict)
    variant_of: Callable[[StepEvent], str] | None = None  # None: the payload's ``state``


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _passages_line(passages: list[PassageRef], limit: int = 6) -> list[str]:
    if not passages:
        return []
    titles = [f"[{p.number}] {p.title or 'Untitled'}" if p.number else (p.title or "Untitled")
              for p in passages[:limit]]
    more = f" and {len(passages) - limit} more" if len(passages) > limit else ""
    return [f"{_count(len(passages), 'passage')}: {'; '.join(titles)}{more}"]


def _node_label(step: StepEvent, state: RunState) -> list[str]:
    p: NodePayload = step.payload
    return [p.question] + ([f"→ {p.answer}"] if p.answer else [])


def _node_details(step: StepEvent, state: RunState) -> list[str]:
    p: NodePayload = step.payload
    lines = []
    if p.state == "pruned":
        lines.append(f"Pruned{f' ({p.prune_kind})' if p.prune_kind else ''}: {p.reason}")
    elif p.reason:
        lines.append(p.reason[:1].upper() + p.reason[1:])
    if p.score is not None:
        lines.append(f"verification score {p.score:.2f}")
    return lines


def _retrieve_label(step: StepEvent, state: RunState) -> list[str]:
    p: RetrievePayload = step.payload
    count = _count(len(p.passages), "passage") if step.status.value == "done" else "retrieving…"
    return [f"Retrieve: {p.query}", count]


def _retrieve_details(step: StepEvent, state: RunState) -> list[str]:
    return _passages_line(step.payload.passages)


def _expand_details(step: StepEvent, state: RunState) -> list[str]:
    p: ExpandPayload = step.payload
    proposed = "; ".join(f"{c.question} → {c.answer}" for c in p.candidates)
    return ([f"Proposed: {proposed}"] if proposed else []) + ([p.message] if p.message else []) \
        + _passages_line(p.passages)


def _hop_label(step: StepEvent, state: RunState) -> list[str]:
    p: HopPayload = step.payload
    return [f"{p.step}. {p.sentence or ('thinking…' if step.status.value == 'running' else '(no sentence)')}"]


def _hop_details(step: StepEvent, state: RunState) -> list[str]:
    p: HopPayload = step.payload
    lines = [f"query: {p.query}"] if p.query else []
    if p.query and step.status.value == "done" and not p.passages:
        lines.append(f"no new passages ({p.duplicates} already collected)")
    return lines + [text for text in (p.note, p.stop) if text] + _passages_line(p.passages)


def _answer_label(step: StepEvent, state: RunState) -> list[str]:
    p: AnswerPayload = step.payload
    if step.status.value == "done":
        return [f"Answer: {p.answer}" if p.answer else "Answer: (empty)"]
    return ["Answer: writing…"]


def _answer_details(step: StepEvent, state: RunState) -> list[str]:
    p: AnswerPayload = step.payload
    text = p.answer or state.streamed
    return ([text[:400] + ("…" if len(text) > 400 else "")] if text else []) + \
        ([f"cites {', '.join(f'[{n}]' for n in p.citations)}"] if p.citations else [])


def _fields(step: StepEvent, *names: str) -> list[str]:
    """``name: value`` for each of the payload's fields ``names`` that is set (read defensively: a kind's
    payload may gain or lose fields without breaking the picture)."""
    out = []
    for name in names:
        value = getattr(step.payload, name, None)
        if value not in (None, "", [], 0, False):
            out.append(f"{name.replace('_', ' ')}: {value:.2f}" if isinstance(value, float) else
                       f"{name.replace('_', ' ')}: {value}")
    return out


def _walk_details(step: StepEvent, state: RunState) -> list[str]:
    graphs = "; ".join(getattr(g, "description", "") or getattr(g, "collection", "")
                       for g in getattr(step.payload, "graphs", []) or [])
    return _fields(step, "mode", "target", "seeds", "neighbours", "budget", "depth", "visited") + \
        ([f"graphs: {graphs}"] if graphs else [])


def _visit_details(step: StepEvent, state: RunState) -> list[str]:
    passage = getattr(step.payload, "passage", None)
    text = [passage.label(), passage.text[:300]] if isinstance(passage, PassageRef) else []
    return _fields(step, "edge", "via", "score", "rank", "depth") + text


def _evidence_details(step: StepEvent, state: RunState) -> list[str]:
    return _fields(step, "text", "candidates", "chosen", "fallback")


def _action_details(step: StepEvent, state: RunState) -> list[str]:
    p = step.payload
    lines = _fields(step, "query", "browser")
    results = getattr(p, "results", None) or []
    if results:
        lines.append("results: " + "; ".join(f"[{r.number}] {r.title}" for r in results[:6]))
    page = getattr(p, "page", None)
    if page is not None:
        lines.append(f"page: {page.title} (part {page.window} of {page.windows})")
    quoted = [s.text for s in getattr(p, "sentences", None) or [] if getattr(s, "quoted", False)]
    if quoted:
        lines.append("quoted: " + " ".join(quoted))
    return lines + _fields(step, "merged", "facts", "refused", "error", "ended_by", "message")


_ROOT = KindStyle("question", "box", Paint("#eef0f4", "#374151", width=2.5))
_CANDIDATE = KindStyle("being verified", "box", Paint("#ffffff", "#9ca3af", dash="4 3"), icon="?")
_KEPT = KindStyle("kept", "pill", Paint("#e3f4e8", "#2e8540", width=2), icon="✓")
_PRUNED = KindStyle("pruned", "notched", Paint("#fdecea", "#b03a2e", text="#7f1d1d", dash="5 3"), icon="✗")
_RESTORED = KindStyle("restored", "hexagon", Paint("#e8f0fe", "#1a56db", width=2), icon="↺")

KINDS: dict[str, KindStyle] = {
    "node": KindStyle("interpretation", label=_node_label, details=_node_details, variants={
        "root": _ROOT, "candidate": _CANDIDATE, "kept": _KEPT, "pruned": _PRUNED, "restored": _RESTORED}),
    "retrieve": KindStyle("retrieval", "doc", Paint("#f3f4f6", "#6b7280"), label=_retrieve_label,
                          details=_retrieve_details, satellites=True),
    "expand": KindStyle("clarification call", "dot", Paint("#6b8afd", "#3b5bdb"), details=_expand_details,
                        inline=True),
    "hop": KindStyle("reasoning step", "box", Paint("#eef2ff", "#4f6bed", width=2), label=_hop_label,
                     details=_hop_details, satellites=True),
    "answer": KindStyle("answer", "box", Paint("#f5f3ff", "#7c3aed", width=2.5), label=_answer_label,
                        details=_answer_details),
    # Knowledge Graph Prompting: the walk, the passages it visited (seeds apart) and the evidence it asked for.
    "walk": KindStyle("graph walk", "box", _ROOT.paint, details=_walk_details),
    "visit": KindStyle("visited passage", "doc", Paint("#f0fdfa", "#0f766e"), details=_visit_details,
                       variant_of=lambda s: "page" if getattr(s.payload, "node_kind", "") == "page" else
                       "seed" if getattr(s.payload, "seed", False) else str(getattr(s.payload, "node_kind", "")),
                       variants={"seed": KindStyle("seed passage", "doc", Paint("#ccfbf1", "#115e59", width=2.5)),
                                 "page": KindStyle("page", "box", Paint("#f8fafc", "#0f766e", width=2)),
                                 "table": KindStyle("table", "doc", Paint("#ecfeff", "#155e75", width=2))}),
    "evidence": KindStyle("evidence asked for", "pill", Paint("#fffbeb", "#b45309"), details=_evidence_details),
    # The web agent: one look per action.
    "action": KindStyle("action", "box", Paint("#f8fafc", "#64748b"), details=_action_details,
                        variant_of=lambda s: str(getattr(s.payload, "action", "")), variants={
                            "start": KindStyle("start", "box", _ROOT.paint),
                            "search": KindStyle("search", "pill", Paint("#ecfeff", "#0e7490", width=2)),
                            **dict.fromkeys(("load", "scroll_down", "scroll_up", "back"),
                                            KindStyle("page view", "doc", Paint("#f8fafc", "#475569"))),
                            "quote": KindStyle("quote", "box", Paint("#ecfdf5", "#047857", width=2), icon="“"),
                            "merge": KindStyle("merge", "hexagon", Paint("#f0fdf4", "#15803d", width=2)),
                            "finish": KindStyle("finish", "box", Paint("#f5f3ff", "#6d28d9", width=2)),
                            "invalid": KindStyle("invalid action", "notched",
                                                 Paint("#fef2f2", "#b91c1c", dash="4 3"), icon="✗")}),
}

# A step whose kind the table does not know: its title in a plain box, its kind's name in the legend.
FALLBACK = KindStyle("step")

# Passages drawn beside the step that brought them in.
SATELLITE = Paint("#ffffff", "#cbd5e1", text="#374151", width=1)

# What a step's status changes in its look.
STATUS_PAINT: dict[str, dict] = {
    "running": {"stroke": "#d97706", "width": 2.5},
    "pending": {"stroke": "#d97706", "dash": "2 3"},
    "failed": {"stroke": "#b91c1c", "width": 2.5},
    "interrupted": {"stroke": "#b91c1c", "dash": "4 3", "width": 2},
}

# Typed links (a graph's keyword or similarity edges, a merge of two quotes): a colour per type, in order of
# first appearance; the type is also written on the edge and in the legend.
LINK_COLOURS = ("#0f766e", "#c2410c", "#7c3aed", "#be185d", "#4d7c0f", "#1d4ed8")


def style_of(step: StepEvent) -> KindStyle:
    """The style of ``step``: its kind's entry (or the fallback), refined by the payload's ``state``."""
    kind = step.kind.value
    style = KINDS.get(kind) or replace(FALLBACK, legend=kind.replace("_", " "))
    key = style.variant_of(step) if style.variant_of else str(getattr(step.payload, "state", ""))
    variant = style.variants.get(key)
    if variant is None:
        return style
    return replace(variant, label=variant.label or style.label, details=variant.details or style.details,
                   satellites=variant.satellites or style.satellites, variants={}, variant_of=None)
