"""Folding disguised letters into plain ones, so that the instruction patterns of ``pipeline.untrusted`` match
"ＩＧＮＯＲＥ", "𝐈𝐠𝐧𝐨𝐫𝐞" and "Ignоre" (a Cyrillic о) as they match "Ignore". The look-alike letters are data, in
``untrusted_patterns.yaml``."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import yaml

_CONFUSABLES: dict[str, str] = yaml.safe_load(
    Path(__file__).with_name("untrusted_patterns.yaml").read_text(encoding="utf-8"))["confusables"]

# Blocks whose characters Unicode NFKC maps to one plain character: IPA and modifier letters, phonetic
# extensions, super- and subscripts, letterlike symbols, enclosed alphanumerics, half- and full-width forms,
# mathematical alphanumerics and their enclosed supplement.
_FOLD_BLOCKS = [(0x0250, 0x0300), (0x1D00, 0x1DC0), (0x2070, 0x20A0), (0x2100, 0x2150), (0x2460, 0x2500),
                (0xFF00, 0xFFF0), (0x1D400, 0x1D800), (0x1F100, 0x1F200)]


def _fold_tables() -> tuple[dict[int, str], dict[int, str]]:
    confusables = _CONFUSABLES
    for letter, latin in confusables.items():
        if len(letter) != 1 or len(latin) != 1:
            raise ValueError(f"untrusted_patterns.yaml: confusable {letter!r}: {latin!r} is not one letter for one")
    compatible = {}
    for start, end in _FOLD_BLOCKS:
        for point in range(start, end):
            folded = unicodedata.normalize("NFKC", chr(point))
            if len(folded) == 1 and folded != chr(point):
                compatible[point] = confusables.get(folded, folded)  # a mathematical Greek capital: Latin
    for mark in "！？":  # they end Chinese and Japanese sentences (``_segments``)
        compatible.pop(ord(mark), None)
    return compatible, {ord(letter): latin for letter, latin in confusables.items()}


_COMPATIBLE, _CONFUSABLE = _fold_tables()
_LOOK_ALIKES = frozenset(map(chr, _CONFUSABLE))


def _fold_word(match: re.Match) -> str:
    word = match.group(0)
    if _LOOK_ALIKES.isdisjoint(word):
        return word
    # "Ignоre" (a Cyrillic о among Latin letters) and "ΝΟΤΕ" (look-alikes only) are disguised Latin; a Russian
    # or Greek word with letters of its own ("забудь", "ответь") is left as written, for the patterns of its
    # language.
    if re.search("[A-Za-z]", word) or all(c in _LOOK_ALIKES or not c.isalpha() for c in word):
        return word.translate(_CONFUSABLE)
    return word


def fold(text: str) -> str:
    """``text`` with full-width, mathematical and other compatibility letters as plain ones (NFKC, where it gives
    one character) and, in words that mix them with Latin letters or hold nothing else, look-alike Cyrillic,
    Greek and other letters as the Latin letters they look like (``untrusted_patterns.yaml``). One character for
    one, so positions in ``text`` and its fold agree. Instruction patterns are matched on the fold, which keeps
    ASCII, Chinese, Japanese and ordinary Russian text as written."""
    text = text.translate(_COMPATIBLE)
    if text.isascii() or _LOOK_ALIKES.isdisjoint(text):
        return text
    return re.sub(r"\w+", _fold_word, text)
