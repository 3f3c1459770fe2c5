"""A run's trace on disk: its events as JSONL (replayable) and a readable Markdown report; loading one back."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from pipeline.events import read_jsonl, write_jsonl
from pipeline.fold import RunState
from pipeline.payloads import ActionPayload, HopPayload, NodePayload, VisitPayload

log = logging.getLogger(__name__)


def markdown_report(state: RunState, header: str = "", picture: str | None = None) -> str:
    """The run as Markdown: the question, the picture (``picture``: the name of its SVG file, beside the
    report), every step as a nested list, the answer and its sources."""
    calls, tokens, seconds = state.totals()
    lines = [f"# {_one_line(state.question)}", "",
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
            if isinstance(p, ActionPayload):
                lines.extend(f"{pad}- {line}" for line in _action_lines(p))
            if isinstance(p, VisitPayload):  # a graph walk's node: the edge that led there and what it holds
                via = f" via {_one_line(p.via)}" if p.via else ""
                score = f", score {p.score:.2f}" if p.score is not None else ""
                lines.append(f"{pad}- {p.edge}{via}{score}: "
                             f"{_one_line(p.passage.label() if p.passage else p.label)}")
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


def _action_lines(p: ActionPayload) -> list[str]:
    """What a browsing action showed: the results, the page window, the quoted sentences (in bold), a merge, a
    refusal or failure."""
    out = []
    if p.action in ("search", "scroll_down", "scroll_up", "back"):
        out += [f"result [{r.number}] {_one_line(r.title)}{' · ' + r.url if r.url else ''}" for r in p.results]
    if p.page is not None and p.action in ("load", "scroll_down", "scroll_up"):
        out.append(f"page: {_one_line(p.page.title)}, part {p.page.window} of {p.page.windows}")
    if p.action == "quote":
        out += [f"quoted [{s.number}]: **{_one_line(s.text)}**" for s in p.sentences if s.quoted]
    if p.merged:
        out.append(f"merged facts {' + '.join(f'[{n}]' for n in p.merged)} into fact [{p.fact}]")
    note = "" if p.action == "finish" else p.message  # a finish's message is its title
    out += [f"{label}: {_one_line(text)}" for label, text in (("refused", p.refused), ("failed", p.error),
                                                             ("note", note)) if text]
    return out


def _one_line(text) -> str:
    return " ".join(str(text or "").split())


def save_trace(state: RunState, folder: Path, header: str = "", picture: bool = False) -> list[Path]:
    """Write ``trace-<run>.jsonl`` and ``trace-<run>.md`` into ``folder`` and, with ``picture``, the run drawn
    as ``trace-<run>.svg`` (shown in the report); return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    run_id = next((e.run_id for e in state.events), "empty")
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
