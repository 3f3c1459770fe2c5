"""The kind of step Auto adds: its check of the quick answer (what it looked at, and whether a deeper method
follows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import CheckPayload, Signal
from pipeline.steps.kind import StepKind, no_passages, one_line
from pipeline.steps.look import KindStyle, Paint

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _signal_line(signal: Signal) -> str:
    value = signal.value
    if isinstance(value, float):
        shown = f"{value:.2f}"
    else:
        shown = "yes" if value is True or isinstance(value, str) else "no" if value is False else "-"
    line = f"{'▲' if signal.fired else '·'} {signal.name}: {shown}"
    if signal.fired:
        return line + (f" → asks for more: {one_line(signal.why)}" if signal.why else " → asks for more")
    return line + (f" ({one_line(signal.why)})" if signal.why else "")


def _verdict(p: CheckPayload) -> str:
    return f"going deeper with {p.deeper}: {p.reason}" if p.deeper else "the quick answer stands"


def _lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: CheckPayload = step.payload
    if step.status.value != "done":
        return ["checking…"]
    return [_verdict(p)] + [_signal_line(s) for s in p.signals]


def _card(step: "StepEvent", state: "RunState") -> str:
    p: CheckPayload = step.payload
    if step.status.value != "done":
        return '<div class="rv-muted">checking the quick answer…</div>'
    items = "".join(f"<li>{esc(_signal_line(s))}</li>" for s in p.signals)
    return (f'<div class="rv-query">{esc(_verdict(p))}</div>'
            + (f'<details class="rv-more"><summary>What Auto looked at</summary><ul>{items}</ul></details>'
               if items else ""))


def _label(step: "StepEvent", state: "RunState") -> list[str]:
    p: CheckPayload = step.payload
    if step.status.value != "done":
        return ["Check: …"]
    return ["Check: " + ("deeper" if p.deeper else "answer stands")]


def _details(step: "StepEvent", state: "RunState") -> list[str]:
    return [_signal_line(s) for s in step.payload.signals]


KINDS = (
    StepKind("check", CheckPayload, "step", title=lambda step: "Check the quick answer", lines=_lines, card=_card,
             style=KindStyle("Auto's check", "box", Paint("#fff7ed", "#c2410c"), label=_label, details=_details),
             passages=no_passages),
)
