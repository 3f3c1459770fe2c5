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
    if p.action == "expand":
        return f"You asked for more readings of: {one_line(p.reading)}"
    if p.action == "edit_step":
        if "→" in p.reading:  # a hop: its question and answer
            return f"You answered: {one_line(p.reading.split(' → ', 1)[0])} → {one_line(p.answer)}"
        return f"You rewrote a step: {one_line(p.answer)}" if p.answer else f"You deleted a step: {one_line(p.reading)}"
    if p.action == "pin_passage":
        return f"You pinned: {one_line(p.passage.label()) if p.passage is not None else p.target}"
    if p.action == "add_fact":
        return f"You added a fact: {one_line(p.passage.text)[:160] if p.passage is not None else p.target}"
    where = f"[{p.number}]" if p.number is not None else ""
    label = one_line(p.passage.label()) if p.passage is not None else p.target
    return f"You dropped passage {where}: {label}" if where else f"You dropped a passage: {label}"


def _title(step: "StepEvent") -> str:
    return summary(step.payload)


def _lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: EditPayload = step.payload
    if p.action == "add_fact":
        return [f"sentence {p.number} of the page shown at step {p.target}"]
    if p.action == "pin_passage":
        return [f"visit: step {p.target}"] + ([f"text: {one_line(p.passage.text)[:300]}"] if p.passage else [])
    if p.action == "drop_passage":
        out = [f"passage id: {p.target}"] if p.target else []
        return out + ([f"text: {one_line(p.passage.text)[:300]}"] if p.passage is not None else [])
    if p.action == "expand":
        return [f"clarified once more: step {p.target}"]
    out = [f"{'step' if p.action == 'edit_step' else 'reading: step'} {p.target}"]
    if p.action in ("edit_reading", "edit_step"):
        out.append(f"was: {one_line(p.reading)}")
    return out


def _card(step: "StepEvent", state: "RunState") -> str:
    p: EditPayload = step.payload
    if p.action == "drop_passage":
        ident = f'<div class="rv-muted">passage id: {esc(p.target)}</div>' if p.target else ""
        return ident + (passages_html([p.passage], "passage", "dropped") if p.passage is not None else "")
    if p.action == "add_fact":
        return (f'<div class="rv-muted">sentence {p.number} of the page shown at step {esc(p.target)}</div>'
                + (passages_html([p.passage], "passage", "added") if p.passage is not None else ""))
    if p.action == "pin_passage":
        return (f'<div class="rv-muted">visit: step {esc(p.target)}</div>'
                + (passages_html([p.passage], "passage", "pinned") if p.passage is not None else ""))
    if p.action == "expand":
        return f'<div class="rv-muted">clarified once more: step {esc(p.target)}; its new readings follow</div>'
    was = f'<div class="rv-muted">was: {esc(p.reading)}</div>' if p.action in ("edit_reading", "edit_step") else ""
    where = (f"step {esc(p.target)}; the chain continues from here" if p.action == "edit_step"
             else f"reading: step {esc(p.target)}")
    return f'{was}<div class="rv-muted">{where}</div>'


def _label(step: "StepEvent", state: "RunState") -> list[str]:
    return [summary(step.payload)]


KINDS = (
    StepKind("edit", EditPayload, "step", title=_title, lines=_lines, card=_card,
             style=KindStyle("your edit", "box", Paint("#fffbeb", "#b45309", dash="2 2", width=2), icon="✎",
                             label=_label),
             passages=no_passages),
)
