"""The answer as a chat message: text shown literally whose [n] citations open the cited passage below it."""

from __future__ import annotations

from pipeline.events import EventKind
from pipeline.text import CITATION
from ui.view import RunView, esc, md_safe, source_label


def answer_message(view: RunView, run_id: str) -> str:
    """The assistant message for the run so far: the streamed or final answer with its sources, and any stop
    or error notice. Citation markers become buttons (``.cite``) that open the matching ``.source`` below.
    Everything from the model or the passages is escaped for both HTML and Markdown (the chat renders both)."""
    final = view.final_answer
    notices = [n for ns in view.notes.values() for n in ns if n.kind == EventKind.ERROR or n.title == "Stopped"]
    notice = "".join(f'\n\n<div class="notice notice-{n.kind.value}">{md_safe(n.payload.get("message", n.title))}'
                     f'</div>' for n in notices)
    if final is None:
        text = md_safe(view.streamed)
        if notices or view.closed:
            return (text or "<em>No answer.</em>") + notice
        return f"{text}▌" if text else "<em>Working…</em>"
    passages = {p["number"]: p for p in final.payload.get("passages", []) if isinstance(p.get("number"), int)}
    cited = [n for n in final.payload.get("citations", []) if isinstance(n, int) and n in passages]
    key = esc(run_id)

    def button(number: int) -> str:
        return (f'<span class="cite" role="button" tabindex="0" data-cite="{key}-{number}" '
                f'title="{esc(source_label(passages[number]))}">&#91;{number}&#93;</span>')

    text, body, last = str(final.payload.get("answer", "")), [], 0
    for match in CITATION.finditer(text):
        number = int(match.group(1))
        if number in passages:
            body += [md_safe(text[last:match.start()]), button(number)]
            last = match.end()
    body.append(md_safe(text[last:]))
    sources = "".join(
        f'<details class="source" data-cite="{key}-{n}"><summary>&#91;{n}&#93; {md_safe(source_label(passages[n]))}'
        f'</summary><div class="source-text">{md_safe(passages[n].get("text", ""))}</div></details>'
        for n in cited
    )
    return "".join(body) + (f'\n\n<div class="sources">{sources}</div>' if sources else "") + notice
