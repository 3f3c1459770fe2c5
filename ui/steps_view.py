"""A readable, escaped rendering of step events (the minimal view; every text from passages is escaped)."""

from __future__ import annotations

import html

from pipeline.events import EventKind, Status, StepEvent

SHOWN_PASSAGES = 5  # more would push the rest of the steps out of sight
_ICONS = {Status.RUNNING: "⏳", Status.PENDING: "…", Status.DONE: "✓", Status.FAILED: "✗"}


class StepLog:
    """Folds a run's events into its current steps (an event with a known id updates that step)."""

    def __init__(self) -> None:
        self.steps: dict[str, StepEvent] = {}
        self.answer = ""

    def add(self, event: StepEvent) -> None:
        if event.kind == EventKind.ANSWER_TOKEN:
            self.answer += event.payload.get("text", "")
            return
        if event.kind == EventKind.ANSWER and event.status == Status.DONE:
            self.answer = event.payload.get("answer", self.answer)
        self.steps[event.id] = event

    def citations_markdown(self) -> str:
        final = [e for e in self.steps.values() if e.kind == EventKind.ANSWER and e.status == Status.DONE]
        if not final:
            return ""
        lines = []
        for passage in final[-1].payload.get("passages", []):
            if passage["number"] in final[-1].payload.get("citations", []):
                where = passage.get("url") or passage.get("source", "")
                lines.append(f"[{passage['number']}] {html.escape(passage.get('title', ''))} "
                             f"({html.escape(str(where))})")
        return "\n\nSources: " + "; ".join(lines) if lines else ""

    def markdown(self) -> str:
        out = []
        for event in self.steps.values():
            depth = 1 if event.parent_id else 0
            timing = f" · {event.elapsed_s:.1f} s" if event.elapsed_s is not None else ""
            tokens = (f" · {event.prompt_tokens}+{event.completion_tokens} tokens"
                      if event.llm_calls else "")
            out.append(f"{'  ' * depth}- {_ICONS[event.status]} **{event.kind.value}** "
                       f"{html.escape(event.title)}{timing}{tokens}")
            if event.kind in (EventKind.WARNING, EventKind.ERROR):
                out.append(f"{'  ' * depth}  - {html.escape(event.payload.get('message', ''))}")
            if "node" in event.payload and event.payload["node"].get("answer"):
                out.append(f"{'  ' * depth}  - → {html.escape(event.payload['node']['answer'])} "
                           f"*{html.escape(event.payload.get('state', ''))}* {html.escape(event.payload.get('reason', ''))}")
            passages = event.payload.get("passages", []) if event.kind == EventKind.RETRIEVE else []
            for passage in passages[:SHOWN_PASSAGES]:
                snippet = passage["text"][:160] + ("…" if len(passage["text"]) > 160 else "")
                out.append(f"{'  ' * (depth + 1)}- [{passage['number']}] *{html.escape(passage['title'])}*: "
                           f"{html.escape(snippet)}")
            if len(passages) > SHOWN_PASSAGES:
                out.append(f"{'  ' * (depth + 1)}- … and {len(passages) - SHOWN_PASSAGES} more passages")
        return "\n".join(out) or "_Steps appear here while the model works._"
