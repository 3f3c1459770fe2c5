"""The hops of a walk: a neighbour reached through a bridge entity.

A next-evidence line that names something the question does not ("Jan Svěrák's father", written from the seed on
*The Ride (1994 film)* for "Who is the father of the director of film The Ride?") names a bridge entity. When the
passage the line was written from holds that name and the neighbour the line chose holds it too, the two passages
are one hop of the question: the first gave the entity, the second is about it. KGP's reader can read such pairs
first (``reader_order: hops``) instead of re-ranking every visited passage by its similarity to the question,
which the second hop's passage rarely resembles (issue 32).
"""

from __future__ import annotations

import re

from langchain_core.documents import Document

from pipeline.methods.ircot.hops import holds
from pipeline.text import normalize_answer

# Words that join the capitalised words of one name ("Duke of Wellington", "Vincent van Gogh").
_JOINERS = frozenset({"of", "de", "da", "del", "della", "di", "du", "la", "le", "von", "van", "der", "den", "y",
                      "al", "bin", "ibn", "the", "and", "&"})
# Capitalised words that start a line without naming anything (pronouns too: "It" is in every passage).
_OPENERS = frozenset({"the", "a", "an", "what", "who", "whom", "whose", "where", "when", "which", "why", "how",
                      "is", "was", "did", "does", "in", "on", "at", "for", "from", "by", "to", "then", "evidence",
                      "fact", "information", "date", "birth", "born", "death", "died", "place", "name", "year",
                      "married", "directed", "written", "founded", "located", "released", "published", "father",
                      "mother", "spouse", "wife", "husband", "child", "son", "daughter", "director", "nationality",
                      "country", "city", "it", "its", "he", "his", "she", "her", "they", "their", "this", "that",
                      "these", "those", "there", "both", "each", "all", "one"})
_TOKEN = re.compile(r"[^\s,;:()\"“”?!]+")
_POSSESSIVE = re.compile(r"(?:['’]s|['’])$")


def names_in(text: str) -> list[str]:
    """The names a line writes: runs of capitalised words or numbers, joined by "of", "van" and the like, with
    possessives and edge punctuation cut ("Jan Svěrák's father" → ["Jan Svěrák"])."""
    names: list[str] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1].lower() in _JOINERS:
            run.pop()
        while run and (run[0].lower() in _OPENERS or run[0].lower() in _JOINERS):
            run.pop(0)
        if run:
            names.append(" ".join(run))
        run.clear()

    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        word = _POSSESSIVE.sub("", raw.strip(".'’-"))
        named = bool(word) and (word[0].isupper() or any(ch.isdigit() for ch in word))
        if named:
            run.append(word)
        elif run and word.lower() in _JOINERS:
            run.append(word)
        else:
            close()
        initial = raw.endswith(".") and len(word) <= 2 and word[:1].isupper()  # "Lewis D. Collins", "Jr."
        if raw != word and raw.endswith(("'s", "’s", ".")) and not initial:
            close()  # "Svěrák's father": the name ends at the possessive, or at the sentence's end
    close()
    return names


def bridge(evidence: str, question: str, source: Document, target: Document) -> str | None:
    """The entity a hop went through: the first name in ``evidence`` that the question does not contain and that
    both the passage the line was written from (``source``) and the neighbour it chose (``target``) hold; None
    when there is none. Holding is ``pipeline.methods.ircot.hops.holds``: the words as the prompt showed them,
    never text an injected instruction carries."""
    asked = f" {normalize_answer(question)} "
    for name in names_in(evidence):
        needle = normalize_answer(name)
        if not needle or f" {needle} " in asked:
            continue
        if holds(source, name) and holds(target, name):
            return name
    return None
