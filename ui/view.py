"""The live reasoning view: folds a run's step events into steps and draws them as HTML.

It knows the event model, not the methods: ``parent_id`` makes the layout (children nest, so ToC draws as a
tree; a step whose single child continues it is drawn as the next item, so IRCoT hops and web-agent actions
draw as a chain or timeline), and a few payload fields are shown when present (a node's question, answer
and state; a hop's sentence and query; passages; a verdict's evidence and score). Everything that came from a
document, a web page or the model is escaped.
"""

from __future__ import annotations

import html
from collections import defaultdict

from pipeline.events import EventKind, Status, StepEvent

# Shown inside their parent's card, not as steps of their own.
ATTACHED = {EventKind.VERIFY, EventKind.PRUNE, EventKind.WARNING, EventKind.ERROR}
# Steps of a sequence: a single child of (or after) one of these continues the sequence at the same level.
SEQUENTIAL = {EventKind.HOP, EventKind.ACTION, EventKind.VISIT}
SNIPPET = 400  # characters of a passage shown; the rest behind "more"

_STATUS_ICON = {Status.PENDING: "…", Status.RUNNING: '<span class="rv-spin"></span>', Status.DONE: "✓",
                Status.FAILED: "✗"}


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


def source_label(passage: dict) -> str:
    """Where a passage comes from, for people: its title, then the file and page, or the url."""
    where = passage.get("url") or passage.get("source") or passage.get("collection") or ""
    page = f", p. {passage['page']}" if passage.get("page") else ""
    title = passage.get("title") or "Untitled"
    return f"{title} — {where}{page}" if where else title


class RunView:
    """The steps of one run, updated event by event; ``html()`` draws them."""

    def __init__(self, header: str = "") -> None:
        self.header = header  # e.g. which method Auto picked and why (plain text)
        self.events: list[StepEvent] = []  # everything received: the run's trace
        self.steps: dict[str, StepEvent] = {}  # the latest version of each step, in first-seen order
        self.children: dict[str | None, list[str]] = defaultdict(list)
        self.notes: dict[str | None, list[StepEvent]] = defaultdict(list)
        self.streamed = ""  # answer text received token by token
        self.closed = False  # the run ended (answered, failed or stopped): no step is still running

    def close(self) -> None:
        """Mark the run as over; steps left running (a stopped run) are drawn as interrupted."""
        self.closed = True

    def add(self, event: StepEvent) -> None:
        """Fold one event in: a new step, an update of a known one, a note on its parent, or answer text."""
        self.events.append(event)
        if event.kind == EventKind.ANSWER_TOKEN:
            self.streamed += event.payload.get("text", "")
            return
        if event.kind in ATTACHED:
            self.notes[event.parent_id].append(event)
            return
        if event.id not in self.steps:
            self.children[event.parent_id if event.parent_id in self.steps else None].append(event.id)
        self.steps[event.id] = event

    @property
    def final_answer(self) -> StepEvent | None:
        """The finished answer step, if the run has one."""
        done = [s for s in self.steps.values() if s.kind == EventKind.ANSWER and s.status == Status.DONE]
        return done[-1] if done else None

    @property
    def answer_text(self) -> str:
        """The final answer, or the text streamed so far."""
        final = self.final_answer
        return final.payload.get("answer", self.streamed) if final else self.streamed

    @property
    def finished(self) -> bool:
        """Whether the run is over (closed, answered or failed)."""
        return self.closed or self.final_answer is not None or any(n.kind == EventKind.ERROR for ns in self.notes.values()
                                                    for n in ns)

    def totals(self) -> tuple[int, int, float]:
        """LLM calls, tokens and wall seconds so far."""
        steps = list(self.steps.values()) + [n for ns in self.notes.values() for n in ns]
        calls = sum(s.llm_calls for s in steps)
        tokens = sum(s.prompt_tokens + s.completion_tokens for s in steps)
        times = [e.started_at for e in self.events if e.started_at]
        last = max((e.started_at + (e.elapsed_s or 0) for e in self.events if e.started_at), default=0.0)
        return calls, tokens, (last - min(times)) if times else 0.0

    def html(self) -> str:
        """The whole view as HTML: a header with totals, then the steps as nested lists."""
        calls, tokens, seconds = self.totals()
        state = "done" if self.finished else "running"
        head = f'<div class="rv-head">{esc(self.header)}' if self.header else '<div class="rv-head">'
        head += (f'<span class="rv-total">{len(self.steps)} steps · {calls} LLM calls · {tokens} tokens · '
                 f'{seconds:.1f} s</span></div>')
        top_notes = "".join(self._note(n) for n in self.notes.get(None, []))
        return (f'<div class="rv rv-{state}" data-state="{state}">{head}{top_notes}'
                f'<ul class="rv-list">{self._items(self.children[None])}</ul></div>')

    def _items(self, ids: list[str]) -> str:
        out = []
        for step_id in ids:
            out.append(self._item(step_id))
        return "".join(out)

    def _item(self, step_id: str) -> str:
        step = self.steps[step_id]
        kids = self.children.get(step_id, [])
        continues = len(kids) == 1 and (step.kind in SEQUENTIAL or self.steps[kids[0]].kind in SEQUENTIAL)
        nested = "" if continues or not kids else f'<ul class="rv-list">{self._items(kids)}</ul>'
        item = f'<li class="{self._classes(step)}" data-step="{esc(step.id)}">{self._card(step)}{nested}</li>'
        return item + (self._item(kids[0]) if continues else "")

    def _status(self, step: StepEvent) -> str:
        interrupted = self.closed and step.status in (Status.RUNNING, Status.PENDING)
        return "interrupted" if interrupted else step.status.value

    def _classes(self, step: StepEvent) -> str:
        classes = ["rv-node", f"kind-{step.kind.value}", f"status-{self._status(step)}"]
        if "state" in step.payload:
            classes.append(f"state-{esc(step.payload['state'])}")
        if step.kind in SEQUENTIAL:
            classes.append("rv-seq")
        return " ".join(classes)

    def _card(self, step: StepEvent) -> str:
        p = step.payload
        icon = "✗" if self._status(step) == "interrupted" else _STATUS_ICON[step.status]
        parts = [f'<div class="rv-title"><span class="rv-icon">{icon}</span>'
                 f'<span class="rv-kind">{esc(step.kind.value)}</span> {self._title(step)}{self._meta(step)}</div>']
        if "node" in p:
            parts.append(self._node(step))
        if step.kind == EventKind.HOP:
            if p.get("query"):
                parts.append(f'<div class="rv-query">query: {esc(p["query"])}</div>')
                if step.status == Status.DONE and not p.get("passages") and not p.get("note"):
                    parts.append(f'<div class="rv-muted">no new passages ({esc(p.get("duplicates", 0))} '
                                 f'already collected)</div>')
            elif p.get("sentence"):
                parts.append('<div class="rv-query rv-muted">no query (the sentence only concludes)</div>')
            for key in ("note", "stop"):
                if p.get(key):
                    parts.append(f'<div class="rv-muted">{esc(p[key])}</div>')
        if p.get("candidates"):
            items = "".join(f"<li>{esc(c.get('question'))} → {esc(c.get('answer'))}</li>" for c in p["candidates"])
            parts.append(f'<details class="rv-more"><summary>{len(p["candidates"])} proposed '
                         f'interpretations</summary><ul>{items}</ul></details>')
        if step.kind == EventKind.ANSWER and step.status == Status.DONE:
            parts.append(f'<div class="rv-answer">{esc(p.get("answer", ""))}</div>')
        elif step.kind == EventKind.ANSWER and self.streamed:
            parts.append(f'<div class="rv-answer rv-streaming">{esc(self.streamed)}</div>')
        passages = p.get("passages") or []
        if passages and step.kind != EventKind.ANSWER:
            parts.append(self._passages(passages, "passages" if step.kind != EventKind.HOP else "new passages"))
        elif passages:
            parts.append(self._passages(passages, "passages read"))
        shown_reason = p.get("reason")
        parts.extend(self._note(n) for n in self.notes.get(step.id, [])
                     if not (n.kind == EventKind.PRUNE and not n.payload.get("undo")
                             and n.payload.get("reason") == shown_reason))  # the node's badge says it already
        return f'<div class="rv-card">{"".join(parts)}</div>'

    def _title(self, step: StepEvent) -> str:
        if step.kind == EventKind.HOP and step.payload.get("sentence"):
            return f'<span class="rv-text">Step {esc(step.payload.get("step"))}: {esc(step.payload["sentence"])}</span>'
        if "node" in step.payload:
            return f'<span class="rv-text">{esc(step.payload["node"].get("question"))}</span>'
        return f'<span class="rv-text">{esc(step.title)}</span>'

    @staticmethod
    def _meta(step: StepEvent) -> str:
        bits = []
        if step.elapsed_s is not None:
            bits.append(f"{step.elapsed_s:.1f} s")
        if step.llm_calls:
            bits.append(f"{step.llm_calls} call{'s' if step.llm_calls > 1 else ''} · "
                        f"{step.prompt_tokens}+{step.completion_tokens} tok")
        return f' <span class="rv-meta">{" · ".join(bits)}</span>' if bits else ""

    def _node(self, step: StepEvent) -> str:
        p = step.payload
        out = []
        if p["node"].get("answer"):
            out.append(f'<div class="rv-node-answer">→ {esc(p["node"]["answer"])}</div>')
        state = p.get("state")
        if state:
            score = f" · score {p['score']:.2f}" if isinstance(p.get("score"), (int, float)) else ""
            reason = f": {esc(p['reason'])}" if p.get("reason") else ""
            out.append(f'<span class="rv-badge badge-{esc(state)}">{esc(state)}</span>'
                       f'<span class="rv-muted">{reason}{score}</span>')
        return "".join(out)

    def _note(self, note: StepEvent) -> str:
        p = note.payload
        if note.kind == EventKind.VERIFY:
            evidence = p.get("evidence") or {}
            rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in evidence.items()
                           if k != "passage")
            passage = evidence.get("passage")
            body = self._passages([passage], "evidence passage") if isinstance(passage, dict) else ""
            verdict = "keep" if p.get("keep") else "prune"
            score = f"{p['score']:.2f}" if isinstance(p.get("score"), (int, float)) else "?"
            return (f'<details class="rv-verdict verdict-{verdict}"><summary>Verifier: {verdict}, score {score} '
                    f'({esc(p.get("verifier", ""))})</summary><table>{rows}</table>{body}</details>')
        css = {EventKind.PRUNE: "rv-prune", EventKind.WARNING: "rv-warning", EventKind.ERROR: "rv-error"}
        text = p.get("message") or p.get("reason") or note.title
        label = {EventKind.PRUNE: "Pruning undone" if p.get("undo") else "Pruned",
                 EventKind.WARNING: "Warning", EventKind.ERROR: "Error"}[note.kind]
        if note.kind != EventKind.PRUNE and note.title != text:
            label = esc(note.title)  # "Stopped", "Model error"...
        return f'<div class="{css[note.kind]}">{label}: {esc(text)}</div>'

    @staticmethod
    def _passages(passages: list[dict], label: str) -> str:
        items = []
        for passage in passages:
            text = str(passage.get("text", ""))
            more = (f'<details class="rv-full"><summary>more</summary>{esc(text[SNIPPET:])}</details>'
                    if len(text) > SNIPPET else "")
            items.append(f'<li><span class="rv-passage-title">[{esc(passage.get("number", "·"))}]</span> '
                         f'{esc(source_label(passage))}'
                         f'<div class="rv-passage">{esc(text[:SNIPPET])}{more}</div></li>')
        return (f'<details class="rv-more rv-passages"><summary>{len(passages)} {esc(label)}</summary>'
                f'<ol>{"".join(items)}</ol></details>')
