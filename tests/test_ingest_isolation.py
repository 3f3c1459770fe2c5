"""Files that would break ingest, each read in a real child process (corpora/isolated.py): a compressed bomb,
a parser that eats memory, hangs, crashes or raises, malformed PDF and Word files. Each fails alone with one
line, the rest of the batch goes in; and an ingest can be stopped while a file is read or stored."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest

from corpora.ingest import ingest_files
from corpora.isolated import ParseLimits
from tests.conftest import REPO

MISBEHAVING = "tests.ingest_helpers:misbehaving"
TEXT = "The Vasa was a Swedish warship built between 1626 and 1628. She sank on her maiden voyage in 1628. "
WORD = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _good(folder: Path, name: str = "good.txt") -> Path:
    (folder / name).write_text(TEXT * 3, encoding="utf-8")
    return folder / name


def _docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_paragraph("Gothenburg is the largest port in the Nordic countries.")
    document.save(str(path))
    return path


def _with_document_xml(source: Path, target: Path, write) -> Path:
    """A copy of the .docx ``source`` whose word/document.xml is what ``write(file)`` writes."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as new:
        for info in old.infolist():
            if info.filename == "word/document.xml":
                with new.open(info.filename, "w", force_zip64=True) as part:
                    write(part)
            else:
                new.writestr(info, old.read(info.filename))
    return target


def _gone(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _only(outcomes, name):
    (outcome,) = [o for o in outcomes if o.name == name]
    return outcome


def _assert_failed_alone(collection, outcomes, name: str, *phrases: str) -> str:
    """``name`` failed with a one-line message holding ``phrases``; good.txt went in; nothing else is stored."""
    failed = _only(outcomes, name)
    assert failed.status == "failed", failed
    assert "\n" not in failed.message and failed.message.startswith(f"{name}: ")
    for phrase in phrases:
        assert phrase in failed.message, failed.message
    assert _only(outcomes, "good.txt").status == "added"
    assert set(collection.files()) == {"good.txt"}
    return failed.message


def test_a_docx_zip_bomb_fails_alone_before_it_is_parsed(store, tmp_path):
    zeros = bytes(1 << 20)
    bomb = _with_document_xml(_docx(tmp_path / "base.docx"), tmp_path / "bomb.docx",
                              lambda part: [part.write(zeros) for _ in range(300)])  # 300 MB of zeros
    assert bomb.stat().st_size < 2_000_000
    collection = store.create("bombs")
    outcomes = ingest_files(collection, [(bomb, "bomb.docx"), (_good(tmp_path), "good.txt")])
    message = _assert_failed_alone(collection, outcomes, "bomb.docx", "unpacks to 315 MB", "(a compressed bomb?)")
    assert message.endswith("over the 250 MB this app reads from one Word file (a compressed bomb?); nothing of it "
                            "was stored.")


def test_a_docx_that_needs_more_memory_than_allowed_fails_alone(store, tmp_path):
    """Well-formed XML under the unpacked-size check, whose tree needs several times its 60 MB: lxml runs out of
    the child's address space."""
    paragraph = b"<w:p><w:r><w:t>a</w:t></w:r></w:p>" * 10_000

    def write(part):
        part.write(f"<w:document {WORD}><w:body>".encode())
        for _ in range(170):
            part.write(paragraph)
        part.write(b"</w:body></w:document>")

    heavy = _with_document_xml(_docx(tmp_path / "base.docx"), tmp_path / "heavy.docx", write)
    collection = store.create("heavy")
    outcomes = ingest_files(collection, [(heavy, "heavy.docx"), (_good(tmp_path), "good.txt")],
                            limits=ParseLimits(memory_mb=384))
    message = _assert_failed_alone(collection, outcomes, "heavy.docx")
    assert message == "heavy.docx: needed more than 384 MB of memory to read (a compressed bomb?); nothing of it " \
                      "was stored."


def test_a_parser_that_allocates_past_the_limit_fails_alone_with_the_memory_message(store, tmp_path):
    hog = _good(tmp_path, "hog.txt")
    collection = store.create("hogs")
    outcomes = ingest_files(collection, [(hog, "hog.txt"), (_good(tmp_path), "good.txt")],
                            limits=ParseLimits(memory_mb=384, reader=MISBEHAVING))
    assert _assert_failed_alone(collection, outcomes, "hog.txt") == (
        "hog.txt: needed more than 384 MB of memory to read (a compressed bomb?); nothing of it was stored.")
    assert _gone(Path(f"{hog}.pid"))


def test_a_hanging_parser_is_killed_at_the_time_limit_and_fails_alone(store, tmp_path):
    hang = _good(tmp_path, "hang.txt")
    collection = store.create("hangs")
    start = time.monotonic()
    outcomes = ingest_files(collection, [(hang, "hang.txt"), (_good(tmp_path), "good.txt")],
                            limits=ParseLimits(seconds=1, reader=MISBEHAVING))
    assert time.monotonic() - start < 15  # one second for hang.txt, the rest for good.txt's embedding
    assert _assert_failed_alone(collection, outcomes, "hang.txt") == (
        "hang.txt: could not be read within 1 s; nothing of it was stored.")
    assert _gone(Path(f"{hang}.pid"))


@pytest.mark.parametrize("name, message", [
    ("crash.txt", "crash.txt: the text parser crashed (SIGSEGV); nothing of it was stored."),
    ("buggy.pdf", "buggy.pdf: the PDF parser failed (RuntimeError: a bug in the parser and a second line); "
                  "nothing of it was stored."),
])
def test_a_parser_that_crashes_or_raises_fails_alone(store, tmp_path, name, message):
    bad = _good(tmp_path, name)
    collection = store.create("crashes")
    outcomes = ingest_files(collection, [(bad, name), (_good(tmp_path), "good.txt")],
                            limits=ParseLimits(reader=MISBEHAVING))
    assert _assert_failed_alone(collection, outcomes, name) == message


def _pdf(path: Path) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, "The Vasa sank in 1628.")
    pdf.output(str(path))
    return path


def test_malformed_pdf_and_word_files_fail_alone_with_one_line_reasons(store, tmp_path):
    """pypdf's LimitReachedError, lxml's XMLSyntaxError and zlib's error used to escape the loaders and drop the
    whole batch with a raw exception."""
    rng = random.Random(7)
    good_pdf = _pdf(tmp_path / "ok.pdf").read_bytes()
    xref = good_pdf.index(b"xref\n0 ")
    start, end = xref + len(b"xref\n0 "), good_pdf.index(b"\n", xref + len(b"xref\n0 "))
    (tmp_path / "limit.pdf").write_bytes(good_pdf[:start] + b"99999999" + good_pdf[end:])  # a huge xref table
    (tmp_path / "noise.pdf").write_bytes(b"%PDF-1.7\n" + rng.randbytes(20_000))
    base = _docx(tmp_path / "base.docx")
    _with_document_xml(base, tmp_path / "badxml.docx", lambda part: part.write(b"<w:document><unclosed"))
    (tmp_path / "truncated.docx").write_bytes(base.read_bytes()[: base.stat().st_size // 2])
    (tmp_path / "noise.docx").write_bytes(b"PK\x03\x04" + rng.randbytes(20_000))
    raw = bytearray(base.read_bytes())  # flip bits inside document.xml's deflated data
    with zipfile.ZipFile(base) as archive:
        info = archive.getinfo("word/document.xml")
    data = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(data + 4, data + 60):
        raw[i] ^= 0x55
    (tmp_path / "inflate.docx").write_bytes(bytes(raw))

    expected = {
        "limit.pdf": "the PDF is damaged or not a PDF (Declared size 99999999 exceeds allowed limit",
        "noise.pdf": "the PDF is damaged or not a PDF (",
        "badxml.docx": "the Word file is damaged or not a .docx file (",
        "truncated.docx": "the Word file is damaged or not a .docx file (",
        "noise.docx": "the Word file is damaged or not a .docx file (",
        "inflate.docx": "the Word file is damaged or not a .docx file (",
    }
    collection = store.create("malformed")
    outcomes = ingest_files(collection, [(tmp_path / n, n) for n in expected] + [(_good(tmp_path), "good.txt")])
    for name, phrase in expected.items():
        _assert_failed_alone(collection, outcomes, name, phrase)
    assert len(outcomes) == len(expected) + 1


def test_stopping_between_files_keeps_the_files_before_and_stops_the_rest(store, tmp_path):
    files = [(_good(tmp_path, f"{n}.txt"), f"{n}.txt") for n in ("one", "two", "three")]
    (tmp_path / "two.txt").write_text("Another text about the harbour of Gothenburg.", encoding="utf-8")
    (tmp_path / "three.txt").write_text("A third text about the lighthouse of Alexandria.", encoding="utf-8")
    cancel = threading.Event()
    collection = store.create("stopped")
    outcomes = ingest_files(collection, files, cancel=cancel, on_file=lambda outcome: cancel.set())
    assert [(o.name, o.status) for o in outcomes] == [("one.txt", "added"), ("two.txt", "cancelled"),
                                                      ("three.txt", "cancelled")]
    assert outcomes[1].message == "two.txt: not added: the ingest was stopped."
    assert collection.files() == {"one.txt": 1}


def test_stopping_while_a_file_is_read_kills_its_child_and_stores_nothing(store, tmp_path):
    hang = _good(tmp_path, "hang.txt")
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    collection = store.create("stopped-reading")
    start = time.monotonic()
    outcomes = ingest_files(collection, [(_good(tmp_path), "good.txt"), (hang, "hang.txt"),
                                         (_good(tmp_path, "later.txt"), "later.txt")],
                            limits=ParseLimits(reader=MISBEHAVING), cancel=cancel)
    assert time.monotonic() - start < 3
    assert [(o.name, o.status) for o in outcomes] == [("good.txt", "cancelled"), ("hang.txt", "cancelled"),
                                                      ("later.txt", "cancelled")]
    assert _gone(Path(f"{hang}.pid")) and collection.count() == 0


def test_stopping_while_a_file_is_stored_removes_it_whole(store, tmp_path, monkeypatch):
    monkeypatch.setattr("corpora.collection._ADD_BATCH", 4)
    (tmp_path / "long.txt").write_text(TEXT * 150, encoding="utf-8")
    cancel = threading.Event()

    def progress(done, total, what):
        if what == "long.txt":
            cancel.set()  # after long.txt's first batch

    collection = store.create("stopped-storing")
    real_add, batches = collection._vectors.add_documents, []

    def add(batch, ids):
        batches.append(len(batch))
        return real_add(batch, ids=ids)

    monkeypatch.setattr(collection._vectors, "add_documents", add)
    outcomes = ingest_files(collection, [(_good(tmp_path), "good.txt"), (tmp_path / "long.txt", "long.txt"),
                                         (_good(tmp_path, "later.txt"), "later.txt")], progress, cancel=cancel)
    assert [(o.name, o.status) for o in outcomes] == [("good.txt", "added"), ("long.txt", "cancelled"),
                                                      ("later.txt", "cancelled")]
    assert outcomes[1].message == "long.txt: not added: the ingest was stopped while it was stored; nothing of it " \
                                  "was kept."
    assert batches == [1, 4]  # good.txt, then one batch of long.txt's 22 passages: stopped there
    assert collection.files() == {"good.txt": 1} and len(collection.bm25().ids) == 1
    assert collection.file_versions("long.txt") == []


_MAIN_SCRIPT = """
    import statistics, sys, time
    from pathlib import Path

    with open(sys.argv[1], "a") as marks:  # once per process that runs this script
        marks.write("ran\\n")

    if __name__ == "__main__":
        sys.path.insert(0, sys.argv[3])  # the project, found neither through the working directory nor PYTHONPATH
        from corpora.isolated import read_isolated

        seconds = []
        for _ in range(6):
            start = time.perf_counter()
            assert len(read_isolated(Path(sys.argv[2]), "good.txt", "ab" * 32)) == 1
            seconds.append(time.perf_counter() - start)
        print(statistics.median(seconds[1:]), flush=True)  # the first one starts the forkserver
"""


def test_the_child_does_not_run_the_parents_main_script_again_and_starts_with_the_readers_loaded(tmp_path):
    """Plain multiprocessing would run ``app.py`` again in every child (2 s and its imports per file); and on
    Python 3.11 a forkserver that cannot import the project (started outside it, without PYTHONPATH) leaves
    every child to import the readers itself (about 0.2 s a file, against under 10 ms)."""
    script = tmp_path / "main_script.py"
    script.write_text(textwrap.dedent(_MAIN_SCRIPT))
    marks = tmp_path / "marks"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(script), str(marks), str(_good(tmp_path)), str(REPO)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert marks.read_text() == "ran\n"
    assert float(done.stdout) < 0.08


def test_the_collections_tab_stops_an_ingest_with_its_sessions_switch_and_reports_it(tmp_path, embeddings,
                                                                                      monkeypatch):
    """What a Stop button next to *Add files* does: ``IngestStops.stop`` of the session's key sets the switch
    ``add_files`` was given; another session's Stop, or one with no ingest running, changes nothing. The
    server's ``parse_seconds`` reaches the child."""
    from pipeline.accounts import Person
    from pipeline.runtime import Runtime, RuntimeConfig
    from ui import collections_tab as coll

    runtime = Runtime(RuntimeConfig(data_dir=tmp_path / "data", model="default", parse_seconds=0.5),
                      embeddings=embeddings)
    owner = Person("local", admin=True)
    coll.create_collection(runtime, owner, "notes")
    files = [str(_good(tmp_path, f"{n}.txt")) for n in ("one", "two")]
    (tmp_path / "two.txt").write_text("Another text about the harbour of Gothenburg.", encoding="utf-8")
    stops = coll.IngestStops()
    assert coll.stop_ingest(stops, "tab-1") == "No ingest of yours is running here."
    seen = []

    def spy(*args, limits, **kwargs):
        seen.append(limits)
        return ingest_files(*args, limits=limits, **kwargs)

    monkeypatch.setattr(coll, "ingest_files", spy)

    def stop_after_first(done, total, what):
        assert coll.stop_ingest(stops, "tab-2") == "No ingest of yours is running here."  # another tab's Stop
        assert coll.stop_ingest(stops, "tab-1").startswith("Stopping the ingest")

    with stops.running("tab-1") as cancel:
        report = coll.add_files(runtime, owner, "notes", files, stop_after_first, cancel=cancel)
    assert "1 of 2 files are in 'notes'. The ingest was stopped: 1 not added." in report
    assert '<li class="outcome outcome-cancelled"><b>two.txt</b>: stopped — not added: the ingest was stopped.</li>' \
        in report  # the file named once
    assert '<li class="outcome outcome-added"><b>one.txt</b>: added — 1 passage</li>' in report
    assert runtime.store.open("notes").files() == {"one.txt": 1}
    assert coll.stop_ingest(stops, "tab-1") == "No ingest of yours is running here."  # over: nothing left to stop
    assert seen == [ParseLimits(memory_mb=2048, seconds=0.5)]


def test_the_app_passes_its_parse_limits_to_the_server_settings(tmp_path):
    """``app.py --parse-memory-mb/--parse-seconds`` reach the settings every upload is read with; without them
    the defaults hold, as for ``pipeline ingest``."""
    import app
    from corpora.isolated import DEFAULT_MEMORY_MB, DEFAULT_SECONDS

    chosen = app.config_for(app.parse_args(["--data-dir", str(tmp_path), "--parse-memory-mb", "512",
                                            "--parse-seconds", "7.5"]))
    assert (chosen.parse_memory_mb, chosen.parse_seconds) == (512, 7.5)
    default = app.config_for(app.parse_args(["--data-dir", str(tmp_path)]))
    assert (default.parse_memory_mb, default.parse_seconds) == (DEFAULT_MEMORY_MB, DEFAULT_SECONDS)
