"""Comparisons computed in code: two values read from passages (dates, numbers, yes / no, names), normalised and
compared, so the answer to "who died first" does not rest on the model's arithmetic."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.text import normalize_answer

_MONTHS = {name: i for i, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")], 1) for name in names}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_FORMS = [
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(?P<year>\d{{3,4}})\b", re.I),
    re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{3,4}})\b", re.I),
    re.compile(rf"\b{_MONTH},?\s+(?P<year>\d{{3,4}})\b", re.I),
    re.compile(r"\b(?P<year>\d{4})-(?P<mnum>\d{2})-(?P<day>\d{2})\b"),
    re.compile(r"\b(?P<year>\d{1,4})\s*(?:BCE|BC|B\.C\.|AD|CE)(?!\w)", re.I),
    re.compile(r"\b(?P<year>\d{3,4})\b"),
]
_BC = re.compile(r"\b(bc|bce|b\.c\.)\b", re.I)
_NUMBER = re.compile(r"(?P<num>\d[\d,]*(?:\.\d+)?|\.\d+)\s*(?P<scale>thousand|million|billion|trillion)?"
                     r"\s*(?P<unit>[^\W\d_]+|%)?", re.I)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_YES, _NO = {"yes", "true"}, {"no", "false"}


@dataclass(frozen=True)
class Outcome:
    """A comparison's result: ``winner`` is 0 or 1 (the first or the second value) for earlier / later / more /
    less, ``verdict`` is "yes" or "no" for same / both; ``None`` with a ``reason`` when it cannot be decided."""

    winner: int | None = None
    verdict: str | None = None
    reason: str = ""
    shown: tuple[str, str] = ("", "")  # each value as compared ("1947-03-01", "25000000")


def parse_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) of the first date in ``text``, 0 for a part it does not give; years BC negative."""
    for form in _DATE_FORMS:
        match = form.search(text)
        if match:
            parts = match.groupdict()
            year = int(parts["year"])
            month = _MONTHS[parts["month"].lower().rstrip(".")] if parts.get("month") else int(parts.get("mnum") or 0)
            day = int(parts.get("day") or 0)
            return (-year if _BC.search(text[match.start():match.end() + 5]) else year, month, day)
    return None


def parse_number(text: str) -> float | None:
    """The first number in ``text`` ("25 million" is 25000000, "1,234" is 1234), or None."""
    return _number(text)[0]


def _number(text: str) -> tuple[float | None, str]:
    """The first number in ``text`` and the word after it (its unit, lower case; "" when none)."""
    match = _NUMBER.search(text)
    if not match:
        return None, ""
    value = float(match.group("num").replace(",", ""))
    return value * _SCALES.get((match.group("scale") or "").lower(), 1.0), (match.group("unit") or "").lower()


def yes_no(text: str) -> bool | None:
    """True for "yes", False for "no", None otherwise."""
    word = normalize_answer(text).split()[:1]
    return (word[0] in _YES) if word and word[0] in _YES | _NO else None


def _date_text(date: tuple[int, int, int]) -> str:
    year, month, day = date
    return f"{year:04d}" + (f"-{month:02d}" if month else "") + (f"-{day:02d}" if day else "")


def compare(kind: str, first: str, second: str) -> Outcome:
    """Compare ``first`` with ``second`` as ``kind`` asks (one of ``plan.COMPARISONS``)."""
    if kind in ("earlier", "later"):
        a, b = parse_date(first), parse_date(second)
        if a is None or b is None:
            return Outcome(reason=f"no date in '{first if a is None else second}'")
        shown = (_date_text(a), _date_text(b))
        # Compare only the parts both dates give: "1947" against "3 March 1947" cannot be decided.
        key_a, key_b = [], []
        for part_a, part_b in zip(a, b):
            if not (part_a and part_b) and key_a:
                break
            key_a.append(part_a)
            key_b.append(part_b)
            if part_a != part_b:
                break
        if key_a == key_b:
            return Outcome(reason="the two dates are the same as far as both are given", shown=shown)
        first_is_earlier = key_a < key_b
        return Outcome(winner=0 if first_is_earlier == (kind == "earlier") else 1, shown=shown)
    if kind in ("more", "less"):
        (a, unit_a), (b, unit_b) = _number(first), _number(second)
        if a is None or b is None:
            return Outcome(reason=f"no number in '{first if a is None else second}'")
        if unit_a and unit_b and unit_a != unit_b:
            return Outcome(reason=f"the values are in different units ({unit_a}, {unit_b})")
        shown = (f"{a:g}", f"{b:g}")
        if a == b:
            return Outcome(reason="the two numbers are equal", shown=shown)
        return Outcome(winner=0 if (a > b) == (kind == "more") else 1, shown=shown)
    if kind == "both":
        a, b = yes_no(first), yes_no(second)
        if a is None or b is None:
            return Outcome(reason=f"'{first if a is None else second}' is not yes or no")
        return Outcome(verdict="yes" if a and b else "no", shown=(first, second))
    if kind == "same":
        a, b = normalize_answer(first), normalize_answer(second)
        if not a or not b:
            return Outcome(reason="a value is empty")
        same = a == b or a in b.split() or b in a.split()
        return Outcome(verdict="yes" if same else "no", shown=(a, b))
    raise ValueError(f"unknown comparison '{kind}'")
