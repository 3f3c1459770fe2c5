"""The two "outgrow one machine" options against real servers on loopback: an OpenAI-compatible LLM server
(llama-cpp-python's, started with the AMX work-around) and a Chroma server (`chroma run`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from langchain_core.documents import Document

from corpora.store import CollectionError, CollectionStore
from models.errors import ModelError
from models.loading import load_chat_model
from models.llm import GenerationOptions
from models.openai_backend import OpenAICompatibleChatModel
from tests.conftest import REPO, free_port

pytestmark = pytest.mark.server


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {process.stdout.read()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(url)


@pytest.fixture(scope="module")
def llm_server(fast_model_path, tmp_path_factory):
    port = free_port()
    log = open(tmp_path_factory.mktemp("llm") / "server.log", "w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "models.serve", "--model", str(fast_model_path), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--verbose", "false"],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True,
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/v1/models", process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.real_model
def test_openai_backend_streams_and_follows_a_schema(llm_server):
    model = OpenAICompatibleChatModel(llm_server)
    items = list(model.stream([{"role": "user", "content": "Say hello in French."}],
                              GenerationOptions(max_tokens=20)))
    assert "".join(items[:-1]) == items[-1].text and items[-1].completion_tokens > 0
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    reply = model.chat([{"role": "user", "content": "What is 2 + 2? Reply in JSON."}],
                       GenerationOptions(max_tokens=40, json_schema=schema)).json()
    assert isinstance(reply["answer"], str)
    constrained = model.chat([{"role": "user", "content": "Is the sky blue? Yes or No."}],
                             GenerationOptions(max_tokens=3, grammar='root ::= "Yes" | "No"'))
    assert constrained.text in {"Yes", "No"}


@pytest.mark.real_model
def test_a_langchain_chat_openai_model_on_the_same_server(llm_server):
    """``langchain:openai:MODEL@URL`` makes LangChain's ChatOpenAI through init_chat_model; the adapter
    streams from it, passes JSON schemas and asks for log-probabilities."""
    model = load_chat_model(f"langchain:openai:local@{llm_server}")
    items = list(model.stream([{"role": "user", "content": "Say hello in French."}],
                              GenerationOptions(max_tokens=20)))
    assert "".join(items[:-1]) == items[-1].text and items[-1].text.strip()
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    reply = model.chat([{"role": "user", "content": "What is 2 + 2? Reply in JSON."}],
                       GenerationOptions(max_tokens=40, json_schema=schema)).json()
    assert isinstance(reply["answer"], str)
    scored = model.chat([{"role": "user", "content": "Is Paris in France? Answer True or False."}],
                        GenerationOptions(max_tokens=1, top_logprobs=5))
    assert scored.logprobs and scored.logprobs[0].top


def test_openai_backend_without_a_server_names_the_fix_but_not_the_address(caplog):
    port = free_port()
    with pytest.raises(ModelError, match="The model server does not answer") as raised:
        OpenAICompatibleChatModel(f"http://127.0.0.1:{port}/v1", connect_timeout_s=2)
    assert str(port) not in str(raised.value) and "127.0.0.1" not in str(raised.value)  # it may reach a browser
    assert f"127.0.0.1:{port}" in caplog.text  # the operator finds it in the server log


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    folder = tmp_path_factory.mktemp("chroma")
    process = subprocess.Popen([chroma, "run", "--path", str(folder / "db"), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(f"http://127.0.0.1:{port}/api/v2/heartbeat", process, 60)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_collections_in_a_chroma_server(chroma_server, embeddings, tmp_path):
    store = CollectionStore(tmp_path, embeddings, chroma_url=chroma_server)
    collection = store.create("remote")
    collection.add([Document(page_content="Ljubljana is the capital of Slovenia.",
                             metadata={"title": "Ljubljana", "source": "s.txt"}, id="s1"),
                    Document(page_content="Bratislava is the capital of Slovakia.",
                             metadata={"title": "Bratislava", "source": "k.txt"}, id="k1")])
    assert collection.dense_search("Slovenian capital", 1)[0].id == "s1"
    assert collection.bm25_search("Bratislava", 1)[0].id == "k1"
    # A second client (another machine) sees the same collection.
    again = CollectionStore(tmp_path / "other", embeddings, chroma_url=chroma_server).open("remote")
    assert again.count() == 2 and again.bm25_search("Ljubljana", 1)[0].id == "s1"


def test_absent_chroma_server_names_the_fix(embeddings, tmp_path):
    with pytest.raises(CollectionError, match="chroma run"):
        CollectionStore(tmp_path, embeddings, chroma_url=f"http://127.0.0.1:{free_port()}")
