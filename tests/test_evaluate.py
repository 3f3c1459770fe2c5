"""The evaluation command end to end with the scripted LLM: results.json, resuming, settings, bad input."""

from __future__ import annotations

import json

import pytest

from pipeline import evaluate, runtime
from pipeline.evaluation.harness import ResultsFile, RunConfig, method_config
from pipeline.methods import METHODS
from tests.fakes import ScriptedLLM, settings_with

ITEMS = [
    {"id": "q1", "dataset": "toy", "question": "Who wrote Emma?", "answers": ["Jane Austen"], "type": "bridge",
     "passages": [{"title": "Emma", "text": "Emma is a novel by Jane Austen.", "supporting": True},
                  {"title": "Dune", "text": "Dune is a novel by Frank Herbert.", "supporting": False}]},
    {"id": "q2", "dataset": "toy", "question": "Who wrote Dune?", "answers": ["Frank Herbert"], "type": "bridge",
     "passages": [{"title": "Dune", "text": "Dune is a novel by Frank Herbert.", "supporting": True},
                  {"title": "Ulysses", "text": "Ulysses is a novel by James Joyce.", "supporting": False}]},
]


@pytest.fixture
def toy(tmp_path, monkeypatch, embeddings):
    data = tmp_path / "toy.jsonl"
    data.write_text("\n".join(json.dumps(i) for i in ITEMS) + "\n")

    def reply(messages, options):
        return "Jane Austen" if "Who wrote Emma?" in messages[-1]["content"] else "Frank Herbert [1]"

    llm = ScriptedLLM(reply)
    monkeypatch.setattr(runtime, "load_chat_model", lambda choice, **kw: llm)
    monkeypatch.setattr(runtime.Runtime, "embeddings", property(lambda self: embeddings))
    return data, llm, tmp_path


def run(data, tmp_path, *extra):
    return evaluate.main(["--data", str(data), "--methods", "nor,oner", "--model", "fake", "--out",
                          str(tmp_path / "results.json"), "--data-dir", str(tmp_path / "store"), *extra])


def test_results_file_and_resume(toy, capsys):
    data, llm, tmp_path = toy
    assert run(data, tmp_path) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["n"] == 2 and results["model"] == "fake" and set(results["methods"]) == {"nor", "oner"}
    oner = results["methods"]["oner"]
    assert oner["metrics"]["em"] == 100.0 and oner["metrics"]["f1"] == 100.0
    assert 0 < oner["metrics"]["support_recall"] <= 100.0
    assert "support_recall" not in results["methods"]["nor"]["metrics"]  # NoR retrieves nothing
    assert oner["cost"]["llm_calls_mean"] == 1.0 and oner["cost"]["wall_s_median"] > 0
    assert {(r["id"], r["method"]) for r in results["items"]} == {(i, m) for i in ("q1", "q2") for m in ("nor", "oner")}
    assert all(r["scores"] and r["cost"] and "prediction" in r for r in results["items"])
    assert "| oner | 2 | 100.0 | 100.0 |" in capsys.readouterr().out
    calls = len(llm.calls)
    assert run(data, tmp_path) == 0 and len(llm.calls) == calls  # resumed: nothing recomputed


def test_short_answers_for_em_datasets(toy):
    data, llm, tmp_path = toy
    run(data, tmp_path, "--limit", "1")
    system = llm.calls[0][0][0]["content"]
    assert "short phrase" in system


def test_ids_run_only_those_items_over_the_whole_files_corpus(toy, capsys):
    data, llm, tmp_path = toy
    assert run(data, tmp_path, "--ids", "q2", "--methods", "oner") == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert [r["id"] for r in results["items"]] == ["q2"]
    assert "Emma is a novel" in llm.calls[0][0][-1]["content"]  # q1's passage: the whole file's corpus
    assert run(data, tmp_path, "--ids", "q2,q9", "--out", str(tmp_path / "other.json")) == 2
    assert "No item with id q9" in capsys.readouterr().err


def test_per_question_setting_uses_only_the_items_passages(toy):
    data, llm, tmp_path = toy
    assert run(data, tmp_path, "--setting", "per-question", "--methods", "oner") == 0
    prompts = [call[0][-1]["content"] for call in llm.calls]
    assert "Ulysses" not in prompts[0] and "Ulysses" in prompts[1]


def test_pooled_setting_retrieves_from_every_evaluation_file_and_records_the_pool(toy, monkeypatch, capsys):
    _, llm, tmp_path = toy
    (tmp_path / "data/eval").mkdir(parents=True)
    (tmp_path / "data/eval-test").mkdir(parents=True)
    mine, other = tmp_path / "data/eval/a.jsonl", tmp_path / "data/eval-test/b.jsonl"
    mine.write_text(json.dumps(ITEMS[0]) + "\n")
    other.write_text(json.dumps(ITEMS[1]) + "\n")
    monkeypatch.chdir(tmp_path)  # the pool's folders are the repository's, relative to where it runs
    assert run(mine, tmp_path, "--methods", "oner", "--out", str(tmp_path / "closed.json")) == 0
    assert "Ulysses" not in llm.calls[-1][0][-1]["content"]  # b's passage: not in a's closed corpus
    assert run(mine, tmp_path, "--setting", "pooled", "--methods", "oner") == 0
    assert "Ulysses" in llm.calls[-1][0][-1]["content"]  # in the pool
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["setting"] == "pooled" and len(results["pool_sha256"]) == 64 and results["n"] == 1
    assert "pool_sha256" not in json.loads((tmp_path / "closed.json").read_text())
    other.write_text(json.dumps(ITEMS[1] | {"id": "q3"}) + "\n")  # another pool: not resumed into this file
    assert run(mine, tmp_path, "--setting", "pooled", "--methods", "oner") == 2
    assert "holds results of another run" in capsys.readouterr().err


def test_a_results_file_of_another_run_is_not_mixed_in(toy, capsys):
    data, llm, tmp_path = toy
    run(data, tmp_path)
    assert run(data, tmp_path, "--top-k", "2") == 2
    assert "holds results of another run" in capsys.readouterr().err


def test_bad_input_is_reported(toy, capsys, tmp_path):
    data, llm, _ = toy
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": 1}\n')
    assert evaluate.main(["--data", str(broken), "--out", str(tmp_path / "r.json")]) == 2
    assert "line 1 is not an evaluation item" in capsys.readouterr().err
    assert run(data, tmp_path, "--methods", "magic") == 2
    assert "Unknown method" in capsys.readouterr().err


CONFIG = RunConfig(data="toy.jsonl", data_sha256="0" * 64, model="fake", setting="closed", top_k=5)


def record(item_id: str, method: str) -> dict:
    return {"id": item_id, "method": method, "question": "q", "prediction": "p", "gold": ["p"],
            "scores": {"em": 1.0}, "cost": {"wall_s": 1.0, "llm_calls": 1, "prompt_tokens": 10,
                                            "completion_tokens": 2, "llm_s": 0.5}}


def test_results_file_refuses_to_resume_with_other_method_settings(tmp_path):
    path = tmp_path / "results.json"
    depth2 = method_config("toc", settings_with(toc={"max_depth": 2}))
    results = ResultsFile(path, CONFIG, "test machine")
    results.use_method("toc", depth2)
    results.add(record("q1", "toc"))
    saved = json.loads(path.read_text())
    assert saved["method_configs"]["toc"]["settings"]["max_depth"] == 2
    assert saved["method_configs"]["toc"]["prompts"] == METHODS["toc"].prompt_versions()

    resumed = ResultsFile(path, CONFIG, "test machine")
    resumed.use_method("toc", method_config("toc", settings_with(toc={"max_depth": 2})))  # the same: resumes
    assert resumed.done("q1", "toc")
    with pytest.raises(ValueError, match="holds results of toc computed with other settings or prompt versions"):
        ResultsFile(path, CONFIG, "test machine").use_method("toc", method_config("toc", settings_with(
            toc={"max_depth": 3})))
    with pytest.raises(ValueError, match="computed with other settings"):  # a shared setting counts too
        ResultsFile(path, CONFIG, "test machine").use_method("toc", method_config("toc", settings_with(
            temperature=0.7, toc={"max_depth": 2})))
    # Another method's settings are no concern of toc's results.
    ResultsFile(path, CONFIG, "test machine").use_method("toc", method_config("toc", settings_with(
        toc={"max_depth": 2}, ircot={"max_steps": 3})))


def test_results_file_makes_its_missing_folder(tmp_path):
    path = tmp_path / "runs" / "new" / "results.json"
    results = ResultsFile(path, CONFIG, "test machine")
    results.add(record("q1", "oner"))
    assert json.loads(path.read_text())["n"] == 1


def test_results_file_accepts_a_new_method_added_to_an_existing_file(tmp_path):
    path = tmp_path / "results.json"
    results = ResultsFile(path, CONFIG, "test machine")
    results.use_method("oner", method_config("oner", settings_with()))
    results.add(record("q1", "oner"))

    resumed = ResultsFile(path, CONFIG, "test machine")
    resumed.use_method("oner", method_config("oner", settings_with()))
    resumed.use_method("ircot", method_config("ircot", settings_with(ircot={"max_steps": 3})))
    assert not resumed.done("q1", "ircot") and resumed.done("q1", "oner")
    resumed.add(record("q1", "ircot"))
    saved = json.loads(path.read_text())
    assert set(saved["method_configs"]) == {"oner", "ircot"} and set(saved["methods"]) == {"oner", "ircot"}
    assert saved["method_configs"]["ircot"]["settings"]["max_steps"] == 3 and saved["n"] == 1


def test_results_file_without_recorded_settings_is_not_resumed(tmp_path):
    path = tmp_path / "results.json"
    ResultsFile(path, CONFIG, "test machine").add(record("q1", "oner"))  # as files written before settings were
    data = json.loads(path.read_text())
    del data["method_configs"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="before settings were recorded"):
        ResultsFile(path, CONFIG, "test machine").use_method("oner", method_config("oner", settings_with()))


def test_the_command_refuses_to_mix_method_settings_and_adds_a_method(toy, capsys):
    data, llm, tmp_path = toy
    assert run(data, tmp_path, "--methods", "ircot", "--ircot-max-steps", "2") == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["method_configs"]["ircot"]["settings"]["max_steps"] == 2
    calls = len(llm.calls)
    assert run(data, tmp_path, "--methods", "ircot", "--ircot-max-steps", "3") == 2
    assert "holds results of ircot computed with other settings" in capsys.readouterr().err
    assert len(llm.calls) == calls  # refused before any model call
    assert run(data, tmp_path, "--methods", "ircot,oner", "--ircot-max-steps", "2") == 0
    assert len(llm.calls) == calls + 2  # ircot resumed, oner run on both items
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["methods"]) == {"ircot", "oner"} and set(results["method_configs"]) == {"ircot", "oner"}


def test_the_evaluation_keeps_its_indexes_out_of_the_persons_collections(toy, monkeypatch, embeddings):
    from corpora.store import CollectionStore

    data, _llm, tmp_path = toy
    app_data = tmp_path / "app-data"
    monkeypatch.setenv("RQA_DATA_DIR", str(app_data))
    assert evaluate.main(["--data", str(data), "--methods", "oner", "--model", "fake", "--out",
                          str(tmp_path / "results.json")]) == 0
    assert (app_data / "evaluation").is_dir()  # the default: beside the person's collections, not among them
    assert CollectionStore(app_data, embeddings).names() == []


def test_plots_draw_a_rerun_method_from_its_latest_run_only(tmp_path):
    from benchmarks.plots import points

    def results(name, date, methods):
        summary = {"metrics": {"f1": 50.0}, "cost": {"n": 50, "wall_s_median": 2.0, "wall_s_p90": 3.0}}
        path = tmp_path / name
        path.write_text(json.dumps({"data": "data/eval/hotpotqa.jsonl", "model": "default", "date": date,
                                    "methods": {m: summary for m in methods}}))
        return path

    old = results("old.json", "2026-11-21 10:00", ["oner", "ircot"])
    new = results("new.json", "2026-11-23 10:00", ["oner"])
    other = tmp_path / "memory.json"
    other.write_text(json.dumps({"rows": []}))  # another benchmark's file: skipped
    listed = tmp_path / "answer-form.json"
    listed.write_text(json.dumps([{"file": str(old), "f1": 50.0}]))  # another benchmark's list: skipped
    drawn = {(row["method"], row["file"]) for row in points([new, old, other, listed])["hotpotqa"]}
    assert drawn == {("oner", str(new)), ("ircot", str(old))}


def test_plots_draw_a_run_in_another_mode_as_a_point_of_its_own(tmp_path):
    from benchmarks.plots import points

    def results(name, date, mode):
        summary = {"metrics": {"f1": 50.0}, "cost": {"n": 50, "wall_s_median": 2.0, "wall_s_p90": 3.0}}
        path = tmp_path / name
        path.write_text(json.dumps({"data": "data/eval/hotpotqa.jsonl", "model": "default", "date": date,
                                    "methods": {"webagent": summary},
                                    "method_configs": {"webagent": {"settings": {"mode": mode}}}}))
        return path

    interactive = results("interactive.json", "2026-11-23 10:00", "interactive")
    pipeline = results("pipeline.json", "2026-11-24 10:00", "pipeline")  # later, yet not a re-run of the other
    variant = results("variant.json", "2026-11-25 10:00", "interactive")  # later still, but not at the defaults
    data = json.loads(variant.read_text())
    data["method_configs"]["webagent"]["settings"]["max_steps"] = 99
    variant.write_text(json.dumps(data))
    drawn = {(row["label"], row["file"]) for row in points([interactive, pipeline, variant])["hotpotqa"]}
    assert drawn == {("webagent (interactive)", str(interactive)), ("webagent (pipeline)", str(pipeline))}


def test_auto_is_compared_with_each_single_method_on_the_same_items(tmp_path, monkeypatch, capsys):
    from benchmarks import auto_vs_single

    def item(i, method, f1, **extra):
        scores = {"em": float(f1 == 1.0), "f1": f1, **({"support_recall": 1.0} if method != "nor" else {})}
        return {"id": str(i), "method": method, "scores": scores, "cost": {"wall_s": 1.0 + i}, **extra}

    auto = tmp_path / "auto.json"
    auto.write_text(json.dumps({"items": [item(0, "auto", 1.0, routed_to="ircot"), item(1, "auto", 0.0, routed_to="toc"),
                                          item(2, "auto", 0.5, routed_to="ircot")]}))
    singles = tmp_path / "singles.json"  # item 2 has no NoR result: left out of every row
    singles.write_text(json.dumps({"items": [item(0, "ircot", 1.0), item(1, "ircot", 1.0), item(2, "ircot", 1.0),
                                             item(0, "nor", 0.0), item(1, "nor", 1.0)]}))
    monkeypatch.setattr("sys.argv", ["auto_vs_single", str(auto), str(singles)])
    auto_vs_single.main()
    out = capsys.readouterr().out
    assert "2 items (1 not in every file, left out); Auto sent 1 to ircot, 1 to toc" in out
    assert "| auto | 2 | 50.0 | 50.0 | 100.0 | 1.5 |" in out
    assert "| ircot (best single) | 2 | 100.0 | 100.0 | 100.0 | 1.5 |" in out
    assert "| nor | 2 | 50.0 | 50.0 | - | 1.5 |" in out
    assert "Auto minus the best single method (ircot) on F1: -50.0" in out


def test_ircot_chains_scores_each_slice_and_the_chains_own_conclusions(tmp_path, monkeypatch, capsys):
    from benchmarks import ircot_chains

    def item(i, method, f1, **extra):
        return {"id": str(i), "method": method, "gold": ["Leeds"], "question": "q",
                "scores": {"em": float(f1 == 1.0), "f1": f1, "support_recall": 0.5},
                "cost": {"wall_s": 10.0 * (i + 1)}, **extra}

    chains = [["A [1].", "So the answer is: Leeds [2]."], ["A [1]."], ["So the answer is: York."]]
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"data": "data/eval/x.jsonl", "items": [
        *(item(i, "oner", 0.0) for i in range(3)),
        *(item(i, "ircot", f, chain=c) for i, (f, c) in enumerate(zip([0.0, 1.0, 1.0], chains)))]}))
    monkeypatch.setattr("sys.argv", ["ircot_chains", str(results), "--slices", "0-1,1-3"])
    ircot_chains.main()
    out = capsys.readouterr().out
    # item 1: the reader was wrong but the chain had concluded right; items 2-3: one chain without a conclusion
    assert "| x | 1-1 | 1 | 0.0 | 0.0 | 50.0 | 0.0 | 0.0 | 50.0 | 100.0 | 1 | 1 | 0 | 10.0 |" in out
    assert "| x | 2-3 | 2 | 0.0 | 0.0 | 50.0 | 100.0 | 100.0 | 50.0 | 0.0 | 1 | 0 | 2 | 25.0 |" in out


def test_plots_leave_out_regression_and_checks_folders(tmp_path):
    from benchmarks.plots import default_files

    for path in ["ircot/hotpotqa-100.json", "regression/asqa.json", "ircot/checks/hotpotqa-nocache.json",
                 "asqa-default.json"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in default_files(tmp_path)] == [
        "asqa-default.json", "ircot/hotpotqa-100.json"]


def test_plots_read_every_committed_results_file():
    """The charts are redrawn from docs/results after each evaluation; a results file the chart code cannot read
    (as list-shaped files once stopped it, unnoticed for a week) fails here rather than at the next redraw."""
    from benchmarks.plots import default_files, points
    from tests.conftest import REPO

    drawn = points(default_files(REPO / "docs" / "results"))
    assert set(drawn) == {"asqa", "hotpotqa", "2wikimultihopqa", "musique"}
    assert all(row["n"] > 0 and row["median_s"] > 0 for rows in drawn.values() for row in rows)


def test_results_file_records_the_backend_and_refuses_to_mix_its_settings(tmp_path):
    path = tmp_path / "results.json"
    cache_on = {"backend": "llama.cpp in-process", "threads": 2, "prompt_cache_mb": 512}
    results = ResultsFile(path, CONFIG, "test machine")
    results.use_backend(cache_on)
    results.add(record("q1", "oner"))
    assert json.loads(path.read_text())["backend"] == cache_on
    ResultsFile(path, CONFIG, "test machine").use_backend(dict(cache_on))  # the same: resumes
    with pytest.raises(ValueError, match="other backend settings .*prompt_cache_mb: 512 there, 0 now"):
        ResultsFile(path, CONFIG, "test machine").use_backend({**cache_on, "prompt_cache_mb": 0})
    # A file written before backends were recorded resumes, and records the backend from then on.
    data = json.loads(path.read_text())
    del data["backend"]
    path.write_text(json.dumps(data))
    resumed = ResultsFile(path, CONFIG, "test machine")
    resumed.use_backend({**cache_on, "prompt_cache_mb": 0})
    resumed.save()
    assert json.loads(path.read_text())["backend"]["prompt_cache_mb"] == 0


def test_the_command_records_the_models_backend(toy):
    data, llm, tmp_path = toy
    assert run(data, tmp_path, "--methods", "oner") == 0
    assert json.loads((tmp_path / "results.json").read_text())["backend"] == {"backend": "ScriptedLLM"}


def test_an_items_warnings_are_recorded_by_title(toy, monkeypatch):
    data, _, tmp_path = toy

    def reply(messages, options):  # a "no" to "Who wrote Emma?", asked again: the name
        return "Jane Austen" if "does not answer this question" in messages[-1]["content"] else "no"

    monkeypatch.setattr(runtime, "load_chat_model", lambda choice, **kw: ScriptedLLM(reply))
    assert run(data, tmp_path, "--methods", "oner", "--limit", "1") == 0
    [record] = json.loads((tmp_path / "results.json").read_text())["items"]
    assert record["prediction"] == "Jane Austen" and record["cost"]["llm_calls"] == 2
    assert record["warnings"] == ["A yes or no to a question asking for a name"]
