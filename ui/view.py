"""The live reasoning view: draws a run's folded state (``pipeline.fold.RunState``) as HTML.

It knows the typed payloads, not the methods: ``parent_id`` makes the layout (children nest, so a tree of
interpretations draws as a tree; a step whose single child continues it is drawn as the next item, so reasoning
steps draw as a chain), and each payload kind has one small drawing. Everything that came from a document, a
web page, the model or a replayed trace is escaped.
"""

from __future__ import annotations

import html
import re

from pipeline.events import EventKind, StepEvent
from pipeline.fold import RunState
from pipeline.payloads import (ActionPayload, AnswerPayload, EvidencePayload, ExpandPayload, HopPayload, NodePayload,
                               PassageRef, PrunePayload, VerifyPayload, VisitPayload, WalkPayload)

# Steps of a sequence: a single child of (or after) one of these continues the sequence at the same level.
SEQUENTIAL = {EventKind.HOP, EventKind.ACTION}
SNIPPET = 400  # characters of a passage shown; the rest behind "more"

_STATUS_ICON = {"pending": "…", "running": '<span class="rv-spin"></span>', "done": "✓", "failed": "✗",
                "interrupted": "✗"}


# Bidirectional-text controls: an override or isolate in a file or collection name reorders what follows it
# ("report\u202eFDP.exe" shows as "reportexe.PDF"). They are dropped from everything shown.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_NO_BIDI = dict.fromkeys(map(ord, BIDI_CONTROLS))


def plain(value) -> str:
    """``value`` as a string without bidirectional-text controls (see ``BIDI_CONTROLS``)."""
    return ("" if value is None else str(value)).translate(_NO_BIDI)


def esc(value) -> str:
    """``value`` as text that HTML shows literally, without bidirectional-text controls."""
    return html.escape(plain(value), quote=True)


# Markdown syntax, and what GFM turns into links by itself: "http://", "ftp://", "mailto:" (the colon),
# "user@host.org" (the at sign) and "www.host.org" (see _WWW). "$" would start LaTeX in the chat.
_MARKDOWN = str.maketrans({c: f"&#{ord(c)};" for c in "[]()!*_`#~|\\:@$"})
_WWW = re.compile(r"(www)\.", re.IGNORECASE)


def md_safe(value) -> str:
    """``value`` as text that both Markdown and HTML show literally (no links, bare URLs included, images or
    emphasis): for the chat, which renders Markdown. Bidirectional-text controls are dropped."""
    text = plain(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").translate(_MARKDOWN)
    text = _WWW.sub(r"\1&#46;", text)
    return text.replace('"', "&quot;").replace("'", "&#39;")


def md_block(value) -> str:
    """``md_safe(value)`` for inside an HTML block of the chat (a passage under an answer): line ends become
    character references too, so no blank line ends the block and nothing in it is read as Markdown."""
    return md_safe(value).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "&#10;")


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
    elif isinstance(p, ActionPayload):
        parts.append(_action(p))
    elif isinstance(p, (WalkPayload, VisitPayload, EvidencePayload)):
        parts.append(_graph_walk(step, p))
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
            parts.append(_passages(p.passages, "passage", "read"))
    elif getattr(p, "passages", None):
        noun, verb = (("new passage", "") if isinstance(p, HopPayload) else
                      ("passage", "quoted" if p.action in ("quote", "merge") else "read")
                      if isinstance(p, ActionPayload) else ("passage", ""))
        parts.append(_passages(p.passages, noun, verb))
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


def _action(p: ActionPayload) -> str:
    """A browsing action: the results or the page window it left on screen (quoted sentences highlighted), the
    fact it made, and what the rules allowed, masked or refused."""
    out = []
    if p.action == "start" and p.browser:
        out.append(f'<div class="rv-muted">browsing {esc(p.browser)}</div>')
    if p.query and p.action == "search":
        out.append(f'<div class="rv-query">query: {esc(p.query)}</div>')
    if p.results and p.action in ("search", "scroll_down", "scroll_up", "back"):
        items = "".join(f'<li value="{esc(r.number)}"><span class="rv-passage-title">{esc(r.title)}</span>'
                        f'{" · " + esc(r.url) if r.url else ""}<div class="rv-passage">{esc(r.snippet)}</div></li>'
                        for r in p.results)
        out.append(f'<ol class="rv-results">{items}</ol>')
    if p.page is not None and p.action != "merge":
        where = p.page.url or p.page.source or p.page.collection or ""
        page = f", p. {esc(p.page.page)}" if p.page.page else ""
        out.append(f'<div class="rv-muted">{esc(p.page.title)}{" · " + esc(where) if where else ""}{page} · part '
                   f'{esc(p.page.window)} of {esc(p.page.windows)}</div>')
        lines = "".join(f'<li value="{esc(s.number)}">' + (f'<mark class="rv-quote">{esc(s.text)}</mark>'
                                                          if s.quoted else esc(s.text)) + "</li>"
                        for s in p.sentences)
        if lines:
            out.append(f'<details class="rv-more rv-window"{" open" if p.action == "quote" else ""}><summary>'
                       f'{len(p.sentences)} sentences on screen</summary><ol>{lines}</ol></details>')
    if p.action == "merge" and p.merged:
        out.append(f'<div class="rv-muted">facts {" + ".join(f"[{esc(n)}]" for n in p.merged)} → fact '
                   f'[{esc(p.fact)}]</div>')
    message = "" if p.action == "finish" else p.message  # a finish's message is its title
    for text, css in ((p.refused, "rv-prune"), (p.error, "rv-warning"), (message, "rv-muted")):
        if text:
            out.append(f'<div class="{css}">{esc(text)}</div>')
    if p.allowed:
        out.append(f'<div class="rv-muted">allowed: {esc(", ".join(p.allowed))}'
                   + (f'; {esc("; ".join(p.rules))}' if p.rules else "") + "</div>")
    return "".join(out)


def _graph_walk(step: StepEvent, p: WalkPayload | VisitPayload | EvidencePayload) -> str:
    """A graph walk's steps (KGP): the graphs and bounds of the walk; a visited node with the edge that led
    there; the next evidence the model asked for."""
    if isinstance(p, WalkPayload):
        graphs = "".join(f'<div class="rv-muted">{esc(g.collection)}: {esc(g.description)}'
                         f'{"" if g.current else " (out of date)"}</div>' for g in p.graphs)
        bounds = "" if p.mode == "retrieval" else (
            f'<div class="rv-muted">{esc(p.target)}</div>' if p.mode == "structure" else
            f'<div class="rv-muted">{esc(p.seeds)} seeds · {esc(p.neighbours)} neighbours each · budget '
            f'{esc(p.budget)} passages · depth {esc(p.depth)}'
            + (f" · {esc(p.visited)} visited" if step.status.value == "done" else "") + "</div>")
        return graphs + bounds
    if isinstance(p, EvidencePayload):
        out = [f'<div class="rv-query">{esc(p.text or "(nothing usable)")}</div>'] if p.text or p.fallback else []
        if step.status.value == "done":
            out.append(f'<div class="rv-muted">{esc(p.chosen)} of {esc(p.candidates)} neighbours visited</div>')
        if p.fallback:
            out.append(f'<div class="rv-muted">{esc(p.fallback)}</div>')
        return "".join(out)
    bits = [f'<span class="rv-badge badge-edge">{esc(p.edge)}</span>']
    if p.via:
        bits.append(f'<span class="rv-muted"> via {esc(p.via)}</span>')
    if p.score is not None:
        bits.append(f'<span class="rv-muted"> · score {p.score:.2f}</span>')
    if not p.seed:
        bits.append(f'<span class="rv-muted"> · depth {esc(p.depth)}</span>')
    out = [f'<div>{"".join(bits)}</div>']
    if p.passage is not None:
        out.append(_passages([p.passage], "table" if p.node_kind == "table" else "passage"))
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


def _passages(passages: list[PassageRef], noun: str, verb: str = "") -> str:
    """The passages as a folded list, summarised as "3 passages read", "1 table"."""
    items = []
    for passage in passages:
        text = passage.text
        more = (f'<details class="rv-full"><summary>more</summary>{esc(text[SNIPPET:])}</details>'
                if len(text) > SNIPPET else "")
        items.append(f'<li><span class="rv-passage-title">[{esc(passage.number or "·")}]</span> '
                     f'{esc(passage.label())}<div class="rv-passage">{esc(text[:SNIPPET])}{more}</div></li>')
    summary = f"{len(passages)} {noun}{'' if len(passages) == 1 else 's'}" + (f" {verb}" if verb else "")
    return (f'<details class="rv-more rv-passages"><summary>{esc(summary)}</summary>'
            f'<ol>{"".join(items)}</ol></details>')
