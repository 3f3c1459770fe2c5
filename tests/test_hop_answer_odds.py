"""benchmarks.hop_answer_odds: each traced hop asked again, its odds of answering set against what it found."""

import json
import math

from benchmarks.hop_answer_odds import hop_rows
from tests.fakes import ScriptedLLM

ITEM = {"id": "2hop__1_2", "question": "Where was the director of Torchy Blane in Panama born?", "answers": ["Saginaw"],
        "decomposition": [{"question": "who directed it", "answer": "William Clemens"},
                          {"question": "where was #1 born", "answer": "Saginaw"}]}
PASSAGE = {"id": "p1", "title": "William Clemens", "text": "William Clemens was born in Saginaw, Michigan.",
           "number": 1}


def hop(question, answer, found):
    return {"kind": "subquestion", "status": "done", "run_id": "ircot-2hop__1_2",
            "payload": {"question": question, "answer": answer, "found": found, "passages": [PASSAGE]}}


def test_each_hop_gets_its_odds_and_whether_its_passages_hold_a_gold_answer(tmp_path):
    data = tmp_path / "musique.jsonl"
    data.write_text(json.dumps(ITEM) + "\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    events = [hop("Who directed Torchy Blane in Panama?", "William Clemens", True),
              hop("Where was William Clemens born?", "", False)]
    (traces / "trace-ircot-2hop__1_2.jsonl").write_text("\n".join(json.dumps(e) for e in events))
    llm = ScriptedLLM(lambda messages, options: "not found", logprobs={"[": math.log(0.3), "not": math.log(0.6)})
    rows = hop_rows(data, [traces], llm)
    assert [(r["found"], r["right"]) for r in rows] == [(True, True), (False, False)]
    # the second sub-question names William Clemens, so only Saginaw counts as a gold answer its passage holds
    assert [r["held"] for r in rows] == [["William Clemens", "Saginaw"], ["Saginaw"]]
    assert all(r["odds"] == round(0.3 / 0.9, 3) for r in rows)
    assert all(options.top_logprobs > 0 for _, options in llm.calls)
