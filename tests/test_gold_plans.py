"""benchmarks.gold_plans: MuSiQue's gold decompositions as IRCoT plans, the plan call answered with them and no
other call touched."""

from __future__ import annotations

import json
import threading

from benchmarks.gold_plans import GivenPlan, chain_end, gold_hops_found, gold_plan, hop_question, hop_reading, main
from models.cancel import CancellableModel
from pipeline.events import EventKind
from pipeline.methods.ircot.plan import parse_plan
from tests.fakes import ScriptedLLM
from tests.test_hops import answer_of, done, run


def test_wikidata_hops_are_worded_as_questions_and_others_kept_as_written():
    assert hop_question("Mark Day >> place of birth") == "Where was Mark Day born?"
    assert hop_question("#1 >> spouse") == "Who is the spouse of #1?"
    assert hop_question("Study in Brown >> record label") == "What is the record label of Study in Brown?"
    assert hop_question("who played thelma in the movie thelma and louise") == \
        "Who played thelma in the movie thelma and louise?"
    assert hop_question("What company is #1  part of? ") == "What company is #1 part of?"


def test_a_gold_decomposition_is_a_plan_ircot_can_follow():
    plan = parse_plan(gold_plan([{"question": "No Escape >> cast member"}, {"question": "#1 >> spouse"}]))
    assert plan.questions == ("Who is the cast member of No Escape?", "Who is the spouse of #1?")
    assert plan.answer == 2


def test_only_the_plan_call_is_answered_with_the_gold_plan():
    model = ScriptedLLM(lambda messages, options: {
        "Who directed Torchy Blane in Panama?": "[1] William Clemens",
        "Where was William Clemens born?": "[1] Saginaw, Michigan",
    }.get(messages[-1]["content"].rsplit("Question:", 1)[-1].strip(), "MODEL PLAN OR READER"))
    given = GivenPlan(model, "1. Who directed Torchy Blane in Panama?\n2. Where was #1 born?\nAnswer: #2")
    # as the run service runs it: every call through the run's Stop wrapper, which streams
    events, _ = run(CancellableModel(given, threading.Event()), "Where was the director of film Torchy Blane In "
                    "Panama born?")
    assert given.planned == 1
    assert [h.payload.question for h in done(events, EventKind.SUBQUESTION)] == \
        ["Who directed Torchy Blane in Panama?", "Where was William Clemens born?"]
    assert answer_of(events).answer == "Saginaw, Michigan"
    assert not any(m[0]["content"].startswith("You split a question") for m, _ in model.calls)


def test_a_missing_data_file_is_named_before_any_model_loads(tmp_path, capsys):
    assert main([str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out.json")]) == 2
    assert "no such data file" in capsys.readouterr().err


def test_the_summary_counts_gold_hop_answers_found_and_how_chains_ended():
    steps = [{"question": "No Escape >> cast member", "answer": "Valerie Hobson"},
             {"question": "#1 >> spouse", "answer": "John Profumo"}]
    stopped = {"hops": [{"answer": "Valerie Hobson"}, {"answer": None}]}
    assert chain_end(stopped) == "stopped at a hop not found"
    assert chain_end({"hops": []}) == "sentence chain"
    assert chain_end({"hops": [{"answer": "Valerie Hobson"}, {"answer": "Profumo"}]}) == "every hop answered"
    assert gold_hops_found(stopped, steps) == 1
    assert gold_hops_found({"hops": [{"answer": "Hobson"}, {"answer": "John Profumo"}]}, steps) == 2
    assert gold_hops_found({"hops": [{"answer": "Edmund Gwenn"}]}, steps) == 0


def test_hop_reading_counts_each_hop_of_a_right_chain_by_passage_found_and_answer(tmp_path):
    rows = {"x1": {"decomposition": [{"answer": "Valerie Hobson", "paragraph_support_idx": 0},
                                     {"answer": "John Profumo", "paragraph_support_idx": 1}],
                   "passages": [{"title": "No Escape"}, {"title": "Valerie Hobson"}]}}

    def hop(step, answer, titles):
        return json.dumps({"kind": "subquestion", "status": "done",
                           "payload": {"step": step, "answer": answer, "passages": [{"title": t} for t in titles]}})

    (tmp_path / "trace-ircot-x1.jsonl").write_text("\n".join([
        hop(1, "Valerie Hobson", ["No Escape"]), hop(2, "", ["Other"]), hop(2, "", ["Valerie Hobson"])]))
    table = hop_reading(rows, tmp_path)
    assert "| 1 | yes | 1 | 0 | 0 |" in table
    assert "| 2 | yes | 0 | 0 | 1 |" in table  # the hop asked again: its last asking counts
    assert "| 2 | no |" not in table
