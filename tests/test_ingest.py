"""Ingestion of real files of every supported type, idempotency, and bad input that changes nothing."""

from __future__ import annotations

import pytest

from corpora.ingest import ingest_files
from corpora.loaders import UnreadableFile, load_file

PARAGRAPH = (
    "The Vasa was a Swedish warship built between 1626 and 1628. The ship sank after sailing about 1,300 "
    "metres into her maiden voyage on 10 August 1628. She was salvaged in 1961 and is now shown in the Vasa "
    "Museum in Stockholm. "
)


def make_pdf(path, pages):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Ships of Sweden")
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def make_docx(path):
    import docx

    document = docx.Document()
    document.core_properties.title = "Harbour notes"
    document.add_paragraph("Gothenburg is the largest port in the Nordic countries.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Port"
    table.rows[0].cells[1].text = "Gothenburg"
    document.save(str(path))
    return path


@pytest.fixture
def files(tmp_path):
    (tmp_path / "notes.txt").write_text(PARAGRAPH * 6, encoding="utf-8")
    (tmp_path / "guide.md").write_text("# Visiting Stockholm\n\nTake the ferry to Djurgården.\n")
    (tmp_path / "page.html").write_text(
        "<html><head><title>Old Town</title><script>alert('x')</script><style>p{}</style></head>"
        "<body><h1>Gamla stan</h1><p>Gamla stan is the old town of Stockholm.</p></body></html>"
    )
    make_pdf(tmp_path / "ships.pdf", ["The Vasa sank in 1628.", "The Kronan sank in 1676 off Oland."])
    make_docx(tmp_path / "harbour.docx")
    return tmp_path


def test_each_format_is_read_with_title_and_pages(files):
    pdf = load_file(files / "ships.pdf")
    assert pdf.title == "Ships of Sweden" and [p.number for p in pdf.pages] == [1, 2]
    assert "Kronan" in pdf.pages[1].text
    assert load_file(files / "guide.md").title == "Visiting Stockholm"
    html = load_file(files / "page.html")
    assert html.title == "Old Town" and "old town of Stockholm" in html.pages[0].text
    assert "alert" not in html.pages[0].text
    docx_file = load_file(files / "harbour.docx")
    assert docx_file.title == "Harbour notes" and "Port | Gothenburg" in docx_file.pages[0].text


def test_ingest_all_formats_with_provenance(store, files):
    collection = store.create("mixed")
    progress = []
    names = ["notes.txt", "guide.md", "page.html", "ships.pdf", "harbour.docx"]
    outcomes = ingest_files(collection, [(files / n, n) for n in names], lambda *a: progress.append(a))
    assert [o.status for o in outcomes] == ["added"] * 5
    assert progress[-1][0] == progress[-1][1] == collection.count()
    files_in = collection.files()
    assert set(files_in) == set(names)
    assert files_in["notes.txt"] >= 2  # ~700 words split into passages of about 100-200 words
    hits = collection.bm25_search("Kronan sank", 3)
    assert hits[0].metadata["source"] == "ships.pdf" and hits[0].metadata["page"] == 2
    for passage in collection.get(collection.bm25().ids):
        assert len(passage.page_content.split()) <= 200


def test_same_file_twice_adds_nothing(store, files):
    collection = store.create("twice")
    first = ingest_files(collection, [(files / "notes.txt", "notes.txt")])
    count = collection.count()
    again = ingest_files(collection, [(files / "notes.txt", "notes.txt")])
    renamed = ingest_files(collection, [(files / "notes.txt", "copy of notes.txt")])
    assert first[0].status == "added"
    assert again[0].status == "unchanged" and renamed[0].status == "unchanged"
    assert collection.count() == count


def test_changed_file_replaces_its_old_version(store, files):
    collection = store.create("versions")
    ingest_files(collection, [(files / "guide.md", "guide.md")])
    (files / "guide.md").write_text("# Visiting Uppsala\n\nSee the cathedral.\n")
    outcome = ingest_files(collection, [(files / "guide.md", "guide.md")])[0]
    assert outcome.status == "replaced"
    texts = [d.page_content for d in collection.get(collection.bm25().ids)]
    assert any("cathedral" in t for t in texts) and not any("ferry" in t for t in texts)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("tool.exe", b"MZ\x90\x00", "unsupported file type"),
        ("empty.txt", b"", "the file is empty"),
        ("blank.md", b"   \n\n  ", "contains no text"),
        ("broken.pdf", b"%PDF-1.4\n this is not really a pdf", "damaged or not a PDF"),
        ("latin1.txt", "café au lait".encode("latin-1"), "not UTF-8 text"),
        ("broken.docx", b"PK\x03\x04 nope", "damaged or not a .docx"),
    ],
)
def test_bad_files_get_a_clear_message_and_change_nothing(store, files, tmp_path, name, content, message):
    collection = store.create("careful")
    ingest_files(collection, [(files / "guide.md", "guide.md")])
    before = collection.count()
    bad = tmp_path / name
    bad.write_bytes(content)
    outcomes = ingest_files(collection, [(bad, name), (files / "notes.txt", "notes.txt")])
    failed = [o for o in outcomes if o.name == name][0]
    assert failed.status == "failed" and message in failed.message and name in failed.message
    assert [o.status for o in outcomes if o.name == "notes.txt"] == ["added"]  # the others still go in
    assert name not in collection.files() and collection.count() > before


def test_upload_names_cannot_escape_the_data_directory(store, files):
    collection = store.create("names")
    outcome = ingest_files(collection, [(files / "guide.md", "../../etc/passwd.md")])[0]
    assert outcome.name == "passwd.md" and set(collection.files()) == {"passwd.md"}


def test_size_limit(store, files):
    collection = store.create("limits")
    outcome = ingest_files(collection, [(files / "notes.txt", "notes.txt")], max_bytes=100)[0]
    assert outcome.status == "failed" and "over the" in outcome.message and collection.count() == 0


def test_scanned_pdf_without_text(tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(10, 10, 50, 50)
    pdf.output(str(tmp_path / "scan.pdf"))
    with pytest.raises(UnreadableFile, match="no extractable text"):
        load_file(tmp_path / "scan.pdf")
