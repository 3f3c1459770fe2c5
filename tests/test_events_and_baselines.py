"""Step events and their typed payloads, traces old and new, the run service (routing, follow-ups, refused
questions) and the two baselines, driven by the scripted fake LLM."""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from models.errors import LLMCallError
from pipeline.answering import NO_ANSWER
from pipeline.context import RunContext
from pipeline.events import EventKind, Status, StepEvent, Tracer, read_jsonl, write_jsonl
from pipeline.fold import RunState
from pipeline.methods import METHODS, get_method, run_method
from pipeline.payloads import (AnswerPayload, Evidence, HopPayload, NodePayload, PassageRef, PrunePayload,
                               QAPair, RetrievePayload, VerifyPayload)
from pipeline.retrieval import HybridRetriever
from pipeline.service import Conversation, RunRequest, RunService
from pipeline.web import WebSearchError, WebSource
from tests.fakes import ScriptedLLM, ScriptedSearch, run_events


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


def run(method, question, llm, retriever=None, embeddings=None):
    return run_events(method, question, RunContext(llm=llm, retriever=retriever, embeddings=embeddings))


def test_oner_retrieves_then_streams_a_cited_answer(library):
    llm = ScriptedLLM(["Emma was published in 1815 [2], two years after Pride and Prejudice [1]."])
    events = run("oner", "When was Emma published?", llm, HybridRetriever([library]))
    kinds = [(e.kind, e.status) for e in events]
    assert kinds[0] == (EventKind.RETRIEVE, Status.RUNNING) and kinds[1] == (EventKind.RETRIEVE, Status.DONE)
    passages = events[1].payload.passages
    assert isinstance(passages[0], PassageRef)
    assert passages[0].title == "Emma" and passages[0].number == 1 and passages[0].source == "austen.txt"
    tokens = [e for e in events if e.kind == EventKind.ANSWER_TOKEN]
    assert len(tokens) > 3 and all(t.id == events[-1].id for t in tokens)
    final = events[-1]
    assert final.kind == EventKind.ANSWER and final.status == Status.DONE
    assert "".join(t.payload.text for t in tokens) == final.payload.answer
    assert final.payload.citations == [2, 1] and final.llm_calls == 1 and final.completion_tokens > 0
    assert [p.number for p in final.payload.passages] == [1, 2, 3]
    assert RunState.of(events).cited_passages()[0].title == "Emma"
    # The passages reached the model inside the prompt, numbered, after the demonstration turns.
    messages = llm.calls[0][0]
    assert messages[-1]["content"].count("[1] Emma: Emma is a novel") == 1
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


def test_citations_outside_the_passage_list_are_ignored(library):
    llm = ScriptedLLM(["It was 1815 [2] [9] [2]."])
    final = run("oner", "Emma?", llm, HybridRetriever([library]))[-1]
    assert final.payload.citations == [2]


def test_an_empty_model_reply_gives_a_clear_answer_and_a_warning(library):
    events = run("oner", "When was Emma published?", ScriptedLLM(["   "]), HybridRetriever([library]))
    final = events[-1]
    assert final.kind == EventKind.ANSWER and final.status == Status.DONE
    assert final.payload.answer == NO_ANSWER and final.payload.citations == []
    warnings = [e for e in events if e.kind == EventKind.WARNING]
    assert [w.title for w in warnings] == ["Empty answer"] and "wrote no answer" in warnings[0].payload.message


def test_nor_uses_no_retrieval():
    llm = ScriptedLLM(["I believe it is Jane Austen."])
    events = run("nor", "Who wrote Emma?", llm)
    assert {e.kind for e in events} == {EventKind.ANSWER, EventKind.ANSWER_TOKEN}
    assert events[-1].payload.answer == "I believe it is Jane Austen." and events[-1].payload.passages == []
    assert RunState.of(events).passage_ids() is None  # no retrieval step: nothing to score recall on
    assert "Who wrote Emma?" in llm.calls[0][0][-1]["content"]


def test_web_failure_warns_and_answers_from_local_passages(library, embeddings):
    web = WebSource(ScriptedSearch(error=WebSearchError("offline", "Web search is unavailable: offline.")))
    llm = ScriptedLLM(["Frank Herbert wrote Dune [1]."])
    events = run("oner", "Who wrote Dune?", llm, HybridRetriever([library], web), embeddings)
    warnings = [e for e in events if e.kind == EventKind.WARNING]
    assert len(warnings) == 1 and "offline" in warnings[0].payload.message
    assert events[-1].payload.answer == "Frank Herbert wrote Dune [1]."


def test_no_sources_selected_warns():
    events = run("oner", "Who wrote Dune?", ScriptedLLM(["The passages do not say."]))
    assert any(e.kind == EventKind.WARNING and "No sources" in e.title for e in events)


def test_model_failure_ends_with_a_clear_error_event(library, embeddings):
    events = run("oner", "Who wrote Dune?", ScriptedLLM([LLMCallError("The model server failed: timeout")]),
                 HybridRetriever([library]), embeddings)
    assert events[-1].kind == EventKind.ERROR and "timeout" in events[-1].payload.message
    assert RunState.of(events).errors() == [events[-1].payload.message]


def test_empty_question_and_unknown_method():
    # Both checks moved from the method runner to the run service: each ends the run with one error event.
    llm = ScriptedLLM([])
    events = list(RunService().start(RunRequest(question="   ", method="oner"), context=RunContext(llm=llm)))
    assert [e.kind for e in events] == [EventKind.ERROR] and llm.calls == []
    events = list(RunService().start(RunRequest(question="q", method="magic"), context=RunContext(llm=llm)))
    assert [e.kind for e in events] == [EventKind.ERROR] and "Unknown method" in events[0].payload.message
    assert llm.calls == []
    with pytest.raises(ValueError, match="Unknown method"):
        get_method("magic")


def test_stop_ends_the_run_between_tokens(library):
    ctx = RunContext(llm=ScriptedLLM(["one two three four five six"]), retriever=HybridRetriever([library]))
    seen = []
    for event in run_method(get_method("oner"), "Emma?", ctx):
        seen.append(event)
        if event.kind == EventKind.ANSWER_TOKEN:
            ctx.cancel.set()
    assert seen[-1].kind == EventKind.WARNING and seen[-1].title == "Stopped"
    assert sum(e.kind == EventKind.ANSWER_TOKEN for e in seen) == 1
    assert not any(e.kind == EventKind.ANSWER and e.status == Status.DONE for e in seen)
    writing = RunState.of(seen[:-1])
    assert writing.answer_text == writing.streamed == "one "  # while the run goes on, the words so far
    stopped = RunState.of(seen)
    assert stopped.streamed == "one " and stopped.answer_text == ""  # a stopped run's words are not an answer


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
    first = tracer.event(RetrievePayload(query="q"), "r", id="r1", status=Status.RUNNING)
    done = tracer.event(RetrievePayload(query="q"), "r", id="r1")
    assert first.kind == done.kind == EventKind.RETRIEVE
    assert first.elapsed_s is None and done.elapsed_s >= 0 and done.started_at == first.started_at
    assert StepEvent.model_validate_json(done.to_json()) == done


# Typed payloads: a mistake in a field name fails where the event is made, not in a consumer.

def test_a_misspelt_or_unknown_payload_field_raises_at_event_creation():
    tracer = Tracer("ircot")
    with pytest.raises(ValidationError, match="sentense"):
        tracer.event(HopPayload(step=1, sentense="a typo in a method"), "Step 1")
    with pytest.raises(ValidationError, match="nodes"):
        NodePayload(question="q", nodes=[])
    with pytest.raises(ValidationError, match="titel"):  # nested models are strict too
        RetrievePayload(query="q", passages=[{"titel": "Emma", "text": "Emma is a novel."}])
    with pytest.raises(ValidationError, match="p_tru"):
        VerifyPayload(keep=True, score=0.9, reason="r", evidence={"p_tru": 0.9})
    with pytest.raises(ValidationError):  # the old name of prune_kind
        PrunePayload(kind="duplicate", reason="same answer")
    with pytest.raises(ValidationError, match="misspelt"):  # the same when the event is read from data
        StepEvent.model_validate({"v": 2, "id": "s1", "run_id": "r", "seq": 0, "method": "oner", "title": "t",
                                  "payload": {"kind": "retrieve", "query": "q", "misspelt": 1}})
    with pytest.raises(ValidationError):  # a kind no payload model has
        StepEvent.model_validate({"v": 2, "id": "s1", "run_id": "r", "seq": 0, "method": "oner", "title": "t",
                                  "payload": {"kind": "rerank"}})
    event = tracer.event(HopPayload(step=1, sentence="Tolkien wrote it."), "Step 1")
    assert event.kind == EventKind.HOP and event.payload.sentence == "Tolkien wrote it."


def test_an_event_whose_kind_disagrees_with_its_payload_is_rejected(tmp_path):
    fields = {"v": 2, "id": "s1", "run_id": "r", "seq": 0, "method": "oner", "title": "t"}
    with pytest.raises(ValidationError, match="event kind 'hop' with a 'retrieve' payload"):
        StepEvent.model_validate({**fields, "kind": "hop", "payload": {"kind": "retrieve", "query": "q"}})
    with pytest.raises(ValidationError, match="event kind 'hop' with a 'retrieve' payload"):
        StepEvent(**fields, kind=EventKind.HOP, payload=RetrievePayload(query="q"))
    # Without a kind, the event takes its payload's.
    assert StepEvent(**fields, payload=RetrievePayload(query="q")).kind == EventKind.RETRIEVE
    path = tmp_path / "mixed.jsonl"
    good = StepEvent(**fields, payload=RetrievePayload(query="q"))
    path.write_text(good.to_json() + "\n" + good.to_json().replace('"kind":"retrieve"', '"kind":"hop"', 1) + "\n")
    with pytest.raises(ValueError, match="line 2 is not a step event"):
        list(read_jsonl(path))


def test_an_event_made_without_a_version_is_not_rewritten_as_an_old_trace():
    fields = {"id": "s1", "run_id": "r", "seq": 0, "method": "toc", "title": "t"}
    prune = StepEvent(**fields, kind=EventKind.PRUNE, payload=PrunePayload(prune_kind="duplicate", reason="r"))
    assert prune.payload.prune_kind == "duplicate"
    with pytest.raises(ValidationError):
        StepEvent(**fields, kind=EventKind.HOP, payload=RetrievePayload(query="q"))


# Traces of the first, untyped format are converted when read.

OLD_AQ = "Who won the Tour de France?"
OLD_Q24 = "Who won the 2024 Tour de France?"
OLD_DUP = "Who was the 2024 Tour de France champion?"
OLD_PASSAGE = {"id": "t0", "title": "Tour de France", "text": "Tadej Pogacar won the 2024 Tour de France.",
               "source": "tour.txt", "number": 1}


def old_line(seq, id, kind, payload, parent_id=None, status="done", title="t", **extra):  # noqa: A002
    return json.dumps({"id": id, "run_id": "old", "seq": seq, "method": "toc", "kind": kind, "title": title,
                       "parent_id": parent_id, "status": status, "payload": payload, **extra})


OLD_TOC_TRACE = [
    old_line(0, "n1", "expand", {"node": {"question": OLD_AQ, "answer": None, "depth": 0}, "state": "root",
                                 "reason": "", "score": None}, title=OLD_AQ),
    old_line(1, "r2", "retrieve", {"query": OLD_AQ, "passages": [OLD_PASSAGE]}, parent_id="n1"),
    old_line(2, "e3", "expand", {"query": OLD_AQ, "passages": [OLD_PASSAGE],
                                 "candidates": [{"question": OLD_Q24, "answer": "Tadej Pogacar"},
                                                {"question": OLD_DUP, "answer": "Pogacar"}],
                                 "constrained_retry": False}, parent_id="n1", llm_calls=1),
    old_line(3, "n4", "expand", {"node": {"question": OLD_Q24, "answer": "Tadej Pogacar", "depth": 1},
                                 "state": "candidate", "reason": "", "score": None}, parent_id="e3",
             status="running"),
    old_line(4, "s5", "verify", {"keep": True, "score": 0.9, "reason": "score 0.90 ≥ 0.50", "verifier": "evidence",
                                 "evidence": {"passage": {"id": "t0", "title": "Tour de France",
                                                          "text": OLD_PASSAGE["text"]},
                                              "p_true": 0.95, "relevance": 0.85, "sampled": "True"}},
             parent_id="n4", llm_calls=1),
    old_line(5, "n4", "expand", {"node": {"question": OLD_Q24, "answer": "Tadej Pogacar", "depth": 1},
                                 "state": "kept", "reason": "", "score": 0.9}, parent_id="e3"),
    old_line(6, "n6", "expand", {"node": {"question": OLD_DUP, "answer": "Pogacar", "depth": 1},
                                 "state": "candidate", "reason": "", "score": None}, parent_id="e3",
             status="running"),
    old_line(7, "s7", "prune", {"kind": "duplicate", "reason": f"duplicate of “{OLD_Q24}”"}, parent_id="n6"),
    old_line(8, "n6", "expand", {"node": {"question": OLD_DUP, "answer": "Pogacar", "depth": 1},
                                 "state": "pruned", "reason": f"duplicate of “{OLD_Q24}”", "score": None,
                                 "prune_kind": "duplicate"}, parent_id="e3"),
    old_line(9, "n1", "expand", {"node": {"question": OLD_AQ, "answer": None, "depth": 0}, "state": "root",
                                 "reason": "stopped: every node was expanded", "score": None,
                                 "llm_calls_used": 2}, title=OLD_AQ),
    old_line(10, "a8", "answer", {"answer": "Tadej Pogacar won in 2024 [1].", "citations": [1],
                                  "passages": [OLD_PASSAGE], "finish_reason": "stop", "unambiguous": False,
                                  "interpretations": [{"question": OLD_Q24, "answer": "Tadej Pogacar"}]},
             parent_id="n1", llm_calls=1),
]


def test_an_old_untyped_trace_is_read_and_converted(tmp_path):
    from pipeline.trace import load_trace, markdown_report

    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(OLD_TOC_TRACE) + "\n")
    events = list(read_jsonl(path))
    assert [e.kind.value for e in events] == ["node", "retrieve", "expand", "node", "verify", "node", "node",
                                              "prune", "node", "node", "answer"]
    assert all(e.v == 2 for e in events)
    root = events[-2].payload
    assert isinstance(root, NodePayload) and (root.question, root.state, root.depth) == (OLD_AQ, "root", 0)
    assert root.reason == "stopped: every node was expanded" and root.llm_calls_used == 2
    expansion = events[2].payload
    assert expansion.candidates == [QAPair(question=OLD_Q24, answer="Tadej Pogacar"),
                                    QAPair(question=OLD_DUP, answer="Pogacar")]
    assert expansion.passages[0] == PassageRef(**OLD_PASSAGE)
    prune = events[7].payload
    assert isinstance(prune, PrunePayload) and prune.prune_kind == "duplicate" and not prune.undo
    verdict = events[4].payload
    assert isinstance(verdict.evidence, Evidence) and verdict.evidence.passage.id == "t0"
    assert verdict.keep and verdict.evidence.p_true == 0.95 and verdict.verifier == "evidence"

    state = RunState.of(events)
    assert [(n.question, n.state, n.prune_kind) for n in state.payloads(NodePayload, done=False)] == [
        (OLD_AQ, "root", ""), (OLD_Q24, "kept", ""), (OLD_DUP, "pruned", "duplicate")]
    assert [n.kind.value for n in state.notes["n6"]] == ["prune"] and state.children["e3"] == ["n4", "n6"]
    answer = state.answer
    assert isinstance(answer, AnswerPayload) and answer.extras.interpretations == [QAPair(question=OLD_Q24,
                                                                                   answer="Tadej Pogacar")]
    assert state.cited_passages()[0].title == "Tour de France" and state.cost()["llm_calls"] == 3
    assert "[kept]" in markdown_report(load_trace(path))
    # Once read, it is written back in the current format and reads back unchanged.
    write_jsonl(events, tmp_path / "new.jsonl")
    assert list(read_jsonl(tmp_path / "new.jsonl")) == events
    assert all(json.loads(line)["v"] == 2 for line in (tmp_path / "new.jsonl").read_text().splitlines())


def test_an_old_trace_with_a_kind_no_longer_known_fails_naming_the_line(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(OLD_TOC_TRACE[0] + "\n" + old_line(1, "x2", "rerank", {"query": OLD_AQ}) + "\n")
    with pytest.raises(ValueError, match=r"old\.jsonl: line 2 is not a step event"):
        list(read_jsonl(path))


def test_an_unreadable_old_line_says_why(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(old_line(0, "x1", "rerank", {"query": OLD_AQ}) + "\n")
    with pytest.raises(ValueError, match="rerank"):
        list(read_jsonl(path))


# The run service: one way to run a question, for the browser, the CLI and the evaluation.

def test_the_route_event_comes_first_and_says_which_method(library):
    llm = ScriptedLLM(["Emma was published in 1815 [1]."])
    run = RunService().start(RunRequest(question="  When was Emma published? ", method="oner"),
                             context=RunContext(llm=llm, retriever=HybridRetriever([library])))
    events = list(run)
    route = events[0]
    assert route.kind == EventKind.ROUTE and sum(e.kind == EventKind.ROUTE for e in events) == 1
    assert (route.payload.method, route.payload.label, route.payload.structure) == (
        "oner", METHODS["oner"].label, "answer")
    assert route.payload.question == "When was Emma published?" and not route.payload.auto
    assert route.payload.follow_up is None and route.payload.describe() == f"Method: {METHODS['oner'].label}"
    assert events[1].kind == EventKind.RETRIEVE and events[-1].kind == EventKind.ANSWER
    assert {e.method for e in events} == {"oner"} and len({e.run_id for e in events}) == 1 == len({run.id})
    assert run.state.route == route.payload and run.state.answer.answer == "Emma was published in 1815 [1]."
    assert run.state.closed and len(llm.calls) == 1


@pytest.mark.parametrize("question, problem", [
    ("", "Type a question first"),
    (" \n\t ", "Type a question first"),
    ("Why? " * 500, "2,499 characters long; the limit is 2,000"),
    ("x" * 2001, "2,001 characters"),
])
def test_an_empty_or_over_long_question_is_one_error_before_any_model_call(question, problem):
    llm = ScriptedLLM([])
    for method in ("oner", "auto"):
        run = RunService().start(RunRequest(question=question, method=method), context=RunContext(llm=llm))
        events = list(run)
        assert [e.kind for e in events] == [EventKind.ERROR] and problem in events[0].payload.message
        assert run.state.errors() == [events[0].payload.message] and run.state.route is None
    assert llm.calls == []


def test_a_question_at_the_length_limit_is_run():
    llm = ScriptedLLM(["An answer."])
    events = list(RunService().start(RunRequest(question="x" * 2000, method="nor"), context=RunContext(llm=llm)))
    assert events[0].kind == EventKind.ROUTE and events[-1].kind == EventKind.ANSWER and len(llm.calls) == 1


def test_a_follow_up_is_joined_with_the_previous_question():
    conversation = Conversation(asked=["Who directed Jaws?"])
    llm = ScriptedLLM(["Steven Spielberg was born in Cincinnati."])
    run = RunService().start(RunRequest(question="And where was he born?", method="nor"),
                             conversation=conversation, context=RunContext(llm=llm))
    events = list(run)
    route = events[0].payload
    assert route.question == "Who directed Jaws? And where was he born?"
    assert route.follow_up and "Who directed Jaws?" in route.follow_up
    assert "Who directed Jaws? And where was he born?" in llm.calls[0][0][-1]["content"]
    assert conversation.asked == ["Who directed Jaws?", "Who directed Jaws? And where was he born?"]
    # A question that names its own subject is not a follow-up.
    run = RunService().start(RunRequest(question="Who wrote Emma?", method="nor"), conversation=conversation,
                             context=RunContext(llm=ScriptedLLM(["Jane Austen."])))
    route = next(iter(run)).payload
    assert route.question == "Who wrote Emma?" and route.follow_up is None


def test_the_follow_up_note_names_the_previous_question_once():
    run = RunService().start(RunRequest(question="And where was he born?", method="nor"),
                             conversation=Conversation(asked=["Who directed Jaws?"]),
                             context=RunContext(llm=ScriptedLLM(["Cincinnati."])))
    list(run)
    assert run.state.route.follow_up == "Who directed Jaws?"
    assert run.state.route.describe().count("Read as a follow-up") == 1


def test_a_bug_in_a_method_shows_a_reference_and_keeps_its_detail_in_the_log(caplog):
    """The exception's text can hold the operator's paths and addresses: the person sees a reference only."""
    docs = [Document(page_content="Paris is the capital of France.", metadata={"title": "Paris"}, id="p1")]
    from tests.fakes import ScriptedRetriever

    ctx = RunContext(llm=ScriptedLLM([RuntimeError("cannot open /srv/secret/models/x.gguf")]),
                     retriever=ScriptedRetriever(lambda q, k: docs))
    with caplog.at_level("ERROR"):
        events = run_events("oner", "What is the capital of France?", ctx)
    error = events[-1]
    assert error.kind == "error" and "/srv/secret" not in error.payload.message
    reference = error.payload.message.split("reference ")[1][:8]
    assert f"[{reference}]" in caplog.text and "/srv/secret/models/x.gguf" in caplog.text
