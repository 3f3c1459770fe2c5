"""Tables of PDF, Word, HTML and Markdown files, each kept as Markdown and stored as passages of their own
("report.pdf, p. 3, table 2"): retrievable, citable, and the table nodes of the passage graph.

Tables are numbered in document order from 1, per file. PDF tables are found by pdfplumber from the page's ruling
lines (its default strategy; a table drawn without lines stays in the page text, which pypdf reads as before); a
page that holds one is read by pdfplumber without its tables, so that the cells are stored once.
Word and HTML tables leave the text, where they were flattened into lines before; an HTML table needs two rows and
two columns (a one-column or one-row table lays a page out rather than holding data).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from langchain_core.documents import Document

from corpora.passage_tokens import MAX_PASSAGE_TOKENS, count_tokens, within_tokens

log = logging.getLogger(__name__)

TABLE_PART_WORDS = 200  # a longer table is stored in parts of whole rows, each with the header row


@dataclass(frozen=True)
class Table:
    """One table: its rows (the first is the header), its number in the file, its page (PDF) and caption."""

    number: int
    rows: tuple[tuple[str, ...], ...]
    page: int | None = None
    caption: str = ""

    @functools.cached_property
    def width(self) -> int:
        return max(len(row) for row in self.rows)

    def line(self, row: tuple[str, ...]) -> str:
        """One row as a line of a Markdown table (padded to the table's width)."""
        cells = list(row) + [""] * (self.width - len(row))
        return "| " + " | ".join(cells) + " |"

    def markdown(self, body: tuple[tuple[str, ...], ...] | None = None) -> str:
        """The header and ``body`` rows (all rows by default) as a Markdown table."""
        rows = self.rows[1:] if body is None else body
        return "\n".join([self.line(self.rows[0]), "|" + "---|" * self.width, *(self.line(row) for row in rows)])

    def heading(self) -> str:
        page = f" (page {self.page})" if self.page else ""
        caption = f": {self.caption}" if self.caption else ""
        return f"Table {self.number}{page}{caption}"


def _cell(value) -> str:
    text = " ".join(str(value or "").split())
    return text.replace("|", "\\|")


def make_table(number: int, rows, page: int | None = None, caption: str = "") -> Table | None:
    """A table from raw rows of cell values, or None when fewer than two rows hold text."""
    cleaned = [tuple(_cell(c) for c in row) for row in rows if row and any(_cell(c) for c in row)]
    if len(cleaned) < 2 or max(len(r) for r in cleaned) < 1:
        return None
    return Table(number, tuple(cleaned), page, " ".join(caption.split()))


# A path operator of a PDF content stream: a rectangle ("re") or a line ("l"). A page without one has no ruled
# table; checking the stream with pypdf costs milliseconds where pdfplumber's layout analysis costs about 0.15 s
# a page (measured on a 100-page text PDF: 15 s, against 0.5 s for pypdf's text).
_PATH_OPERATOR = re.compile(rb"[\d.]\s+(?:re|l)\s")


def ruled_pages(reader) -> list[int]:
    """Numbers (from 1) of the pages of a pypdf ``reader`` that draw rectangles or lines, or use form
    XObjects (which may draw them): the only pages that can hold a ruled table."""
    out = []
    for number, page in enumerate(reader.pages, 1):
        try:
            contents = page.get_contents()
            data = contents.get_data() if contents is not None else b""
            resources = page.get("/Resources") or {}
            xobjects = resources.get("/XObject") or {}
            forms = any(x.get_object().get("/Subtype") == "/Form" for x in xobjects.values())
        except Exception:  # noqa: BLE001 - an odd page: let pdfplumber look at it
            out.append(number)
            continue
        if forms or _PATH_OPERATOR.search(data):
            out.append(number)
    return out


def pdf_tables(path: Path, pages: list[int] | None = None) -> tuple[list[Table], dict[int, str]]:
    """The ruled tables of a PDF (on ``pages``, numbered from 1; all by default), and the text of each page that
    holds one, read without its tables (so a table's cells are stored once, in the table's passage). A PDF that
    pdfplumber cannot read gives neither (its text is read by pypdf all the same)."""
    if pages is not None and not pages:
        return [], {}
    try:
        import pdfplumber

        tables: list[Table] = []
        texts: dict[int, str] = {}
        with pdfplumber.open(path, pages=pages) as pdf:
            for page in pdf.pages:
                if not (page.lines or page.rects):  # the default strategy needs ruling lines
                    continue
                boxes = []
                for found in page.find_tables():
                    table = make_table(len(tables) + 1, found.extract(), page.page_number)
                    if table:
                        tables.append(table)
                        boxes.append(found.bbox)
                if boxes:
                    outside = page.filter(lambda obj, boxes=boxes: not any(_inside(obj, box) for box in boxes))
                    texts[page.page_number] = (outside.extract_text() or "").strip()
                page.flush_cache()
        return tables, texts
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types for odd files; the text is still read
        log.warning("No tables read from %s (%s)", path.name, exc)
        return [], {}


def _inside(obj: dict, box: tuple[float, float, float, float]) -> bool:
    """Whether a pdfplumber object (a character, a line...) has its centre inside ``box`` (x0, top, x1, bottom)."""
    if "x0" not in obj or "top" not in obj:
        return False
    x = (obj["x0"] + obj["x1"]) / 2
    y = (obj["top"] + obj["bottom"]) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def docx_blocks(document) -> tuple[list[str], list[Table]]:
    """The paragraphs and tables of a Word document, in body order (a one-row table stays in the text)."""
    from docx.table import Table as DocxTable
    from docx.text.paragraph import Paragraph

    texts: list[str] = []
    tables: list[Table] = []
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            if block.text.strip():
                texts.append(block.text)
        elif isinstance(block, DocxTable):
            rows = []
            for row in block.rows:
                cells, last = [], None
                for cell in row.cells:
                    if cell._tc is not last:  # a merged cell is repeated once per grid column it spans
                        cells.append(cell.text)
                    last = cell._tc
                rows.append(cells)
            table = make_table(len(tables) + 1, rows)
            if table:
                tables.append(table)
            else:  # a single row: kept as a line of text, as before tables were passages
                texts.extend(" | ".join(c.strip() for c in row) for row in rows if any(c.strip() for c in row))
    return texts, tables


def html_tables(soup) -> list[Table]:
    """Remove the data tables (two rows and two columns at least, no table inside) from ``soup`` and return
    them; layout tables stay in the text."""
    tables: list[Table] = []
    for element in soup.find_all("table"):
        if element.find_parent("table") is not None or element.find("table") is not None:
            continue
        rows = [[cell.get_text(" ", strip=True) for cell in tr.find_all(["th", "td"])]
                for tr in element.find_all("tr")]
        if sum(1 for r in rows if r) < 2 or max((len(r) for r in rows), default=0) < 2:
            continue
        caption = element.find("caption")
        table = make_table(len(tables) + 1, rows, caption=caption.get_text(" ", strip=True) if caption else "")
        if table:
            tables.append(table)
            element.decompose()
    return tables


_DELIMITER_CELL = re.compile(r":?-{3,}:?")


def _is_delimiter(line: str) -> bool:
    """Whether ``line`` is a pipe table's delimiter row (``| --- | :---: |``, outer pipes optional). Checked cell
    by cell: one regular expression over the whole line, with optional spaces on both sides of an optional pipe,
    took time quadratic in a line of spaces."""
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") else text
    return all(_DELIMITER_CELL.fullmatch(cell.strip()) for cell in text.split("|"))
_SPLIT = re.compile(r"(?<!\\)\|")


def _md_row(line: str) -> list[str]:
    cells = _SPLIT.split(line.strip())
    if cells and not cells[0].strip():
        cells = cells[1:]
    if cells and not cells[-1].strip():
        cells = cells[:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def markdown_tables(text: str) -> tuple[str, list[Table]]:
    """GitHub-style pipe tables of Markdown ``text``: the text without them, and the tables."""
    lines = text.splitlines()
    kept: list[str] = []
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and "|" in lines[i] and _is_delimiter(lines[i + 1]):
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            table = make_table(len(tables) + 1, [_md_row(lines[i])] + [_md_row(ln) for ln in lines[i + 2 : end]])
            if table:
                tables.append(table)
                kept.append("")
                i = end
                continue
        kept.append(lines[i])
        i += 1
    return "\n".join(kept), tables


def _parts(table: Table, bounded: bool = False) -> list[tuple[tuple[str, ...], ...]]:
    """The table's body rows in parts of at most ``TABLE_PART_WORDS`` words (header included in each). With
    ``bounded``, a part also ends before its passage would pass ``MAX_PASSAGE_TOKENS`` or ``MAX_PASSAGE_CHARS``:
    its lines are counted one by one (a line break is a boundary of the tokenizer's words, so their counts add
    up), with the heading counted at the longest part number it may need."""
    from corpora.splitting import MAX_PASSAGE_CHARS

    header_words = sum(len(c.split()) for c in table.rows[0])
    fixed = f"{table.heading()}, part 9999 of 9999\n\n{table.line(table.rows[0])}\n|{'---|' * table.width}"
    fixed_tokens, fixed_chars = (count_tokens(fixed), len(fixed)) if bounded else (0, 0)
    parts: list[list[tuple[str, ...]]] = [[]]
    words, tokens, chars = header_words, fixed_tokens, fixed_chars
    for row in table.rows[1:]:
        size = sum(len(c.split()) for c in row) + len(row)
        line = table.line(row) if bounded else ""
        row_tokens, row_chars = (count_tokens(line), len(line) + 1) if bounded else (0, 0)
        if parts[-1] and (words + size > TABLE_PART_WORDS or tokens + row_tokens > MAX_PASSAGE_TOKENS
                          or (bounded and chars + row_chars > MAX_PASSAGE_CHARS)):
            parts.append([])
            words, tokens, chars = header_words, fixed_tokens, fixed_chars
        parts[-1].append(row)
        words, tokens, chars = words + size, tokens + row_tokens, chars + row_chars
    return [tuple(p) for p in parts]


def _texts(table: Table, parts: list[tuple[tuple[str, ...], ...]]) -> list[str]:
    """The passage texts of a table's ``parts``: a heading ("Table 2 (page 3), part 1 of 4") and the part."""
    return [table.heading() + (f", part {number} of {len(parts)}" if len(parts) > 1 else "")
            + f"\n\n{table.markdown(rows)}" for number, rows in enumerate(parts, 1)]


def _fits(text: str) -> bool:
    from corpora.splitting import MAX_PASSAGE_CHARS

    return len(text) <= MAX_PASSAGE_CHARS and count_tokens(text) <= MAX_PASSAGE_TOKENS


def _within_bounds(text: str) -> list[str]:
    """``text``, or when it is longer than a passage may be (a row too long for one), its pieces cut as the
    splitter cuts text: in characters, then in tokens (its line breaks then become spaces)."""
    from corpora.splitting import _within_chars

    if _fits(text):
        return [text]
    return [piece for part in _within_chars(" ".join(text.split())) for piece in within_tokens(part)]


def table_passages(title: str, tables: list[Table], *, source: str, content_sha256: str,
                   start: int) -> list[Document]:
    """Passages of a file's tables, positioned after its ``start`` text passages (ids follow the same
    scheme). Each holds a heading ("Table 2 (page 3)") and the table as Markdown; metadata ``table`` is the
    table's number (and ``table_part``, ``table_parts`` for a table stored in parts).

    Each passage is within ``MAX_PASSAGE_TOKENS`` and ``MAX_PASSAGE_CHARS`` (``corpora.splitting``): a table
    whose parts of ``TABLE_PART_WORDS`` words all are keeps them (the parts, and ids, of before these bounds);
    another is cut into parts within them too (a number such as 12.5 is three word pieces: parts of 200 words of a
    numeric table made up to 416); a row too long for a passage with its header is cut further, like text."""
    passages: list[Document] = []
    for table in tables:
        parts = _parts(table)
        texts = _texts(table, parts)
        if not all(_fits(text) for text in texts):
            parts = _parts(table, bounded=True)
            texts = _texts(table, parts)
        for number, text in enumerate(texts, 1):
            for piece in _within_bounds(text):
                position = start + len(passages)
                metadata = {"title": title, "source": source, "position": position, "file_sha256": content_sha256,
                            "table": table.number}
                if table.page is not None:
                    metadata["page"] = table.page
                if len(parts) > 1:
                    metadata.update(table_part=number, table_parts=len(parts))
                passages.append(Document(page_content=piece, metadata=metadata,
                                         id=f"{content_sha256[:24]}-{position:05d}"))
    return passages
