"""Text from documents, web pages, the model or a replayed trace, made safe to show: as HTML that shows it
literally, or as Markdown and HTML both (the chat), and never with bidirectional-text controls that reorder what
follows them. Every place that puts such text on a page goes through here."""

from __future__ import annotations

import html
import re


# Bidirectional-text controls: an override or isolate in a file or collection name reorders what follows it
# ("report\u202eFDP.exe" shows as "reportexe.PDF"). They are dropped from everything shown.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_NO_BIDI = dict.fromkeys(map(ord, BIDI_CONTROLS))


def plain(value) -> str:
    """``value`` as a string without bidirectional-text controls (see ``BIDI_CONTROLS``)."""
    return ("" if value is None else str(value)).translate(_NO_BIDI)


def esc(value) -> str:
    """``value`` as text that HTML shows literally, without bidirectional-text controls."""
    return html.escape(plain(value), quote=True)


# Markdown syntax, and what GFM turns into links by itself: "http://", "ftp://", "mailto:" (the colon),
# "user@host.org" (the at sign) and "www.host.org" (see _WWW). "$" would start LaTeX in the chat.
_MARKDOWN = str.maketrans({c: f"&#{ord(c)};" for c in "[]()!*_`#~|\\:@$"})
_WWW = re.compile(r"(www)\.", re.IGNORECASE)


def md_safe(value) -> str:
    """``value`` as text that both Markdown and HTML show literally (no links, bare URLs included, images or
    emphasis): for the chat, which renders Markdown. Bidirectional-text controls are dropped."""
    text = plain(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").translate(_MARKDOWN)
    text = _WWW.sub(r"\1&#46;", text)
    return text.replace('"', "&quot;").replace("'", "&#39;")


def md_block(value) -> str:
    """``md_safe(value)`` for inside an HTML block of the chat (a passage under an answer): line ends become
    character references too, so no blank line ends the block and nothing in it is read as Markdown."""
    return md_safe(value).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "&#10;")
