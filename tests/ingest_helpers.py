"""A reader that misbehaves on purpose, for the ingest isolation tests. Named in
``ParseLimits(reader="tests.ingest_helpers:misbehaving")``, it runs in the child process that reads each file
(a monkeypatch of the test process would not reach it). Files are read normally unless their name starts with
one of the words below."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from corpora.loaders import LoadedFile, load_file


def misbehaving(path: Path | str, display_name: str | None = None) -> LoadedFile:
    """``load_file``, except for files named ``hang*`` (sleeps ten minutes), ``hog*`` (allocates until it fails,
    up to 8 GB of address space), ``crash*`` (SIGSEGV) and ``buggy*`` (raises an error of two lines). The first
    three write the child's pid to ``<path>.pid`` first."""
    name = display_name or Path(path).name
    for word in ("hang", "hog", "crash"):
        if name.startswith(word):
            Path(f"{path}.pid").write_text(str(os.getpid()))
    if name.startswith("hang"):
        time.sleep(600)
    if name.startswith("hog"):
        held = [bytes(64 * 1024 * 1024) for _ in range(128)]  # MemoryError under a limit; 8 GB (untouched) without
        del held  # no limit: falls through to a normal read, and the test sees the file added
    if name.startswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if name.startswith("buggy"):
        raise RuntimeError("a bug in the parser\nand a second line")
    return load_file(path, display_name)


def tokenizer_state(path: Path | str, display_name: str | None = None) -> LoadedFile:
    """``load_file``, titled with whether the passage tokenizer was loaded in this process before the file was
    read (in a child: whether the forkserver preloaded it, ``corpora.tokenizer_preload``)."""
    from corpora.passage_tokens import passage_tokenizer

    preloaded = passage_tokenizer.cache_info().currsize > 0
    loaded = load_file(path, display_name=display_name)
    return LoadedFile(f"tokenizer preloaded: {preloaded}", loaded.pages, loaded.tables)
