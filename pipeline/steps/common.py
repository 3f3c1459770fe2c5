"""Kinds of step every method may make: the route, a retrieval, the streamed answer and the answer, warnings
and errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import (AnswerPayload, ErrorPayload, RetrievePayload, RoutePayload, TokenPayload,
                               WarningPayload)
from pipeline.steps.kind import (StepKind, listed_passages, no_lines, no_passages, one_line, passage_lines,
                                 passages_card, passages_html, titled)
from pipeline.steps.look import KindStyle, Paint, count, passages_line

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState


def _route_title(step: "StepEvent") -> str:
    return step.payload.describe()


def _retrieve_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: RetrievePayload = step.payload
    return [f"{count(len(p.passages), 'passage')} for: {one_line(p.query)}"] + passage_lines(p.passages)


def _retrieve_card(step: "StepEvent", state: "RunState") -> str:
    return f'<div class="rv-query">query: {esc(step.payload.query)}</div>' + passages_card()(step, state)


def _retrieve_label(step: "StepEvent", state: "RunState") -> list[str]:
    p: RetrievePayload = step.payload
    found = count(len(p.passages), "passage") if step.status.value == "done" else "retrieving…"
    return [f"Retrieve: {p.query}", found]


def _retrieve_details(step: "StepEvent", state: "RunState") -> list[str]:
    return passages_line(step.payload.passages)


def _token_card(step: "StepEvent", state: "RunState") -> str:
    return esc(step.payload.text)


def _answer_lines(step: "StepEvent", state: "RunState") -> list[str]:
    p: AnswerPayload = step.payload
    lines = [f"Answer: {one_line(p.answer)}" if step.status.value == "done" else "Answer: (not finished)"]
    lines += [f"{'*' if n.number in p.citations else ' '}[{n.number}] {one_line(n.label())}" for n in p.passages]
    lines += [one_line(line) for line in p.extras.lines()] if p.extras else []
    if p.unsourced:
        lines.append(f"not in the sources: {', '.join(p.unsourced)}")
    return lines


def _answer_card(step: "StepEvent", state: "RunState") -> str:
    p: AnswerPayload = step.payload
    parts = []
    if state.status_of(step) == "done":
        parts.append(f'<div class="rv-answer">{esc(p.answer)}</div>')
    elif state.streamed:
        parts.append(f'<div class="rv-answer rv-streaming">{esc(state.streamed)}</div>')
    if p.extras:
        items = "".join(f"<li>{esc(line)}</li>" for line in p.extras.lines())
        parts.append(f'<details class="rv-more"><summary>How the answer was reached</summary><ul>{items}</ul>'
                     '</details>')
    if p.unsourced:
        parts.append(f'<div class="rv-warning">Not in the sources: {esc(", ".join(p.unsourced))}</div>')
    if p.passages:
        parts.append(passages_html(p.passages, "passage", "read"))
    return "".join(parts)


def _answer_label(step: "StepEvent", state: "RunState") -> list[str]:
    p: AnswerPayload = step.payload
    if step.status.value == "done":
        return [f"Answer: {p.answer}" if p.answer else "Answer: (empty)"]
    return ["Answer: writing…"]


def _answer_details(step: "StepEvent", state: "RunState") -> list[str]:
    p: AnswerPayload = step.payload
    text = p.answer or state.streamed
    return ([text[:400] + ("…" if len(text) > 400 else "")] if text else []) + \
        ([f"cites {', '.join(f'[{n}]' for n in p.citations)}"] if p.citations else [])


def _notice(step: "StepEvent", state: "RunState") -> list[str]:
    """A warning or error as "what: why" ("Model error: ...", "Stopped: The run was stopped.")."""
    message = step.payload.message
    return [message if step.title == message else f"{step.title}: {message}"]


def _notice_card(css: str, label: str):
    def card(step: "StepEvent", state: "RunState") -> str:
        shown = label if step.title == step.payload.message else esc(step.title)  # "Stopped", "Model error"...
        return f'<div class="{css}">{shown}: {esc(step.payload.message)}</div>'
    return card


def _no_card(step: "StepEvent", state: "RunState") -> str:
    return ""


KINDS = (
    StepKind("route", RoutePayload, "route", title=_route_title, lines=no_lines, card=_no_card, style=None,
             passages=no_passages, drawn_as="the picture's caption"),
    StepKind("retrieve", RetrievePayload, "step", title=titled, lines=_retrieve_lines, card=_retrieve_card,
             style=KindStyle("retrieval", "doc", Paint("#f3f4f6", "#6b7280"), label=_retrieve_label,
                             details=_retrieve_details, satellites=True),
             passages=listed_passages, reads_sources=True),
    StepKind("answer_token", TokenPayload, "stream", title=titled, lines=no_lines, card=_token_card, style=None,
             passages=no_passages, drawn_as="the answer box's text while it is written"),
    StepKind("answer", AnswerPayload, "step", title=titled, lines=_answer_lines, card=_answer_card,
             style=KindStyle("answer", "box", Paint("#f5f3ff", "#7c3aed", width=2.5), label=_answer_label,
                             details=_answer_details),
             passages=listed_passages),
    StepKind("warning", WarningPayload, "note", title=titled, lines=_notice, card=_notice_card("rv-warning", "Warning"),
             style=None, passages=no_passages, drawn_as="a badge on its step, a line in its tooltip", alert=True),
    StepKind("error", ErrorPayload, "note", title=titled, lines=_notice, card=_notice_card("rv-error", "Error"),
             style=None, passages=no_passages, drawn_as="a badge on its step, a line in its tooltip", alert=True),
)
