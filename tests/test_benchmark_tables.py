"""The web agent's benchmark table: the baselines only on the items the agent ran, its own counts, and items left
out of its seconds only."""

from __future__ import annotations

import json

import pytest

from benchmarks.webagent_table import rows_for


def item(i: int, method: str, f1: float, wall: float, **scores) -> dict:
    return {"id": f"q{i}", "method": method, "scores": {"em": float(f1 == 1.0), "f1": f1, "support_recall": 0.5,
                                                        **scores},
            "cost": {"wall_s": wall, "llm_calls": 1, "prompt_tokens": 100, "cached_tokens": 50, "completion_tokens": 10,
                     "llm_s": wall}}


def write(path, items, mode=None):
    configs = {"webagent": {"settings": {"mode": mode}}} if mode else {}
    path.write_text(json.dumps({"data": "data/eval/hotpotqa.jsonl", "items": items, "method_configs": configs}))
    return path


def test_baselines_are_read_on_the_agents_items_and_skipped_seconds_are_the_agents_only(tmp_path):
    counts = {"actions_per_question": 10.0, "queries_per_question": 2.0, "pages_per_question": 3.0,
              "facts_per_question": 4.0, "refused_per_question": 0.0}
    agent = write(tmp_path / "agent.json", [item(0, "webagent", 1.0, 60.0, ended_by_finish=1.0, **counts),
                                            item(1, "webagent", 0.0, 999.0, ended_by_finish=0.0, **counts)])
    baselines = write(tmp_path / "base.json", [item(i, "oner", 1.0 if i == 2 else 0.5, 5.0 + i) for i in range(3)])
    oner, webagent = rows_for([agent], baselines, ["oner"], skip_timing={agent: {"q1", "q0x"}})
    assert oner[:5] == ["hotpotqa", "oner", 2, "0.0", "50.0"]  # item q2 is not the agent's: left out
    assert oner[-2] == "5.5 (n=2)"  # the skip list is the agent's only
    assert webagent[:5] == ["hotpotqa", "webagent", 2, "50.0", "50.0"]
    assert webagent[5:12] == ["50.0", "10.0", "2.0", "3.0", "4.0", "0.0", "50%"]
    assert webagent[-3] == "50%" and webagent[-2] == "60.0 (n=1)"


def test_a_baselines_file_missing_items_is_refused(tmp_path):
    agent = write(tmp_path / "agent.json", [item(0, "webagent", 1.0, 60.0, ended_by_finish=1.0)])
    baselines = write(tmp_path / "base.json", [item(5, "oner", 1.0, 5.0)])
    with pytest.raises(SystemExit, match="holds 0 of the 1 items for oner"):
        rows_for([agent], baselines, ["oner"], skip_timing={})


def test_a_pipeline_run_gets_its_own_labelled_row_and_its_own_skip_list(tmp_path):
    agent = write(tmp_path / "agent.json", [item(0, "webagent", 1.0, 60.0, ended_by_finish=1.0),
                                            item(1, "webagent", 0.0, 80.0, ended_by_finish=0.0)], "interactive")
    pipeline = write(tmp_path / "pipeline.json", [item(1, "webagent", 1.0, 30.0, ended_by_finish=0.0),
                                                  item(0, "webagent", 1.0, 20.0, ended_by_finish=0.0)], "pipeline")
    baselines = write(tmp_path / "base.json", [item(i, "oner", 1.0, 5.0) for i in range(2)])
    rows = rows_for([agent, pipeline], baselines, ["oner"], skip_timing={agent: {"q1"}})
    assert [r[1] for r in rows] == ["oner", "webagent (interactive)", "webagent (pipeline)"]
    assert rows[1][-2] == "60.0 (n=1)" and rows[2][-2] == "25.0 (n=2)"  # the skip list is the agent file's only
    assert rows[1][11] == "50%" and rows[2][11] == "-"  # Finish is an interactive action
    assert rows[2][4] == "100.0"


def test_agent_files_of_one_dev_file_must_hold_the_same_items(tmp_path):
    agent = write(tmp_path / "agent.json", [item(0, "webagent", 1.0, 60.0, ended_by_finish=1.0)])
    other = write(tmp_path / "other.json", [item(1, "webagent", 1.0, 60.0, ended_by_finish=1.0)], "pipeline")
    baselines = write(tmp_path / "base.json", [item(i, "oner", 1.0, 5.0) for i in range(2)])
    with pytest.raises(SystemExit, match="does not hold the same items"):
        rows_for([agent, other], baselines, ["oner"], skip_timing={})


def test_the_command_line_groups_files_by_dev_file_and_reads_skip_lists(tmp_path, monkeypatch, capsys):
    from benchmarks import webagent_table

    agent = write(tmp_path / "agent.json", [item(0, "webagent", 1.0, 60.0, ended_by_finish=1.0),
                                            item(1, "webagent", 1.0, 90.0, ended_by_finish=1.0)])
    baselines = write(tmp_path / "base.json", [item(i, "oner", 1.0, 5.0) for i in range(2)])
    ids = tmp_path / "ids.txt"
    ids.write_text("q1\n")
    monkeypatch.setattr("sys.argv", ["webagent_table", str(agent), "--baselines", str(baselines), "--methods",
                                     "oner", "--skip-timing", f"{agent}={ids}"])
    webagent_table.main()
    assert "60.0 (n=1)" in capsys.readouterr().out
    monkeypatch.setattr("sys.argv", ["webagent_table", str(agent), "--baselines", str(baselines),
                                     "--skip-timing", str(ids)])
    with pytest.raises(SystemExit, match="expected RESULTS=IDS_FILE"):
        webagent_table.main()


def test_compare_results_gives_the_paired_change_with_an_interval_and_counts(tmp_path, capsys, monkeypatch):
    from benchmarks import compare_results

    def answered(i, f1, wall, prediction, pages=2.0):
        record = {**item(i, "ircot", f1, wall), "question": f"question {i}?", "prediction": prediction}
        record["scores"]["pages_per_question"] = pages
        return record

    before = write(tmp_path / "before.json", [answered(i, 0.5, 20.0, "old") for i in range(20)])
    after = write(tmp_path / "after.json", [answered(i, 1.0 if i < 2 else 0.5, 10.0, "new" if i < 2 else "old",
                                                     pages=4.0) for i in range(20)]
                  + [answered(99, 1.0, 1.0, "new")])  # not in BEFORE: left out
    monkeypatch.setattr("sys.argv", ["compare_results", str(before), str(after), "--method", "ircot"])
    compare_results.main()
    out = capsys.readouterr().out
    assert out.startswith("20 items in both; identical predictions: 18 of 20")
    f1 = next(line for line in out.splitlines() if line.startswith("| f1 "))
    cells = [c.strip() for c in f1.strip("|").split("|")]
    assert cells[1:4] == ["20", "50.0", "55.0"]
    low, high = (float(x) for x in cells[4].split("[")[1].rstrip("]").split(","))
    assert cells[4].startswith("+5.0") and low == 0.0 and 5.0 < high <= 15.0  # 2 of 20 items gained 0.5, none lost
    assert cells[5] == "2 / 0"
    assert "| pages_per_question | 20 | 2.0 | 4.0 | +2.0 [+2.0, +2.0] | 20 / 0 |" in out  # a count, not x100
    assert "| median s per question | 20 | 20.0 | 10.0 |" in out
    assert "- question 1?\n  before: 'old'\n  after:  'new'" in out


def test_compare_results_counts_the_items_not_re_run_as_unchanged(tmp_path, capsys, monkeypatch):
    from benchmarks import compare_results

    def answered(i, f1, wall, prediction):
        return {**item(i, "ircot", f1, wall), "question": f"question {i}?", "prediction": prediction}

    before = write(tmp_path / "before.json", [answered(i, 0.5, 20.0, "old") for i in range(10)])
    after = write(tmp_path / "after.json", [answered(i, 1.0, 30.0, "new") for i in (3, 4)])  # only the touched
    monkeypatch.setattr("sys.argv", ["compare_results", str(before), str(after), "--method", "ircot",
                                     "--rest-unchanged"])
    compare_results.main()
    out = capsys.readouterr().out
    assert out.startswith("2 of 10 items re-run; the others count as unchanged\n10 items in both; "
                          "identical predictions: 8 of 10")
    assert "| f1 | 10 | 50.0 | 60.0 | +10.0 [" in out and "| 2 / 0 |" in out
    assert "| median s per question (re-run items) | 2 | 20.0 | 30.0 |" in out

    # The run without the change re-run where the change acted: BEFORE is the short file.
    monkeypatch.setattr("sys.argv", ["compare_results", str(after), str(before), "--method", "ircot",
                                     "--rest-unchanged"])
    compare_results.main()
    out = capsys.readouterr().out
    assert out.startswith("2 of 10 items re-run; the others count as unchanged\n10 items in both; ")
    assert "| f1 | 10 | 60.0 | 50.0 | -10.0 [" in out and "| 0 / 2 |" in out
    assert "| median s per question (re-run items) | 2 | 30.0 | 20.0 |" in out


def test_paired_change_holds_zero_when_gains_and_losses_balance():
    from benchmarks.compare_results import paired_change

    mean, low, high = paired_change([0.0, 1.0] * 10, [1.0, 0.0] * 10)
    assert mean == 0.0 and low < 0.0 < high
    assert paired_change([0.5] * 5, [0.5] * 5) == (0.0, 0.0, 0.0)


def test_compare_results_pools_several_files_pairing_them_in_order(tmp_path, capsys, monkeypatch):
    from benchmarks import compare_results

    def answered(i, f1):
        return {**item(i, "ircot", f1, 10.0), "question": f"q{i}?", "prediction": str(f1)}

    # the same ids in two dev files are two items, each paired with its own file's
    b1, b2 = write(tmp_path / "b1.json", [answered(0, 0.0)]), write(tmp_path / "b2.json", [answered(0, 1.0)])
    a1, a2 = write(tmp_path / "a1.json", [answered(0, 1.0)]), write(tmp_path / "a2.json", [answered(0, 1.0)])
    monkeypatch.setattr("sys.argv", ["compare_results", f"{b1},{b2}", f"{a1},{a2}", "--method", "ircot"])
    compare_results.main()
    out = capsys.readouterr().out
    assert out.startswith("2 items in both; identical predictions: 1 of 2")
    assert "| f1 | 2 | 50.0 | 100.0 | +50.0" in out
    monkeypatch.setattr("sys.argv", ["compare_results", f"{b1},{b2}", str(a1), "--method", "ircot"])
    with pytest.raises(SystemExit):
        compare_results.main()
    assert "as many AFTER files as BEFORE files" in capsys.readouterr().err


def test_compare_results_names_a_file_it_cannot_read(tmp_path, monkeypatch):
    from benchmarks import compare_results

    monkeypatch.setattr("sys.argv", ["compare_results", str(tmp_path / "missing.json"), str(tmp_path / "b.json"),
                                     "--method", "ircot"])
    with pytest.raises(SystemExit, match="cannot read the results file .*missing.json"):
        compare_results.main()


def test_toc_readings_counts_proposed_and_verified_readings_per_item(tmp_path, capsys, monkeypatch):
    from benchmarks import toc_readings

    def node(state, prune_kind="", depth=1):
        return {"question": "q", "answer": "a", "depth": depth, "state": state, "prune_kind": prune_kind}

    trees = [
        [node("kept"), node("kept"), node("pruned", "duplicate")],  # 2 proposed, 2 kept
        [node("kept"), node("pruned", "verification"), node("restored"), node("kept", depth=2)],  # 3 proposed, 1 kept
        [node("pruned", "no-short-answer")],  # a description is no reading
    ]
    results = write(tmp_path / "toc.json", [{**item(i, "toc", 0.0, 1.0), "tree": t} for i, t in enumerate(trees)]
                    + [item(0, "oner", 0.0, 1.0)])
    monkeypatch.setattr("sys.argv", ["toc_readings", str(results)])
    toc_readings.main()
    out = capsys.readouterr().out
    assert "| proposed | 3 | 1 | 0 | 1 | 1 | 67% |" in out
    assert "| kept by verification | 3 | 1 | 1 | 1 | 0 | 33% |" in out
    other = write(tmp_path / "other.json", [item(1, "toc", 0.0, 1.0)])
    monkeypatch.setattr("sys.argv", ["toc_readings", str(results), "--items-of", str(other)])
    toc_readings.main()
    assert "| proposed | 1 | 0 | 0 | 0 | 1 | 100% |" in capsys.readouterr().out
    monkeypatch.setattr("sys.argv", ["toc_readings", str(write(tmp_path / "oner.json", [item(0, "oner", 0, 1)]))])
    with pytest.raises(SystemExit, match="no ToC items"):
        toc_readings.main()


def test_routing_probe_trains_only_on_the_tuning_split_and_labelled_questions_and_lets_cues_decide_first():
    from benchmarks.routing_probe import training_questions, with_cues

    tuning = [("ASQA dev 50-99", ["who sang it"], "toc"), ("HotpotQA dev 50-99", ["which is older, A or B?"], "ircot"),
              ("plain", ["What is the capital of Chile?"], "oner")]
    pairs = training_questions(tuning, {"toc", "oner"})
    assert ("who sang it", "toc") in pairs and ("What is the capital of Chile?", "oner") in pairs
    assert all(m in ("toc", "oner") for _, m in pairs) and len(pairs) > 2  # the labelled file's too, no IRCoT
    assert with_cues("Who was born first, Charles Dickens or Victor Hugo?", "oner") == "ircot"
    assert with_cues("Who won the last World Cup?", "oner") == "toc"
    assert with_cues("What is the capital of Chile?", "toc") == "toc"


def test_disambiguated_questions_ask_a_reading_with_evidence_and_keep_every_passage(tmp_path, monkeypatch, capsys):
    from benchmarks import disambiguated_questions

    def record(i, pairs):
        return {"id": f"q{i}", "question": f"ambiguous {i}?", "answers": ["x"], "qa_pairs": pairs,
                "passages": [{"title": f"t{i}", "text": f"passage {i}"}]}

    no_evidence = {"question": "reading without evidence?", "short_answers": ["a"], "context": "No context provided",
                   "wikipage": None}
    with_evidence = {"question": "reading 1?", "short_answers": ["b"], "context": "It is b.", "wikipage": "B"}
    records = [record(0, [no_evidence]), record(1, [no_evidence, with_evidence]), record(2, [with_evidence])]
    source, out = tmp_path / "asqa.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.setattr("sys.argv", ["disambiguated_questions", str(source), str(out), "--first", "2"])
    disambiguated_questions.main()
    assert "1 disambiguated questions first (use --limit 1)" in capsys.readouterr().out
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in written] == ["q1", "q0", "q2"]  # item 2 is past --first: unchanged
    assert written[0]["question"] == "reading 1?" and written[0]["answers"] == ["b"]
    assert written[0]["qa_pairs"] == [with_evidence] and written[0]["passages"] == records[1]["passages"]
    assert written[1:] == [records[0], records[2]]


def test_compare_results_sets_all_of_autos_items_against_one_method_with_all_routes(tmp_path, capsys, monkeypatch):
    from benchmarks import compare_results

    def routed(i, f1, method):
        return {**item(i, "auto", f1, 10.0), "routed_to": method, "question": f"q{i}?", "prediction": str(f1)}

    single = write(tmp_path / "kgp.json", [{**item(i, "kgp", 1.0, 10.0), "question": f"q{i}?", "prediction": "1.0"}
                                           for i in range(3)])
    auto = write(tmp_path / "auto.json", [routed(0, 1.0, "kgp"), routed(1, 0.0, "ircot"), routed(2, 1.0, "oner")])
    monkeypatch.setattr("sys.argv", ["compare_results", str(single), str(auto), "--method", "kgp",
                                     "--after-method", "auto"])
    compare_results.main()
    assert capsys.readouterr().out.startswith("1 items in both")  # only the item Auto sent to KGP
    monkeypatch.setattr("sys.argv", ["compare_results", str(single), str(auto), "--method", "kgp",
                                     "--after-method", "auto", "--all-routes"])
    compare_results.main()
    out = capsys.readouterr().out
    assert out.startswith("3 items in both") and "| f1 | 3 | 100.0 | 66.7 | -33.3" in out
    monkeypatch.setattr("sys.argv", ["compare_results", str(single), str(auto), "--method", "kgp", "--all-routes"])
    with pytest.raises(SystemExit):
        compare_results.main()
    assert "--all-routes needs --after-method auto" in capsys.readouterr().err


def test_unsourced_names_counts_warnings_on_right_and_wrong_saved_answers(tmp_path, capsys, monkeypatch,
                                                                         embeddings):
    from benchmarks import unsourced_names
    from pipeline import runtime

    passages = [{"title": "Emma", "text": "Emma is a novel by Jane Austen, published in 1815.", "supporting": True}]
    data = tmp_path / "toy.jsonl"
    data.write_text("\n".join(json.dumps({"id": f"q{i}", "dataset": "toy", "question": "Who wrote Emma?",
                                          "answers": ["Jane Austen"], "type": "bridge", "passages": passages})
                              for i in range(3)) + "\n")
    answers = [("Jane Austen", 1.0), ("Charlotte Bronte", 0.0), ("Jane Austen in 1816", 0.8)]
    records = [{"id": f"q{i}", "method": "oner", "question": "Who wrote Emma?", "prediction": p,
                "scores": {"f1": f1}} for i, (p, f1) in enumerate(answers)]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"data": str(data), "setting": "closed", "top_k": 5, "items": records}))
    monkeypatch.setattr(runtime.Runtime, "embeddings", property(lambda self: embeddings))
    monkeypatch.setattr("sys.argv", ["unsourced_names", str(results), "--data-dir", str(tmp_path / "store")])
    unsourced_names.main()
    out = capsys.readouterr().out
    # one wrong answer, warned; two right ones, one warned ("1816" is in no passage)
    assert "| toy | 3 | 1 | 1 (100%) | 2 | 1 (50%) | 50% |" in out
    assert "not in the passages: Charlotte, Bronte" in out and "not in the passages: 1816" in out


def test_cite_by_terms_compares_the_apps_citations_with_the_models_own(tmp_path, capsys, monkeypatch, embeddings):
    from benchmarks import cite_by_terms
    from pipeline import runtime

    passages = [{"title": "Emma", "text": "Emma is a novel by Jane Austen, published in 1815.", "supporting": True},
                {"title": "Persuasion", "text": "Persuasion is a novel by Jane Austen, published in 1817.",
                 "supporting": False}]
    data = tmp_path / "toy.jsonl"
    data.write_text(json.dumps({"id": "q0", "dataset": "toy", "question": "Who wrote Emma?", "answers": ["Jane Austen"],
                                "type": "bridge", "passages": passages}) + "\n")
    prediction = "Emma was published in 1815 [1]. Persuasion was published in 1817 [1]. Austen wrote well [2]."
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"data": str(data), "setting": "closed", "top_k": 5, "items": [
        {"id": "q0", "method": "oner", "question": "Who wrote Emma?", "prediction": prediction, "scores": {}}]}))
    monkeypatch.setattr(runtime.Runtime, "embeddings", property(lambda self: embeddings))
    monkeypatch.setattr("sys.argv", ["cite_by_terms", str(results), "--data-dir", str(tmp_path / "store"),
                                     "--thresholds", "0.6"])
    cite_by_terms.main()
    out = capsys.readouterr().out
    # the passages come back in retrieval order: Emma's first; the three sentences agree, differ, stay uncited
    assert "| 0.60 | 3 | 1 (33%) | 1 (33%) | 1 (33%) |" in out


def test_by_type_compares_each_question_type_with_its_interval(tmp_path, capsys, monkeypatch):
    from benchmarks import by_type

    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps({"id": f"q{i}", "type": "comparison" if i < 4 else "compositional"})
                              for i in range(10)))
    before = write(tmp_path / "before.json", [item(i, "ircot", 0.0, 10.0) for i in range(10)])
    after = write(tmp_path / "after.json", [item(i, "ircot", 1.0 if i < 4 else 0.0, 4.0) for i in range(10)])
    monkeypatch.setattr("sys.argv", ["by_type", str(before), str(after), "--data", str(data), "--method", "ircot"])
    by_type.main()
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")]
                                              for line in capsys.readouterr().out.splitlines()[2:])}
    assert rows["comparison"] == ["4", "0.0", "100.0", "+100.0 [+100.0, +100.0]", "10.0 / 4.0"]
    assert rows["compositional"][:4] == ["6", "0.0", "0.0", "+0.0 [+0.0, +0.0]"]
    assert rows["all"][:3] == ["10", "0.0", "40.0"]


def test_same_answers_lists_every_difference_and_fails_on_a_changed_answer(tmp_path, capsys):
    from benchmarks.same_answers import main as same_answers

    def item(i, prediction, calls=2, walk=("a",)):
        return {"id": f"q{i}", "method": "kgp", "prediction": prediction, "walk": list(walk),
                "cost": {"llm_calls": calls, "completion_tokens": 10}}

    for side in ("before", "after"):
        (tmp_path / side).mkdir()
    (tmp_path / "before/x.json").write_text(json.dumps({"items": [item(0, "Paris"), item(1, "Rome"),
                                                                   item(2, "Oslo")]}))
    (tmp_path / "after/x.json").write_text(json.dumps({"items": [item(0, "Paris"), item(1, "Rome", calls=3),
                                                                  item(2, "Oslo", walk=("b",))]}))
    assert same_answers([str(tmp_path / "before"), str(tmp_path / "after")]) == 0
    out = capsys.readouterr().out
    assert "| x | 3 | 3 | 2 | 2 |" in out
    assert "x q1: not the same calls/tokens" in out and "x q2: not the same record" in out
    (tmp_path / "after/x.json").write_text(json.dumps({"items": [item(0, "Lyon")]}))
    assert same_answers([str(tmp_path / "before"), str(tmp_path / "after")]) == 1
    assert "x q0: not the same answer" in capsys.readouterr().out


def test_ircot_mode_replay_scores_each_question_with_the_mode_its_structure_chooses(tmp_path, capsys, monkeypatch):
    from benchmarks import ircot_mode_replay

    questions = ["Where was the director of film X born?", "Who died first, A or B?", "Who wrote Emma?",
                 "What is the capital of France?"]

    def run(f1s):
        return [dict(item(i, "ircot", f1, 5.0), question=q) for i, (q, f1) in enumerate(zip(questions, f1s))]

    sentences = write(tmp_path / "sentences.json", run([0.0, 0.0, 1.0, 1.0]))
    hops = write(tmp_path / "hops.json", run([1.0, 1.0, 0.0, 0.0]))
    monkeypatch.setattr("sys.argv", ["ircot_mode_replay", str(sentences), str(hops)])
    ircot_mode_replay.main()
    row = [c.strip() for c in capsys.readouterr().out.splitlines()[2].strip("|").split("|")]
    # the two structured questions go hop by hop, the two plain ones keep the sentence chain: every item right
    assert row[1:6] == ["4", "2", "50.0", "50.0", "100.0"]
    assert row[6] == row[7] == "+50.0 [+0.0, +100.0]"


def test_ircot_mode_replay_writes_the_mixture_as_a_results_file(tmp_path, monkeypatch, capsys):
    from benchmarks import ircot_mode_replay

    questions = ["Where was the director of film X born?", "Who wrote Emma?"]
    sentences = write(tmp_path / "s.json", [dict(item(i, "ircot", 0.0, 5.0), question=q, prediction="s")
                                           for i, q in enumerate(questions)])
    hops = write(tmp_path / "h.json", [dict(item(i, "ircot", 1.0, 5.0), question=q, prediction="h")
                                      for i, q in enumerate(questions)])
    out = tmp_path / "mixed.json"
    monkeypatch.setattr("sys.argv", ["ircot_mode_replay", str(sentences), str(hops), "--write", str(out)])
    ircot_mode_replay.main()
    mixed = json.loads(out.read_text())
    assert [r["prediction"] for r in mixed["items"]] == ["h", "s"]
    assert mixed["method_configs"]["ircot"]["settings"]["mode"] == "auto"
    assert mixed["methods"]["ircot"]["metrics"]["f1"] == 50.0  # the mixture's own summary, not the other run's


def test_the_web_agents_mode_mixture_takes_each_item_from_the_run_of_its_mode(tmp_path, monkeypatch, capsys):
    """The web agent's default is read from two runs: the hop run of every item and an interactive run of only
    the items the rule does not send hop by hop (``--ids``); a missing item is named, not skipped."""
    from benchmarks import ircot_mode_replay

    questions = ["Where was the director of film X born?", "Who wrote Emma?", "Who died first, A or B?"]
    hops = write(tmp_path / "h.json", [dict(item(i, "webagent", 1.0, 5.0), question=q, prediction="h")
                                      for i, q in enumerate(questions)], "hops")
    interactive = write(tmp_path / "i.json", [dict(item(1, "webagent", 0.0, 60.0), question=questions[1],
                                                   prediction="i")], "interactive")
    out = tmp_path / "mixed.json"
    monkeypatch.setattr("sys.argv", ["ircot_mode_replay", str(interactive), str(hops), "--method", "webagent",
                                     "--write", str(out)])
    ircot_mode_replay.main()
    printed = capsys.readouterr().out
    assert printed.startswith("| file | n | sent hop by hop | interactive | hops | chosen per question |")
    assert "| i.json | 1 | 0 | 0.0 | 100.0 | 0.0 |" in printed  # the one item both hold, a plain one
    mixed = json.loads(out.read_text())
    assert [(r["id"], r["prediction"]) for r in mixed["items"]] == [("q1", "i"), ("q0", "h"), ("q2", "h")]
    assert mixed["method_configs"]["webagent"]["settings"]["mode"] == "auto"
    monkeypatch.setattr("sys.argv", ["ircot_mode_replay", str(hops), str(interactive), "--method", "webagent",
                                     "--write", str(out)])
    with pytest.raises(SystemExit, match="lacks item q0, which the rule sends hop by hop"):
        ircot_mode_replay.main()


def test_the_steering_table_has_a_row_per_results_file_with_its_split_metric_and_link(tmp_path, capsys):
    from benchmarks.steering import main, summarize

    records = [{"clicks": 2, "before": {"f1": 0.0}, "after": {"f1": 1.0}, "reanswer_s": 2.0, "first_run_s": 20.0},
               {"clicks": 0, "before": {"f1": 0.5}, "after": {"f1": 0.5}, "first_run_s": 6.0}]
    path = tmp_path / "musique-test-kgp-first20.json"
    path.write_text(json.dumps({"data": "data/eval-test/musique.jsonl", "method": "kgp",
                                "summary": summarize(records, "f1")}))
    assert main(["table", str(path)]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.startswith("| MuSiQue test, KGP (drop) | 2 | 1.00 | 1 | F1 25.0 | 75.0 | +50.0 [")
    assert row.endswith("| 2.0 | 20.0 | 0.1 | [musique-test-kgp-first20.json](results/steering/musique-test-kgp-first20.json) |")


def test_the_cheap_verifier_replay_reads_the_readings_own_passage_and_skips_answers_cut_short():
    from benchmarks.cheap_verifier import rebuilt
    from pipeline.evaluation.data import EvalItem

    passages = [{"title": "The Haves and the Have Nots (play)", "text": "The play premiered in 2011 in Atlanta."},
                {"title": "The Haves and the Have Nots (TV series)", "text": "It premiered on May 28, 2013, in 2011's "
                 "wake."}]
    item = EvalItem(id="1", dataset="asqa", question="When did it start?", answers=[], passages=passages)
    own = {"question": "When did it start (The Haves and the Have Nots (TV series))?", "answer": "2011"}
    assert rebuilt(item, own).metadata["title"] == "The Haves and the Have Nots (TV series)"
    untitled = {"question": "When did it start first?", "answer": "2011"}
    assert rebuilt(item, untitled).metadata["title"] == "The Haves and the Have Nots (play)"
    assert rebuilt(item, {**own, "answer": "It premiered on..."}) is None
    assert rebuilt(item, {**own, "answer": "1999"}) is None


def test_the_cheap_verifier_summary_counts_decisions_and_separation():
    from benchmarks.cheap_verifier import summarize

    def row(right, model_p, cheap_p):
        return {"right": right, "relevance": 0.5, "p_true_recorded": model_p,
                "model": {"p_true": model_p, "keep": (model_p + 0.5) / 2 >= 0.6, "seconds": 1.0, "read_tokens": 100},
                "cheap": {"p_true": cheap_p, "keep": (cheap_p + 0.5) / 2 >= 0.6, "seconds": 0.5, "read_tokens": 100}}

    summary = summarize([row(True, 0.9, 0.2), row(True, 0.8, 0.1), row(False, 0.3, 0.15)], 0.6, 2)
    assert summary["same_decision"] == 1 and summary["replayed_p_true_within_0.01_of_recorded"] == 3
    model_line, cheap_line = summary["table"].splitlines()[2:4]
    assert model_line.startswith("| model | 2 | 2/2 | 2/2 | 1.0 | 1.0 |")
    assert cheap_line.startswith("| cheap | 0 | 0/0 | 0/2 | 0.5 | 0.5 |")


def test_the_kgp_reader_replay_summary_pairs_each_walk_before_and_after():
    from benchmarks.kgp_reader import summarize

    def record(before, after, changed, bridges=()):
        out = {"reproduced": True, "bridges": list(bridges), "before": {"f1": before, "support_recall": 0.5},
               "after": {"f1": after, "support_recall": 1.0 if changed else 0.5}}
        return out | ({"reader_s": 2.0} if changed else {})

    summary = summarize([record(0.0, 1.0, True, ["Jan Svěrák"]), record(1.0, 1.0, False), record(0.5, 0.0, True)])
    assert summary["n"] == 3 and summary["readers_changed"] == 2 and summary["with_a_bridge"] == 1
    assert summary["f1"]["before"] == 50.0 and summary["f1"]["after"] == 66.7 and summary["f1"]["change"][0] == 16.7
    assert summary["support_recall"]["change"][0] == 33.3 and summary["reader_s_median"] == 2.0


def test_answer_form_names_the_rule_under_which_an_answer_is_right_in_another_form():
    from benchmarks.answer_form import form_rule

    assert form_rule("How many legs?", "8", ["eight"]) == "number"
    assert form_rule("Which country is the director from?", "France", ["French"]) == "country"
    assert form_rule("Which country?", "Germany", ["East Germany"]) is None  # a state that is gone is another
    assert form_rule("What hedgehog?", "Sonic the Hedgehog", ["Sonic"]) == "says more"
    assert form_rule("Who died first, Ann Lee or Bo Li?", "Ann Lee died before Bo Li", ["Ann Lee"]) is None
    assert form_rule("What genus?", "Cistus is a genus of flowering plants in the rockrose family",
                     ["flowering plants"]) is None  # a sentence, not the answer in another form
    assert form_rule("What coastal area?", "Yellowcraigs", ["Yellowcraig"]) == "spelling"
    assert form_rule("Who?", "Zdenek Sverak", ["Zdeněk Svěrák"]) == "spelling"  # the metric keeps accents
    assert form_rule("Who?", "Jan Svěrák", ["Zdeněk Svěrák"]) is None


def test_the_kgp_reader_replay_is_set_against_another_methods_f1_on_the_same_items():
    from benchmarks.kgp_reader import against

    replay = {"items": [{"id": "a", "before": {"f1": 0.0}, "after": {"f1": 1.0}},
                        {"id": "b", "before": {"f1": 1.0}, "after": {"f1": 1.0}},
                        {"id": "zz", "before": {"f1": 1.0}, "after": {"f1": 1.0}}]}  # not in the results file
    results = {"items": [{"id": "a", "method": "oner", "scores": {"f1": 0.5}},
                         {"id": "b", "method": "oner", "scores": {"f1": 1.0}},
                         {"id": "a", "method": "kgp", "scores": {"f1": 0.0}}]}
    out = against(replay, results, "oner")
    assert out["n"] == 2 and out["oner"] == 75.0 and out["before"][0] == -25.0 and out["after"][0] == 25.0


def test_the_speed_table_pairs_items_and_says_which_targets_are_met(tmp_path, monkeypatch, capsys):
    from benchmarks import speed_table

    def run(walls, cached, f1s):
        return [{**item(i, "toc", f1, wall), "cost": {"wall_s": wall, "llm_calls": 2, "prompt_tokens": 1000,
                                                        "cached_tokens": cached, "completion_tokens": 40}}
                for i, (wall, f1) in enumerate(zip(walls, f1s))]
    before = write(tmp_path / "before.json", run([20.0, 30.0, 40.0, 99.0], 0, [1.0, 0.0, 1.0, 1.0]))
    after = write(tmp_path / "after.json", run([10.0, 12.0, 14.0], 600, [1.0, 1.0, 1.0]))  # q3 not re-run
    monkeypatch.setattr("sys.argv", ["speed_table", f"toc={before},{after}"])
    speed_table.main()
    out = capsys.readouterr().out
    assert "| toc | 3 | 30.0 → 12.0 | 2.50 × |" in out  # only the three shared items count
    assert "| 1000 → 400 | 40 → 40 |" in out  # read anew: prompt less cached
    assert "f1 66.7 → 100.0 (+33.3" in out
    assert "| yes / yes (≤ 15 s, ≥ 1.8 ×) |" in out
    monkeypatch.setattr("sys.argv", ["speed_table", f"toc={before}"])
    with pytest.raises(SystemExit):
        speed_table.main()
    silent = [item(i, "toc", 1.0, 10.0) for i in range(3)]
    for record in silent:
        del record["cost"]["completion_tokens"]
    unrecorded = write(tmp_path / "unrecorded.json", silent)  # no tokens out
    monkeypatch.setattr("sys.argv", ["speed_table", f"toc={before},{unrecorded}"])
    with pytest.raises(SystemExit, match="does not record completion_tokens"):
        speed_table.main()


def test_the_passage_windows_benchmark_counts_kept_words_answers_and_supporting_sentences(tmp_path):
    from benchmarks.passage_windows import measure

    lead = "Saxton Mill was built in 1850 by the Clemens family."
    filler = "It burned down twice and was rebuilt each time from stone quarried nearby."
    fact = "The mill was later owned by Anna Berg."
    row = {"id": "q1", "question": "Who owned Saxton Mill later?", "answers": ["Anna Berg"],
           "supporting_facts": [["Saxton Mill", 2]],
           "passages": [{"title": "Saxton Mill", "text": f"{lead} {filler} {fact}", "supporting": True,
                         "sentences": [lead, filler, fact]},
                        {"title": "Other", "text": "Short text here.", "supporting": False}]}
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(row) + "\n")
    words = len(f"{lead} {filler} {fact}".split()) + 3
    cut, whole = measure(data, 10, [20, 100])
    assert cut == ["20", f"{100 * (10 + 8 + 3) / words:.0f}%", "1/1", "1/1"]  # first and owning sentences
    assert whole == ["100", "100%", "1/1", "1/1"]
    (narrow,) = measure(data, 10, [10])  # the first sentence alone
    assert narrow[2:] == ["0/1", "0/1"]


def test_the_quantization_table_sets_each_types_reading_against_the_bundled_gguf(tmp_path, monkeypatch, capsys):
    import benchmarks.quantization_speed as bench
    import models.registry

    bundled = tmp_path / "default.gguf"
    bundled.write_bytes(b"0" * 2**20)
    made = []

    def quantize(source, kind, out_dir):
        made.append((source, kind, out_dir))
        (target := tmp_path / f"{kind}.gguf").write_bytes(b"0" * 2**21)
        return target

    rates = {"default.gguf": ([100.0, 110.0, 90.0], [30.0]), "q4_0.gguf": ([120.0, 130.0, 125.0], [31.0])}
    monkeypatch.setattr(models.registry, "resolve_model_path", lambda choice: bundled)
    monkeypatch.setattr(bench, "quantize", quantize)
    monkeypatch.setattr(bench, "speeds", lambda path, tokens, repeats, threads: rates[path.name])
    bench.main(["--types", "q4_0"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| q4")]
    assert made == [(bundled, "q4_0", tmp_path / "quantized")]
    assert rows == ["| q4_k_m (bundled) | 1 | 100 / 110 / 90 | 1.00 × | 30.0 |",
                    "| q4_0 | 2 | 120 / 130 / 125 | 1.25 × | 31.0 |"]


def test_the_subject_check_estimate_keeps_moves_or_refuses_a_later_hops_answer_by_the_passages_naming_its_bridge():
    from langchain_core.documents import Document

    from benchmarks.subject_check import KEPT, MOVED, NOT_COMPARABLE, REFUSED, judge, later_hops

    hops = [{"question": "Who performed Green?", "answer": "Steve Hillage", "source": 1},
            {"question": "Who is the spouse of Steve Hillage?", "answer": "Miquette Giraudy", "source": 2},
            {"question": "Where was Miquette Giraudy born?", "answer": None, "source": None}]
    assert [(h["answer"], b) for h, b in later_hops(hops)] == [("Miquette Giraudy", ["Steve Hillage"])]

    about = Document(page_content="Steve Hillage married Miquette Giraudy.", metadata={"title": "Steve Hillage"})
    other = Document(page_content="Miquette Giraudy married a painter.", metadata={"title": "Paris"})
    filler = Document(page_content="Nothing here.", metadata={"title": "Filler"})
    asked = hops[1]

    def retrieving(*docs):
        return lambda question, n: list(docs)[:n]

    assert judge(asked, ["Steve Hillage"], retrieving(filler, about), k=2) == KEPT
    assert judge(asked, ["Steve Hillage"], retrieving(about, other), k=2) == MOVED
    assert judge(asked, ["Steve Hillage"], retrieving(filler, other), k=2) == REFUSED
    assert judge(asked, ["Steve Hillage"], retrieving(other, filler), k=2) == NOT_COMPARABLE
    # a hop asked again of its next passages named a passage among ranks k+1..2k
    assert judge({**asked, "again": True}, ["Steve Hillage"], retrieving(filler, filler, filler, about), k=2) == KEPT


def test_the_subject_check_estimate_names_a_missing_file_before_loading_anything(tmp_path, capsys):
    from benchmarks.subject_check import main

    with pytest.raises(SystemExit) as stop:
        main(["data/eval/musique.jsonl", str(tmp_path / "missing.json")])
    assert stop.value.code == 2
    assert "missing.json" in capsys.readouterr().err


def test_the_unfit_items_are_those_whose_hop_answer_the_check_refuses(tmp_path, capsys):
    from benchmarks.unfit_items import main, unfit_hop

    clemens = [{"question": "Who directed Torchy Blane in Panama?", "answer": "William Clemens"},
               {"question": "Where was William Clemens born?", "answer": "9 February 1933"}]
    assert "is a date" in unfit_hop(clemens)[1]
    assert unfit_hop([clemens[0], {**clemens[1], "answer": "Saginaw, Michigan"}]) is None
    given = [{"question": "Who wrote Turn Me On?", "answer": "Norah Jones"},
             {"question": "Who is the spouse of Norah Jones?", "answer": "Norah Jones"}]
    assert unfit_hop(given)[0] is given[1]  # an earlier answer put into the hop
    assert unfit_hop([{"question": "Is Elko in Michigan?", "answer": "no"}]) is None

    record = {"method": "webagent", "scores": {"f1": 0.0}}
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"items": [{**record, "id": "a", "hops": clemens},
                                             {**record, "id": "b", "hops": clemens[:1]},
                                             {**record, "id": "c", "method": "oner"}]}))
    assert main([str(results)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].endswith("1 of 2 hop-by-hop webagent items with an unfit hop answer") and out[-1] == "a"
