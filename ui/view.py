"""The live reasoning view: draws a run's folded state (``pipeline.fold.RunState``) as HTML.

It knows the typed payloads, not the methods: ``parent_id`` makes the layout (children nest, so a tree of
interpretations draws as a tree; a step whose single child continues it is drawn as the next item, so reasoning
steps draw as a chain), and each payload kind has one small drawing. Everything that came from a document, a
web page, the model or a replayed trace is escaped.
"""

from __future__ import annotations

import html

from pipeline.events import EventKind, StepEvent
from pipeline.fold import RunState
from pipeline.payloads import (AnswerPayload, ExpandPayload, HopPayload, NodePayload, PassageRef, PrunePayload,
                               VerifyPayload)

# Steps of a sequence: a single child of (or after) one of these continues the sequence at the same level.
SEQUENTIAL = {EventKind.HOP}
SNIPPET = 400  # characters of a passage shown; the rest behind "more"

_STATUS_ICON = {"pending": "…", "running": '<span class="rv-spin"></span>', "done": "✓", "failed": "✗",
                "interrupted": "✗"}


def esc(value) -> str:
    """``value`` as text that HTML shows literally."""
    return html.escape("" if value is None else str(value), quote=True)


_MARKDOWN = str.maketrans({c: f"&#{ord(c)};" for c in "[]()!*_`#~|\\"})


def md_safe(value) -> str:
    """``value`` as text that both Markdown and HTML show literally (no links, images or emphasis): for the
    chat, which renders Markdown."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").translate(_MARKDOWN)
    return text.replace('"', "&quot;").replace("'", "&#39;")


def placeholder(text: str) -> str:
    """The view before any run: a single line of text."""
    return f'<div class="rv rv-idle" data-state="idle"><div class="rv-head">{esc(text)}</div></div>'


def render(state: RunState, header: str | None = None) -> str:
    """The whole view as HTML: a header with totals, then the steps as nested lists."""
    if header is None:
        header = state.route.describe() if state.route else ""
    calls, tokens, seconds = state.totals()
    status = "done" if state.finished else "running"
    head = f'<div class="rv-head">{esc(header)}' if header else '<div class="rv-head">'
    head += (f'<span class="rv-total">{len(state.steps)} steps · {calls} LLM calls · {tokens} tokens · '
             f'{seconds:.1f} s</span></div>')
    top_notes = "".join(_note(state, n) for n in state.notes.get(None, []))
    return (f'<div class="rv rv-{status}" data-state="{status}">{head}{top_notes}'
            f'<ul class="rv-list">{"".join(_item(state, i) for i in state.children[None])}</ul></div>')


def _item(state: RunState, step_id: str) -> str:
    step = state.steps[step_id]
    kids = state.children.get(step_id, [])
    continues = len(kids) == 1 and (step.kind in SEQUENTIAL or state.steps[kids[0]].kind in SEQUENTIAL)
    nested = "" if continues or not kids else f'<ul class="rv-list">{"".join(_item(state, k) for k in kids)}</ul>'
    item = f'<li class="{_classes(state, step)}" data-step="{esc(step.id)}">{_card(state, step)}{nested}</li>'
    return item + (_item(state, kids[0]) if continues else "")


def _classes(state: RunState, step: StepEvent) -> str:
    classes = ["rv-node", f"kind-{step.kind.value}", f"status-{state.status_of(step)}"]
    if isinstance(step.payload, NodePayload):
        classes.append(f"state-{esc(step.payload.state)}")
    if step.kind in SEQUENTIAL:
        classes.append("rv-seq")
    return " ".join(classes)


def _card(state: RunState, step: StepEvent) -> str:
    p = step.payload
    status = state.status_of(step)
    parts = [f'<div class="rv-title"><span class="rv-icon">{_STATUS_ICON[status]}</span>'
             f'<span class="rv-kind">{esc(step.kind.value)}</span> {_title(step)}{_meta(step)}</div>']
    shown_reason = None
    if isinstance(p, NodePayload):
        parts.append(_node(p))
        shown_reason = p.reason
    elif isinstance(p, HopPayload):
        parts.append(_hop(step, p))
    elif isinstance(p, ExpandPayload) and p.candidates:
        items = "".join(f"<li>{esc(c.question)} → {esc(c.answer)}</li>" for c in p.candidates)
        parts.append(f'<details class="rv-more"><summary>{len(p.candidates)} proposed '
                     f'interpretations</summary><ul>{items}</ul></details>')
    if isinstance(p, AnswerPayload):
        if status == "done":
            parts.append(f'<div class="rv-answer">{esc(p.answer)}</div>')
        elif state.streamed:
            parts.append(f'<div class="rv-answer rv-streaming">{esc(state.streamed)}</div>')
        if p.passages:
            parts.append(_passages(p.passages, "passages read"))
    elif getattr(p, "passages", None):
        parts.append(_passages(p.passages, "new passages" if isinstance(p, HopPayload) else "passages"))
    parts.extend(_note(state, n) for n in state.notes.get(step.id, [])
                 if not (isinstance(n.payload, PrunePayload) and not n.payload.undo
                         and n.payload.reason == shown_reason))  # the node's badge says it already
    return f'<div class="rv-card">{"".join(parts)}</div>'


def _title(step: StepEvent) -> str:
    p = step.payload
    if isinstance(p, HopPayload) and p.sentence:
        return f'<span class="rv-text">Step {esc(p.step)}: {esc(p.sentence)}</span>'
    if isinstance(p, NodePayload):
        return f'<span class="rv-text">{esc(p.question)}</span>'
    return f'<span class="rv-text">{esc(step.title)}</span>'


def _meta(step: StepEvent) -> str:
    bits = []
    if step.elapsed_s is not None:
        bits.append(f"{step.elapsed_s:.1f} s")
    if step.llm_calls:
        bits.append(f"{step.llm_calls} call{'s' if step.llm_calls > 1 else ''} · "
                    f"{step.prompt_tokens}+{step.completion_tokens} tok")
    return f' <span class="rv-meta">{" · ".join(bits)}</span>' if bits else ""


def _node(p: NodePayload) -> str:
    out = []
    if p.answer:
        out.append(f'<div class="rv-node-answer">→ {esc(p.answer)}</div>')
    score = f" · score {p.score:.2f}" if p.score is not None else ""
    reason = f": {esc(p.reason)}" if p.reason else ""
    out.append(f'<span class="rv-badge badge-{esc(p.state)}">{esc(p.state)}</span>'
               f'<span class="rv-muted">{reason}{score}</span>')
    return "".join(out)


def _hop(step: StepEvent, p: HopPayload) -> str:
    out = []
    if p.query:
        out.append(f'<div class="rv-query">query: {esc(p.query)}</div>')
        if step.status.value == "done" and not p.passages and not p.note:
            out.append(f'<div class="rv-muted">no new passages ({esc(p.duplicates)} already collected)</div>')
    elif p.sentence:
        out.append('<div class="rv-query rv-muted">no query (the sentence only concludes)</div>')
    out.extend(f'<div class="rv-muted">{esc(text)}</div>' for text in (p.note, p.stop) if text)
    return "".join(out)


def _note(state: RunState, note: StepEvent) -> str:
    p = note.payload
    if isinstance(p, VerifyPayload):
        evidence = p.evidence.model_dump(exclude={"passage"}, exclude_none=True)
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in evidence.items())
        body = _passages([p.evidence.passage], "evidence passage") if p.evidence.passage else ""
        verdict = "keep" if p.keep else "prune"
        return (f'<details class="rv-verdict verdict-{verdict}"><summary>Verifier: {verdict}, score '
                f'{p.score:.2f} ({esc(p.verifier)})</summary><table>{rows}</table>{body}</details>')
    if isinstance(p, PrunePayload):
        label = "Pruning undone" if p.undo else "Pruned"
        return f'<div class="rv-prune">{label}: {esc(p.reason)}</div>'
    css = "rv-warning" if note.kind == EventKind.WARNING else "rv-error"
    label = "Warning" if note.kind == EventKind.WARNING else "Error"
    if note.title != p.message:
        label = esc(note.title)  # "Stopped", "Model error"...
    return f'<div class="{css}">{label}: {esc(p.message)}</div>'


def _passages(passages: list[PassageRef], label: str) -> str:
    items = []
    for passage in passages:
        text = passage.text
        more = (f'<details class="rv-full"><summary>more</summary>{esc(text[SNIPPET:])}</details>'
                if len(text) > SNIPPET else "")
        items.append(f'<li><span class="rv-passage-title">[{esc(passage.number or "·")}]</span> '
                     f'{esc(passage.label())}<div class="rv-passage">{esc(text[:SNIPPET])}{more}</div></li>')
    return (f'<details class="rv-more rv-passages"><summary>{len(passages)} {esc(label)}</summary>'
            f'<ol>{"".join(items)}</ol></details>')
