"""Model choice is the operator's (a catalog, nothing typed), models load once per file or endpoint, the least
recently used is unloaded, loading holds nobody up, and Stop ends any model wait within a fraction of a second."""

from __future__ import annotations

import json

import threading
import time

import pytest

from models.cancel import CallGate, CancellableModel, iterate_cancellable
from models.catalog import ModelCatalog
from models.errors import Cancelled, ModelError
from models.llm import GenerationOptions
from models.openai_backend import OpenAICompatibleChatModel
from pipeline.runtime import Runtime, RuntimeConfig
from pipeline.service import RunRequest, RunService
from tests.fakes import ScriptedLLM, silent_server


def test_the_catalog_offers_bundled_models_folder_files_endpoints_and_config(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "mine.gguf").write_bytes(b"GGUF")
    (models / "notes.txt").write_text("not a model")
    config = tmp_path / "models.toml"
    config.write_text('[models]\nremote = "openai:http://10.0.0.5:8000/v1#qwen"\n')
    catalog = ModelCatalog.configured("fast", models_dir=models, endpoints=["local=openai:http://127.0.0.1:9/v1"],
                                      config=config)
    keys = [key for _label, key in catalog.choices()]
    assert keys == ["default", "fast", "mine.gguf", "local", "remote"]
    assert catalog.get("mine.gguf").spec == str(models / "mine.gguf")
    for typed in ["/etc/passwd", str(models / "mine.gguf"), "openai:http://127.0.0.1:22/", "../x.gguf"]:
        with pytest.raises(ModelError, match="not one of the models this app offers") as caught:
            catalog.get(typed)
        assert "No such file" not in str(caught.value)  # the same answer whether or not the file exists
    with pytest.raises(ModelError, match="NAME=SPEC"):
        ModelCatalog.configured("default", endpoints=["nameless"])


def test_a_start_model_given_as_a_path_or_address_is_offered_under_a_name_that_hides_it(tmp_path):
    path = tmp_path / "private-folder" / "qwen.gguf"
    for spec, key in ((str(path), "qwen.gguf"), ("openai:http://10.1.2.3:8000/v1#qwen", "server (qwen)"),
                      ("openai:http://10.1.2.3:8000/v1", "server"),
                      ("langchain:openai:qwen@http://10.1.2.3:8000/v1", "langchain:openai:qwen")):
        catalog = ModelCatalog.configured(spec)
        shown = json.dumps(catalog.choices())
        assert "private-folder" not in shown and "10.1.2.3" not in shown, spec
        assert catalog.key_of(spec) == key and catalog.get(spec).spec == spec and catalog.get(key).spec == spec
    models = tmp_path / "models"
    models.mkdir()
    (models / "qwen.gguf").write_bytes(b"GGUF")
    catalog = ModelCatalog.configured(str(path), models_dir=models)  # another file of that name is on offer
    assert catalog.get("qwen.gguf").spec == str(models / "qwen.gguf")
    assert catalog.get(catalog.key_of(str(path))).spec == str(path) and catalog.key_of(str(path)) == "qwen.gguf (start)"


def test_one_file_under_two_names_is_one_identity(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    catalog = ModelCatalog.configured("default", endpoints=[f"a={path}", f"b={tmp_path}/./m.gguf"])
    assert catalog.get("a").identity() == catalog.get("b").identity()
    assert catalog.get("default").identity() != catalog.get("fast").identity()


class _CountingLoads:
    def __init__(self, delay: float = 0.0) -> None:
        self.loaded: list[str] = []
        self.delay = delay

    def __call__(self, spec: str, n_ctx: int) -> ScriptedLLM:
        time.sleep(self.delay)
        self.loaded.append(spec)
        return ScriptedLLM([f"answer from {spec}"])


def _runtime(tmp_path, monkeypatch, loads, max_loaded=2, endpoints=(), embeddings=None) -> Runtime:
    monkeypatch.setattr("pipeline.runtime.load_chat_model", lambda spec, n_ctx: loads(spec, n_ctx))
    return Runtime(RuntimeConfig(data_dir=tmp_path, model="fast", max_loaded_models=max_loaded,
                                 endpoints=tuple(endpoints)), embeddings=embeddings)


def test_models_load_once_and_the_least_recently_used_is_unloaded(tmp_path, monkeypatch):
    loads = _CountingLoads()
    runtime = _runtime(tmp_path, monkeypatch, loads, endpoints=["also-fast=fast", "third=openai:http://h/v1"])
    for choice in ["fast", "also-fast", "default", "fast", "third", "default"] * 4:
        runtime.llm(choice)
        assert len(runtime.loaded_models()) <= 2
    assert loads.loaded[:3] == ["fast", "default", "openai:http://h/v1"]  # "also-fast" is the same file
    assert len(runtime.loaded_models()) == 2
    with pytest.raises(ModelError, match="not one of the models"):
        runtime.llm("/etc/passwd")


def test_a_slow_model_load_holds_no_lock_and_stop_ends_the_wait(tmp_path, monkeypatch, embeddings):
    loads = _CountingLoads(delay=3.0)
    runtime = _runtime(tmp_path, monkeypatch, loads, embeddings=embeddings)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.perf_counter()
    with pytest.raises(Cancelled):
        runtime.llm("default", cancel)
    assert time.perf_counter() - started < 1.0
    # Meanwhile the collections (the runtime's other lock) answer at once.
    started = time.perf_counter()
    assert runtime.store.names() == []
    assert time.perf_counter() - started < 1.5
    assert runtime.llm("default").chat([]).text == "answer from default"  # the load went on and is reused
    assert loads.loaded == ["default"]


def test_stop_while_the_model_loads_ends_the_run_with_a_stopped_step(tmp_path, monkeypatch, embeddings):
    runtime = _runtime(tmp_path, monkeypatch, _CountingLoads(delay=3.0), embeddings=embeddings)
    cancel = threading.Event()
    run = RunService.for_runtime(runtime).start(RunRequest(question="Who wrote Emma?", method="nor",
                                                           model="default"), cancel=cancel)
    threading.Timer(0.3, cancel.set).start()
    started = time.perf_counter()
    events = list(run)
    assert time.perf_counter() - started < 1.5
    assert events[-1].kind == "warning" and "stopped" in events[-1].payload.message


def test_a_model_not_on_offer_is_an_error_step(tmp_path, monkeypatch):
    runtime = _runtime(tmp_path, monkeypatch, _CountingLoads())
    events = list(RunService.for_runtime(runtime).start(RunRequest(question="q", method="nor",
                                                                   model="/etc/passwd")))
    assert events[-1].kind == "error" and "not one of the models" in events[-1].payload.message


def test_the_gate_serves_calls_in_order_and_a_stopped_waiter_leaves_the_queue():
    gate = CallGate()
    order: list[int] = []
    gate.acquire()
    stopped = threading.Event()
    stopped.set()

    def call(n: int, cancel=None) -> None:
        try:
            gate.acquire(cancel)
        except Cancelled:
            order.append(-n)
            return
        order.append(n)
        gate.release()

    threads = []
    for n, cancel in [(1, None), (2, stopped), (3, None)]:
        threads.append(threading.Thread(target=call, args=(n, cancel)))
        threads[-1].start()
        time.sleep(0.15)
    gate.release()
    for thread in threads:
        thread.join(2)
    assert order == [-2, 1, 3]


def test_the_gate_takes_turns_round_the_people_waiting_not_round_their_runs():
    """mallory's two runs and alice's one each have a call waiting, mallory's first: alice's call comes after
    mallory's first, not after both; and a person who was served least recently goes first."""
    gate = CallGate()
    runs = {name: threading.Event() for name in ("mallory-1", "mallory-2", "alice-1")}
    for name, cancel in runs.items():
        gate.share(cancel, name.split("-")[0])
    order: list[str] = []
    gate.acquire()  # someone else's call is being served

    def call(name: str) -> None:
        gate.acquire(runs[name])
        order.append(name)
        gate.release()

    threads = []
    for name in ("mallory-1", "mallory-2", "alice-1"):
        threads.append(threading.Thread(target=call, args=(name,)))
        threads[-1].start()
        time.sleep(0.15)
    assert [gate.ahead_of(runs[n]) for n in ("mallory-1", "alice-1", "mallory-2")] == [1, 2, 3]
    gate.release()
    for thread in threads:
        thread.join(2)
    assert order == ["mallory-1", "alice-1", "mallory-2"]
    assert gate.ahead_of(runs["alice-1"]) is None


def test_cancellable_model_stops_between_tokens():
    cancel = threading.Event()
    model = CancellableModel(ScriptedLLM(["one two three four five"]), cancel)
    pieces = []
    with pytest.raises(Cancelled):
        for piece in model.stream([], GenerationOptions()):
            pieces.append(piece)
            cancel.set()
    assert len(pieces) == 1


def test_a_blocking_stream_is_stopped_within_a_fraction_of_a_second():
    def never():
        time.sleep(30)
        yield "late"

    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.perf_counter()
    with pytest.raises(Cancelled):
        list(iterate_cancellable(never, cancel))
    assert time.perf_counter() - started < 0.6


def test_stop_ends_a_call_to_a_server_that_never_answers():
    with silent_server() as url:
        model = OpenAICompatibleChatModel(url)
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        started = time.perf_counter()
        with pytest.raises(Cancelled):
            model.chat([{"role": "user", "content": "hi"}], GenerationOptions(cancel=cancel))
        assert time.perf_counter() - started < 1.0
