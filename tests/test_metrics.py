"""Metrics against hand-computed cases, normalisation edge cases, and gold / wrong predictions on real items."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import metrics as m
from pipeline.evaluation.data import load_items
from pipeline.evaluation.harness import score

EVAL = Path(__file__).resolve().parent.parent / "data" / "eval"


@pytest.mark.parametrize("text, expected", [
    ("The  Quick, brown fox!", "quick brown fox"),
    ("An apple a day", "apple day"),
    ("Theater and anthem", "theater and anthem"),  # articles only as whole words
    ("  U.S.A.  ", "usa"),
    ("", ""),
])
def test_normalize(text, expected):
    assert m.normalize_answer(text) == expected


def test_exact_match_and_f1_by_hand():
    assert m.exact_match("the Eiffel Tower", "Eiffel tower.") == 1.0
    assert m.exact_match("Eiffel", "Eiffel Tower") == 0.0
    # pred {eiffel, tower, in, paris} vs gold {eiffel, tower}: P = 2/4, R = 2/2, F1 = 2/3
    assert m.f1("Eiffel Tower in Paris", "the Eiffel Tower") == pytest.approx(2 / 3)
    # repeated tokens count once per match: pred "cat cat" vs "cat": P = 1/2, R = 1
    assert m.f1("the cat the cat", "cat") == pytest.approx(2 / 3)
    assert m.f1("dog", "cat") == 0.0


def test_yes_no_answers_need_an_exact_match():
    assert m.f1("yes", "no") == 0.0
    assert m.f1("yes it is", "yes") == 0.0
    assert m.f1("Yes.", "yes") == 1.0


def test_best_over_aliases_and_citations():
    assert m.best_over_aliases(m.exact_match, "NYC", ["New York City", "NYC"]) == 1.0
    assert m.strip_citations("Paris [1] is big [12].") == "Paris is big ."
    assert m.exact_match(m.strip_citations("Paris [2]"), "Paris") == 1.0


def test_str_em_by_hand():
    pairs = [{"short_answers": ["May 28, 2013"]}, {"short_answers": ["2011", "in 2011"]},
             {"short_answers": ["2017"]}]
    assert m.str_em("It began on May 28, 2013; the play dates from 2011.", pairs) == pytest.approx(2 / 3)
    assert m.str_em("nothing", pairs) == 0.0 and m.str_em("x", []) == 0.0


def test_rouge_l_by_hand():
    # LCS of "the cat sat on the mat" and "the cat lay on the mat" is 5 of 6 tokens: P = R = F = 5/6.
    assert m.rouge_l("The cat lay on the mat.", ["The cat sat on the mat."]) == pytest.approx(5 / 6)
    assert m.rouge_l("Same text here.", ["Other words.", "Same text here."]) == pytest.approx(1.0)
    assert m.rouge_l("", ["x"]) == 0.0


def test_geometric_mean_and_recall():
    assert m.geometric_mean(0.25, 0.36) == pytest.approx(0.3)
    assert m.recall({"a", "b"}, {"a", "c"}) == 0.5 and m.recall({"a"}, set()) is None


@pytest.mark.parametrize("name", ["hotpotqa", "2wikimultihopqa", "musique"])
def test_gold_scores_100_and_wrong_scores_0_on_real_items(name):
    for item in load_items(EVAL / f"{name}.jsonl", limit=10):
        assert score(item, item.answers[0], None)["em"] == 1.0
        assert score(item, item.answers[0], None)["f1"] == 1.0
        wrong = score(item, "zzyzx quantum marmalade", None)
        assert wrong["em"] == 0.0 and wrong["f1"] == 0.0
        assert score(item, "", item.supporting_ids())["support_recall"] == 1.0
        assert score(item, "", set())["support_recall"] == 0.0
        assert "support_recall" not in score(item, "", None)  # no retrieval step: no recall


def test_asqa_gold_and_wrong():
    for item in load_items(EVAL / "asqa.jsonl", limit=10):
        all_short = " ; ".join(a for pair in item.qa_pairs for a in pair["short_answers"])
        assert score(item, all_short, None)["str_em"] == 1.0
        assert score(item, item.long_answers[0], None)["rouge_l"] == pytest.approx(1.0)
        wrong = score(item, "zzyzx quantum marmalade", None)
        assert wrong["str_em"] == 0.0 and wrong["rouge_l"] == 0.0 and wrong["str_em_rouge_l_geomean"] == 0.0
