"""Tables of PDF, Word, HTML and Markdown files: found, kept as Markdown, taken out of the text they were
flattened into, numbered per file, split into parts when long, and stored as passages of their own."""

from __future__ import annotations

from corpora.loaders import load_file
from corpora.splitting import split_file
from corpora.tables import TABLE_PART_WORDS, make_table, markdown_tables, table_passages
from tests.test_kgp import make_lakes_docx, make_report_pdf


def test_markdown_tables_leave_the_text_and_keep_escaped_pipes():
    text = "# Notes\nBefore.\n\n| Name | Score |\n|:-----|------:|\n| Alice | 3 |\n| Bob \\| Jr | 5 |\n\nAfter.\n"
    body, tables = markdown_tables(text)
    assert "Alice" not in body and "Before." in body and "After." in body
    (table,) = tables
    assert table.rows == (("Name", "Score"), ("Alice", "3"), ("Bob \\| Jr", "5"))
    assert table.markdown() == "| Name | Score |\n|---|---|\n| Alice | 3 |\n| Bob \\| Jr | 5 |"
    assert markdown_tables("a | b\nno delimiter row\n")[1] == []


def test_html_data_tables_become_tables_and_layout_tables_stay_text(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("<html><body><p>Intro.</p><table><tr><td>Layout cell with the page text</td></tr></table>"
                    "<table><tr><th>City</th><th>Rain</th></tr><tr><td>Bergen</td><td>2250 mm</td></tr></table>"
                    "</body></html>")
    loaded = load_file(path)
    assert "Layout cell with the page text" in loaded.pages[0].text and "Bergen" not in loaded.pages[0].text
    (table,) = loaded.tables
    assert table.number == 1 and table.rows[1] == ("Bergen", "2250 mm")


def test_word_tables_in_body_order_and_a_single_row_stays_text(tmp_path):
    import docx

    make_lakes_docx(tmp_path / "lakes.docx")
    loaded = load_file(tmp_path / "lakes.docx")
    assert [t.rows[1] for t in loaded.tables] == [("Vorn", "31 m")]
    assert "Vorn" not in loaded.pages[0].text and "Closing remarks" in loaded.pages[0].text
    document = docx.Document()
    document.add_paragraph("Harbour notes.")
    row = document.add_table(rows=1, cols=2).rows[0]
    row.cells[0].text, row.cells[1].text = "Port", "Gothenburg"
    merged = document.add_table(rows=2, cols=3)
    merged.cell(0, 0).merge(merged.cell(0, 1)).text = "Wide"
    merged.cell(0, 2).text = "Narrow"
    merged.cell(1, 0).text, merged.cell(1, 1).text, merged.cell(1, 2).text = "a", "b", "c"
    document.save(tmp_path / "harbour.docx")
    loaded = load_file(tmp_path / "harbour.docx")
    assert "Port | Gothenburg" in loaded.pages[0].text
    assert [t.rows for t in loaded.tables] == [(("Wide", "Narrow"), ("a", "b", "c"))]  # a merged cell once


def test_pdf_tables_are_found_on_ruled_pages_only(tmp_path):
    from pypdf import PdfReader

    from corpora.tables import ruled_pages

    make_report_pdf(tmp_path / "report.pdf")
    assert ruled_pages(PdfReader(tmp_path / "report.pdf")) == [3]
    loaded = load_file(tmp_path / "report.pdf")
    assert [(t.number, t.page, t.rows[0]) for t in loaded.tables] == [(1, 3, ("Crop", "Tonnes", "Region")),
                                                                     (2, 3, ("Year", "Rainfall"))]
    # The cells are stored once, in the tables: the page's text keeps its prose only.
    page = {p.number: p.text for p in loaded.pages}[3]
    assert "Page 3 of the farm report" in page and "harvested late" in page
    assert not any(cell in page for cell in ("Barley", "Tonnes", "Rainfall", "640 mm"))


def test_table_passages_follow_the_text_passages_and_long_tables_are_split(tmp_path):
    make_report_pdf(tmp_path / "report.pdf")
    passages = split_file(load_file(tmp_path / "report.pdf"), source="report.pdf", content_sha256="ab" * 32)
    text = [p for p in passages if "table" not in p.metadata]
    tables = [p for p in passages if "table" in p.metadata]
    assert [p.metadata["position"] for p in passages] == list(range(len(passages)))
    assert [(p.metadata["table"], p.metadata["page"]) for p in tables] == [(1, 3), (2, 3)] and text
    assert tables[1].page_content.startswith("Table 2 (page 3)\n\n| Year | Rainfall |")
    assert all(p.metadata["file_passages"] == len(passages) for p in passages)

    rows = [("Item", "Note")] + [(f"item {i}", "a fairly long note about the item " * 2) for i in range(40)]
    long = make_table(1, rows)
    parts = table_passages("Inventory", [long], source="inv.md", content_sha256="cd" * 32, start=3)
    assert len(parts) > 1 and all(p.page_content.split("\n")[2] == "| Item | Note |" for p in parts)
    assert [p.metadata["table_part"] for p in parts] == list(range(1, len(parts) + 1))
    assert all(len(p.page_content.split()) <= TABLE_PART_WORDS * 1.6 for p in parts)
    assert "item 39" in parts[-1].page_content and parts[0].id.endswith("-00003")
