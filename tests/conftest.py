"""Shared fixtures: the real embedder (small, offline), stores in temporary folders, and real models."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "real_model: runs a real GGUF model through llama.cpp (slow)")
    config.addinivalue_line("markers", "server: starts a real server process on loopback")
    config.addinivalue_line("markers", "faults: crashes, locks and unusable directories, with child processes")
    config.addinivalue_line("markers", "default_model: runs the default 1.5B model for minutes; only when selected "
                                       "with -m default_model (tests/test_examples.py)")


@pytest.fixture(scope="session", autouse=True)
def patient_localhost_check():
    """Gradio's ``launch`` gives up on its own loopback server after one HEAD request that takes over 3 s, and then
    refuses to start ("When localhost is not accessible ..."); on two busy cores in CI that happened once. The check
    here waits up to 60 s for the server to answer instead, so a test fails only if the server truly never does."""
    import time

    import httpx
    from gradio import networking

    original = networking.url_ok

    def url_ok(url: str) -> bool:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.head(url, timeout=10, verify=False).status_code in (200, 401, 301, 302, 303, 307, 308):
                    return True
            except (httpx.ConnectError, httpx.TimeoutException):
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    networking.url_ok = url_ok
    yield
    networking.url_ok = original


@pytest.fixture(scope="session")
def embeddings():
    from models.embeddings import SentenceEmbeddings

    return SentenceEmbeddings()


@pytest.fixture
def store(tmp_path, embeddings):
    from corpora.store import CollectionStore

    return CollectionStore(tmp_path / "data", embeddings)


@pytest.fixture(scope="session")
def fast_model_path():
    from models.registry import prepare_bundled

    return prepare_bundled("fast")


@pytest.fixture(scope="session")
def fast_llm(fast_model_path):
    from models.llama_backend import LlamaCppChatModel

    model = LlamaCppChatModel(fast_model_path, n_ctx=8192)
    yield model
    model.close()


@pytest.fixture(scope="session")
def demo_data_dir(embeddings):
    """A data folder holding the ingested demo corpus. Kept in ``.test-data/`` between local runs (it takes
    about two minutes to build); a fresh clone, as in CI, builds it once."""
    from corpora.demo import ensure_demo_collection
    from corpora.store import CollectionStore

    folder = Path(os.environ.get("RQA_TEST_DATA_DIR", REPO / ".test-data"))
    ensure_demo_collection(CollectionStore(folder, embeddings))
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
