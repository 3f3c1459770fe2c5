"""Text normalisation shared by the methods and the metrics."""

from __future__ import annotations

import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles (a, an, the), single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_unaccented(text: str) -> str:
    """``normalize_answer`` without accents: "Pogačar" and "Pogacar" are one name to a person reading them."""
    decomposed = unicodedata.normalize("NFKD", text or "")
    return normalize_answer("".join(c for c in decomposed if not unicodedata.combining(c)))


# A yes / no question begins with a verb ("Is ...", "Did ...", "Were both ..."); a question word asks for a phrase.
_YES_NO_START = re.compile(r"^\W*(?:is|are|am|was|were|do|does|did|has|have|had|can|could|will|would|should|shall|"
                           r"may|might|must)\b", re.IGNORECASE)
_QUESTION_WORD = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how)\b", re.IGNORECASE)


def asks_for_phrase(question: str) -> bool:
    """Whether ``question`` asks for a name, place, date, number or phrase, which a bare yes or no cannot answer:
    it holds a question word (who, what, which, when, where, why, how) and does not begin as a yes / no question
    does ("Is X older than Y?", "Did the director of X ...?" are left alone). On the dev and test files of
    HotpotQA, 2Wiki and MuSiQue no question with a yes / no gold answer is such a question."""
    return bool(_QUESTION_WORD.search(question)) and not _YES_NO_START.match(question)


def is_yes_no(answer: str) -> bool:
    """Whether ``answer`` is a bare yes or no ("No.", "yes")."""
    return normalize_answer(answer) in ("yes", "no")


# Words that end with a period without ending a sentence ("Mr. Smith", "St. Louis"); single letters
# ("J. R. R. Tolkien") are handled separately.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st mt ft jr sr vs co corp inc ltd lt sgt capt etc approx jan feb apr jun jul aug sep sept "
    "oct nov dec".split()  # not "no", "mar", "est": they end yes/no answers and sentences
)
# A run of end marks is matched from its start only and taken whole (possessive), so "!!!...x" costs one scan, not
# one per mark: without the look-behind and ``++`` a run of n marks not followed by a space took n² steps (29 s for
# 40,000 "!"). The citations stay backtrackable: "end. [2]x" ends at the period.
_SENTENCE_END = re.compile(r"(?<![.!?])[.!?]++[\"'”’)\]]*+(?:\s*\[\d{1,2}\])*(?=\s|$)")
_WORD_BEFORE = 40  # characters before a period in which an abbreviation is looked for
CITATION = re.compile(r"\[(\d{1,2})\]")  # a citation marker such as [2]
_CITATIONS = re.compile(r"\s*" + CITATION.pattern)


def sentence_end(text: str, *, final: bool = True) -> int | None:
    """Index just past the first sentence of ``text``, or None when no sentence is complete yet.

    A sentence ends at a line break, or at ``.``, ``!`` or ``?`` (with closing quotes and citations such as
    ``[2]`` that follow it) before white space; a period after an initial or a common abbreviation does not end
    one. With ``final=False`` (text still being generated) an end must be followed by white space, since
    "2." may yet become "2.5".
    """
    stripped_start = len(text) - len(text.lstrip())
    newline = text.find("\n", stripped_start)
    for match in _SENTENCE_END.finditer(text):
        if newline != -1 and newline < match.start():
            break
        if match.end() == len(text) and not final:
            return None
        if match.group(0)[0] == "." and _ends_with_abbreviation(text[max(0, match.start() - _WORD_BEFORE):
                                                                     match.start()]):
            continue
        return match.end()
    if newline != -1:
        return newline
    return len(text) if final and text.strip() else None


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, a text without line breaks, as ``sentence_end`` would cut it
    one sentence after another, each span starting where the last ended; in one pass, so in time linear in the
    length of ``text`` (cutting with ``sentence_end`` copies the rest of the text for every sentence)."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.group(0)[0] == "." and _ends_with_abbreviation(
                text[max(start, match.start() - _WORD_BEFORE): match.start()]):
            continue
        spans.append((start, match.end()))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _ends_with_abbreviation(text: str) -> bool:
    word = re.search(r"(\w+)$", text)
    return bool(word) and (len(word.group(1)) == 1 and word.group(1).isalpha()
                           or word.group(1).lower() in _ABBREVIATIONS)


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (see ``sentence_end``), stripped; "" for blank text."""
    text = text.strip()
    end = sentence_end(text)
    return text[:end].strip() if end else ""


def has_complete_sentence(text: str) -> bool:
    """Whether streamed ``text`` already holds a complete first sentence (a stop test for generation)."""
    return bool(text.strip()) and sentence_end(text.lstrip(), final=False) is not None


def strip_citations(text: str) -> str:
    """``text`` without citation markers such as ``[2]``."""
    return " ".join(_CITATIONS.sub(" ", text).split())
