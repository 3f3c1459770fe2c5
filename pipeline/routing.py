"""Auto: pick a method from the question's wording, and say why (shown in the reasoning view).

A few transparent rules instead of a model call, so the choice costs nothing and can be read and tested:
questions that compare or chain two things need several hops (IRCoT); short open questions without a date,
number or quoted name are often ambiguous (ToC); anything else is answered with one retrieval (OneR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMPARISON = re.compile(
    r"\b(first|earlier|later|older|younger|longer|shorter|larger|smaller|bigger|higher|recently)\b.*\bor\b|"
    r"\band\b.*\b(same|both)\b|\b(both|same)\b.*\band\b|,[^,]+\bor\b[^,]+\?\s*$",
    re.IGNORECASE,
)
# "the director of the film Jaws", "the author of The Hobbit": one entity reached through another.
_RELATION = (r"(director|author|founder|creator|father|mother|wife|husband|spouse|son|daughter|performer|"
             r"composer|producer|publisher|owner|capital|birthplace|country|city|team|company|band)")
_NESTED = re.compile(
    rf"\b{_RELATION}\s+of\s+(the\s+)?\w*\s*{_RELATION}\s+of\b|"
    r"\b(of|by|for|in|from)\s+the\s+\w+(\s+\w+)?\s+(who|that|which|whose|where)\b|"
    rf"\bthe\s+{_RELATION}\s+of\s+(the\s+)?"
    r"[\w'\"-]+.*\b(born|die|died|live|lived|located|founded|released|published|start|play|played|work|worked)\b",
    re.IGNORECASE,
)
_OPEN_QUESTION = re.compile(r"^\s*(who|when|where|what|which)\b", re.IGNORECASE)
_SPECIFIC = re.compile(r"\d|[\"“”]")  # a date, a number or a quoted title narrows the question


@dataclass(frozen=True)
class Choice:
    method: str
    reason: str


def choose_method(question: str, available: set[str] | None = None) -> Choice:
    """The method Auto runs for ``question`` (among ``available``, all when None) and the reason, in words."""
    def ok(name: str) -> bool:
        return available is None or name in available

    words = question.split()
    if ok("ircot") and _COMPARISON.search(question):
        return Choice("ircot", "it compares or combines two things, so it needs facts from several passages")
    if ok("ircot") and _NESTED.search(question):
        return Choice("ircot", "it asks about something described through something else, so it takes "
                               "more than one retrieval hop")
    if ok("toc") and _OPEN_QUESTION.match(question) and len(words) <= 9 and not _SPECIFIC.search(question):
        return Choice("toc", "it is short and names no date, number or exact title, so it may have several "
                             "readings")
    return Choice("oner", "it looks like a single-fact question that one retrieval can answer")
