"""Traces: a run's events saved as JSONL (replayable) and as a readable Markdown report; loading one back."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.events import EventKind, read_jsonl, write_jsonl
from ui.view import RunView, source_label


def markdown_report(view: RunView, question: str) -> str:
    """The run as Markdown: the question, every step as a nested list, the answer and its sources."""
    lines = [f"# {question}", ""]
    methods = {e.method for e in view.events}
    calls, tokens, seconds = view.totals()
    lines += [f"Method: {', '.join(sorted(methods))} · {calls} LLM calls · {tokens} tokens · {seconds:.1f} s", ""]
    if view.header:
        lines += [view.header, ""]
    lines += ["## Steps", ""]

    def walk(ids: list[str], depth: int) -> None:
        for step_id in ids:
            step = view.steps[step_id]
            p = step.payload
            text = p.get("sentence") or (p["node"].get("question") if "node" in p else step.title)
            extra = f" → {p['node']['answer']}" if "node" in p and p["node"].get("answer") else ""
            state = f" [{p['state']}]" if p.get("state") else ""
            lines.append(f"{'  ' * depth}- **{step.kind.value}** {_one_line(text)}{extra}{state}")
            if p.get("query") and step.kind == EventKind.HOP:
                lines.append(f"{'  ' * (depth + 1)}- query: {_one_line(p['query'])}")
            for passage in p.get("passages", []) if step.kind != EventKind.ANSWER else []:
                lines.append(f"{'  ' * (depth + 1)}- [{passage.get('number', '·')}] {_one_line(source_label(passage))}")
            for note in view.notes.get(step_id, []):
                lines.append(f"{'  ' * (depth + 1)}- {note.kind.value}: {_one_line(note.title)}")
            walk(view.children.get(step_id, []), depth + 1)

    walk(view.children[None], 0)
    final = view.final_answer
    lines += ["", "## Answer", "", view.answer_text or "(no answer)", ""]
    if final:
        cited = set(final.payload.get("citations", []))
        sources = [p for p in final.payload.get("passages", []) if p.get("number") in cited]
        if sources:
            lines += ["## Sources", ""]
            for passage in sources:
                lines += [f"[{passage['number']}] {source_label(passage)}", "", f"> {_one_line(passage.get('text', ''))}", ""]
    return "\n".join(lines)


def _one_line(text) -> str:
    return " ".join(str(text or "").split())


def save_trace(view: RunView, question: str, folder: Path) -> list[Path]:
    """Write ``trace-<run>.jsonl`` and ``trace-<run>.md`` into ``folder``; return both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    run_id = next((e.run_id for e in view.events), "empty")
    stem = re.sub(r"[^A-Za-z0-9_-]", "", run_id) or "run"
    jsonl, report = folder / f"trace-{stem}.jsonl", folder / f"trace-{stem}.md"
    write_jsonl(view.events, jsonl)
    report.write_text(markdown_report(view, question), encoding="utf-8")
    return [jsonl, report]


def load_trace(path: Path) -> tuple[RunView, str]:
    """A saved JSONL trace replayed into a view, and the question it answered (from the first retrieval or
    step title when the trace does not say). Raises ``ValueError`` for a file that is not a trace."""
    view = RunView()
    for event in read_jsonl(path):
        view.add(event)
    if not view.events:
        raise ValueError(f"{Path(path).name} holds no step events.")
    question = next((e.payload["question"] for e in view.events if "question" in e.payload), "")
    if not question:
        question = next((e.payload.get("query", "") for e in view.events if e.kind == EventKind.RETRIEVE), "")
    view.header = "Replayed from a trace file: no model was run."
    view.close()
    return view, question


