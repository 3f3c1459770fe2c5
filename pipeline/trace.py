"""A run's trace on disk: its events as JSONL (replayable) and a readable Markdown report; loading one back."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.events import read_jsonl, write_jsonl
from pipeline.fold import RunState
from pipeline.payloads import HopPayload, NodePayload


def markdown_report(state: RunState, header: str = "") -> str:
    """The run as Markdown: the question, every step as a nested list, the answer and its sources."""
    calls, tokens, seconds = state.totals()
    lines = [f"# {_one_line(state.question)}", "",
             f"Method: {', '.join(state.methods)} · {calls} LLM calls · {tokens} tokens · {seconds:.1f} s", ""]
    if header:
        lines += [header, ""]
    lines += ["## Steps", ""]

    def walk(ids: list[str], depth: int) -> None:
        pad = "  " * (depth + 1)
        for step_id in ids:
            step = state.steps[step_id]
            p = step.payload
            text, extra = step.title, ""
            if isinstance(p, HopPayload) and p.sentence:
                text = p.sentence
            if isinstance(p, NodePayload):
                text = p.question
                extra = (f" → {_one_line(p.answer)}" if p.answer else "") + f" [{p.state}]"
            lines.append(f"{'  ' * depth}- **{step.kind.value}** {_one_line(text)}{extra}")
            if isinstance(p, HopPayload) and p.query:
                lines.append(f"{pad}- query: {_one_line(p.query)}")
            if step.kind.value != "answer":
                for passage in getattr(p, "passages", []):
                    lines.append(f"{pad}- [{passage.number or '·'}] {_one_line(passage.label())}")
            for note in state.notes.get(step_id, []):
                lines.append(f"{pad}- {note.kind.value}: {_one_line(note.title)}")
            walk(state.children.get(step_id, []), depth + 1)

    walk(state.children[None], 0)
    lines += ["", "## Answer", "", state.answer_text or "(no answer)", ""]
    sources = state.cited_passages()
    if sources:
        lines += ["## Sources", ""]
        for passage in sources:
            lines += [f"[{passage.number}] {passage.label()}", "", f"> {_one_line(passage.text)}", ""]
    return "\n".join(lines)


def _one_line(text) -> str:
    return " ".join(str(text or "").split())


def save_trace(state: RunState, folder: Path, header: str = "") -> list[Path]:
    """Write ``trace-<run>.jsonl`` and ``trace-<run>.md`` into ``folder``; return both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    run_id = next((e.run_id for e in state.events), "empty")
    stem = re.sub(r"[^A-Za-z0-9_-]", "", run_id) or "run"
    jsonl, report = folder / f"trace-{stem}.jsonl", folder / f"trace-{stem}.md"
    write_jsonl(state.events, jsonl)
    report.write_text(markdown_report(state, header), encoding="utf-8")
    return [jsonl, report]


def load_trace(path: Path) -> RunState:
    """A saved JSONL trace (of this version or the first) folded into a closed run state. Raises
    ``ValueError`` for a file that is not a trace."""
    state = RunState.of(read_jsonl(path))
    if not state.events:
        raise ValueError(f"{Path(path).name} holds no step events.")
    state.close()
    return state
