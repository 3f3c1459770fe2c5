"""The picture as SVG: boxes (shape and colours from the step's style), parent links, typed links labelled by
type, the passages a chain step brought in, a legend, and a tooltip on every step with its full text.

Every step is a ``<g class="rp-node" data-node="<step id>">`` that can take the keyboard focus; the browser app
opens the step's card in the list when one is clicked (``ui/assets/picture.js``). Everything shown comes from
a document, the model or a trace, so all of it is escaped (``pipeline.picture.text.xml``).
"""

from __future__ import annotations

import html

from pipeline.events import StepEvent
from pipeline.fold import RunState
from pipeline.payloads import ErrorPayload
from pipeline.steps import kind_of
from pipeline.picture.layout import (DOT, FONT, LINE, PAD_X, PAD_Y, SAT_FONT, SAT_H, SAT_W, Box, Layout,
                                     layout)
from pipeline.picture.styles import LINK_COLOURS, SATELLITE, STATUS_PAINT, KindStyle, Paint
from pipeline.picture.text import FONT_FAMILY, clean, shorten, text_width, xml

MARGIN = 10
EDGE = "#9aa3af"
LEGEND_FONT = 11
TOOLTIP_LINES, TOOLTIP_CHARS = 14, 300


def draw(state: RunState, *, standalone: bool = False) -> str:
    """``state`` as an SVG element. ``standalone``: a document of its own (the exported file: namespace, white
    background, the question as a caption, no hints about clicking); else for inline use in the page."""
    try:
        plan = layout(state)
    except RecursionError:  # a hand-made trace nested thousands of levels deep
        return _message_svg("This run is nested too deeply to draw.", standalone)
    ink = "#1f2937" if standalone else "currentColor"
    width = max(plan.width, 360.0)
    header, top = [], MARGIN
    if standalone:
        caption = clean(state.question) or "(no question)"
        method = state.route.label if state.route else ", ".join(state.methods)
        header.append(f'<text x="{MARGIN}" y="{top + 13}" font-size="14" font-weight="bold" fill="{ink}">'
                      f'{xml(shorten(caption, width, 14.6))}</text>')
        top += 20
        if method:
            header.append(f'<text x="{MARGIN}" y="{top + 11}" font-size="11" fill="{ink}">'
                          f'{xml(shorten(method, width, 11))}</text>')
            top += 16
    for note in state.notes.get(None, []):
        colour = "#b91c1c" if isinstance(note.payload, ErrorPayload) else "#92400e"
        header.append(f'<text x="{MARGIN}" y="{top + 12}" font-size="12" fill="{colour}">'
                      f'{xml(shorten(_note_text(note, state), width, FONT))}</text>')
        top += 17
    legend, legend_height = _legend(plan, width, top, ink)
    top += legend_height + (8 if legend_height else 0)
    if not plan.boxes:
        header.append(f'<text x="{MARGIN}" y="{top + 12}" font-size="12" fill="{ink}">No steps yet.</text>')
        top += 20
    total_w, total_h = width + 2 * MARGIN, top + plan.height + MARGIN
    ns = 'xmlns="http://www.w3.org/2000/svg" ' if standalone else ""
    parts = [f'<svg {ns}class="rp-svg" '
             f'data-mode="{plan.mode}" data-steps="{len(plan.boxes)}" width="{total_w:.0f}" '
             f'height="{total_h:.0f}" viewBox="0 0 {total_w:.0f} {total_h:.0f}" style="--rp-w:{total_w:.0f}px" '
             f'font-family="{xml(FONT_FAMILY)}" font-size="{FONT}" role="group" '
             f'aria-label="The run as a picture: {len(plan.boxes)} steps">']
    if standalone:
        parts.append('<rect width="100%" height="100%" fill="#ffffff"/>')
    parts += header + legend
    parts.append(f'<g class="rp-body" transform="translate({MARGIN} {top})">')
    colours = _link_colours(plan)
    parts.append(_parent_edges(plan, colours))
    parts.append(_links(plan, colours))
    parts.append(_satellites(plan))
    parts.append('<g class="rp-nodes">')
    parts += [_node(state, box, standalone) for box in plan.boxes.values()]
    parts.append("</g></g></svg>")
    return "".join(parts)


def _message_svg(text: str, standalone: bool) -> str:
    ns = 'xmlns="http://www.w3.org/2000/svg" ' if standalone else ""
    return (f'<svg {ns}class="rp-svg" width="420" height="40" viewBox="0 0 420 40" style="--rp-w:420px">'
            f'<text x="{MARGIN}" y="24" font-size="12" font-family="{xml(FONT_FAMILY)}">{xml(text)}</text></svg>')


def _note_text(note: StepEvent, state: RunState) -> str:
    return " ".join(kind_of(note).lines(note, state)) or note.title


# Shapes.

def _paint_of(style: KindStyle, status: str) -> Paint:
    paint = style.paint
    change = STATUS_PAINT.get(status)
    if change:
        paint = Paint(paint.fill, change.get("stroke", paint.stroke), paint.text, change.get("dash", paint.dash),
                      change.get("width", paint.width))
    return paint


def _stroke(paint: Paint) -> str:
    dash = f' stroke-dasharray="{paint.dash}"' if paint.dash else ""
    return f'fill="{paint.fill}" stroke="{paint.stroke}" stroke-width="{paint.width}"{dash}'


def shape(kind: str, w: float, h: float, paint: Paint) -> str:
    """The outline of a box of ``kind`` with its top-left corner at (0, 0)."""
    attrs = _stroke(paint)
    if kind == "dot":
        return f'<circle cx="{w / 2:g}" cy="{h / 2:g}" r="{min(w, h) / 2:g}" {attrs}/>'
    if kind == "pill":
        return f'<rect width="{w:g}" height="{h:g}" rx="12" {attrs}/>'
    if kind == "notched":
        c = 7
        points = f"{c},0 {w - c:g},0 {w:g},{c} {w:g},{h - c:g} {w - c:g},{h:g} {c},{h:g} 0,{h - c:g} 0,{c}"
        return f'<polygon points="{points}" {attrs}/>'
    if kind == "hexagon":
        c = 8
        points = f"{c},0 {w - c:g},0 {w:g},{h / 2:g} {w - c:g},{h:g} {c},{h:g} 0,{h / 2:g}"
        return f'<polygon points="{points}" {attrs}/>'
    if kind == "doc":
        c = 9
        fold = f'<path d="M{w - c:g} 0 V{c} H{w:g}" fill="none" stroke="{paint.stroke}" stroke-width="1"/>'
        return f'<path d="M0 0 H{w - c:g} L{w:g} {c} V{h:g} H0 Z" {attrs}/>' + fold
    return f'<rect width="{w:g}" height="{h:g}" rx="4" {attrs}/>'


# Steps.

def _node(state: RunState, box: Box, standalone: bool) -> str:
    step, style = box.step, box.style
    paint = _paint_of(style, box.status)
    variant = getattr(step.payload, "state", None)
    classes = f"rp-node rp-k-{_token(step.kind.value)} rp-st-{box.status}"
    if isinstance(variant, str):
        classes += f" rp-v-{_token(variant)}"
    notes = state.notes.get(step.id, [])
    tip = _tooltip(state, box, notes, standalone)
    first = box.lines[0] if box.lines else style.legend
    out = [f'<g class="{classes}" data-node="{xml(step.id)}" data-kind="{xml(step.kind.value)}" '
           f'transform="translate({box.x:.1f} {box.y:.1f})" tabindex="0" role="button" '
           f'aria-label="{xml(style.legend)}: {xml(first)}"><title>{tip}</title>',
           shape(style.shape, box.w, box.h, paint)]
    if box.lines:
        spans = "".join(f'<tspan x="{PAD_X}" y="{PAD_Y + 11.5 + i * LINE:g}">{xml(line)}</tspan>'
                        for i, line in enumerate(box.lines))
        out.append(f'<text fill="{paint.text}">{spans}</text>')
    flagged = [n for n in notes if kind_of(n).alert]
    if flagged:
        colour = "#b91c1c" if any(isinstance(n.payload, ErrorPayload) for n in flagged) else "#d97706"
        out.append(f'<g class="rp-badge" transform="translate({box.w - 2:g} 2)"><circle r="7" fill="{colour}"/>'
                   f'<text y="4" text-anchor="middle" font-size="11" font-weight="bold" fill="#ffffff">!</text></g>')
    out.append("</g>")
    return "".join(out)


def _token(value: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in value)[:40]


def _tooltip(state: RunState, box: Box, notes: list[StepEvent], standalone: bool) -> str:
    step, style = box.step, box.style
    lines = [f"{style.legend} · {box.status}"]
    lines += [p for p in (style.label(step, state) if style.label else [step.title]) if p]
    if style.details:
        lines += style.details(step, state)
    cost = []
    if step.elapsed_s is not None:
        cost.append(f"{step.elapsed_s:.1f} s")
    if step.llm_calls:
        cost.append(f"{step.llm_calls} LLM call{'s' if step.llm_calls > 1 else ''}, "
                    f"{step.prompt_tokens}+{step.completion_tokens} tokens")
    if cost:
        lines.append(" · ".join(cost))
    for note in notes:
        lines += kind_of(note).lines(note, state)
    if not standalone:
        lines.append("Click or press Enter to open its card in the list.")
    shown = [line for line in map(clean, lines) if line][:TOOLTIP_LINES]
    return "\n".join(html.escape(line[:TOOLTIP_CHARS] + ("…" if len(line) > TOOLTIP_CHARS else ""))
                     for line in shown)


# Links between steps.

def _anchor_right(box: Box) -> tuple[float, float]:
    return box.x + box.w, box.y + box.h / 2


def _anchor_left(box: Box) -> tuple[float, float]:
    return box.x, box.y + box.h / 2


def _parent_edges(plan: Layout, colours: dict[str, str]) -> str:
    """The tree or chain: a curve from each parent to each child; a typed parent link (a graph's "knn" edge)
    in its type's colour, with the type written near the child."""
    out = ['<g class="rp-edges" fill="none" stroke="' + EDGE + '" stroke-width="1.5">']
    for edge in plan.parents:
        parent, child = plan.boxes[edge.source], plan.boxes[edge.target]
        pruned = child.status == "done" and getattr(child.step.payload, "state", None) == "pruned"
        if plan.mode == "tree":
            (x1, y1), (x2, y2) = _anchor_right(parent), _anchor_left(child)
            middle = (x1 + x2) / 2
            d = f"M{x1:.1f} {y1:.1f} C{middle:.1f} {y1:.1f} {middle:.1f} {y2:.1f} {x2:.1f} {y2:.1f}"
        else:  # down the rail on the parent's left, and across to an indented child
            rail = parent.x + 14
            x2 = rail if child.col == parent.col else child.x
            y2 = child.y if child.col == parent.col else child.y + min(child.h / 2, 12)
            d = f"M{rail:.1f} {parent.bottom:.1f} V{y2:.1f}" + ("" if child.col == parent.col else f" H{x2:.1f}")
        typed = edge.type != "parent"
        attrs = (f' stroke="{colours[edge.type]}"' if typed else "") + (' stroke-dasharray="4 3"' if pruned else "")
        out.append(f'<path data-edge="{xml(edge.source)}&gt;{xml(edge.target)}" d="{d}"{attrs}/>')
        if typed:  # written just before the child, above the line
            out.append(_edge_label(edge.type, colours[edge.type], x2 - 3, y2, "end"))
    out.append("</g>")
    return "".join(out)


def _edge_label(text: str, colour: str, x: float, y: float, anchor: str) -> str:
    """A link's type at (x, y) (the end of the link at a box's side), above the line and away from the box."""
    return (f'<text class="rp-edge-label" x="{x:.1f}" y="{y - 4:.1f}" font-size="9" fill="{colour}" '
            f'stroke="#ffffff" stroke-width="3" paint-order="stroke" text-anchor="{anchor}">'
            f'{xml(shorten(text, 80, 9))}</text>')


def _link_colours(plan: Layout) -> dict[str, str]:
    """A colour per link type (typed parent links and other links), in order of first appearance."""
    types = list(dict.fromkeys(e.type for e in plan.parents + plan.links if e.type != "parent"))
    return {t: LINK_COLOURS[i % len(LINK_COLOURS)] for i, t in enumerate(types)}


def _links(plan: Layout, colours: dict[str, str]) -> str:
    if not plan.links:
        return ""
    fan_out = {}  # links of one type leaving one step: their types are written near the targets instead
    for link in plan.links:
        fan_out[(link.source, link.type)] = fan_out.get((link.source, link.type), 0) + 1
    out = ['<g class="rp-links" fill="none">']
    for link in plan.links:
        source, target = plan.boxes[link.source], plan.boxes[link.target]
        colour = colours[link.type]
        if target.x > source.x + source.w:  # to a later column: from the right side to the left side
            (x1, y1), (x2, y2) = _anchor_right(source), _anchor_left(target)
            c1, c2 = ((x1 + x2) / 2, y1), ((x1 + x2) / 2, y2)
            sides = ("start", "end")
        elif target.x + target.w < source.x:  # to an earlier column
            (x1, y1), (x2, y2) = _anchor_left(source), _anchor_right(target)
            c1, c2 = ((x1 + x2) / 2, y1), ((x1 + x2) / 2, y2)
            sides = ("end", "start")
        else:  # the same column: an arc out to the right
            (x1, y1), (x2, y2) = _anchor_right(source), _anchor_right(target)
            right = max(x1, x2) + 24 + abs(y2 - y1) * 0.15
            c1, c2 = (right, y1), (right, y2)
            sides = ("start", "start")
        d = f"M{x1:.1f} {y1:.1f} C{c1[0]:.1f} {c1[1]:.1f} {c2[0]:.1f} {c2[1]:.1f} {x2:.1f} {y2:.1f}"
        # The type is written where the link leaves its source, away from the box; for several links of one
        # type leaving one step, where each arrives.
        if fan_out[(link.source, link.type)] > 1:
            x, y, anchor = x2, y2, sides[1]
        else:
            x, y, anchor = x1, y1, sides[0]
        text = _edge_label(link.type, colour, x + (3 if anchor == "start" else -3), y, anchor)
        label = xml(link.type)
        out.append(f'<g class="rp-link" data-link="{label}"><title>{label}: {xml(link.source)} → '
                   f'{xml(link.target)}</title><path d="{d}" stroke="{colour}" stroke-width="1.5" '
                   f'stroke-dasharray="6 3"/>{text}</g>')
    out.append("</g>")
    return "".join(out)


def _satellites(plan: Layout) -> str:
    out = []
    for box in plan.boxes.values():
        for sat in box.satellites:
            x1, y1 = box.x + box.w, box.y + min(box.h / 2, 13)
            x2, y2 = sat.x, sat.y + SAT_H / 2
            middle = (x1 + x2) / 2
            passage = sat.passage
            tip = "" if passage is None else \
                f"<title>{xml(passage.label())}\n{xml(passage.text[:TOOLTIP_CHARS])}</title>"
            out.append(f'<g class="rp-sat" data-of="{xml(box.id)}"><path d="M{x1:.1f} {y1:.1f} C{middle:.1f} '
                       f'{y1:.1f} {middle:.1f} {y2:.1f} {x2:.1f} {y2:.1f}" fill="none" stroke="#cbd5e1"/>'
                       f'<g transform="translate({sat.x:.1f} {sat.y:.1f})">{tip}'
                       f'<rect width="{SAT_W}" height="{SAT_H}" rx="{SAT_H / 2:g}" {_stroke(SATELLITE)}/>'
                       f'<text x="8" y="14" font-size="{SAT_FONT}" fill="{SATELLITE.text}">{xml(sat.text)}</text>'
                       f'</g></g>')
    return f'<g class="rp-sats">{"".join(out)}</g>' if out else ""


# The legend: one swatch per look present, one per link type.

def _legend(plan: Layout, width: float, top: float, ink: str) -> tuple[list[str], float]:
    items: dict[str, tuple[str, Paint] | str] = {}
    for box in plan.boxes.values():
        items.setdefault(box.style.legend, (box.style.shape, box.style.paint))
    for link_type, colour in _link_colours(plan).items():
        items.setdefault(f"link: {link_type}", colour)
    if not items:
        return [], 0.0
    out, x, y = [], 0.0, 0.0
    for name, look in items.items():
        label = shorten(name, 200, LEGEND_FONT)
        item_w = 30 + text_width(label, LEGEND_FONT) + 14
        if x and x + item_w > width:
            x, y = 0.0, y + 20
        if isinstance(look, str):
            swatch = f'<path d="M0 7 H24" stroke="{look}" stroke-width="2" stroke-dasharray="6 3"/>'
        else:
            kind, paint = look
            swatch = shape(kind, DOT if kind == "dot" else 24, DOT, paint)
        out.append(f'<g transform="translate({x:.1f} {y:.1f})">{swatch}<text x="30" y="11" font-size="{LEGEND_FONT}" '
                   f'fill="{ink}">{xml(label)}</text></g>')
        x += item_w
    return [f'<g class="rp-legend" transform="translate({MARGIN} {top})">{"".join(out)}</g>'], y + 16
