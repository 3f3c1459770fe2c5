"""The live reasoning view: draws a run's folded state (``pipeline.fold.RunState``) as HTML.

It knows the table of step kinds, not the methods: ``parent_id`` makes the layout (children nest, so a tree of
interpretations draws as a tree; a single child of a sequential kind continues it as the next item, so reasoning
steps draw as a chain), and each kind's card (``pipeline.steps``) draws its body. Everything that came from a
document, a web page, the model or a replayed trace is escaped.
"""

from __future__ import annotations

from pipeline.escaping import esc
from pipeline.events import StepEvent
from pipeline.fold import RunState
from pipeline.steps import kind_of

_STATUS_ICON = {"pending": "…", "running": '<span class="rv-spin"></span>', "done": "✓", "failed": "✗",
                "interrupted": "✗"}


def placeholder(text: str) -> str:
    """The view before any run: a single line of text."""
    return f'<div class="rv rv-idle" data-state="idle"><div class="rv-head">{esc(text)}</div></div>'


def render(state: RunState, header: str | None = None) -> str:
    """The whole view as HTML: a header with totals, then the steps as nested lists."""
    if header is None:
        header = state.route.describe() if state.route else ""
    status = "done" if state.finished else "running"
    head = f'<div class="rv-head">{esc(header)}' if header else '<div class="rv-head">'
    head += f'<span class="rv-total">{esc(state.totals_line())}</span></div>'
    top_notes = "".join(kind_of(n).card(n, state) for n in state.notes.get(None, []))
    return (f'<div class="rv rv-{status}" data-state="{status}">{head}{top_notes}'
            f'<ul class="rv-list">{"".join(_item(state, i) for i in state.children[None])}</ul></div>')


def _item(state: RunState, step_id: str) -> str:
    step = state.steps[step_id]
    kids = state.children.get(step_id, [])
    continues = len(kids) == 1 and (kind_of(step).sequential or kind_of(state.steps[kids[0]]).sequential)
    nested = "" if continues or not kids else f'<ul class="rv-list">{"".join(_item(state, k) for k in kids)}</ul>'
    item = f'<li class="{_classes(state, step)}" data-step="{esc(step.id)}">{_card(state, step)}{nested}</li>'
    return item + (_item(state, kids[0]) if continues else "")


def _classes(state: RunState, step: StepEvent) -> str:
    classes = ["rv-node", f"kind-{step.kind.value}", f"status-{state.status_of(step)}"]
    node_state = getattr(step.payload, "state", None)  # a tree node's: kept, pruned...
    if isinstance(node_state, str):
        classes.append(f"state-{esc(node_state)}")
    if kind_of(step).sequential:
        classes.append("rv-seq")
    return " ".join(classes)


def _card(state: RunState, step: StepEvent) -> str:
    kind = kind_of(step)
    status = state.status_of(step)
    parts = [f'<div class="rv-title"><span class="rv-icon">{_STATUS_ICON[status]}</span>'
             f'<span class="rv-kind">{esc(step.kind.value)}</span> <span class="rv-text">{esc(kind.title(step))}'
             f'</span>{_meta(step)}</div>', kind.card(step, state)]
    parts.extend(kind_of(n).card(n, state) for n in state.notes.get(step.id, []))
    return f'<div class="rv-card">{"".join(parts)}</div>'


def _meta(step: StepEvent) -> str:
    bits = []
    if step.elapsed_s is not None:
        bits.append(f"{step.elapsed_s:.1f} s")
    if step.llm_calls:
        bits.append(f"{step.llm_calls} call{'s' if step.llm_calls > 1 else ''} · "
                    f"{step.prompt_tokens}+{step.completion_tokens} tok")
    return f' <span class="rv-meta">{" · ".join(bits)}</span>' if bits else ""
