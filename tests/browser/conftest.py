"""Browser fixtures: the real app served on loopback (with a scripted or a real model) and a headless Chromium
driven by Playwright. Chromium is Debian's (``/usr/bin/chromium``, installed by ``make test``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Iterator

import pytest
from langchain_core.documents import Document

from tests.conftest import free_port
from ui import headless

CHROMIUM = os.environ.get("RQA_CHROMIUM", headless.CHROMIUM)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: run `make test` (it installs Debian's chromium).")
    with headless.launch(CHROMIUM) as browser:
        yield browser


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1500, "height": 1000})
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


NOTES = [
    ("Tour de France", "Tadej Pogacar won the 2024 Tour de France, his third overall victory."),
    ("Tour de France", "Jonas Vingegaard won the 2023 Tour de France ahead of Tadej Pogacar."),
    ("Tour de France", "Jonas Vingegaard also won the 2022 Tour de France."),
    ("Tour de France Femmes", "The 2024 Tour de France Femmes was won by Katarzyna Niewiadoma."),
]
# A passage with active markup. Kept out of NOTES: a flagged passage makes the answer stream a sentence at a time
# (pipeline.untrusted.StreamGuard), which the tests of live streaming and Stop do not want.
MARKUP = ("Markup", "A page about cycling that contains markup: <script>window.__injected = 1</script> and "
                    "<img src=x onerror=\"window.__injected = 2\"> should be shown as text.")


@pytest.fixture
def serve(tmp_path, embeddings) -> Iterator[Callable]:
    """``serve(model)`` starts the app over a fresh data folder holding the collection ``notes`` (``NOTES``, or
    the ``(title, text)`` pairs given as ``notes``), with ``model`` offered as ``choice`` (and the operator's
    ``endpoints``, ``NAME=SPEC``), and returns its URL; the app is closed after the test."""
    from corpora.store import CollectionStore
    from pipeline.runtime import Runtime, RuntimeConfig
    from ui.app import build_app, launch_options

    apps = []

    def start(model, data_dir: Path | None = None, choice: str = "default", notes=NOTES, endpoints=()) -> str:
        data_dir = data_dir or tmp_path / "data"
        store = CollectionStore(data_dir, embeddings)
        if not store.exists("notes"):
            store.create("notes").add([Document(page_content=text, metadata={"title": title, "source": "notes.txt",
                                                                              "collection": "notes"}, id=f"n{i}")
                                       for i, (title, text) in enumerate(notes)])
        runtime = Runtime(RuntimeConfig(data_dir=data_dir, model=choice, endpoints=tuple(endpoints)),
                          embeddings=embeddings)
        runtime.use_model(choice, model)
        app = build_app(runtime)
        app.queue(default_concurrency_limit=1)
        port = free_port()
        app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                   **launch_options())
        apps.append(app)
        return f"http://127.0.0.1:{port}/"

    yield start
    for app in apps:
        app.close()
