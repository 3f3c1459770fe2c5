"""Follow-up questions: a question that leans on the previous one ("And where was he born?") is asked
together with it, so retrieval and the model see who "he" is. A transparent rule, no model call."""

from __future__ import annotations

import re

_LEANS_ON_CONTEXT = re.compile(
    r"\b(he|she|it|they|him|her|them|his|hers|its|their|theirs|this|that|these|those|there|then|the same)\b|"
    r"^\s*(and|also|what about|how about|why|so)\b",
    re.IGNORECASE,
)
_NAMES_SOMETHING = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][a-z]+|\d")


def with_context(question: str, previous: list[str]) -> tuple[str, str | None]:
    """The question to run, and the previous question when it was joined with it (None otherwise).

    A follow-up is joined when it uses a pronoun or starts like a continuation ("And ...", "What about ...")
    and names nothing of its own (no capitalised name, no number)."""
    if not previous or not _LEANS_ON_CONTEXT.search(question) or _NAMES_SOMETHING.search(question):
        return question, None
    joined = f"{previous[-1].rstrip()} {question.strip()}"
    return joined, previous[-1]
