"""Reading one user file into passages in a child process, with a memory and a time limit, so that no file can
take the app down: a compressed bomb, a malformed file or a parser bug ends that child, and the file fails with
a one-line reason (``UnreadableFile``) while the rest of the batch goes in.

What the child does is what ``read_passages`` does in-process: load the file (``corpora.loaders.load_file``) and
split it (``corpora.splitting.split_file``). The child:

- is forked from a *forkserver* (``multiprocessing``), a single-threaded process started once, which has
  imported the readers (pypdf, python-docx, lxml, BeautifulSoup, pdfplumber, the splitter) and loaded the
  embedder's tokenizer the splitter counts passage tokens with (``corpora.tokenizer_preload``) in advance: a file
  costs a fork, not an interpreter start, and never a fork of the app itself (threads, a loaded model): about
  9 ms more than reading it in-process (median of 20 small .txt files, 2-core EPYC; the forkserver's own start,
  once, 0.4 s);
- is sent no main module: plain ``multiprocessing`` would re-run the parent's main script (``app.py``:
  chromadb, the model code: about 2 s and 600 MB of address space) in every child (``_Popen``);
- limits its address space (``RLIMIT_AS``, ``ParseLimits.memory_bytes``) and writes no core file; the parent
  kills it after ``ParseLimits.seconds``, or at once when the ingest is stopped (``cancel``);
- ignores Ctrl-C (which reaches the whole process group): the parent decides, and kills it.

The child is not a sandbox: it runs as the same user, with the same files. It bounds what a file can cost, and
keeps a crash in a parser (C code included) out of the app.

Linux (``RLIMIT_AS`` is not enforced on macOS: there only the time limit holds).
"""

from __future__ import annotations

import importlib
import io
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from langchain_core.documents import Document

from corpora.loaders import LoadedFile, UnreadableFile, load_file
from corpora.splitting import split_file

DEFAULT_MEMORY_MB = 2048
DEFAULT_SECONDS = 120.0
READER = "corpora.loaders:load_file"

# Imported once by the forkserver, so that each child starts with them (loaders import their libraries lazily),
# and with the embedder's tokenizer the splitter counts passage tokens with (corpora.tokenizer_preload loads it).
_PRELOAD = ["corpora.isolated", "corpora.loaders", "corpora.splitting", "corpora.tables", "pypdf", "pypdf.errors",
            "docx", "docx.opc.exceptions", "lxml.etree", "bs4", "pdfplumber", "corpora.tokenizer_preload"]
_POLL = 0.05  # seconds between looks at the Stop switch while a child reads
_EXIT_MEMORY = 75  # the child's exit code when it ran out of memory and could not even say so
_KINDS = {".pdf": "PDF", ".docx": "Word", ".html": "HTML", ".htm": "HTML", ".md": "Markdown",
          ".markdown": "Markdown", ".txt": "text"}


@dataclass(frozen=True)
class ParseLimits:
    """What reading one file may cost: ``memory_mb`` of address space in its child process and ``seconds`` of
    wall-clock time (0: no limit). ``reader`` names the function that loads a file, as ``module:function``
    taking ``(path, display_name)`` and returning a ``LoadedFile``; tests name misbehaving ones."""

    memory_mb: int = DEFAULT_MEMORY_MB
    seconds: float = DEFAULT_SECONDS
    reader: str = READER

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * 1024 * 1024


def add_limit_arguments(parser) -> None:
    """The command-line options for ``ParseLimits`` (``--parse-memory-mb``, ``--parse-seconds``), as the app
    and ``pipeline ingest`` both take them."""
    parser.add_argument("--parse-memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                        help="memory (address space) that reading one file may take; over it the file fails alone "
                             "(default: %(default)s; 0: no limit)")
    parser.add_argument("--parse-seconds", type=float, default=DEFAULT_SECONDS,
                        help="time that reading one file may take; over it the file fails alone "
                             "(default: %(default)s; 0: no limit)")


class ReadCancelled(Exception):
    """The ingest was stopped while a file was being read; its child has been killed."""


def read_passages(path: Path, name: str, digest: str, reader: Callable[..., LoadedFile] = load_file) -> list[Document]:
    """The passages of one file, read in this process: load (``reader``) and split. Raises ``UnreadableFile``."""
    loaded = reader(path, display_name=name)
    return split_file(loaded, source=name, content_sha256=digest)


def read_isolated(path: Path, name: str, digest: str, limits: ParseLimits = ParseLimits(),
                  cancel: threading.Event | None = None) -> list[Document]:
    """``read_passages`` in a child process within ``limits``. Every way the child can fail (over its memory or
    time, killed by a signal, an exception in the parser) raises ``UnreadableFile`` with a one-line reason;
    ``cancel`` being set kills the child and raises ``ReadCancelled``. The child is killed and reaped whatever
    happens here, Ctrl-C (``KeyboardInterrupt``) included."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = _ReaderProcess(target=_child, args=(sender, str(path), name, digest, limits.memory_bytes, limits.reader),
                             name=f"read {name}", daemon=True)
    try:
        process.start()
    except BaseException:
        receiver.close()
        raise
    finally:
        sender.close()
    deadline = time.monotonic() + limits.seconds if limits.seconds else None
    killed = ended = False
    try:
        result = None
        while True:
            if cancel is not None and cancel.is_set():
                raise ReadCancelled(name)
            wait = _POLL if deadline is None else min(_POLL, deadline - time.monotonic())
            if wait <= 0:
                raise UnreadableFile(f"{name}: could not be read within {limits.seconds:g} s; nothing of it was "
                                     "stored.")
            ready = _wait([receiver, process.sentinel], wait)
            if receiver in ready:
                try:
                    result = receiver.recv()
                except (EOFError, OSError):  # it ended (or was killed) without a word
                    result, ended = None, True
                break
            if process.sentinel in ready:
                ended = True
                break
    finally:
        if ended or result is not None:
            process.join(5)  # ending: its pipe may close before the forkserver reports its exit
        if process.is_alive():
            process.kill()
            killed = True
        process.join(10)
        exitcode = process.exitcode
        receiver.close()
        if exitcode is not None:
            process.close()
    if result is None:
        raise UnreadableFile(_no_answer(name, exitcode, limits, killed))
    status, value = result
    if status == "passages":
        return value
    if status == "memory":
        raise UnreadableFile(_over_memory(name, limits))
    raise UnreadableFile(value)  # "unreadable" (the loader's own message) or "error" (the parser failed)


def _context():
    """The forkserver context, with the readers preloaded (set once, before the forkserver first starts)."""
    global _FORKSERVER
    with _CONTEXT_LOCK:
        if _FORKSERVER is None:
            import multiprocessing

            _FORKSERVER = multiprocessing.get_context("forkserver")
            _FORKSERVER.set_forkserver_preload(_PRELOAD)
            # The forkserver is a fresh `python -c`: Python 3.11 ignores the sys.path it is handed, so it finds
            # this project only through its working directory, or PYTHONPATH. Without it the preload fails
            # silently and each child imports the readers itself (about 0.2 s a file instead of under 10 ms).
            paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if _ROOT not in paths:
                os.environ["PYTHONPATH"] = os.pathsep.join([_ROOT] + [p for p in paths if p])
        return _FORKSERVER


_FORKSERVER = None
_CONTEXT_LOCK = threading.Lock()
_ROOT = str(Path(__file__).resolve().parent.parent)


def _wait(objects: list, timeout: float) -> list:
    from multiprocessing.connection import wait

    return wait(objects, timeout)


def _child(sender, path: str, name: str, digest: str, memory_bytes: int, reader: str) -> None:
    """In the child: limit memory, read, send ``(status, value)``: ``("passages", [Document])``,
    ``("unreadable", message)``, ``("error", message)`` or ``("memory", "")``."""
    import resource

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        module, _, function = reader.partition(":")
        read = getattr(importlib.import_module(module), function)
        result = ("passages", read_passages(Path(path), name, digest, read))
    except MemoryError:
        result = ("memory", "")
    except Exception as exc:  # noqa: BLE001 - any parser bug fails this file alone
        text = _one_line(str(exc))
        if memory_bytes and _peak_bytes() > 0.9 * memory_bytes:
            # A failed allocation inside C code often surfaces as another error (lxml: "unknown error"): near
            # the limit, it is the limit.
            result = ("memory", "")
        elif isinstance(exc, UnreadableFile):
            result = ("unreadable", text)
        else:
            result = ("error", f"{name}: the {_kind(name)} parser failed ({type(exc).__name__}"
                               f"{': ' + text if text else ''}); nothing of it was stored.")
    try:
        sender.send(result)
    except MemoryError:
        os._exit(_EXIT_MEMORY)
    sender.close()


def _peak_bytes() -> int:
    """The most address space this process has held (``VmPeak``), 0 when unknown."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _no_answer(name: str, exitcode: int | None, limits: ParseLimits, killed: bool) -> str:
    """Why a child ended without sending a result."""
    if exitcode == _EXIT_MEMORY:
        return _over_memory(name, limits)
    if exitcode is not None and exitcode < 0 and not killed:
        number = -exitcode
        try:
            signame = signal.Signals(number).name
        except ValueError:
            signame = f"signal {number}"
        if number == signal.SIGKILL:  # not ours: the kernel's out-of-memory killer, or an operator
            return f"{name}: reading it was killed (SIGKILL; out of memory?); nothing of it was stored."
        return f"{name}: the {_kind(name)} parser crashed ({signame}); nothing of it was stored."
    return f"{name}: the {_kind(name)} parser ended without an answer (exit code {exitcode}); nothing of it was stored."


def _over_memory(name: str, limits: ParseLimits) -> str:
    size = f"{limits.memory_mb / 1024:g} GB" if limits.memory_mb >= 1024 else f"{limits.memory_mb} MB"
    return f"{name}: needed more than {size} of memory to read (a compressed bomb?); nothing of it was stored."


def _kind(name: str) -> str:
    return _KINDS.get(Path(name).suffix.lower(), "file")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- starting a child without the parent's main module ----------------------------------------------------------
from multiprocessing import popen_forkserver, reduction, spawn, util  # noqa: E402
from multiprocessing.context import ForkServerProcess, set_spawning_popen  # noqa: E402


class _Popen(popen_forkserver.Popen):
    """``popen_forkserver.Popen`` whose child is not told the parent's main module. Standard ``multiprocessing``
    sends it, and the child re-runs a main *script* (``python app.py``) before it starts: about 2 s and the app's
    imports per file. The child runs only ``_child`` (importable from this module), so it needs none. This is
    ``Popen._launch`` of Python 3.11-3.13 with the two ``init_main_from_*`` keys left out."""

    def _launch(self, process_obj):
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_path", None)
        prep_data.pop("init_main_from_name", None)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        from multiprocessing import forkserver

        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        _parent_w = os.dup(w)  # a sentinel of the parent for the child, as in the standard Popen
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _ReaderProcess(ForkServerProcess):
    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)
