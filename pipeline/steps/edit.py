"""The kind of step a person adds to a finished run: an edit ("You pruned: ...", "You dropped passage [3]: ..."),
recorded in the resumed run's trace before the steps it made recomputed (``pipeline.edits``,
``pipeline.resume``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import EditPayload
from pipeline.steps.kind import StepKind, no_passages, one_line, passages_html
from pipeline.steps.look import KindStyle, Paint

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _reading(question: str | None, answer: str | None) -> str:
    return f"{one_line(question)} → {one_line(answer)}" if answer else one_line(question)


def summary(p: EditPayload) -> str:
    """The edit in one line for people: "You pruned: <reading>", "You dropped passage [3]: <title>"."""
    if p.action == "prune":
        return f"You pruned: {one_line(p.reading)}"
    if p.action == "restore":
        return f"You restored: {one_line(p.reading)}"
    if p.action == "edit_reading":
        return f"You edited a reading: {_reading(p.question, p.answer)}"
    where = f"[{p.number}]" if p.number is not None else ""
    label = one_line(p.passage.label()) if p.passage is not None else p.target
    return f"You dropped passage {where}: {label}" if where else f"You dropped a passage: {label}"


def _title(step: "StepEvent") -> str:
    return summary(step.payload)


def _lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: EditPayload = step.payload
    if p.action == "drop_passage":
        out = [f"passage id: {p.target}"] if p.target else []
        return out + ([f"text: {one_line(p.passage.text)[:300]}"] if p.passage is not None else [])
    out = [f"reading: step {p.target}"]
    if p.action == "edit_reading":
        out.append(f"was: {one_line(p.reading)}")
    return out


def _card(step: "StepEvent", state: "RunState") -> str:
    p: EditPayload = step.payload
    if p.action == "drop_passage":
        ident = f'<div class="rv-muted">passage id: {esc(p.target)}</div>' if p.target else ""
        return ident + (passages_html([p.passage], "passage", "dropped") if p.passage is not None else "")
    was = f'<div class="rv-muted">was: {esc(p.reading)}</div>' if p.action == "edit_reading" else ""
    return f'{was}<div class="rv-muted">reading: step {esc(p.target)}</div>'


def _label(step: "StepEvent", state: "RunState") -> list[str]:
    return [summary(step.payload)]


KINDS = (
    StepKind("edit", EditPayload, "step", title=_title, lines=_lines, card=_card,
             style=KindStyle("your edit", "box", Paint("#fffbeb", "#b45309", dash="2 2", width=2), icon="✎",
                             label=_label),
             passages=no_passages),
)
