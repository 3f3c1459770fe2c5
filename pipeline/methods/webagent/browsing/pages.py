"""The page model both browsers share: search results, pages made of chunks (passages, or paragraphs of a web
page), and the windows of numbered sentences the agent reads and quotes from.

A window never crosses a chunk boundary, so every sentence shown (and quoted) belongs to exactly one chunk: a
local page's passage, whose id the evaluation counts towards support recall.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Protocol

from langchain_core.documents import Document

from pipeline.fetch import BrowseError  # noqa: F401 - a page load or search failed (raised by every browser)
from pipeline.text import sentence_end


@dataclass(frozen=True)
class PageKey:
    """What identifies a page: its url on the web; its collection, file and title in a local web."""

    url: str | None = None
    collection: str | None = None
    source: str | None = None
    title: str = ""


@dataclass
class Result:
    """One search result: a page's title and a snippet, and what opening it needs (``hit``: the passage the
    local search matched, where the page opens)."""

    number: int  # 1-based, in the order the search returned
    title: str
    snippet: str
    key: PageKey
    hit: Document | None = None

    @property
    def url(self) -> str | None:
        return self.key.url


@dataclass
class Page:
    """A loaded page: its chunks in order, and the chunk it opens at."""

    key: PageKey
    title: str
    chunks: list[Document]
    start_chunk: int = 0
    page_number: int | None = None  # the file's page of the opening chunk (PDFs)
    note: str = ""  # e.g. "only the first 60,000 characters are shown"


@dataclass(frozen=True)
class Sentence:
    text: str
    chunk: int  # index into the page's chunks


@dataclass
class Window:
    """About ``window_chars`` of one chunk, as numbered sentences (numbers from 1 within the window)."""

    index: int  # 0-based among the page's windows
    sentences: list[Sentence]

    @property
    def chunk(self) -> int:
        return self.sentences[0].chunk

    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)


class Browser(Protocol):
    """What the agent drives. ``search`` returns results best first; ``open`` loads a result's page. Both raise
    ``BrowseError``. ``label`` says in a few words what is browsed ("the web", "your collections: demo")."""

    kind: str  # "web" or "local"
    label: str

    def search(self, query: str, limit: int) -> list[Result]: ...

    def open(self, result: Result) -> Page: ...


_WORD = re.compile(r"\w+")


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences (``pipeline.text.sentence_end``: abbreviations and initials do not end one;
    line breaks do)."""
    out = []
    rest = text.strip()
    while rest:
        end = sentence_end(rest) or len(rest)
        sentence = " ".join(rest[:end].split())
        if sentence:
            out.append(sentence)
        rest = rest[end:].strip()
    return out


def _pieces(sentence: str, limit: int) -> list[str]:
    """A sentence longer than ``limit`` characters, cut at word boundaries into pieces that fit."""
    if len(sentence) <= limit:
        return [sentence]
    pieces, current = [], ""
    for word in sentence.split():
        if current and len(current) + 1 + len(word) > limit:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word[:limit]
    return pieces + ([current] if current else [])


def make_windows(chunks: list[Document], window_chars: int) -> list[Window]:
    """The windows of a page: each chunk's sentences split into ``ceil(len / window_chars)`` windows of about
    equal length (a 550-character passage gives two of about 275 rather than 500 and 50)."""
    windows: list[Window] = []
    for index, chunk in enumerate(chunks):
        sentences = [Sentence(piece, index) for s in split_sentences(chunk.page_content)
                     for piece in _pieces(s, window_chars)]
        if not sentences:
            continue
        total = sum(len(s.text) + 1 for s in sentences)
        target = total / max(1, math.ceil(total / window_chars))
        current: list[Sentence] = []
        size = 0
        for sentence in sentences:
            if current and (size + len(sentence.text) > window_chars or size >= target):
                windows.append(Window(len(windows), current))
                current, size = [], 0
            current.append(sentence)
            size += len(sentence.text) + 1
        if current:
            windows.append(Window(len(windows), current))
    return windows


def snippet(text: str, query: str, limit: int = 200) -> str:
    """About ``limit`` characters of ``text`` around its sentence sharing the most words with ``query`` (as a
    search engine's snippet shows the matching part of a page)."""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    wanted = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
    best = max(range(len(sentences)),
               key=lambda i: (len(wanted & {w.lower() for w in _WORD.findall(sentences[i])}), -i))
    picked = " ".join(sentences[best:])
    if len(picked) < limit and best > 0:  # room left: start earlier
        picked = " ".join(sentences[max(0, best - 1):])
    return shorten(picked, limit)


def shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, with an ellipsis when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(" ,;:") + "…"


def words_preview(text: str, words: int) -> str:
    """``text`` when it has at most ``words`` words, else its first and last ``words // 2`` words joined by
    " … " (WebCPM shows a fact over 50 tokens as its first and last 25)."""
    parts = text.split()
    if len(parts) <= words:
        return " ".join(parts)
    half = max(1, words // 2)
    return " ".join(parts[:half]) + " … " + " ".join(parts[-half:])


def paragraph_chunks(text: str, size: int) -> list[str]:
    """``text`` cut into chunks of about ``size`` characters at paragraph (line) boundaries; a longer paragraph
    is a chunk of its own (its windows split it further)."""
    out: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in text.split("\n")):
        if not paragraph:
            continue
        if current and len(current) + 1 + len(paragraph) > size:
            out.append(current)
            current = paragraph
        else:
            current = f"{current}\n{paragraph}" if current else paragraph
    return out + ([current] if current else [])
