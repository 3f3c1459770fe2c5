"""The picture of a run in the page (``pipeline.picture`` draws it), the reasoning list it points into, and the
side-by-side view of a comparison.

The page's script (``ui/assets/picture.js``) zooms and pans a picture, keeps its zoom across updates, and opens
a step's card in the list when its node is clicked or chosen with Enter; the list of each run is wrapped in a
``data-run`` element so that a node finds its own run's card when several runs are shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.fold import RunState
from pipeline.picture import draw, mode_of
from pipeline.escaping import esc
from ui.view import render

_SHAPE_NAMES = {"tree": "Tree", "graph": "Graph", "chain": "Chain", "timeline": "Timeline", "answer": "Steps"}


def picture_placeholder(text: str) -> str:
    """The picture area before any run: one line of text."""
    return f'<div class="rp rp-idle" data-state="idle"><div class="rp-bar"><span class="rp-caption">{esc(text)}' \
           f'</span></div></div>'


def _toolbar(caption: str) -> str:
    buttons = "".join(f'<button type="button" class="rp-btn" data-zoom="{action}" aria-label="{label}" '
                      f'title="{label}">{glyph}</button>'
                      for action, glyph, label in (("out", "−", "Zoom out"), ("fit", "Fit", "Fit the width"),
                                                   ("in", "+", "Zoom in")))
    return f'<div class="rp-bar"><span class="rp-caption">{esc(caption)}</span><span class="rp-zoom">{buttons}' \
           f'</span></div>'


def picture_html(state: RunState, run_id: str) -> str:
    """The live picture of ``state``: a caption and zoom buttons, then the drawing in its own scroll box (drag
    to pan, Ctrl+wheel to zoom)."""
    structure = state.route.structure if state.route else mode_of(state)
    status = "done" if state.finished else "running"
    caption = (f"{_SHAPE_NAMES.get(structure, 'Steps')} · {len(state.steps)} step{'s' if len(state.steps) != 1 else ''}"
               f"{' · running' if status == 'running' else ''} · click a step to open its card")
    return (f'<div class="rp rp-{status}" data-state="{status}" data-run="{esc(run_id)}">{_toolbar(caption)}'
            f'<div class="rp-scroll">{draw(state)}</div></div>')


def reasoning_html(state: RunState, run_id: str, header: str | None = None) -> str:
    """The reasoning list of ``state`` (``ui.view.render``) marked with its run, so the picture's nodes open the
    cards of their own run."""
    return f'<div class="rv-run" data-run="{esc(run_id)}">{render(state, header)}</div>'


@dataclass
class Column:
    """One method of a comparison: its label, and its run once it has started."""

    method: str
    label: str
    state: RunState | None = None
    run_id: str = ""


def compare_html(question: str, columns: list[Column]) -> str:
    """Methods side by side on one question: for each, its cost, its picture and its answer with the passages it
    cites; methods not started yet say so."""
    if not columns:
        return ""
    done = all(c.state is not None and c.state.finished for c in columns)
    cells = "".join(_column(c) for c in columns)
    return (f'<div class="rp-compare" data-state="{"done" if done else "running"}" '
            f'style="--rp-cols:{len(columns)}"><div class="rp-compare-head">Compared on: '
            f'<q>{esc(question)}</q></div><div class="rp-compare-grid">{cells}</div></div>')


def _column(column: Column) -> str:
    head = f'<h4 class="rp-col-title">{esc(column.label)}</h4>'
    state = column.state
    if state is None:
        return (f'<section class="rp-col rp-waiting" data-method="{esc(column.method)}">{head}'
                f'<p class="rp-col-meta">Waits for its turn (one model, one run at a time).</p></section>')
    status = "done" if state.finished else "running"
    meta = state.totals_line()
    answer = state.answer_text
    errors = state.errors()
    if errors:
        body = "".join(f'<div class="rp-col-error">{esc(e)}</div>' for e in errors)
    elif answer:
        body = f'<div class="rp-col-answer">{esc(answer)}{"▌" if status == "running" else ""}</div>'
    else:
        body = f'<div class="rp-col-answer rp-muted">{"Working…" if status == "running" else "No answer."}</div>'
    cited = state.cited_passages()
    if cited:
        items = "".join(f'<li><span class="rp-src-title">[{esc(p.number)}] {esc(p.label())}</span>'
                        f'<div class="rp-src-text">{esc(p.text)}</div></li>' for p in cited)
        body += (f'<details class="rp-sources"><summary>{len(cited)} cited passage{"s" if len(cited) != 1 else ""}'
                 f'</summary><ol>{items}</ol></details>')
    return (f'<section class="rp-col rp-col-{status}" data-method="{esc(column.method)}" '
            f'data-run="{esc(column.run_id)}">{head}<p class="rp-col-meta">{esc(meta)}</p>'
            f'<div class="rp rp-{status}" data-run="{esc(column.run_id)}"><div class="rp-scroll">{draw(state)}'
            f'</div></div>{body}</section>')
