"""The kind of step of a browsing agent (WebCPM-style): one action and the screen it left."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.escaping import esc
from pipeline.payloads import ActionPayload
from pipeline.steps.kind import StepKind, listed_passages, one_line, passages_card
from pipeline.steps.look import QUESTION, KindStyle, Paint, fields

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState

_LISTS = ("search", "scroll_down", "scroll_up", "back")  # actions that may leave a result list on screen


def _title(step: "StepEvent") -> str:
    p: ActionPayload = step.payload
    return f"{p.step:>2}. {step.title}" if p.step is not None else step.title


def _lines(step: "StepEvent", state: "RunState") -> list[str]:
    """What a browsing action showed: the results, the page window, the quoted sentences (in bold), a merge, a
    refusal or failure."""
    p: ActionPayload = step.payload
    out = [f"browsing {one_line(p.browser)}"] if p.browser else []
    if p.query:
        out.append(f"query: {one_line(p.query)}")
    if p.action in _LISTS:
        out += [f"result [{r.number}] {one_line(r.title)}{' · ' + r.url if r.url else ''}" for r in p.results]
    if p.page is not None and p.action != "merge":
        out.append(f"page: {one_line(p.page.title)}, part {p.page.window} of {p.page.windows}")
    if p.action == "quote":
        out += [f"quoted [{s.number}]: **{one_line(s.text)}**" for s in p.sentences if s.quoted]
    if p.merged:
        out.append(f"merged facts {' + '.join(f'[{n}]' for n in p.merged)} into fact [{p.fact}]")
    note = "" if p.action in ("start", "finish") else p.message  # a start's or finish's message is its title
    out += [f"{label}: {one_line(text)}" for label, text in (("refused", p.refused), ("failed", p.error),
                                                             ("note", note)) if text]
    if p.action == "finish" and p.ended_by:
        out.append(f"ended by: {p.ended_by} · {p.facts} facts")
    return out


def _card(step: "StepEvent", state: "RunState") -> str:
    """The results or the page window the action left on screen (quoted sentences highlighted), the fact it
    made, and what the rules allowed, masked or refused."""
    p: ActionPayload = step.payload
    out = []
    if p.browser:
        out.append(f'<div class="rv-muted">browsing {esc(p.browser)}</div>')
    if p.query:
        out.append(f'<div class="rv-query">query: {esc(p.query)}</div>')
    if p.results and p.action in _LISTS:
        items = "".join(f'<li value="{esc(r.number)}"><span class="rv-passage-title">{esc(r.title)}</span>'
                        f'{" · " + esc(r.url) if r.url else ""}<div class="rv-passage">{esc(r.snippet)}</div></li>'
                        for r in p.results)
        out.append(f'<ol class="rv-results">{items}</ol>')
    if p.page is not None and p.action != "merge":
        out.append(_window(p))
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
    verb = "quoted" if p.action in ("quote", "merge") else "read"
    return "".join(out) + passages_card("passage", verb)(step, state)


def _window(p: ActionPayload) -> str:
    where = p.page.url or p.page.source or p.page.collection or ""
    page = f", p. {esc(p.page.page)}" if p.page.page else ""
    out = (f'<div class="rv-muted">{esc(p.page.title)}{" · " + esc(where) if where else ""}{page} · part '
           f'{esc(p.page.window)} of {esc(p.page.windows)}</div>')
    lines = "".join(f'<li value="{esc(s.number)}">' + (f'<mark class="rv-quote">{esc(s.text)}</mark>'
                                                      if s.quoted else esc(s.text)) + "</li>"
                    for s in p.sentences)
    if lines:
        out += (f'<details class="rv-more rv-window"{" open" if p.action == "quote" else ""}><summary>'
                f'{len(p.sentences)} sentences on screen</summary><ol>{lines}</ol></details>')
    return out


def _details(step: "StepEvent", state: "RunState") -> list[str]:
    p: ActionPayload = step.payload
    lines = fields(step, "query", "browser")
    if p.results:
        lines.append("results: " + "; ".join(f"[{r.number}] {r.title}" for r in p.results[:6]))
    if p.page is not None:
        lines.append(f"page: {p.page.title} (part {p.page.window} of {p.page.windows})")
    quoted = [s.text for s in p.sentences if s.quoted]
    if quoted:
        lines.append("quoted: " + " ".join(quoted))
    return lines + fields(step, "merged", "facts", "refused", "error", "ended_by", "message")


_PAGE = KindStyle("page view", "doc", Paint("#f8fafc", "#475569"))

KINDS = (
    StepKind("action", ActionPayload, "step", title=_title, lines=_lines, card=_card,
             style=KindStyle("action", "box", Paint("#f8fafc", "#64748b"), details=_details,
                             variant_of=lambda s: s.payload.action, variants={
                                 "start": KindStyle("start", "box", QUESTION),
                                 "search": KindStyle("search", "pill", Paint("#ecfeff", "#0e7490", width=2)),
                                 **dict.fromkeys(("load", "scroll_down", "scroll_up", "back"), _PAGE),
                                 "quote": KindStyle("quote", "box", Paint("#ecfdf5", "#047857", width=2), icon="“"),
                                 "merge": KindStyle("merge", "hexagon", Paint("#f0fdf4", "#15803d", width=2)),
                                 "finish": KindStyle("finish", "box", Paint("#f5f3ff", "#6d28d9", width=2)),
                                 "invalid": KindStyle("invalid action", "notched",
                                                      Paint("#fef2f2", "#b91c1c", dash="4 3"), icon="✗")}),
             passages=listed_passages, reads_sources=True, sequential=True),
)
