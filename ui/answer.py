"""The answer as a chat message: text shown literally whose [n] citations open the cited passage below it."""

from __future__ import annotations

import re

from pipeline.fold import RunState
from pipeline.payloads import ErrorPayload, WarningPayload
from pipeline.text import CITATION
from pipeline.escaping import esc, md_block, md_safe


def answer_message(state: RunState, run_id: str, waiting: int | None = None) -> str:
    """The assistant message for the run so far: the streamed or final answer with its sources, and any stop
    or error notice. Citation markers become links (``a.cite``, ``href="#cite-<run>-<n>"``) to the matching
    ``details.source`` below (``id="cite-<run>-<n>"``, summary "[n] ..."); ``ui/assets/cite.js`` opens it. The
    number travels in the href and the text because the chat's sanitiser drops ``data-*`` attributes.
    Everything from the model or the passages is escaped for both HTML and Markdown (the chat renders both):
    no Markdown, HTML or bare URL in it becomes a link, an image or markup. ``waiting``: how many model calls
    of other people come before this run's next one (shown while nothing is written yet). Auto's quick answer is
    shown, marked preliminary with the reason it goes deeper, until the deeper method's answer replaces it."""
    notices = [n for ns in state.notes.values() for n in ns
               if isinstance(n.payload, ErrorPayload) or (isinstance(n.payload, WarningPayload) and n.payload.stopped)]
    notice = "".join(f'\n\n<div class="notice notice-{n.kind.value}">{md_block(_notice_text(n))}</div>'
                     for n in notices)
    final = state.answer
    quick = state.preliminary if final is None and not (notices or state.closed) else None
    if quick is not None:  # Auto's quick answer while a deeper method runs
        going = state.route.describe().rstrip() if state.route else "Auto is going deeper."
        going += "" if going.endswith((".", "!", "?", "”")) else "."
        notice = (f'\n\n<div class="notice notice-wait">Preliminary answer. {md_block(going)} '
                  'Its answer will replace this one.</div>' + notice)
        final = quick
    if final is None:
        text = md_safe(state.streamed)
        if notices or state.closed:
            return (text or "<em>No answer.</em>") + notice
        if text:
            return f"{text}▌"
        if waiting:
            return (f'<div class="notice notice-wait">Waiting for the model: {waiting} '
                    f'{"question" if waiting == 1 else "questions"} ahead of yours…</div>')
        return "<em>Working…</em>"
    passages = {p.number: p for p in final.passages if p.number is not None}
    cited = [n for n in final.citations if n in passages]
    key = cite_key(run_id)

    def button(number: int) -> str:
        return (f'<a class="cite" href="#{key}-{number}" title="{esc(passages[number].label())}">'
                f'&#91;{number}&#93;</a>')

    text, body, last = final.answer, [], 0
    for match in CITATION.finditer(text):
        number = int(match.group(1))
        if number in passages:
            body += [md_safe(text[last:match.start()]), button(number)]
            last = match.end()
    body.append(md_safe(text[last:]))
    sources = "".join(
        f'<details class="source" id="{key}-{n}"><summary>&#91;{n}&#93; {md_block(passages[n].label())}'
        f'</summary><div class="source-text">{md_block(passages[n].text)}</div></details>'
        for n in cited
    )
    if final.unsourced:
        names = ", ".join(f"“{name}”" for name in final.unsourced[:6])
        warning = md_block(f"Not in the sources: {names}. That part may come from the model's own knowledge.")
        notice = f'\n\n<div class="notice notice-warning">{warning}</div>' + notice
    if quick is None:  # a preliminary answer's caveats would be the deeper run's, still under way
        notice = "".join(f'\n\n<div class="notice notice-warning">{md_block(caveat)}</div>'
                         for caveat in state.caveats() if caveat not in final.answer) + notice  # said once
    return "".join(body) + (f'\n\n<div class="sources">{sources}</div>' if sources else "") + notice


def last_user_text(history: list) -> str | None:
    """The text of the chat's last message if the person wrote it, as the Chatbot hands the history back (a
    message's content is a string, or a list of parts ``{"type": "text", "text": ...}`` in Gradio 6)."""
    if not history:
        return None
    last = history[-1]
    field = last.get if isinstance(last, dict) else lambda name: getattr(last, name, None)
    if field("role") != "user":
        return None
    content = field("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, (list, tuple)) else [content]
    return "".join((part.get("text") or "") if isinstance(part, dict) else str(getattr(part, "text", part) or "")
                   for part in parts)


def cite_key(run_id: str) -> str:
    """The prefix of a run's citation anchors: ``cite-<run id>``, reduced to characters safe in an id and a URL
    fragment (a replayed trace's run id is whatever the file says)."""
    return "cite-" + (re.sub(r"[^A-Za-z0-9_-]", "", str(run_id)) or "run")


def _notice_text(note) -> str:
    """An error as "what failed: why" ("Cannot answer: ...", "Model error: ..."); a stop as its message."""
    message = note.payload.message
    return f"{note.title}: {message}" if isinstance(note.payload, ErrorPayload) and note.title != message else message
