"""The kind of step of a reasoning chain (IRCoT): one sentence, the query it made and the passages it added."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import HopPayload
from pipeline.steps.kind import StepKind, listed_passages, one_line, passage_lines, passages_card
from pipeline.steps.look import KindStyle, Paint, passages_line

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _title(step: "StepEvent") -> str:
    p: HopPayload = step.payload
    return f"Step {p.step}: {p.sentence}" if p.sentence else step.title


def _no_new(step: "StepEvent", p: HopPayload) -> bool:
    return bool(p.query) and step.status.value == "done" and not p.passages and not p.note


def _lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: HopPayload = step.payload
    lines = [f"query: {one_line(p.query)}"] if p.query else []
    if _no_new(step, p):
        lines.append(f"no new passages ({p.duplicates} already collected)")
    elif p.query:
        lines.append(f"+{len(p.passages)} passages" + (f", {p.duplicates} already collected" if p.duplicates else "")
                     + (f", {p.pool_size} in all" if p.pool_size is not None else ""))
    return lines + [one_line(text) for text in (p.note, p.stop) if text] + passage_lines(p.passages)


def _card(step: "StepEvent", state: "RunState") -> str:
    p: HopPayload = step.payload
    out = []
    if p.query:
        out.append(f'<div class="rv-query">query: {esc(p.query)}</div>')
        if _no_new(step, p):
            out.append(f'<div class="rv-muted">no new passages ({esc(p.duplicates)} already collected)</div>')
        elif p.pool_size is not None and step.status.value == "done":
            out.append(f'<div class="rv-muted">{esc(p.pool_size)} passages collected so far'
                       + (f" ({esc(p.duplicates)} retrieved again)" if p.duplicates else "") + "</div>")
    elif p.sentence:
        out.append('<div class="rv-query rv-muted">no query (the sentence only concludes)</div>')
    out.extend(f'<div class="rv-muted">{esc(text)}</div>' for text in (p.note, p.stop) if text)
    return "".join(out) + passages_card("new passage")(step, state)


def _label(step: "StepEvent", state: "RunState") -> list[str]:
    p: HopPayload = step.payload
    return [f"{p.step}. {p.sentence or ('thinking…' if step.status.value == 'running' else '(no sentence)')}"]


def _details(step: "StepEvent", state: "RunState") -> list[str]:
    p: HopPayload = step.payload
    lines = [f"query: {p.query}"] if p.query else []
    if p.query and step.status.value == "done" and not p.passages:
        lines.append(f"no new passages ({p.duplicates} already collected)")
    return lines + [text for text in (p.note, p.stop) if text] + passages_line(p.passages)


KINDS = (
    StepKind("hop", HopPayload, "step", title=_title, lines=_lines, card=_card,
             style=KindStyle("reasoning step", "box", Paint("#eef2ff", "#4f6bed", width=2), label=_label,
                             details=_details, satellites=True),
             passages=listed_passages, sequential=True),
)
