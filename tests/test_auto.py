"""Auto answers first with OneR, checks its answer and passages, and goes deeper only on evidence
(``pipeline.auto``). The deeper methods are stand-ins here: these tests are about when and how Auto escalates."""

from __future__ import annotations

import re
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
WON = [Document(page_content="Argentina won the 2022 FIFA World Cup final against France in Qatar.",
                metadata={"title": "2022 FIFA World Cup"}, id="wc2022"),
       Document(page_content="France won the 2018 FIFA World Cup final against Croatia in Moscow.",
                metadata={"title": "2018 FIFA World Cup"}, id="wc2018")]


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


def _run(question, replies, passages, cancel=None, **settings):
    llm = ScriptedLLM(replies)
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: passages),
                     settings=settings_with(**settings))
    run = RunService().start(RunRequest(question=question, method="auto", settings=ctx.settings), context=ctx,
                             cancel=cancel)
    return list(run), run.state, llm


def _check(state: RunState) -> CheckPayload:
    return next(s.payload for s in state.steps.values() if isinstance(s.payload, CheckPayload))


def test_a_supported_single_answer_stands_without_another_model_call(deeper):
    events, state, llm = _run("Who wrote the novel Emma?", ["Emma was written by Jane Austen [1]."], EMMA)
    assert events[0].kind == EventKind.ROUTE and events[0].payload.method == "oner" and events[0].payload.auto
    assert "answers first with one retrieval" in events[0].payload.describe()
    check = _check(state)
    assert check.deeper is None and not any(s.fired for s in check.signals)
    assert state.answer.answer == "Emma was written by Jane Austen [1]." and not state.answer.preliminary
    assert sum(e.kind == EventKind.ROUTE for e in events) == 1 and not any(deeper.values())
    assert len(llm.calls) == 1 and state.cost()["llm_calls"] == 1


def test_a_question_whose_wording_points_at_several_readings_grows_a_tree(deeper):
    question = "Who won the FIFA World Cup final?"
    events, state, llm = _run(question, ["Argentina won the 2022 final [1]."], WON)
    check = _check(state)
    assert check.deeper == "toc" and "contest held again and again" in check.reason
    routes = [e.payload for e in events if e.kind == EventKind.ROUTE]
    assert [r.method for r in routes] == ["oner", "toc"] and routes[1].escalated_from == METHODS["oner"].label
    assert routes[1].describe().startswith("Auto answered first with OneR (retrieve once), then went deeper with")
    assert deeper["toc"] == [question] and len(llm.calls) == 1
    assert state.answer.answer == "The deeper answer [1]." and state.route.method == "toc"
    quick = [s.payload for s in state.steps.values() if isinstance(s.payload, AnswerPayload) and s.payload.preliminary]
    assert [q.answer for q in quick] == ["Argentina won the 2022 final [1]."]


def test_with_deeper_runs_off_the_check_says_what_would_help_and_the_quick_answer_stands(deeper):
    _, state, _ = _run("Who won the FIFA World Cup final?", ["Argentina won the 2022 final [1]."], WON,
                       auto_deeper=False)
    check = _check(state)
    assert check.deeper is None and "TOC stand-in could help" in check.reason and "deeper runs are off" in check.reason
    assert not any(deeper.values()) and state.answer.answer == "Argentina won the 2022 final [1]."


def test_an_answer_reached_through_another_passage_goes_to_ircot(deeper):
    question = "Where was the director of the film Jaws born?"
    events, state, _ = _run(question, ["Cincinnati"], JAWS, answer_style="short")
    check = _check(state)
    held = next(s for s in check.signals if s.name.startswith("share of the question"))
    assert held.fired and held.value < 0.6
    assert check.deeper == "ircot" and "reached through another passage" in check.reason
    assert deeper["ircot"] == [question] and not deeper["toc"]


def test_an_answer_from_the_subjects_own_passage_still_goes_deeper_for_a_bridge_question(deeper):
    # The film's passage mentions most of the question and names the director, not where he was born: the quick
    # answer read from it ("Jaws" is the wrong kind of answer) must not stand on that coverage.
    question = "Where was the director of the film Jaws born?"
    film = JAWS[:1]
    _, state, _ = _run(question, ["the film Jaws"], film, answer_style="short")
    check = _check(state)
    held = next(s for s in check.signals if s.name.startswith("share of the question"))
    hops = next(s for s in check.signals if s.name == auto.HOPS)
    assert held.value >= 0.7 and not held.fired and hops.fired
    assert check.deeper == "ircot" and "one retrieval does not show each step" in check.reason
    assert deeper["ircot"] == [question]
    _, state, _ = _run(question, ["the film Jaws"], film, answer_style="short", auto_bridge_always=False)
    assert _check(state).deeper is None


def test_a_comparison_whose_answer_passage_holds_the_question_stands(deeper):
    both = [Document(page_content="Jaws (1975) is older than Jurassic Park (1993); both are films by Spielberg.",
                     metadata={"title": "Spielberg films"}, id="both")]
    _, state, _ = _run("Which film came out first, Jaws or Jurassic Park?", ["Jaws"], both, answer_style="short")
    check = _check(state)
    assert check.deeper is None and not any(s.fired for s in check.signals)


def test_a_long_plain_lookup_is_not_sent_deeper_for_its_length(deeper):
    question = "What year was the novel Emma by Jane Austen first published in its original edition please?"
    assert len(question.split()) >= 13
    _, state, _ = _run(question, ["1815 [1]."], EMMA)
    assert _check(state).deeper is None and not any(deeper.values())


def test_the_model_saying_the_passages_do_not_answer_goes_to_ircot(deeper):
    _, state, llm = _run("Who wrote the novel Emma?", ["The passages do not say who wrote Emma."], EMMA)
    check = _check(state)
    assert check.deeper == "ircot" and "do not state the answer" in check.reason
    assert len(llm.calls) == 1


def test_newer_facts_with_web_search_on_go_to_the_web_agent(deeper):
    _, state, _ = _run("Who is the current president of the chess federation?", ["No idea."], EMMA, use_web=True)
    check = _check(state)
    assert check.deeper == "webagent" and "the collections do not answer it" in check.reason
    assert deeper["webagent"] == ["Who is the current president of the chess federation?"]


def test_no_passage_about_the_question_abstains_without_going_deeper(deeper):
    _, state, llm = _run("Who is the current president of the chess federation?", [], EMMA)
    assert state.answer.abstained and _check(state).deeper is None and llm.calls == []


def test_a_failing_deeper_method_keeps_the_quick_answer(deeper, monkeypatch):
    spec, _ = _stand_in("toc", fail=LLMCallError("The model server went away."))
    monkeypatch.setitem(METHODS, "toc", spec)
    _, state, _ = _run("Who won the FIFA World Cup final?", ["Argentina [1]."], WON)
    assert state.answer.answer == "Argentina [1]." and state.outcome == "answered"
    assert state.errors() == ["The model server went away."]


def test_stop_during_the_deeper_run_keeps_the_quick_answer_and_shows_it_meanwhile(deeper, monkeypatch):
    started = threading.Event()
    spec, ran = _stand_in("toc", wait=started)
    monkeypatch.setitem(METHODS, "toc", spec)
    cancel = threading.Event()
    llm = ScriptedLLM(["Argentina [1]."])
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: WON), settings=settings_with())
    run = RunService().start(RunRequest(question="Who won the FIFA World Cup final?", method="auto"), context=ctx,
                             cancel=cancel)
    seen = []
    for event in run:
        seen.append(event)
        if event.kind == EventKind.ROUTE and event.payload.escalated_from:
            message = answer_message(run.state, run.id)
            assert "Preliminary answer." in message and "Argentina" in message
            assert "went deeper with TOC stand-in" in message
            assert re.search(r"\w[.!?] Its answer will replace this one", message)  # its reason ends a sentence
            assert run.state.answer_text == "Argentina [1]."
            cancel.set()
    assert ran and run.state.stopped() and run.state.answer.answer == "Argentina [1]."
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
    ctx = RunContext(llm=ScriptedLLM(["Jane Austen [1]"]),
                     retriever=ScriptedRetriever(lambda q, k: docs), settings=settings_with(answer_style="short"),
                     embeddings=embeddings)
    rec = run_item(RunService(), "auto", item, ctx)
    assert rec["routed_to"] == "oner" and rec["check"]["deeper"] is None and rec["check"]["fired"] == []
    assert rec["quick_answer"] == "Jane Austen [1]" and 0 <= rec["quick_s"] <= rec["cost"]["wall_s"] + 0.001
    assert rec["scores"]["em"] == 1.0 and rec["cost"]["llm_calls"] == 1
    assert summarize([rec])["auto"]["cost"]["routed_to"] == {"oner": 1}


def test_a_follow_up_goes_deeper_with_the_joined_question(deeper):
    llm = ScriptedLLM(["Argentina [1]."])
    ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: WON), settings=settings_with())
    conversation = Conversation(asked=["Tell me about the FIFA World Cup final."])
    list(RunService().start(RunRequest(question="And who won it?", method="auto"), context=ctx,
                            conversation=conversation))
    assert deeper["toc"] == ["Tell me about the FIFA World Cup final. And who won it?"]


def test_auto_is_not_a_deeper_method_of_itself():
    assert "auto" not in METHODS and auto.AUTO.name == "auto"


def test_the_check_replays_from_a_record_with_other_settings():
    from pipeline.auto import HELD, HOPS, NEWER, NO_PASSAGE, READINGS, SAID_NONE, Evidence, decide
    from pipeline.routing import COMPARES

    signals = {NO_PASSAGE: False, SAID_NONE: False, HOPS: COMPARES, HELD: 0.5, READINGS: False,
               NEWER: False}
    evidence = Evidence.from_record(signals)
    everything = set(METHODS)
    assert decide(evidence, settings_with(auto_hop_coverage=0.6), everything).deeper == "ircot"
    assert decide(evidence, settings_with(auto_hop_coverage=0.4), everything).deeper is None
    assert decide(evidence, settings_with(), {"oner", "toc"}).deeper is None  # IRCoT not available
    several = Evidence.from_record({**signals, HOPS: False, READINGS: "it asks about a contest"})
    assert decide(several, settings_with(), everything).deeper == "toc"
    assert decide(several, settings_with(auto_readings=False), everything).deeper is None
    through = Evidence.from_record({**signals, HOPS: "it asks about something described through something else",
                                    HELD: 0.9})
    assert decide(through, settings_with(), everything).deeper == "ircot"
    assert decide(through, settings_with(auto_bridge_always=False), everything).deeper is None


def test_the_replay_scores_each_item_by_the_method_auto_would_run(tmp_path, embeddings):
    import json

    from benchmarks.auto_replay import replay
    from pipeline.auto import HELD, HOPS, NEWER, NO_PASSAGE, SAID_NONE
    from pipeline.routing import COMPARES
    from pipeline.settings import Settings

    def record(item, method, f1, wall, **extra):
        return {"id": item, "method": method, "question": extra.pop("question", "q"), "scores": {"f1": f1},
                "cost": {"wall_s": wall}, **extra}

    check = {"signals": {NO_PASSAGE: False, SAID_NONE: False, HOPS: COMPARES, HELD: 0.3, NEWER: False}}
    plain = {"signals": {**check["signals"], HOPS: False, HELD: 1.0}}
    (tmp_path / "auto.json").write_text(json.dumps({"items": [
        record("a", "auto", 0, 1, check=check, question="Which is older, Emma or Dune?"),
        record("b", "auto", 0, 1, check=plain, question="What is the default weight of a glob?")]}))
    (tmp_path / "single.json").write_text(json.dumps({"items": [
        record("a", "oner", 0.0, 5), record("b", "oner", 1.0, 5), record("a", "ircot", 1.0, 20),
        record("b", "ircot", 0.0, 20)]}))
    table = replay(tmp_path / "auto.json", [tmp_path / "single.json"],
                   [("on", Settings()), ("off", Settings().model_copy(update={"auto_hop_coverage": 0.0}))],
                   embeddings)
    on, off = [line for line in table.splitlines() if line.startswith(("| on", "| off"))]
    assert "ircot 1, oner 1" in on and "| 100.0 |" in on and "| 15.0 |" in on  # median of 25 s and 5 s
    assert "oner 2" in off and "| 50.0 |" in off


def test_the_replay_reads_the_wording_again_for_each_share_of_the_vote_given_to_toc(tmp_path, embeddings):
    import json

    from benchmarks.auto_replay import replay
    from pipeline.auto import HELD, HOPS, NEWER, NO_PASSAGE, SAID_NONE
    from pipeline.settings import Settings

    question = "Who founded the Ford Motor Company?"  # the labelled questions give ToC 36% of the ToC+OneR vote
    check = {"signals": {NO_PASSAGE: False, SAID_NONE: False, HOPS: False, HELD: 1.0, NEWER: False}}
    (tmp_path / "auto.json").write_text(json.dumps({"items": [
        {"id": "a", "method": "auto", "question": question, "scores": {"str_em": 0.0}, "cost": {"wall_s": 1},
         "check": check}]}))
    (tmp_path / "single.json").write_text(json.dumps({"items": [
        {"id": "a", "method": m, "question": question, "scores": {"str_em": s}, "cost": {"wall_s": 5}}
        for m, s in (("oner", 0.0), ("toc", 1.0))]}))
    table = replay(tmp_path / "auto.json", [tmp_path / "single.json"], [("s", Settings())], embeddings,
                   toc_shares=(0.4, 0.3))
    at_40, at_30 = [line for line in table.splitlines() if line.startswith("| s,")]
    assert "40% of the vote" in at_40 and "| oner 1 |" in at_40
    assert "30% of the vote" in at_30 and "| toc 1 |" in at_30
