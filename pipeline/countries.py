"""Countries and the names of their people ("France" / "French"), from the ``countryinfo`` package's table of 250
countries. A hop's answer must be copied from its source; the small model often answers "Which country is X
from?" with the country where the passage names only its people ("a French film director")."""

from __future__ import annotations

import functools
import re

from pipeline.text import normalize_answer


@functools.lru_cache(maxsize=1)
def _people_by_country() -> dict[str, str]:
    from countryinfo import all_countries

    table: dict[str, str] = {}
    for country in all_countries():
        people = country.demonym()
        if not people:
            continue
        # ISO codes ("FR", "FRA") are not how answers name a country, but "US", "USA" and "UK" are.
        for name in [country.name(), *(country.alt_spellings() or [])]:
            if name and (len(name) > 3 or name in {"US", "USA", "UK"}):
                table.setdefault(normalize_answer(name), people)
    return table


def people_of(country: str) -> str | None:
    """The name of the people of ``country`` ("French" for "France", "American" for "USA"), or None when it
    names no country in the table."""
    return _people_by_country().get(normalize_answer(country)) if country.strip() else None


@functools.lru_cache(maxsize=1)
def _peoples() -> frozenset[str]:
    return frozenset(normalize_answer(people) for people in _people_by_country().values())


def is_people(word: str) -> bool:
    """Whether ``word`` is the name of a country's people ("French", "Argentine"), or reads like one: capitalised
    and ending as most do ("Argentinian", "Congolese", "Cornish")."""
    if not word[:1].isupper():
        return False
    return normalize_answer(word) in _peoples() or bool(re.search(r"(?:ian|ese|ish)$", word))
