"""Ingestion of real files of every supported type, idempotency, and bad input that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpora.ingest import ingest_files, safe_source_name
from corpora.loaders import UnreadableFile, load_file
from corpora.store import CollectionStore

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


def test_changed_file_replaces_its_old_version_only_when_asked(store, files):
    collection = store.create("versions")
    ingest_files(collection, [(files / "guide.md", "guide.md")])
    (files / "guide.md").write_text("# Visiting Uppsala\n\nSee the cathedral.\n")
    refused = ingest_files(collection, [(files / "guide.md", "guide.md")])[0]
    assert refused.status == "failed" and refused.message.startswith("a different guide.md is already in 'versions'")
    assert collection.files() == {"guide.md": 1}
    outcome = ingest_files(collection, [(files / "guide.md", "guide.md")], replace=True)[0]
    assert outcome.status == "replaced" and outcome.passages == 1
    texts = [d.page_content for d in collection.get(collection.bm25().ids)]
    assert any("cathedral" in t for t in texts) and not any("ferry" in t for t in texts)
    assert collection.files() == {"guide.md": 1}


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


def _two_readmes(tmp_path):
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "README.md").write_text("# Project\n\nThe project answers questions about ships.\n")
    (tmp_path / "docs" / "README.md").write_text(
        "# Docs\n\nThe documentation explains the harbour index.\n\n" + PARAGRAPH * 6)
    return tmp_path / "README.md", tmp_path / "docs" / "README.md"


def test_two_different_files_with_one_name_never_replace_each_other(store, tmp_path):
    top, docs = _two_readmes(tmp_path)
    collection = store.create("notes")
    assert [o.status for o in ingest_files(collection, [(top, "README.md")])] == ["added"]
    refused = ingest_files(collection, [(docs, "README.md")])[0]
    assert refused.status == "failed" and refused.passages == 0
    assert refused.message == (
        "a different README.md is already in 'notes' (1 passages); rename the file, or tick 'Replace files with "
        "the same name' / pass --replace to replace it.")
    assert collection.files() == {"README.md": 1} and collection.bm25_search("harbour index", 3) == []
    # The same content again is simply there already; the other file only goes in when asked.
    assert ingest_files(collection, [(top, "README.md")])[0].status == "unchanged"
    replaced = ingest_files(collection, [(docs, "README.md")], replace=True)[0]
    assert replaced.status == "replaced" and "(1 passages) was removed" in replaced.message
    assert collection.files() == {"README.md": replaced.passages} and replaced.passages >= 2
    assert not any("answers questions" in d.page_content for d in collection.get(collection.bm25().ids))


def test_two_files_of_one_name_in_one_call(store, tmp_path):
    top, docs = _two_readmes(tmp_path)
    collection = store.create("batch")
    outcomes = ingest_files(collection, [(top, "README.md"), (docs, "README.md")], replace=True)
    assert [o.status for o in outcomes] == ["added", "failed"]
    assert "another file of the same name is among the files being added" in outcomes[1].message
    assert collection.files() == {"README.md": 1}


def test_cli_keys_files_by_relative_path_and_replaces_only_when_asked(tmp_path, embeddings, monkeypatch, capsys):
    import pipeline.__main__ as cli
    from pipeline.runtime import Runtime, RuntimeConfig

    top, docs = _two_readmes(tmp_path / "work")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "notes.txt").write_text(PARAGRAPH)
    data = tmp_path / "data"
    monkeypatch.setattr(cli, "_runtime", lambda args: Runtime(
        RuntimeConfig(data_dir=Path(args.data_dir), model="default"), embeddings=embeddings))
    monkeypatch.chdir(tmp_path / "work")
    code = cli.main(["--data-dir", str(data), "ingest", "notes", "README.md", "./docs/README.md",
                     str(outside / "notes.txt")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    store = CollectionStore(data, embeddings)
    files_in = store.open("notes").files()
    assert set(files_in) == {"README.md", "docs/README.md", "notes.txt"}
    assert lines == ["added     README.md: 1 passages",
                     f"added     docs/README.md: {files_in['docs/README.md']} passages",
                     "added     notes.txt: 1 passages"]

    docs.write_text("# Docs\n\nRewritten.\n")
    assert cli.main(["--data-dir", str(data), "ingest", "notes", "docs/README.md"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"failed    docs/README.md: a different docs/README.md is already in 'notes' ({files_in['docs/README.md']} "
        "passages); rename the file, or tick 'Replace files with the same name' / pass --replace to replace it."]
    assert cli.main(["--data-dir", str(data), "ingest", "notes", "docs/README.md", "--replace"]) == 0
    assert capsys.readouterr().out.startswith("replaced  docs/README.md: 1 passages (the other docs/README.md (")
    assert store.open("notes").files() == {"README.md": 1, "docs/README.md": 1, "notes.txt": 1}


def test_each_file_is_reported_as_soon_as_it_is_done(store, files):
    collection = store.create("events")
    events = []
    outcomes = ingest_files(collection, [(files / "notes.txt", "notes.txt"), (files / "bad.exe", "bad.exe"),
                                         (files / "guide.md", "guide.md")],
                            progress=lambda done, total, what: events.append(("progress", what)),
                            on_file=lambda outcome: events.append(("file", outcome.name, outcome.status)))
    finished = [e for e in events if e[0] == "file"]
    assert finished == [("file", o.name, o.status) for o in outcomes]
    assert finished == [("file", "bad.exe", "failed"), ("file", "notes.txt", "added"), ("file", "guide.md", "added")]
    # notes.txt is announced before any of guide.md's passages are embedded.
    assert events.index(("file", "notes.txt", "added")) < events.index(("progress", "guide.md"))


def test_a_partly_stored_file_is_completed_by_the_next_ingest(store, files):
    from corpora.splitting import file_sha256, split_file

    (files / "long.txt").write_text(PARAGRAPH * 40, encoding="utf-8")
    passages = split_file(load_file(files / "long.txt"), source="long.txt",
                          content_sha256=file_sha256((files / "long.txt").read_bytes()))
    assert len(passages) >= 8 and {p.metadata["file_passages"] for p in passages} == {len(passages)}
    collection = store.create("partial")
    collection.add(passages[:3])  # what an ingest that died after its first batch leaves
    (version,) = collection.file_versions("long.txt")
    assert (version.stored, version.expected, version.complete) == (3, len(passages), False)
    outcome = ingest_files(collection, [(files / "long.txt", "long.txt")])[0]
    assert outcome.status == "completed" and outcome.passages == len(passages)
    assert f"its {len(passages) - 3} missing passages were added" in outcome.message
    assert collection.files() == {"long.txt": len(passages)} == {"long.txt": collection.count()}
    assert ingest_files(collection, [(files / "long.txt", "long.txt")])[0].status == "unchanged"


def test_a_failure_while_storing_keeps_nothing_of_the_file(store, files, monkeypatch):
    (files / "long.txt").write_text(PARAGRAPH * 60, encoding="utf-8")
    collection = store.create("rollback")
    ingest_files(collection, [(files / "guide.md", "guide.md")])
    real_add, calls = collection._vectors.add_documents, []

    def add_then_fail(batch, ids):
        calls.append(len(batch))
        if len(calls) == 2:
            raise OSError("disk full")
        return real_add(batch, ids=ids)

    monkeypatch.setattr(collection._vectors, "add_documents", add_then_fail)
    monkeypatch.setattr("corpora.collection._ADD_BATCH", 4)
    outcome = ingest_files(collection, [(files / "long.txt", "long.txt")])[0]
    assert calls == [4, 4] and outcome.status == "failed"
    assert outcome.message == "long.txt: could not be stored (disk full); nothing of it was kept."
    assert collection.files() == {"guide.md": 1} and len(collection.bm25().ids) == 1


@pytest.mark.parametrize("raw, shown", [
    ("invoice\u202etxt.exe", "invoicetxt.exe"),
    ("\u2066photo\u2069\u200e\u200f\u061c.md", "photo.md"),
    ("line\nbreak\x1b[31m\x00.txt", "linebreak[31m.txt"),
    ("a\u2028b.txt", "ab.txt"),
    ("../../etc/passwd.md", "passwd.md"),
    ("..", "unnamed"),
    ("\u202e", "unnamed"),
])
def test_names_lose_direction_overrides_and_control_characters(raw, shown):
    assert safe_source_name(raw) == shown


def test_folder_parts_are_kept_only_when_asked():
    assert safe_source_name("../docs/./README.md", keep_folders=True) == "docs/README.md"
    assert safe_source_name("docs\\sub\u202e/README.md", keep_folders=True) == "docs/sub/README.md"
    assert safe_source_name("docs/README.md") == "README.md"


def test_an_ingested_name_with_an_override_is_stored_safely(store, files):
    collection = store.create("bidi")
    outcome = ingest_files(collection, [(files / "guide.md", "report\u202edm.exe\u202c.md")])[0]
    assert outcome.name == "reportdm.exe.md" and set(collection.files()) == {"reportdm.exe.md"}


def test_the_collections_tab_names_every_status():
    import ast
    import inspect

    import corpora.ingest
    from ui.collections_tab import _STATUS

    def status(call: ast.Call) -> str:
        node = call.args[1] if len(call.args) > 1 else next(k.value for k in call.keywords if k.arg == "status")
        return node.value

    # The statuses ingest produces: the status of every FileOutcome its code builds.
    produced = {status(node) for node in ast.walk(ast.parse(inspect.getsource(corpora.ingest)))
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "FileOutcome"}
    assert set(_STATUS) == produced


@pytest.mark.parametrize("name, sentence", [
    ("chinese.txt", "北京是中华人民共和国的首都，也是全国的政治、文化中心。"),
    ("japanese.txt", "東京は日本の首都であり、世界最大の都市圏の一つです。"),
])
def test_text_without_spaces_between_words_is_cut_into_passages_of_the_usual_size(files, name, sentence):
    from corpora.splitting import PASSAGE_WORDS, file_sha256, passage_length, split_file

    (files / name).write_text("\n".join(sentence * 40 for _ in range(40)), encoding="utf-8")  # 40 long lines
    passages = split_file(load_file(files / name), source=name,
                          content_sha256=file_sha256((files / name).read_bytes()))
    assert len(passages) > 100
    assert max(passage_length(p.page_content) for p in passages) <= PASSAGE_WORDS
    assert max(len(p.page_content) for p in passages) <= 2 * PASSAGE_WORDS
    # cut at sentence ends: every passage but the last ends a sentence, and none is lost
    assert all(p.page_content.endswith("。") for p in passages[:-1])
    assert "".join(p.page_content for p in passages).count(sentence) >= 40 * 40


def test_a_long_run_of_characters_without_spaces_is_cut_too(files):
    from corpora.splitting import file_sha256, split_file

    (files / "blob.txt").write_text("QUJD" * 50_000, encoding="utf-8")
    passages = split_file(load_file(files / "blob.txt"), source="blob.txt",
                          content_sha256=file_sha256((files / "blob.txt").read_bytes()))
    assert len(passages) > 100 and max(len(p.page_content) for p in passages) <= 1_500


@pytest.mark.parametrize("name, text", [
    ("blob.txt", "QUJD" * 50_000),  # no spaces at all
    ("hex.txt", "a1b2c3d4 " * 22_300),  # short words of 8 characters: 1,439 characters a passage before the bound
    ("words.txt", "abcdefghijklmno " * 12_500),
    ("urls.txt", " ".join(f"https://example.com/{i}/item?q={i * 7}" for i in range(6_000))),
])
def test_no_passage_is_longer_than_the_character_bound(files, name, text):
    from corpora.splitting import MAX_PASSAGE_CHARS, file_sha256, split_file

    assert len(text) >= 200_000
    (files / name).write_text(text, encoding="utf-8")
    passages = split_file(load_file(files / name), source=name,
                          content_sha256=file_sha256((files / name).read_bytes()))
    assert max(len(p.page_content) for p in passages) <= MAX_PASSAGE_CHARS == 1280
    # nothing lost: every character but the spaces is in a passage (overlap may repeat some)
    assert sum(len(p.page_content.replace(" ", "")) for p in passages) >= len(text.replace(" ", ""))


@pytest.mark.parametrize("name, sentence", [
    ("chinese.txt", "北京是中华人民共和国的首都，也是全国的政治、文化中心。"),
    ("japanese.txt", "東京は日本の首都であり、世界最大の都市圏の一つです。"),
    ("english.txt", PARAGRAPH),
])
def test_passages_fit_the_embedders_window_in_model_tokens(files, name, sentence):
    """all-MiniLM-L6-v2 reads 256 tokens of a passage (its max_seq_length); what is beyond is not embedded."""
    from tokenizers import Tokenizer

    from corpora.splitting import file_sha256, split_file
    from models.embeddings import bundled_embedder_path

    tokenizer = Tokenizer.from_file(str(bundled_embedder_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    (files / name).write_text(" ".join(sentence for _ in range(400)), encoding="utf-8")
    passages = split_file(load_file(files / name), source=name,
                          content_sha256=file_sha256((files / name).read_bytes()))
    tokens = [len(tokenizer.encode(p.page_content).ids) for p in passages]
    assert len(passages) > 10 and max(tokens) <= 256, max(tokens)


MEGABYTE = 1_000_000


def _megabyte(unit):
    return (unit * (MEGABYTE // len(unit) + 1))[:MEGABYTE]


def _regex_cases():
    from corpora.loaders import _first_heading
    from corpora.tables import _PATH_OPERATOR, markdown_tables

    return {
        # The heading's regular expression took 88 s on "# a" and 5,000 spaces (about 8 times as long for each
        # doubling); the table delimiter's was quadratic in a line of spaces.
        "heading, spaces then a letter": (_first_heading, "# a" + " " * MEGABYTE + "x"),
        "heading, tabs and spaces": (_first_heading, "# a" + _megabyte(" \t") + "x"),
        "heading, hashes and spaces": (_first_heading, "# a" + _megabyte(" #") + "x"),
        "heading, empty headings": (_first_heading, _megabyte("#  \n")),
        "table delimiter, spaces": (markdown_tables, "a|b\n" + " " * MEGABYTE + "x"),
        "table delimiter, spaces and pipes": (markdown_tables, "a|b\n" + _megabyte(" | ") + "x"),
        "table delimiter, cells": (markdown_tables, "a|b\n" + _megabyte("| --- ") + "x"),
        "table delimiter, dashes": (markdown_tables, "a|b\n|" + "-" * MEGABYTE + "x"),
        "table cells, escaped pipes": (markdown_tables, "a|b\n|---|---|\n" + _megabyte("\\|")),
        "PDF path operators, spaces": (_PATH_OPERATOR.search, b"1" + b" " * MEGABYTE + b"x"),
        "PDF path operators, numbers": (_PATH_OPERATOR.search, _megabyte("1 ").encode() + b"x"),
    }


@pytest.mark.parametrize("case", list(_regex_cases()))
def test_each_regex_over_document_text_takes_a_megabyte_within_a_second(case):
    import time

    function, text = _regex_cases()[case]
    start = time.perf_counter()
    function(text)
    assert time.perf_counter() - start < 1.0


def test_a_megabyte_title_is_cut_before_it_reaches_the_graphs_title_regex(tmp_path):
    """graph_build's trailing-qualifier regular expression is quadratic in a title of "(" (0.4 s for 40,000):
    titles are cut to MAX_TITLE_CHARS when a file is loaded."""
    import time

    from corpora.graph_build import title_tokens
    from corpora.loaders import MAX_TITLE_CHARS

    (tmp_path / "title.html").write_text(f"<html><head><title>{'(' * MEGABYTE}a</title></head><body><p>Body "
                                         "text.</p></body></html>", encoding="utf-8")
    (tmp_path / "title.md").write_text("# " + "(" * MEGABYTE + "a\n\nBody text.\n", encoding="utf-8")
    for name in ("title.html", "title.md"):
        title = load_file(tmp_path / name).title
        assert len(title) == MAX_TITLE_CHARS and title.endswith("(…")
        start = time.perf_counter()
        title_tokens(title)
        assert time.perf_counter() - start < 0.1


@pytest.mark.parametrize("unit", ["。", "a", " ", ". ", "\n", "QUJD", "a1b2c3d4 ", "北京，"])
def test_splitting_takes_time_linear_in_the_texts_length(unit):
    import time

    from corpora.loaders import LoadedFile, Page
    from corpora.splitting import split_file

    def seconds(size):
        """The best of three timings: a pause of the whole process (a garbage collection over everything the
        suite holds by then, another process) once made one run of a linear splitting 10 times slower."""
        text = (unit * (size // len(unit) + 1))[:size]
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            split_file(LoadedFile("t", [Page(text)]), source="t.txt", content_sha256="ab" * 32)
            best = min(best, time.perf_counter() - start)
        return best

    small = seconds(20_000)
    # Linear work takes about 10 times as long for 10 times the text; quadratic about 100 times.
    assert seconds(200_000) < 30 * max(small, 0.005), unit
