"""HTML elements hidden from a reader (``hidden``, ``display:none``, ``visibility:hidden``, zero opacity, 0-1px
type, white type without a background, text pushed off-screen): found with regular expressions linear in the
text's length, so that hidden text can be dropped before a passage reaches the model (``pipeline.untrusted``)."""

from __future__ import annotations

import functools
import re

_OPEN_TAG = re.compile(r"<([a-z][a-z0-9]*)((?:\s+[\w:-]+(?:\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s<>\"']+))?)*)\s*(/?)>",
                       re.IGNORECASE)
_ATTRIBUTE = re.compile(r"([\w:-]+)(?:\s*=\s*(?:\"([^\"<>]*)\"|'([^'<>]*)'|([^\s<>\"']+)))?")
_VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_LENGTH = re.compile(r"^\s*(-?\d*\.?\d+)\s*([a-z%]*)\s*(?:!important)?\s*$", re.IGNORECASE)
_WHITE = frozenset(("white", "#fff", "#ffffff", "#fffffff", "#ffffffff"))


def _pixels(value: str | None) -> float | None:
    """A CSS length in pixels (an em as 16), or None for another unit or no length."""
    match = _LENGTH.match(value or "")
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    return number if unit in ("", "px", "pt") else number * 16 if unit in ("em", "rem") else None


def hidden_style(style: str) -> bool:
    """Whether a ``style`` attribute hides its element's text from a reader: ``display:none``,
    ``visibility:hidden``, zero opacity, type of 1px or less, white type on no background of its own, or text
    pushed a thousand pixels off the page."""
    rules = {}
    for declaration in style.split(";")[:50]:
        name, _, value = declaration.partition(":")
        rules[name.strip().lower()] = " ".join(value.lower().replace("!important", "").split())
    size = _pixels(rules.get("font-size"))
    colour = rules.get("color", "").replace(" ", "")
    return (rules.get("display") == "none" or rules.get("visibility") in ("hidden", "collapse")
            or rules.get("opacity") in ("0", "0.0", ".0", "0%") or (size is not None and size <= 1)
            or ((colour in _WHITE or colour.startswith("rgb(255,255,255"))
                and not any(name.startswith("background") for name in rules))
            or any((_pixels(rules.get(side)) or 0) <= -1000 for side in ("left", "top", "text-indent", "margin-left")))


def hidden_attributes(attributes: str) -> bool:
    """Whether an opening tag's attributes hide the element: ``hidden``, or a hiding ``style``. (``aria-hidden``
    hides it from screen readers only: the text is on the screen.)"""
    for match in _ATTRIBUTE.finditer(attributes):
        name = match.group(1).lower()
        value = match.group(2) or match.group(3) or match.group(4) or ""
        if name == "hidden" or name == "style" and hidden_style(value):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _same_tag(name: str) -> re.Pattern:
    return re.compile(rf"<(/?){re.escape(name)}(?![\w-])[^<>]*>", re.IGNORECASE)


def remove_hidden(text: str) -> tuple[str, list[str]]:
    """``text`` without the HTML elements hidden from a reader (``hidden``, or a hiding ``style``), nested ones
    included (an unclosed one runs to the end, as in a browser), and the text of each removed element of three
    words or more: a page's hidden text is the classic place for an instruction meant for a model."""
    hidden: list[str] = []
    if "<" not in text:
        return text, hidden
    out, position = [], 0
    for tag in _OPEN_TAG.finditer(text):
        name = tag.group(1).lower()
        if tag.start() < position or tag.group(3) or name in _VOID_TAGS or not hidden_attributes(tag.group(2)):
            continue
        depth, end, after = 1, len(text), len(text)
        for other in _same_tag(name).finditer(text, tag.end()):
            depth += -1 if other.group(1) else 1
            if depth == 0:
                end, after = other.start(), other.end()
                break
        content = " ".join(re.sub(r"<[^<>]*>", " ", text[tag.end():end]).split())
        if len(content.split()) >= 3:
            hidden.append(content)
        out += [text[position:tag.start()], " "]
        position = after
    out.append(text[position:])
    return "".join(out), hidden
