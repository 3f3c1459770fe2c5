"""Text in the picture: made safe for SVG/XML, measured, and wrapped or shortened to fit a box.

The picture is laid out on the server, so label widths are estimated, not measured by a browser. The estimate
takes, for each character, the wider of DejaVu Sans and Liberation Sans (Arial's metrics), plus a margin, so
that a label fits its box in every font of the picture's font stack (``FONT_FAMILY``): an over-estimate only
shortens a label a little, an under-estimate would let labels overlap.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata

from pipeline.escaping import BIDI_CONTROLS

FONT_FAMILY = "'DejaVu Sans', Verdana, 'Liberation Sans', Arial, sans-serif"

# Advance widths of the printable ASCII characters (32..126) in thousandths of an em: the wider of DejaVu Sans
# and Liberation Sans Regular, read from the fonts' hmtx tables with fontTools.
_ASCII_WIDTHS = (
    318, 401, 460, 838, 637, 951, 780, 275, 391, 391, 500, 838, 318, 361, 318, 337, 637, 637, 637, 637, 637, 637,
    637, 637, 637, 637, 337, 337, 838, 838, 838, 557, 1016, 685, 687, 723, 771, 667, 611, 778, 752, 295, 500, 667,
    558, 863, 749, 788, 667, 788, 723, 667, 611, 732, 685, 989, 686, 667, 686, 391, 337, 391, 838, 557, 500, 613,
    635, 550, 635, 616, 353, 635, 634, 278, 278, 580, 278, 975, 634, 612, 635, 635, 412, 521, 393, 634, 592, 818,
    592, 592, 525, 637, 337, 637, 838,
)
_MARGIN = 1.06  # Verdana is up to 6% wider than the table for a few letters (r, I, S)
_OTHER = 1000  # any other character: a full em (CJK and symbols are about that wide; most others narrower)

# Characters XML 1.0 forbids (C0 controls but tab and line ends, surrogates, U+FFFE/U+FFFF) and the
# bidirectional-text controls, which would reorder what follows them ("report\u202eFDP.exe").
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff" + BIDI_CONTROLS + "]")
_SPACE = re.compile(r"\s+")


def clean(value) -> str:
    """``value`` as one line of text that XML allows, without bidirectional-text controls."""
    text = "" if value is None else str(value)
    if text.isascii() and text.isprintable() and "  " not in text:  # the common case, without regexes
        return text.strip()
    return _SPACE.sub(" ", _UNSAFE.sub("", text)).strip()


def xml(value) -> str:
    """``value`` (already one line, or not) as SVG/HTML text or an attribute value shown literally."""
    return html.escape(clean(value), quote=True)


_TABLE = [_OTHER] * 128
_TABLE[32:127] = _ASCII_WIDTHS


@functools.lru_cache(maxsize=4096)
def _advance(char: str) -> float:
    code = ord(char)
    if 32 <= code < 127:
        return _ASCII_WIDTHS[code - 32]
    if unicodedata.combining(char):
        return 0
    base = unicodedata.normalize("NFD", char)[0]  # "č" is as wide as "c"
    if base != char and 32 <= ord(base) < 127:
        return _ASCII_WIDTHS[ord(base) - 32]
    return _OTHER


def text_width(text: str, size: float) -> float:
    """The estimated width in pixels of ``text`` at font size ``size`` (never less than the real width in the
    fonts of ``FONT_FAMILY``)."""
    units = sum(map(_TABLE.__getitem__, text.encode())) if text.isascii() else sum(map(_advance, text))
    return units * size * _MARGIN / 1000


def shorten(text: str, width: float, size: float) -> str:
    """``text`` cut to fit ``width`` pixels, ending with an ellipsis when cut."""
    if text_width(text, size) <= width:
        return text
    room = (width - text_width("…", size)) * 1000 / (size * _MARGIN)
    used, end = 0.0, 0
    for end, char in enumerate(text):
        used += _advance(char)
        if used > room:
            break
    return text[:end].rstrip() + "…"


def wrap(text: str, width: float, size: float, max_lines: int) -> list[str]:
    """``text`` in at most ``max_lines`` lines of at most ``width`` pixels, breaking between words (inside a
    word only when it alone is too long); the last line ends with an ellipsis when text is left over."""
    words = clean(text).split(" ")
    space = text_width(" ", size)
    lines: list[str] = []
    line, line_width = "", 0.0
    for index, word in enumerate(words):
        word_width = text_width(word, size)
        if line and line_width + space + word_width <= width:
            line, line_width = f"{line} {word}", line_width + space + word_width
            continue
        if not line and word_width <= width:
            line, line_width = word, word_width
            continue
        if line:
            lines.append(line)
        while word_width > width and len(lines) < max_lines:  # a word longer than the line
            cut = shorten(word, width, size)[:-1] or word[:1]
            lines.append(cut)
            word = word[len(cut):]
            word_width = text_width(word, size)
        line, line_width = word, word_width
        if len(lines) >= max_lines:
            rest = " ".join([line, *words[index + 1:]]).strip()
            if rest:
                lines[max_lines - 1] = shorten(lines[max_lines - 1] + " " + rest, width, size)
            return lines[:max_lines]
    if line:
        lines.append(line)
    return lines[:max_lines] or [""]
