"""benchmarks.bridge_answers: a prediction is the answer, an earlier hop's answer, or neither."""

import json

from benchmarks.bridge_answers import group, main

ITEM = {"id": "2hop__1", "answers": ["Helen Pitts Douglass"],
        "question": "Who married the publisher of abolitionist newspaper The North Star?",
        "decomposition": [{"question": "who published the north star", "answer": "Frederick Douglass"},
                          {"question": "#1 >> spouse", "answer": "Helen Pitts Douglass"}]}


def test_a_prediction_is_grouped_as_the_answer_the_bridge_or_neither(tmp_path, capsys):
    assert group(ITEM, "helen pitts douglass.") == "right"
    assert group(ITEM, "Frederick Douglass") == "bridge"
    assert group(ITEM, "Sarah Jane") == group(ITEM, "") == group(ITEM, None) == "other"
    data = tmp_path / "musique.jsonl"
    data.write_text(json.dumps(ITEM) + "\n")
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"items": [
        {"id": "2hop__1", "method": "oner", "prediction": "Frederick Douglass"},
        {"id": "2hop__1", "method": "ircot", "prediction": "Helen Pitts Douglass"},
        {"id": "unknown", "method": "ircot", "prediction": "x"}]}))
    assert main([str(data), str(results)]) == 0
    out = capsys.readouterr().out
    assert f"| {results} | oner | 1 | 0 | 1 | 0 |" in out
    assert f"| {results} | ircot | 1 | 1 | 0 | 0 |" in out
