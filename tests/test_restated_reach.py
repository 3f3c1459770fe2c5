"""benchmarks.restated_reach: which questions reach IRCoT's re-ask of a restated plan, from the first plan only."""

from __future__ import annotations

from benchmarks.restated_reach import hop_by_hop, main, re_asked
from pipeline.methods.ircot.chain import IRCoTSettings
from tests.fakes import ScriptedLLM

NESTED = "Where was the director of film Torchy Blane In Panama born?"


def planner(first: str) -> ScriptedLLM:
    return ScriptedLLM(lambda messages, options: first)


def test_a_restated_first_plan_reaches_the_re_ask_with_one_call_made():
    llm = planner(f"1. {NESTED}\nAnswer: #1")
    assert re_asked(NESTED, llm, IRCoTSettings())
    assert len(llm.calls) == 1  # the re-ask itself is never made


def test_a_split_first_plan_or_the_re_ask_off_does_not_reach_it():
    split = planner("1. Who directed Torchy Blane in Panama?\n2. Where was #1 born?\nAnswer: #2")
    assert not re_asked(NESTED, split, IRCoTSettings())
    assert not re_asked(NESTED, planner(f"1. {NESTED}\nAnswer: #1"), IRCoTSettings(ask_again_restated=False))


def test_the_route_is_ircots():
    assert hop_by_hop(NESTED, IRCoTSettings())
    assert not hop_by_hop("When was the Eiffel Tower completed?", IRCoTSettings())
    assert hop_by_hop("When was the Eiffel Tower completed?", IRCoTSettings(mode="hops"))


def test_a_missing_data_file_is_named_before_any_model_loads(tmp_path, capsys):
    assert main([str(tmp_path / "nope.jsonl")]) == 2
    assert "no such data file" in capsys.readouterr().err
