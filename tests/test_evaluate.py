"""The evaluation command end to end with the scripted LLM: results.json, resuming, settings, bad input."""

from __future__ import annotations

import json

import pytest

from pipeline import evaluate, runtime
from tests.fakes import ScriptedLLM

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


def test_per_question_setting_uses_only_the_items_passages(toy):
    data, llm, tmp_path = toy
    assert run(data, tmp_path, "--setting", "per-question", "--methods", "oner") == 0
    prompts = [call[0][-1]["content"] for call in llm.calls]
    assert "Ulysses" not in prompts[0] and "Ulysses" in prompts[1]


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
