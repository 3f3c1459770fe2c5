"""Faults around ingestion and the data directory: a process killed mid-ingest, a second process on the same
data directory, and directories that cannot be used. Child processes run small scripts with this interpreter."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from corpora.ingest import ingest_files
from corpora.loaders import load_file
from corpora.splitting import file_sha256, split_file
from corpora.store import CollectionError, CollectionStore
from tests.conftest import REPO

pytestmark = pytest.mark.faults

_FIX = "Fix: stop that process, use another --data-dir, or share collections between processes through a " \
       "Chroma server with --chroma-url."


def _child(script: str, *args: str, **popen) -> subprocess.Popen:
    """Start ``python -c script args...`` (``popen``: more arguments for ``subprocess.Popen``); its output lines
    arrive in ``process.lines`` (a queue; None at the end), read by a thread so that the test never blocks on a
    pipe."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                               **{"cwd": REPO, **popen}, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    process.lines = queue.Queue()

    def pump() -> None:
        for line in process.stdout:
            process.lines.put(line.strip())
        process.lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return process


def _read_line(process: subprocess.Popen, seconds: float = 180) -> str:
    """The child's next line of output (it flushes each); fails with its stderr if it ends first."""
    try:
        line = process.lines.get(timeout=seconds)
    except queue.Empty:
        pytest.fail("the child printed nothing in time")
    if line is None:
        process.wait(timeout=30)
        pytest.fail(f"the child exited with {process.returncode}: {process.stderr.read()[-3000:]}")
    return line


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    process.stderr.close()


def _big_file(path: Path) -> Path:
    sentences = [f"Record {i}: the harbour of town number {i} handled {i * 7} ships in the year {1500 + i}. "
                 for i in range(1250)]
    path.write_text("".join(sentences), encoding="utf-8")
    return path


_INGEST_THEN_STALL = """
    import sys, time
    from pathlib import Path
    from corpora.ingest import ingest_files
    from corpora.store import CollectionStore
    from models.embeddings import SentenceEmbeddings

    data, small, big = sys.argv[1:4]
    collection = CollectionStore(Path(data), SentenceEmbeddings()).create("harbours")
    print("small", ingest_files(collection, [(Path(small), "small.txt")])[0].status, flush=True)

    def stall(done, total, what):
        print("stored", done, total, flush=True)
        time.sleep(600)  # the parent kills us here, with some but not all batches stored

    ingest_files(collection, [(Path(big), "big.txt")], stall)
    print("finished", flush=True)
"""


def test_a_process_killed_mid_ingest_leaves_the_file_absent_and_the_next_ingest_completes(tmp_path, embeddings):
    data = tmp_path / "data"
    small = tmp_path / "small.txt"
    small.write_text("The lighthouse of Alexandria was one of the seven wonders.", encoding="utf-8")
    big = _big_file(tmp_path / "big.txt")
    expected = len(split_file(load_file(big), source="big.txt", content_sha256=file_sha256(big.read_bytes())))
    assert expected > 2 * 64  # three batches or more

    child = _child(_INGEST_THEN_STALL, data, small, big)
    try:
        assert _read_line(child) == "small added"
        assert _read_line(child) == f"stored 64 {expected}"
    finally:
        _kill(child)
    assert child.returncode == -signal.SIGKILL

    store = CollectionStore(data, embeddings)  # the dead child's lock went with it
    raw = store.client.get_collection("harbours")
    assert raw.count() == 1 + 64  # the crash really left half a file behind...
    collection = store.open("harbours")
    assert collection.files() == {"small.txt": 1} and collection.count() == 1  # ...and opening removed it
    assert len(collection.bm25().ids) == 1 and collection.bm25_search("harbour ships Record", 5) == []
    assert [d.metadata["source"] for d in collection.dense_search("harbour ships", 5)] == ["small.txt"]

    outcome = ingest_files(collection, [(big, "big.txt")])[0]
    assert (outcome.status, outcome.passages) == ("added", expected)
    assert collection.files() == {"small.txt": 1, "big.txt": expected} and collection.count() == 1 + expected
    (version,) = collection.file_versions("big.txt")
    assert version.complete and version.stored == expected
    assert ingest_files(collection, [(big, "big.txt")])[0].status == "unchanged"


_CLI = """
    import sys
    from pipeline.__main__ import main

    sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_during_a_cli_ingest_ends_with_one_line_and_keeps_the_files_stored_before(tmp_path, embeddings):
    """Ctrl-C reaches the terminal's whole process group: the CLI, the forkserver and any reading child. The file
    being stored is removed again, the ones stored before stay, and one line says so; no traceback."""
    data = tmp_path / "data"
    (tmp_path / "small.txt").write_text("The lighthouse of Alexandria was one of the seven wonders.", encoding="utf-8")
    _big_file(tmp_path / "big.txt")
    (tmp_path / "later.txt").write_text("Gothenburg is the largest port in the Nordic countries.", encoding="utf-8")
    cli = _child(_CLI, "--data-dir", data, "ingest", "harbours", "small.txt", "big.txt", "later.txt",
                 cwd=tmp_path, start_new_session=True)
    try:
        assert _read_line(cli) == "added     small.txt: 1 passages"
        os.killpg(cli.pid, signal.SIGINT)  # while big.txt is embedded: 3 batches or more
        assert _read_line(cli) == "stopped: 1 of 3 files are in 'harbours'; 2 not added (big.txt, later.txt)."
        assert cli.wait(timeout=60) == 130
        errors = cli.stderr.read()
    finally:
        _kill(cli)
    assert "Stopping: the file being read or stored is dropped whole" in errors
    assert "Traceback" not in errors and "KeyboardInterrupt" not in errors
    collection = CollectionStore(data, embeddings).open("harbours")
    assert collection.files() == {"small.txt": 1} and collection.count() == 1
    assert collection.file_versions("big.txt") == []


_HOLD = """
    import sys, time
    from pathlib import Path
    from corpora.store import CollectionStore

    class Embedder:
        name, dimension = "stand-in", 3

    store = CollectionStore(Path(sys.argv[1]), Embedder())
    print("holding", flush=True)
    time.sleep(600)
"""


def test_a_second_process_on_a_data_directory_is_refused_in_one_line(tmp_path, embeddings):
    data = tmp_path / "data"
    holder = _child(_HOLD, data)
    try:
        assert _read_line(holder) == "holding"
        with pytest.raises(CollectionError) as refused:
            CollectionStore(data, embeddings)
        message = str(refused.value)
        assert message == f"The data directory {data.resolve()} is in use by another process (pid {holder.pid}). {_FIX}"
        assert "\n" not in message

        cli = subprocess.run([sys.executable, "-m", "pipeline", "--data-dir", str(data), "collections"], cwd=REPO,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=300)
        assert cli.returncode == 2 and cli.stdout == ""
        assert f"error: {message}" in cli.stderr.splitlines()
    finally:
        _kill(holder)
    # Killed, the holder's lock is gone with it (its pid is still in the lock file).
    assert (data / ".rqa.lock").read_text().strip() == str(holder.pid)
    assert CollectionStore(data, embeddings).names() == []
    assert (data / ".rqa.lock").read_text().strip() == str(os.getpid())


def _assert_unusable(data: Path, embeddings) -> str:
    with pytest.raises(CollectionError) as failed:
        CollectionStore(data, embeddings)
    message = str(failed.value)
    assert message.startswith(f"Cannot use the data directory {data} (")
    assert message.endswith("Fix: make it writable, or choose another with --data-dir or $RQA_DATA_DIR.")
    assert "\n" not in message
    return message


_TRY_READ_ONLY = """
    import os, sys
    from pathlib import Path
    from corpora.store import CollectionError, CollectionStore

    class Embedder:
        name, dimension = "stand-in", 3

    if os.access(sys.argv[1], os.W_OK):
        print("writable")
    for folder in sys.argv[1:]:
        try:
            CollectionStore(Path(folder), Embedder())
            print("opened")
        except CollectionError as exc:
            print(exc)
"""


def test_a_read_only_data_directory_gives_one_line(tmp_path):
    """Run in a child: as root, without the capability to override file permissions (when ``setpriv`` can
    drop it), so that a read-only directory is read-only."""
    data = tmp_path / "readonly"
    data.mkdir()
    data.chmod(0o500)
    prefix = []
    if os.geteuid() == 0 and shutil.which("setpriv"):
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        done = subprocess.run([*prefix, sys.executable, "-c", textwrap.dedent(_TRY_READ_ONLY), str(data),
                               str(data / "inner")], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    finally:
        data.chmod(0o700)
    lines = done.stdout.splitlines()
    if lines[:1] == ["writable"]:
        pytest.skip("this user can write to a read-only directory")
    assert done.returncode == 0, done.stderr
    fix = "Fix: make it writable, or choose another with --data-dir or $RQA_DATA_DIR."
    assert lines == [
        f"Cannot use the data directory {data} ([Errno 13] Permission denied: '{data / '.rqa.lock'}'). {fix}",
        f"Cannot use the data directory {data / 'inner'} ([Errno 13] Permission denied: '{data / 'inner'}'). {fix}",
    ]


def test_a_data_directory_that_is_a_file_gives_one_line(tmp_path, embeddings):
    (tmp_path / "plain").write_text("not a folder")
    assert "File exists" in _assert_unusable(tmp_path / "plain", embeddings)
    assert "Not a directory" in _assert_unusable(tmp_path / "plain" / "data", embeddings)


def test_a_damaged_chroma_database_gives_one_line(tmp_path, embeddings):
    data = tmp_path / "data"
    (data / "chroma").mkdir(parents=True)
    (data / "chroma" / "chroma.sqlite3").write_bytes(b"this is not a database\n" * 100)
    _assert_unusable(data, embeddings)
