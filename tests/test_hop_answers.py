"""benchmarks.hop_answers: a hop counts as held only when its own supporting passage holds its gold answer."""

import json

from benchmarks.hop_answers import held_hops, main

ITEM = {"id": "2hop__1", "answers": ["Lana Wood"],
        "question": "Who is the sibling of the actress that played the little girl in Miracle on 34th Street?",
        "decomposition": [
            {"question": "who played the little girl", "answer": "Natalie Wood", "paragraph_support_idx": 0},
            {"question": "#1 >> sibling", "answer": "Lana Wood", "paragraph_support_idx": 1}],
        "passages": [{"idx": 0, "title": "Miracle on 34th Street", "text": "It stars Maureen O'Hara and Natalie Wood."},
                     {"idx": 1, "title": "Five Finger Exercise", "text": "Natalie Wood's sister starred in it."}]}


def test_a_hop_is_held_only_by_its_own_supporting_passage(tmp_path, capsys):
    assert held_hops(ITEM) == [True, False]
    path = tmp_path / "musique.jsonl"
    path.write_text(json.dumps(ITEM) + "\n" + json.dumps({"id": "plain", "question": "q", "answers": ["a"]}) + "\n")
    assert main([str(path)]) == 0
    assert "| 1 | 2 | 1 (50.0%) | 0 |" in capsys.readouterr().out
