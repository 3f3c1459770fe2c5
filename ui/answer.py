"""The answer as a chat message: text shown literally whose [n] citations open the cited passage below it."""

from __future__ import annotations

from pipeline.events import EventKind
from pipeline.fold import RunState
from pipeline.text import CITATION
from ui.view import esc, md_safe


def answer_message(state: RunState, run_id: str) -> str:
    """The assistant message for the run so far: the streamed or final answer with its sources, and any stop
    or error notice. Citation markers become buttons (``.cite``) that open the matching ``.source`` below.
    Everything from the model or the passages is escaped for both HTML and Markdown (the chat renders both)."""
    notices = [n for ns in state.notes.values() for n in ns if n.kind == EventKind.ERROR or n.title == "Stopped"]
    notice = "".join(f'\n\n<div class="notice notice-{n.kind.value}">{md_safe(_notice_text(n))}</div>'
                     for n in notices)
    final = state.answer
    if final is None:
        text = md_safe(state.streamed)
        if notices or state.closed:
            return (text or "<em>No answer.</em>") + notice
        return f"{text}▌" if text else "<em>Working…</em>"
    passages = {p.number: p for p in final.passages if p.number is not None}
    cited = [n for n in final.citations if n in passages]
    key = esc(run_id)

    def button(number: int) -> str:
        return (f'<span class="cite" role="button" tabindex="0" data-cite="{key}-{number}" '
                f'title="{esc(passages[number].label())}">&#91;{number}&#93;</span>')

    text, body, last = final.answer, [], 0
    for match in CITATION.finditer(text):
        number = int(match.group(1))
        if number in passages:
            body += [md_safe(text[last:match.start()]), button(number)]
            last = match.end()
    body.append(md_safe(text[last:]))
    sources = "".join(
        f'<details class="source" data-cite="{key}-{n}"><summary>&#91;{n}&#93; {md_safe(passages[n].label())}'
        f'</summary><div class="source-text">{md_safe(passages[n].text)}</div></details>'
        for n in cited
    )
    return "".join(body) + (f'\n\n<div class="sources">{sources}</div>' if sources else "") + notice


def _notice_text(note) -> str:
    """An error as "what failed: why" ("Cannot answer: ...", "Model error: ..."); a stop as its message."""
    message = note.payload.message
    return f"{note.title}: {message}" if note.kind == EventKind.ERROR and note.title != message else message
