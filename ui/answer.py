"""The answer as a chat message: escaped text whose [n] citations open the cited passage below it."""

from __future__ import annotations

import re

from pipeline.events import EventKind
from ui.view import RunView, esc

_CITATION = re.compile(r"\[(\d{1,2})\]")


def source_label(passage: dict) -> str:
    """Where a passage comes from, for people: its title, then the file and page, or the url."""
    where = passage.get("url") or passage.get("source") or passage.get("collection") or ""
    page = f", p. {passage['page']}" if passage.get("page") else ""
    return f"{passage.get('title') or 'Untitled'} — {where}{page}" if where else passage.get("title", "Untitled")


def answer_message(view: RunView, run_id: str) -> str:
    """The assistant message for the run so far: the streamed or final answer with its sources, and any stop
    or error notice. Citation markers become buttons (``.cite``) that open the matching ``.source`` below."""
    final = view.final_answer
    notices = [n for ns in view.notes.values() for n in ns if n.kind == EventKind.ERROR or n.title == "Stopped"]
    notice = "".join(f'\n\n<div class="notice notice-{n.kind.value}">{esc(n.payload.get("message", n.title))}</div>'
                     for n in notices)
    if final is None:
        text = esc(view.streamed)
        if notices:
            return text + notice
        return f"{text}▌" if text else "<em>Working…</em>"
    passages = {p["number"]: p for p in final.payload.get("passages", []) if "number" in p}
    cited = [n for n in final.payload.get("citations", []) if n in passages]

    def button(match: re.Match) -> str:
        number = int(match.group(1))
        if number not in passages:
            return match.group(0)
        return (f'<span class="cite" role="button" tabindex="0" data-cite="{esc(run_id)}-{number}" '
                f'title="{esc(source_label(passages[number]))}">[{number}]</span>')

    body = _CITATION.sub(button, esc(final.payload.get("answer", "")))
    sources = "".join(
        f'<details class="source" data-cite="{esc(run_id)}-{n}"><summary>[{n}] {esc(source_label(passages[n]))}'
        f'</summary><div class="source-text">{esc(passages[n].get("text", ""))}</div></details>'
        for n in cited
    )
    return body + (f'\n\n<div class="sources">{sources}</div>' if sources else "") + notice
