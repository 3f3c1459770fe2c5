"""benchmarks/batch_speed.py's pure parts: the prompts it builds, the speed-up arithmetic and its tables (no server,
no model)."""

from __future__ import annotations

import math

import pytest

from benchmarks.batch_speed import (APP, ONE_BY_ONE, SERVER, TOGETHER, batch_messages, cut_passages, format_tables,
                                    load_items, rag_messages, rate, speedup, summarise)

TEMPLATE = ("You answer from passages.", "Passages:\n<passages>\n{passages}\n</passages>\n\nQuestion: {question}")


def item(i: int, words: int = 30) -> dict:
    return {"id": f"q{i}", "question": f"Question number {i}?",
            "passages": [{"title": f"T{i}-{k}", "text": " ".join(f"w{i}_{k}_{n}" for n in range(words))}
                         for k in range(3)]}


def test_passages_have_exactly_the_asked_words_in_order_and_cycle_when_the_item_is_short():
    passages = cut_passages(item(0, words=10), count=5, words=12)  # 30 words of text for 60 asked
    assert [title for title, _ in passages] == ["T0-0", "T0-1", "T0-2", "T0-0", "T0-1"]
    assert all(len(text.split()) == 12 for _, text in passages)
    assert passages[0][1].split()[:2] == ["w0_0_0", "w0_0_1"]
    third = passages[2][1].split()  # words 24..35 of 30: wraps round after word 29
    assert (third[0], third[5], third[6], third[-1]) == ("w0_2_4", "w0_2_9", "w0_0_0", "w0_0_5")
    assert passages == cut_passages(item(0, words=10), count=5, words=12)  # deterministic


def test_an_item_without_text_is_refused():
    with pytest.raises(ValueError):
        cut_passages({"id": "x", "passages": [{"title": "t", "text": " "}]}, 2, 5)


def test_a_call_starts_with_the_nonce_and_ends_with_the_question():
    messages = rag_messages([("Alpha", "a b c"), ("Beta", "d e")], "Who?", "n0nce", TEMPLATE)
    assert messages[0] == {"role": "system", "content": "Session n0nce.\nYou answer from passages."}
    user = messages[1]["content"]
    assert "[1] Alpha: a b c\n[2] Beta: d e" in user
    assert user.endswith("Question: Who?")


def test_distinct_calls_share_only_the_instructions_and_shared_calls_differ_only_in_the_question():
    items = [item(i) for i in range(4)]
    distinct = batch_messages(items, 4, "distinct", "abc", passages=2, words=5, template=TEMPLATE)
    shared = batch_messages(items, 4, "shared", "abc", passages=2, words=5, template=TEMPLATE)
    assert len(distinct) == len(shared) == 4
    assert len({m[1]["content"] for m in distinct}) == 4
    assert "T1-0" in distinct[1][1]["content"] and "T0-0" not in distinct[1][1]["content"]
    heads = {m[1]["content"].rsplit("Question:", 1)[0] for m in shared}
    assert len(heads) == 1 and "T0-0" in heads.pop()
    assert [m[1]["content"].rsplit("Question: ", 1)[1] for m in shared] == [f"Question number {i}?" for i in range(4)]
    assert all(m[0] == shared[0][0] for m in shared)  # one nonce for the round
    assert len({m[0]["content"] for m in distinct}) == 4  # one each: not even the instructions are shared
    assert all(m[0]["content"].startswith(f"Session abc-{j}.") for j, m in enumerate(distinct))


def test_batches_need_enough_items_and_a_known_kind():
    with pytest.raises(ValueError):
        batch_messages([item(0)], 2, "distinct", "n", passages=1, words=3, template=TEMPLATE)
    with pytest.raises(ValueError):
        batch_messages([item(0)], 1, "mixed", "n", passages=1, words=3, template=TEMPLATE)


def test_the_real_eval_items_make_prompts_of_the_intended_size():
    items = load_items(limit=4)
    calls = batch_messages(items, 4, "distinct", "n", passages=5, words=120)
    words = [len(m[1]["content"].split()) for m in calls]
    assert all(600 < w < 700 for w in words), words  # 5 x 120 passage words, their titles, the question


def test_speedup_and_rates():
    assert speedup(30.0, 20.0) == pytest.approx(1.5)
    assert speedup(10.0, 20.0) == pytest.approx(0.5)  # together slower
    with pytest.raises(ValueError):
        speedup(1.0, 0.0)
    assert rate(96, 4.0) == 24.0
    assert math.isnan(rate(5, 0))


def call(prompt_n, predicted_n=10, prompt_ms=1000.0, predicted_ms=1000.0, cache_n=0):
    return {"wall_s": 0, "prompt_n": prompt_n, "cache_n": cache_n, "prompt_ms": prompt_ms,
            "predicted_n": predicted_n, "predicted_ms": predicted_ms}


def rec(engine, mode, variant, n, repeat, wall, calls):
    return {"engine": engine, "mode": mode, "variant": variant, "n": n, "repeat": repeat, "wall_s": wall,
            "calls": calls}


def test_summary_takes_medians_over_repeats_and_divides_one_after_another_by_together():
    records = []
    for repeat, (app_s, seq_s, par_s) in enumerate([(40, 36, 20), (44, 38, 24), (100, 37, 22)]):
        records += [rec(APP, ONE_BY_ONE, "shared", 2, repeat, app_s, [call(800), call(20, cache_n=780)]),
                    rec(SERVER, ONE_BY_ONE, "shared", 2, repeat, seq_s, [call(800), call(20, cache_n=780)]),
                    rec(SERVER, TOGETHER, "shared", 2, repeat, par_s,
                        [call(800, prompt_ms=4000, predicted_ms=2000), call(800, prompt_ms=4000, predicted_ms=2000)])]
    records.append(rec(SERVER, TOGETHER, "distinct", 1, 0, 10, [call(900)]))
    distinct, shared = summarise(records)  # distinct first, then by N
    assert (distinct["variant"], distinct["n"]) == ("distinct", 1) and "speedup_server" not in distinct
    assert shared["app_seq_s"] == 44 and shared["server_seq_s"] == 37 and shared["server_par_s"] == 22
    assert shared["speedup_server"] == pytest.approx(37 / 22)
    assert shared["speedup_vs_app"] == pytest.approx(44 / 22)
    assert shared["server_par_gen_tps_call"] == pytest.approx(5.0)
    assert shared["server_par_gen_tps_all"] == pytest.approx(20 / 22)
    assert shared["server_par_prompt_tps_call"] == pytest.approx(200.0)
    assert shared["server_seq_prompt_tokens"] == 800  # read + cached, per call
    assert shared["server_seq_prompt_read"] == 820 and shared["server_par_prompt_read"] == 1600


def test_tables_show_a_row_per_batch_and_a_dash_for_what_was_not_measured():
    summary = summarise([rec(SERVER, ONE_BY_ONE, "distinct", 2, 0, 30.0, [call(900), call(900)]),
                         rec(SERVER, TOGETHER, "distinct", 2, 0, 20.0, [call(900), call(900)])])
    text = format_tables(summary)
    first, second = text.split("\n\n")
    assert first.splitlines()[2] == "| distinct | 2 | 900 | - | 30.0 | 20.0 | 1.50 | - |"
    assert len(second.splitlines()) == 4  # header, rule, one row per (engine, calls) measured
    assert f"| distinct | 2 | {SERVER}, {TOGETHER} | 1800 | 900 | 10.0 | 1.0 |" in second
