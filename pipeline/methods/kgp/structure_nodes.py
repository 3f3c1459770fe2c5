"""Questions about the structure of a document ("what is in table 2 of report.pdf", "summarise page 3"): which
table or page they name, and in which file.

The paper has the LLM decide whether a question is about structure or content and extract the page or table
(Wang et al. 2024, Sec. 3.3). A 1.5B model does that less reliably than a rule, and the rule costs no model
call: a question naming "table N" or "page N" (or "the second table") is a structure question when a selected
collection has such a table or page; otherwise it is answered as a content question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_ORDINALS = {word: n for n, word in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth".split(), 1)}
_NUMBER = r"(\d{1,4}|" + "|".join(_ORDINALS) + r")"
_TABLE = re.compile(r"\b(?:table|tab\.)\s*(?:no\.?\s*|number\s*|#\s*)?(\d{1,3})\b|\b" + _NUMBER
                    + r"(?:st|nd|rd|th)?\s+table\b", re.IGNORECASE)
_PAGE = re.compile(r"\b(?:page|p\.|pg\.?)\s*(\d{1,4})\b|\b" + _NUMBER + r"(?:st|nd|rd|th)?\s+page\b",
                   re.IGNORECASE)


@dataclass(frozen=True)
class StructureAsk:
    """A table or page a question names (``kind`` table or page, its number)."""

    kind: str
    number: int

    def describe(self, source: str = "") -> str:
        return f"{self.kind} {self.number}" + (f" of {source}" if source else "")


def _number(match: re.Match) -> int:
    text = next(g for g in match.groups() if g)
    return int(text) if text.isdigit() else _ORDINALS[text.lower()]


def structure_ask(question: str) -> StructureAsk | None:
    """The table (first) or page the question names, or None."""
    for kind, pattern in (("table", _TABLE), ("page", _PAGE)):
        match = pattern.search(question)
        if match:
            number = _number(match)
            if number > 0:
                return StructureAsk(kind, number)
    return None


def named_sources(question: str, sources: set[str], titles: dict[str, str] | None = None) -> set[str]:
    """The files among ``sources`` the question names: by file name ("report.pdf"), by name without its
    extension ("the report"), or by document title (``titles``: source -> title). The longest names win."""
    text = question.lower()
    scored: dict[str, int] = {}
    for source in sources:
        path = PurePosixPath(source.lower())
        names = {path.name, path.stem}
        if titles and titles.get(source):
            names.add(titles[source].lower())
        for name in names:
            if len(name) >= 3 and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text):
                scored[source] = max(scored.get(source, 0), len(name))
    if not scored:
        return set()
    best = max(scored.values())
    return {source for source, length in scored.items() if length == best}
