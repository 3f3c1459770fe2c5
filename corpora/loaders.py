"""Reading user files (.txt, .md, .pdf, .html, .docx) into titled pages of plain text, and their tables
(``corpora.tables``: each becomes a passage of its own, held as Markdown).

Every way a file can be unreadable raises ``UnreadableFile`` with a message a user can act on; nothing is
partially read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from corpora.tables import Table, docx_blocks, html_tables, markdown_tables, pdf_tables, ruled_pages


class UnreadableFile(ValueError):
    """The file cannot be ingested; the message says why and what to do."""


@dataclass(frozen=True)
class Page:
    """Text of one page (PDF) or of a whole document (other formats, ``number`` None)."""

    text: str
    number: int | None = None


@dataclass(frozen=True)
class LoadedFile:
    title: str
    pages: list[Page]
    tables: list[Table] = field(default_factory=list)  # numbered in document order; out of the pages' text


SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".pdf", ".html", ".htm", ".docx")


def _decode_text(data: bytes, name: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    if b"\x00" in data[:4096]:
        raise UnreadableFile(f"{name}: looks like a binary file, not text.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            f"{name}: is not UTF-8 text (byte 0x{data[exc.start]:02x} at position {exc.start}). "
            "Save it as UTF-8 and upload it again."
        ) from None


def _first_heading(text: str) -> str | None:
    match = re.search(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else None


def _load_text(path: Path) -> LoadedFile:
    text = _decode_text(path.read_bytes(), path.name)
    if path.suffix.lower() not in (".md", ".markdown"):
        return LoadedFile(title=path.stem, pages=[Page(text)])
    body, tables = markdown_tables(text)
    return LoadedFile(title=_first_heading(text) or path.stem, pages=[Page(body)], tables=tables)


def _load_pdf(path: Path) -> LoadedFile:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise UnreadableFile(f"{path.name}: the PDF is encrypted. Remove the password and upload it again.")
        pages = [Page((page.extract_text() or "").strip(), number=i) for i, page in enumerate(reader.pages, 1)]
        title = (reader.metadata.title if reader.metadata else None) or path.stem
    except UnreadableFile:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnreadableFile(f"{path.name}: the PDF is damaged or not a PDF ({exc}).") from None
    if not any(page.text for page in pages):
        raise UnreadableFile(
            f"{path.name}: the PDF has no extractable text (a scan?). Run OCR on it first, then upload it again."
        )
    tables, texts = pdf_tables(path, ruled_pages(reader))
    pages = [Page(texts[p.number], p.number) if p.number in texts else p for p in pages]
    return LoadedFile(title=str(title), pages=[p for p in pages if p.text], tables=tables)


def _load_html(path: Path) -> LoadedFile:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_decode_text(path.read_bytes(), path.name), "lxml")
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        if tag.name != "head":
            tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else ""
    if soup.head:
        soup.head.decompose()
    tables = html_tables(soup)
    body = soup.get_text("\n", strip=True)
    return LoadedFile(title=title or path.stem, pages=[Page(body)], tables=tables)


def _load_docx(path: Path) -> LoadedFile:
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise UnreadableFile(f"{path.name}: the Word file is damaged or not a .docx file ({exc}).") from None
    blocks, tables = docx_blocks(document)
    title = document.core_properties.title or path.stem
    return LoadedFile(title=title, pages=[Page("\n".join(blocks))], tables=tables)


_LOADERS = {
    ".txt": _load_text,
    ".md": _load_text,
    ".markdown": _load_text,
    ".pdf": _load_pdf,
    ".html": _load_html,
    ".htm": _load_html,
    ".docx": _load_docx,
}


def load_file(path: Path | str, display_name: str | None = None) -> LoadedFile:
    """Read a supported file into pages of text; raise ``UnreadableFile`` when it cannot be used."""
    path = Path(path)
    name = display_name or path.name
    loader = _LOADERS.get(Path(name).suffix.lower()) or _LOADERS.get(path.suffix.lower())
    if loader is None:
        raise UnreadableFile(
            f"{name}: unsupported file type. Supported: {', '.join(SUPPORTED_SUFFIXES)}."
        )
    try:
        if path.stat().st_size == 0:
            raise UnreadableFile(f"{name}: the file is empty.")
        loaded = loader(path)
    except OSError as exc:
        raise UnreadableFile(f"{name}: cannot be read ({exc.strerror or exc}).") from None
    if not any(page.text.strip() for page in loaded.pages) and not loaded.tables:
        raise UnreadableFile(f"{name}: contains no text.")
    return loaded
