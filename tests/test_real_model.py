"""The real fast model (Qwen2.5-Coder-0.5B) through llama.cpp: streaming, constraints, log-probabilities, and
one question asked of the demo corpus through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from models.llm import GenerationOptions
from pipeline.payloads import NodePayload
from tests.conftest import REPO

pytestmark = pytest.mark.real_model


def test_stream_matches_final_text_and_counts_tokens(fast_llm):
    items = list(fast_llm.stream([{"role": "user", "content": "Name three primary colours."}],
                                 GenerationOptions(max_tokens=40)))
    pieces, result = items[:-1], items[-1]
    assert len(pieces) > 3 and "".join(pieces) == result.text
    assert result.prompt_tokens > 10 and 3 < result.completion_tokens <= 40


def test_json_schema_output_always_parses(fast_llm):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
              "required": ["city", "country"], "additionalProperties": False}
    result = fast_llm.chat([{"role": "user", "content": "Name a city in Japan."}],
                           GenerationOptions(max_tokens=60, json_schema=schema))
    reply = result.json()
    assert set(reply) == {"city", "country"}


def test_grammar_and_first_token_probability(fast_llm):
    result = fast_llm.chat([{"role": "user", "content": "Is water wet? Answer Yes or No."}],
                           GenerationOptions(max_tokens=2, grammar='root ::= "Yes" | "No"', top_logprobs=10))
    assert result.text in {"Yes", "No"}
    yes, no = result.first_token_probability(("yes",)), result.first_token_probability(("no",))
    assert 0.0 <= yes <= 1.0 and 0.0 <= no <= 1.0 and yes + no <= 1.0 + 1e-6
    assert yes + no > 0.5  # the model's own odds put most of the mass on the two answers


def test_cli_answers_from_the_demo_corpus_from_a_retrieved_passage(demo_data_dir, fast_model_path, tmp_path):
    # A copy: this test process holds the demo data directory (one process per embedded data directory).
    data = tmp_path / "data"
    shutil.copytree(demo_data_dir, data, ignore=shutil.ignore_patterns(".rqa.lock"))
    env = {**os.environ, "RQA_DATA_DIR": str(data)}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "--model", "fast", "ask",
         "Who directed the film Back to the Future?", "--method", "oner", "--corpus", "demo", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["kind"] == "route" and events[0]["payload"]["method"] == "oner"
    retrieved = [e for e in events if e["kind"] == "retrieve" and e["status"] == "done"][0]["payload"]["passages"]
    answer = events[-1]
    assert answer["kind"] == "answer" and answer["status"] == "done"
    assert "Zemeckis" in answer["payload"]["answer"]
    # The answer's names are in the passages it was given, and a retrieved passage holds the director. The 0.5B
    # model does not always write a [n] marker (on an AVX2 machine, 2026-11-28, it wrote none for this question):
    # when it does, the passage cited must hold the answer.
    assert answer["payload"]["unsourced"] == [], answer["payload"]
    assert any("Zemeckis" in passage["text"] for passage in retrieved)
    cited = [retrieved[n - 1] for n in answer["payload"]["citations"]]
    assert not cited or any("Zemeckis" in passage["text"] for passage in cited)
    assert sum(e["kind"] == "answer_token" for e in events) > 3  # streamed, not one block


def test_toc_end_to_end_with_the_fast_model(demo_data_dir, fast_llm, embeddings):
    from corpora.store import CollectionStore
    from pipeline.context import RunContext
    from pipeline.events import EventKind, Status
    from pipeline.fold import RunState
    from pipeline.retrieval import HybridRetriever
    from tests.fakes import run_events

    store = CollectionStore(demo_data_dir, embeddings)
    ctx = RunContext(llm=fast_llm, retriever=HybridRetriever([store.open("demo")]), embeddings=embeddings)
    events = run_events("toc", "When did the Haves and Have Nots start?", ctx)
    errors = [e.payload.message for e in events if e.kind == EventKind.ERROR]
    assert not errors, errors
    expansions = [e for e in events if e.kind == EventKind.EXPAND and e.status != Status.RUNNING]
    assert expansions and expansions[0].llm_calls >= 1  # the model was asked to clarify (one call per passage read)
    final = events[-1]
    assert final.kind == EventKind.ANSWER and final.status == Status.DONE and len(final.payload.answer) > 20
    assert sum(e.llm_calls for e in events) < 20
    nodes = RunState.of(events).payloads(NodePayload, done=False)
    assert nodes and nodes[0].state == "root"
    assert all(n.state in {"root", "kept", "pruned", "restored"} for n in nodes)
    assert all(n.prune_kind for n in nodes if n.state == "pruned")


def test_ircot_end_to_end_with_the_fast_model(demo_data_dir, fast_llm, embeddings):
    from corpora.store import CollectionStore
    from models.rerankers import RankFusionReranker
    from pipeline.context import RunContext
    from pipeline.events import EventKind, Status
    from pipeline.retrieval import HybridRetriever
    from pipeline.text import first_sentence
    from tests.fakes import run_events, settings_with

    store = CollectionStore(demo_data_dir, embeddings)
    ctx = RunContext(llm=fast_llm, retriever=HybridRetriever([store.open("demo")]), embeddings=embeddings,
                     reranker=RankFusionReranker(embeddings), settings=settings_with(ircot={"max_steps": 4}))
    events = run_events("ircot", "Who directed the film Back to the Future, and where was he born?", ctx)
    errors = [e.payload.message for e in events if e.kind == EventKind.ERROR]
    assert not errors, errors
    steps = [e for e in events if e.kind == EventKind.HOP and e.status == Status.DONE]
    assert 1 <= len(steps) <= 4 and steps[0].payload.sentence
    assert all(s.llm_calls == 1 and first_sentence(s.payload.sentence) == s.payload.sentence for s in steps)
    final = events[-1]
    assert final.kind == EventKind.ANSWER and final.status == Status.DONE and final.payload.answer
    assert len(final.payload.extras.collected) <= 15


def test_ircot_hop_by_hop_end_to_end_with_the_fast_model(demo_data_dir, fast_llm, embeddings):
    """Whatever the small model plans, every answer a hop uses is in the passage it names, and the run ends
    with an answer."""
    from corpora.store import CollectionStore
    from pipeline.context import RunContext
    from pipeline.events import EventKind, Status
    from pipeline.retrieval import HybridRetriever
    from pipeline.text import normalize_answer
    from tests.fakes import run_events, settings_with

    store = CollectionStore(demo_data_dir, embeddings)
    ctx = RunContext(llm=fast_llm, retriever=HybridRetriever([store.open("demo")]), embeddings=embeddings,
                     settings=settings_with(ircot={"mode": "hops"}))
    events = run_events("ircot", "Where was the director of Back to the Future born?", ctx)
    errors = [e.payload.message for e in events if e.kind == EventKind.ERROR]
    assert not errors, errors
    plan = [e.payload for e in events if e.kind == EventKind.PLAN and e.status == Status.DONE]
    assert len(plan) == 1 and (plan[0].questions or plan[0].error)
    hops = [e.payload for e in events if e.kind == EventKind.SUBQUESTION and e.status == Status.DONE]
    if not plan[0].error:
        assert hops
    for hop in hops:
        if hop.found and hop.answer not in ("yes", "no"):
            source = hop.passages[hop.source - 1]
            assert normalize_answer(hop.answer) in normalize_answer(f"{source.title} {source.text}")
    final = events[-1]
    assert final.kind == EventKind.ANSWER and final.status == Status.DONE and final.payload.answer


def test_generation_stops_once_the_until_test_passes(fast_llm):
    from models.llm import GenerationOptions
    from pipeline.text import has_complete_sentence

    messages = [{"role": "user", "content": "Write five sentences about the sea, each on the same line."}]
    result = fast_llm.chat(messages, GenerationOptions(max_tokens=120, until=has_complete_sentence))
    assert result.finish_reason == "until" and result.completion_tokens < 120
    assert has_complete_sentence(result.text) and result.text.count(". ") <= 1


def test_auto_answers_first_and_checks_with_the_fast_model(demo_data_dir, fast_llm, embeddings):
    from corpora.store import CollectionStore
    from pipeline.context import RunContext
    from pipeline.events import EventKind
    from pipeline.payloads import CheckPayload
    from pipeline.retrieval import HybridRetriever
    from pipeline.service import RunRequest, RunService
    from tests.fakes import settings_with

    store = CollectionStore(demo_data_dir, embeddings)
    # "won" is a wording cue for several readings: the check asks for ToC, which stays off here (the test is the
    # quick answer and the check, not ToC's run, which has a test of its own).
    ctx = RunContext(llm=fast_llm, retriever=HybridRetriever([store.open("demo")]), embeddings=embeddings,
                     settings=settings_with(auto_deeper=False))
    run = RunService().start(RunRequest(question="Who won the Academy Award for Best Actress?", method="auto"),
                             context=ctx)
    events = list(run)
    errors = [e.payload.message for e in events if e.kind == EventKind.ERROR]
    assert not errors, errors
    assert events[0].kind == EventKind.ROUTE and events[0].payload.method == "oner" and events[0].payload.auto
    check = next(e.payload for e in events if isinstance(e.payload, CheckPayload) and e.payload.signals)
    answer = run.state.answer
    assert check.deeper is None and answer is not None and answer.answer
    assert answer.abstained or "could help" in check.reason  # an answer: the wording's readings ask for ToC
    assert run.state.cost()["llm_calls"] == (0 if answer.support is not None else 1)
