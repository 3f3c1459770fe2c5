"""Auto answers first with OneR, checks its answer and passages, and goes deeper only on evidence
(``pipeline.auto``). The deeper methods are stand-ins here: these tests are about when and how Auto escalates."""

from __future__ import annotations

import threading
import time

import pytest
from langchain_core.documents import Document

import pipeline.auto as auto
from models.errors import LLMCallError
from pipeline.context import RunContext
from pipeline.events import EventKind, Status
from pipeline.fold import RunState
from pipeline.methods import METHODS
from pipeline.methods.base import MethodSpec
from pipeline.payloads import AnswerPayload, CheckPayload
from pipeline.service import Conversation, RunRequest, RunService
from tests.fakes import ScriptedLLM, ScriptedRetriever, settings_with
from ui.answer import answer_message

EMMA = [Document(page_content="Emma is a novel by Jane Austen, first published in December 1815.",
                 metadata={"title": "Emma (novel)"}, id="emma")]
JAWS = [Document(page_content="Jaws is a 1975 thriller film by the director Steven Spielberg.",
                 metadata={"title": "Jaws (film)"}, id="jaws"),
        Document(page_content="Steven Spielberg was born on December 18, 1946, in Cincinnati, Ohio.",
                 metadata={"title": "Steven Spielberg"}, id="spielberg")]
TRUE, FALSE = {"True": -0.05, "False": -3.0}, {"True": -3.0, "False": -0.05}


def _stand_in(name: str, answer: str = "The deeper answer [1].", fail: Exception | None = None,
              wait: threading.Event | None = None):
    ran: list[str] = []

    def run(question, ctx, tracer, settings):
        ran.append(question)
        if wait is not None:
            while not ctx.cancel.is_set():
                time.sleep(0.01)
            ctx.check_cancelled()
        if fail is not None:
            raise fail
        yield tracer.event(AnswerPayload(answer=answer), "Answer")

    return MethodSpec(name=name, label=f"{name.upper()} stand-in", run=run, structure="tree"), ran


@pytest.fixture
def deeper(monkeypatch):
    """Every deeper method replaced by a stand-in that records its question."""
    runs = {}
    for name in ("toc", "ircot", "webagent", "kgp"):
        spec, ran = _stand_in(name)
        monkeypatch.setitem(METHODS, name, spec)
        runs[name] = ran
    return runs


def _run(question, replies, passages, logprobs=None, cancel=None, **settings):
    llm = ScriptedLLM(replies, logprobs=logprobs)
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: passages),
                     settings=settings_with(**settings))
    run = RunService().start(RunRequest(question=question, method="auto", settings=ctx.settings), context=ctx,
                             cancel=cancel)
    return list(run), run.state, llm


def _check(state: RunState) -> CheckPayload:
    return next(s.payload for s in state.steps.values() if isinstance(s.payload, CheckPayload))


def test_a_supported_single_answer_stands_after_one_check_call(deeper):
    events, state, llm = _run("Who wrote the novel Emma?", ["Emma was written by Jane Austen [1].", "False"], EMMA,
                              logprobs=FALSE)
    assert events[0].kind == EventKind.ROUTE and events[0].payload.method == "oner" and events[0].payload.auto
    assert "answers first with one retrieval" in events[0].payload.describe()
    check = _check(state)
    assert check.deeper is None and not any(s.fired for s in check.signals)
    assert [s.value for s in check.signals if s.name.startswith("P(")] == [0.05]
    assert state.answer.answer == "Emma was written by Jane Austen [1]." and not state.answer.preliminary
    assert sum(e.kind == EventKind.ROUTE for e in events) == 1 and not any(deeper.values())
    # The check continues the answer's conversation: the passages are not read anew.
    answer_messages, check_messages = llm.calls[0][0], llm.calls[1][0]
    assert check_messages[:len(answer_messages)] == answer_messages
    assert check_messages[len(answer_messages)] == {"role": "assistant",
                                                    "content": "Emma was written by Jane Austen [1]."}
    assert llm.calls[1][1].max_tokens == 1 and llm.calls[1][1].grammar and llm.calls[1][1].top_logprobs
    assert state.cost()["llm_calls"] == 2


def test_different_answers_for_different_readings_grow_a_tree(deeper):
    events, state, _ = _run("Who wrote the novel Emma?", ["Jane Austen wrote it [1].", "True"], EMMA, logprobs=TRUE)
    check = _check(state)
    assert check.deeper == "toc" and "different answers for different readings" in check.reason
    routes = [e.payload for e in events if e.kind == EventKind.ROUTE]
    assert [r.method for r in routes] == ["oner", "toc"] and routes[1].escalated_from == METHODS["oner"].label
    assert routes[1].describe().startswith("Auto answered first with OneR (retrieve once), then went deeper with")
    assert deeper["toc"] == ["Who wrote the novel Emma?"]
    assert state.answer.answer == "The deeper answer [1]." and state.route.method == "toc"
    quick = [s.payload for s in state.steps.values() if isinstance(s.payload, AnswerPayload) and s.payload.preliminary]
    assert [q.answer for q in quick] == ["Jane Austen wrote it [1]."]


def test_an_answer_reached_through_another_passage_goes_to_ircot(deeper):
    question = "Where was the director of the film Jaws born?"
    events, state, _ = _run(question, ["Cincinnati", "False"], JAWS, logprobs=FALSE, answer_style="short")
    check = _check(state)
    held = next(s for s in check.signals if s.name.startswith("share of the question"))
    assert held.fired and held.value < 0.6
    assert check.deeper == "ircot" and "reached through another passage" in check.reason
    assert deeper["ircot"] == [question] and not deeper["toc"]


def test_a_long_plain_lookup_is_not_sent_deeper_for_its_length(deeper):
    question = "What year was the novel Emma by Jane Austen first published in its original edition please?"
    assert len(question.split()) >= 13
    _, state, _ = _run(question, ["1815 [1].", "False"], EMMA, logprobs=FALSE)
    assert _check(state).deeper is None and not any(deeper.values())


def test_the_model_saying_the_passages_do_not_answer_goes_to_ircot(deeper):
    _, state, llm = _run("Who wrote the novel Emma?", ["The passages do not say who wrote Emma."], EMMA)
    check = _check(state)
    assert check.deeper == "ircot" and "do not state the answer" in check.reason
    assert len(llm.calls) == 1  # no True/False question once the answer itself says so


def test_newer_facts_with_web_search_on_go_to_the_web_agent(deeper):
    _, state, _ = _run("Who is the current president of the chess federation?", ["No idea."], EMMA, use_web=True)
    check = _check(state)
    assert check.deeper == "webagent" and "the collections do not answer it" in check.reason
    assert deeper["webagent"] == ["Who is the current president of the chess federation?"]


def test_no_passage_about_the_question_abstains_without_going_deeper(deeper):
    _, state, llm = _run("Who is the current president of the chess federation?", [], EMMA)
    assert state.answer.abstained and _check(state).deeper is None and llm.calls == []


def test_auto_deeper_off_keeps_the_quick_answer_without_a_check(deeper):
    events, state, llm = _run("Who wrote the novel Emma?", ["Jane Austen [1]."], EMMA, auto_deeper=False)
    assert not any(e.kind == EventKind.CHECK for e in events) and len(llm.calls) == 1
    assert state.answer.answer == "Jane Austen [1]."


def test_a_failing_deeper_method_keeps_the_quick_answer(deeper, monkeypatch):
    spec, _ = _stand_in("toc", fail=LLMCallError("The model server went away."))
    monkeypatch.setitem(METHODS, "toc", spec)
    _, state, _ = _run("Who wrote the novel Emma?", ["Jane Austen [1].", "True"], EMMA, logprobs=TRUE)
    assert state.answer.answer == "Jane Austen [1]." and state.outcome == "answered"
    assert state.errors() == ["The model server went away."]


def test_stop_during_the_deeper_run_keeps_the_quick_answer_and_shows_it_meanwhile(deeper, monkeypatch):
    started = threading.Event()
    spec, ran = _stand_in("toc", wait=started)
    monkeypatch.setitem(METHODS, "toc", spec)
    cancel = threading.Event()
    llm = ScriptedLLM(["Jane Austen [1].", "True"], logprobs=TRUE)
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: EMMA), settings=settings_with())
    run = RunService().start(RunRequest(question="Who wrote the novel Emma?", method="auto"), context=ctx,
                             cancel=cancel)
    seen = []
    for event in run:
        seen.append(event)
        if event.kind == EventKind.ROUTE and event.payload.escalated_from:
            message = answer_message(run.state, run.id)
            assert "Preliminary answer." in message and "Jane Austen" in message
            assert "went deeper with TOC stand-in" in message
            assert run.state.answer_text == "Jane Austen [1]."
            cancel.set()
    assert ran and run.state.stopped() and run.state.answer.answer == "Jane Austen [1]."
    assert "Preliminary" not in answer_message(run.state, run.id)


def test_the_fold_streams_the_deeper_answer_afresh():
    from pipeline.events import Tracer
    from pipeline.payloads import RoutePayload, TokenPayload

    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(TokenPayload(text="quick"), "Answer", id="a1", status=Status.RUNNING))
    state.add(tracer.event(AnswerPayload(answer="quick", preliminary=True), "Answer", id="a1"))
    assert state.answer is None and state.preliminary.answer == "quick" and state.answer_text == "quick"
    state.add(tracer.event(RoutePayload(method="toc", label="ToC", structure="tree", question="q",
                                        escalated_from="OneR"), "ToC"))
    state.add(tracer.event(TokenPayload(text="deep"), "Answer", id="a9", status=Status.RUNNING))
    assert state.streamed == "deep" and state.answer_text == "deep"
    state.add(tracer.event(AnswerPayload(answer="deep answer"), "Answer", id="a9"))
    assert state.answer.answer == "deep answer" and state.preliminary is None


def test_the_evaluation_records_the_check_and_the_quick_answer(embeddings):
    from pipeline.evaluation.data import EvalItem
    from pipeline.evaluation.harness import run_item, summarize

    item = EvalItem(id="q1", dataset="toy", question="Who wrote Emma?", answers=["Jane Austen"],
                    passages=[{"title": "Emma", "text": "Emma is a novel by Jane Austen.", "supporting": True}])
    docs = [Document(page_content="Emma is a novel by Jane Austen.", metadata={"title": "Emma"},
                     id=item.supporting_ids().pop())]
    ctx = RunContext(llm=ScriptedLLM(["Jane Austen [1]", "False"], logprobs=FALSE),
                     retriever=ScriptedRetriever(lambda q, k: docs), settings=settings_with(answer_style="short"),
                     embeddings=embeddings)
    rec = run_item(RunService(), "auto", item, ctx)
    assert rec["routed_to"] == "oner" and rec["check"]["deeper"] is None and rec["check"]["fired"] == []
    assert rec["quick_answer"] == "Jane Austen [1]" and 0 <= rec["quick_s"] <= rec["cost"]["wall_s"] + 0.001
    assert rec["scores"]["em"] == 1.0 and rec["cost"]["llm_calls"] == 2
    assert summarize([rec])["auto"]["cost"]["routed_to"] == {"oner": 1}


def test_a_follow_up_goes_deeper_with_the_joined_question(deeper):
    llm = ScriptedLLM(["Jane Austen [1].", "True"], logprobs=TRUE)
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: EMMA), settings=settings_with())
    conversation = Conversation(asked=["Who wrote the novel Emma?"])
    list(RunService().start(RunRequest(question="And when was it published?", method="auto"), context=ctx,
                            conversation=conversation))
    assert deeper["toc"] == ["Who wrote the novel Emma? And when was it published?"]


def test_auto_is_not_a_deeper_method_of_itself():
    assert "auto" not in METHODS and auto.AUTO.name == "auto"
