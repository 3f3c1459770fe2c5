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


# A level-1 ATX heading: "# Title" (closing hashes dropped in Python). Linear: the earlier
# r"^\s{0,3}#\s+(.+?)\s*#*\s*$" took 88 s on "# a" followed by 5,000 spaces (its three quantifiers over the same
# spaces tried every split), and about 8 times as long for each doubling.
_HEADING = re.compile(r"^[ \t]{0,3}#[ \t]+(\S[^\n]*)", flags=re.MULTILINE)
MAX_TITLE_CHARS = 300  # a longer "title" (a PDF's metadata, an HTML <title>) is cut: titles go into every passage


def _first_heading(text: str) -> str | None:
    match = _HEADING.search(text)
    if not match:
        return None
    heading = match.group(1).strip()
    return heading.rstrip("#").strip() or heading


def _load_text(path: Path) -> LoadedFile:
    text = _decode_text(path.read_bytes(), path.name)
    if path.suffix.lower() not in (".md", ".markdown"):
        return LoadedFile(title=path.stem, pages=[Page(text)])
    body, tables = markdown_tables(text)
    return LoadedFile(title=_first_heading(text) or path.stem, pages=[Page(body)], tables=tables)


def _load_pdf(path: Path) -> LoadedFile:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise UnreadableFile(f"{path.name}: the PDF is encrypted. Remove the password and upload it again.")
        pages = [Page((page.extract_text() or "").strip(), number=i) for i, page in enumerate(reader.pages, 1)]
        title = (reader.metadata.title if reader.metadata else None) or path.stem
    except UnreadableFile:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:  # PyPdfError: LimitReachedError too
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
    import zlib

    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from lxml.etree import XMLSyntaxError

    check_unzipped_size(path, path.name)  # python-docx inflates every part in memory
    try:
        document = docx.Document(str(path))
        blocks, tables = docx_blocks(document)
        title = document.core_properties.title or path.stem
    except (PackageNotFoundError, zipfile.BadZipFile, zlib.error, XMLSyntaxError, KeyError, ValueError) as exc:
        if "memory allocation failed" in str(exc).lower():  # libxml2 out of memory: not a damaged file
            raise MemoryError(str(exc)) from None
        raise UnreadableFile(f"{path.name}: the Word file is damaged or not a .docx file ({exc}).") from None
    return LoadedFile(title=title, pages=[Page("\n".join(blocks))], tables=tables)


# A .docx of 50 MB (the upload limit) whose parts unpack to more than this is refused before python-docx reads it
# (it inflates every part in memory, and its XML trees take several times their text): a compressed bomb of a few
# MB can declare gigabytes. Python's zipfile never inflates a part beyond its declared size (a part that does
# fails its CRC check), so the declared sizes bound what reading costs.
MAX_UNZIPPED_BYTES = 250_000_000
MAX_ZIP_PARTS = 10_000


def check_unzipped_size(path: Path, name: str, limit: int = MAX_UNZIPPED_BYTES) -> None:
    """Raise ``UnreadableFile`` when the zip file at ``path`` declares more than ``limit`` bytes unpacked, or
    more than ``MAX_ZIP_PARTS`` parts; read from its directory alone, nothing inflated. A file that is not a zip
    passes (its reader says what is wrong with it)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    unpacked = sum(part.file_size for part in parts)
    packed = sum(part.compress_size for part in parts)
    if unpacked > limit:
        raise UnreadableFile(
            f"{name}: unpacks to {unpacked / 1e6:,.0f} MB from {packed / 1e6:,.1f} MB, over the {limit / 1e6:.0f} MB "
            "this app reads from one Word file (a compressed bomb?); nothing of it was stored.")
    if len(parts) > MAX_ZIP_PARTS:
        raise UnreadableFile(f"{name}: holds {len(parts):,} parts, over the {MAX_ZIP_PARTS:,} this app reads from "
                             "one Word file; nothing of it was stored.")


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
    title = " ".join(str(loaded.title).split())
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return loaded if title == loaded.title else LoadedFile(title, loaded.pages, loaded.tables)
