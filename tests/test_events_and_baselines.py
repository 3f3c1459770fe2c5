"""Step events and the two baselines, driven by the scripted fake LLM."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from models.errors import LLMCallError
from pipeline.context import RunContext
from pipeline.events import EventKind, Status, StepEvent, read_jsonl, write_jsonl
from pipeline.methods import run_method
from pipeline.retrieval import HybridRetriever
from pipeline.web import WebSearchError, WebSource
from tests.fakes import ScriptedLLM, ScriptedSearch


@pytest.fixture
def library(store):
    collection = store.create("library")
    collection.add([
        Document(page_content="Pride and Prejudice is an 1813 novel by Jane Austen.",
                 metadata={"title": "Pride and Prejudice", "source": "austen.txt"}, id="p1"),
        Document(page_content="Emma is a novel by Jane Austen, published in 1815.",
                 metadata={"title": "Emma", "source": "austen.txt"}, id="p2"),
        Document(page_content="Dune is a 1965 science fiction novel by Frank Herbert.",
                 metadata={"title": "Dune", "source": "dune.pdf", "page": 3}, id="p3"),
    ])
    return collection


def run(method, question, llm, retriever=None):
    return list(run_method(method, question, RunContext(llm=llm, retriever=retriever)))


def test_oner_retrieves_then_streams_a_cited_answer(library):
    llm = ScriptedLLM(["Emma was published in 1815 [2], two years after Pride and Prejudice [1]."])
    events = run("oner", "When was Emma published?", llm, HybridRetriever([library]))
    kinds = [(e.kind, e.status) for e in events]
    assert kinds[0] == (EventKind.RETRIEVE, Status.RUNNING) and kinds[1] == (EventKind.RETRIEVE, Status.DONE)
    passages = events[1].payload["passages"]
    assert passages[0]["title"] == "Emma" and passages[0]["number"] == 1
    tokens = [e for e in events if e.kind == EventKind.ANSWER_TOKEN]
    assert len(tokens) > 3 and all(t.id == events[-1].id for t in tokens)
    final = events[-1]
    assert final.kind == EventKind.ANSWER and final.status == Status.DONE
    assert "".join(t.payload["text"] for t in tokens) == final.payload["answer"]
    assert final.payload["citations"] == [2, 1] and final.llm_calls == 1 and final.completion_tokens > 0
    # The passages reached the model inside the prompt, numbered, after the demonstration turns.
    messages = llm.calls[0][0]
    assert messages[-1]["content"].count("[1] Emma: Emma is a novel") == 1
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


def test_citations_outside_the_passage_list_are_ignored(library):
    llm = ScriptedLLM(["It was 1815 [2] [9] [2]."])
    final = run("oner", "Emma?", llm, HybridRetriever([library]))[-1]
    assert final.payload["citations"] == [2]


def test_nor_uses_no_retrieval():
    llm = ScriptedLLM(["I believe it is Jane Austen."])
    events = run("nor", "Who wrote Emma?", llm)
    assert {e.kind for e in events} == {EventKind.ANSWER, EventKind.ANSWER_TOKEN}
    assert events[-1].payload["answer"] == "I believe it is Jane Austen." and events[-1].payload["passages"] == []
    assert "Who wrote Emma?" in llm.calls[0][0][-1]["content"]


def test_web_failure_warns_and_answers_from_local_passages(library):
    web = WebSource(ScriptedSearch(error=WebSearchError("offline", "Web search is unavailable: offline.")))
    llm = ScriptedLLM(["Frank Herbert wrote Dune [1]."])
    events = run("oner", "Who wrote Dune?", llm, HybridRetriever([library], web))
    warnings = [e for e in events if e.kind == EventKind.WARNING]
    assert len(warnings) == 1 and "offline" in warnings[0].payload["message"]
    assert events[-1].payload["answer"] == "Frank Herbert wrote Dune [1]."


def test_no_sources_selected_warns():
    events = run("oner", "Who wrote Dune?", ScriptedLLM(["The passages do not say."]))
    assert any(e.kind == EventKind.WARNING and "No sources" in e.title for e in events)


def test_model_failure_ends_with_a_clear_error_event(library):
    events = run("oner", "Who wrote Dune?", ScriptedLLM([LLMCallError("The model server failed: timeout")]),
                 HybridRetriever([library]))
    assert events[-1].kind == EventKind.ERROR and "timeout" in events[-1].payload["message"]


def test_empty_question_and_unknown_method():
    events = run("oner", "   ", ScriptedLLM([]))
    assert [e.kind for e in events] == [EventKind.ERROR]
    with pytest.raises(ValueError, match="Unknown method"):
        run("magic", "q", ScriptedLLM([]))


def test_stop_ends_the_run_between_tokens(library):
    ctx = RunContext(llm=ScriptedLLM(["one two three four five six"]), retriever=HybridRetriever([library]))
    seen = []
    for event in run_method("oner", "Emma?", ctx):
        seen.append(event)
        if event.kind == EventKind.ANSWER_TOKEN:
            ctx.cancel.set()
    assert seen[-1].kind == EventKind.WARNING and seen[-1].title == "Stopped"
    assert sum(e.kind == EventKind.ANSWER_TOKEN for e in seen) == 1
    assert not any(e.kind == EventKind.ANSWER and e.status == Status.DONE for e in seen)


def test_events_round_trip_through_jsonl(tmp_path, library):
    events = run("oner", "Emma?", ScriptedLLM(["1815 [1]."]), HybridRetriever([library]))
    write_jsonl(events, tmp_path / "trace.jsonl")
    assert list(read_jsonl(tmp_path / "trace.jsonl")) == events
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.run_id for e in events}) == 1


def test_malformed_trace_line_is_reported(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match="line 1 is not a step event"):
        list(read_jsonl(path))


def test_step_elapsed_time_spans_its_updates():
    from pipeline.events import Tracer

    tracer = Tracer("oner")
    first = tracer.event(EventKind.RETRIEVE, "r", id="r1", status=Status.RUNNING)
    done = tracer.event(EventKind.RETRIEVE, "r", id="r1")
    assert first.elapsed_s is None and done.elapsed_s >= 0 and done.started_at == first.started_at
    assert isinstance(StepEvent.model_validate_json(done.to_json()), StepEvent)
