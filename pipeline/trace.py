"""A run's trace on disk: its events as JSONL (replayable) and a readable Markdown report; loading one back."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from pipeline.events import read_jsonl, write_jsonl
from pipeline.fold import RunState
from pipeline.payloads import EditPayload
from pipeline.steps import kind_of
from pipeline.steps.kind import one_line

log = logging.getLogger(__name__)


def markdown_report(state: RunState, header: str = "", picture: str | None = None) -> str:
    """The run as Markdown: the question, the picture (``picture``: the name of its SVG file, beside the
    report), every step as a nested list, the answer and its sources."""
    calls, tokens, seconds = state.totals()
    lines = [f"# {one_line(state.question)}", "",
             f"Method: {', '.join(state.methods)} · {calls} LLM calls · {tokens} tokens · {seconds:.1f} s", ""]
    if header:
        lines += [header, ""]
    if picture:
        lines += [f"![The run as a picture ({len(state.steps)} steps)]({picture})", ""]
    lines += ["## Steps", ""]

    def walk(ids: list[str], depth: int) -> None:
        pad = "  " * (depth + 1)
        for step_id in ids:
            step = state.steps[step_id]
            kind = kind_of(step)
            lines.append(f"{'  ' * depth}- **{step.kind.value}** {one_line(kind.title(step))}")
            lines.extend(f"{pad}- {line}" for line in kind.lines(step, state))
            for note in state.notes.get(step_id, []):
                lines.extend(f"{pad}- {note.kind.value}: {line}" for line in kind_of(note).lines(note, state))
            walk(state.children.get(step_id, []), depth + 1)

    walk(state.children[None], 0)
    edits = [step for step in state.steps.values() if isinstance(step.payload, EditPayload)]
    if edits:
        lines += ["", "## Your edits", ""]
        lines += [f"- {one_line(kind_of(step).title(step))}" for step in edits]
    lines += ["", "## Answer", "", state.answer_text or "(no answer)", ""]
    sources = state.cited_passages()
    if sources:
        lines += ["## Sources", ""]
        for passage in sources:
            lines += [f"[{passage.number}] {passage.label()}", "", f"> {one_line(passage.text)}", ""]
    return "\n".join(lines)


def save_trace(state: RunState, folder: Path, header: str = "", picture: bool = False,
               run_id: str | None = None) -> list[Path]:
    """Write ``trace-<run>.jsonl`` and ``trace-<run>.md`` into ``folder`` and, with ``picture``, the run drawn
    as ``trace-<run>.svg`` (shown in the report); return their paths. ``<run>`` is ``run_id``, by default the
    last event's run: a run resumed with edits starts with the original run's events, and its trace must not
    overwrite the original's."""
    folder.mkdir(parents=True, exist_ok=True)
    run_id = run_id or next((e.run_id for e in reversed(state.events)), "empty")
    stem = re.sub(r"[^A-Za-z0-9_-]", "", run_id) or "run"
    jsonl, report = folder / f"trace-{stem}.jsonl", folder / f"trace-{stem}.md"
    write_jsonl(state.events, jsonl)
    drawn = _save_picture(state, folder / f"trace-{stem}.svg") if picture else None
    report.write_text(markdown_report(state, header, drawn.name if drawn else None), encoding="utf-8")
    return [jsonl, report] + ([drawn] if drawn else [])


def _save_picture(state: RunState, path: Path) -> Path | None:
    from pipeline.picture import draw  # the drawing imports the picture's style table only when needed

    try:
        svg = draw(state, standalone=True)
    except Exception:  # a drawing bug must not cost the run its trace: the events are saved already
        log.exception("could not draw the run %s", path.stem)
        return None
    path.write_text(svg, encoding="utf-8")
    return path


def load_trace(path: Path) -> RunState:
    """A saved JSONL trace (of this version or the first) folded into a closed run state. Raises
    ``ValueError`` for a file that is not a trace."""
    state = RunState.of(read_jsonl(path))
    if not state.events:
        raise ValueError(f"{Path(path).name} holds no step events.")
    state.close()
    return state
