"""The example questions under the question box (corpora/demo/examples.yaml): each names a method of the app and a
gold answer that a demo passage holds; and, with the default model, each is answered by its method with its gold
answer and a citation of a passage that holds it.

The model check is for the machine's quiet hours (about 5 minutes with the default model): it runs only when
asked for by its marker,

    .venv/bin/python -m pytest tests/test_examples.py -m default_model

and ``RQA_EXAMPLES_MODEL=fast`` runs the same check with the fast model (weaker: a candidate check only).
"""

from __future__ import annotations

import os

import pytest

from corpora.demo import DEMO_COLLECTION, demo_passages
from corpora.demo_examples import DemoExample, demo_examples, holds
from pipeline.methods import METHODS


def cited_texts(state) -> list[str]:
    return [p.text for p in state.cited_passages()]


def test_every_example_has_a_known_method_and_a_gold_answer_some_demo_passage_holds():
    examples = demo_examples()
    passages = [doc.page_content for doc in demo_passages()]
    assert {"toc", "ircot"} <= {e.method for e in examples}  # an ambiguous and a multi-hop one at least
    for example in examples:
        assert example.method in METHODS, example
        assert any(holds(text, example.gold) for text in passages), example.question
    assert len({e.question for e in examples}) == len(examples)


def test_the_check_reads_whole_words_after_normalisation():
    assert holds("He was born in Saginaw, Michigan.", ("Saginaw",))
    assert holds("H. H. Asquith led the government.", ("Asquith", "Lloyd George"))
    assert not holds("Rushmore is a mountain.", ("Rush",))


def test_the_picker_offers_each_multi_hop_method_the_dev_items_its_saved_runs_answered_and_oner_did_not():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from pick_examples import candidates

    webagent, kgp = candidates("webagent"), candidates("kgp")
    assert webagent and kgp
    assert all("web agent hop by hop 100" in c["source"] and "webagent/hops" in c["source"] for c in webagent)
    assert all("IRCoT 100" in c["source"] for c in kgp)
    assert all(" vs OneR 100 " not in c["source"] for c in webagent + kgp)
    # the examples' own web agent item is one of them
    shown = [e.question for e in demo_examples() if e.method == "webagent"]
    assert set(shown) & {c["question"] for c in webagent}


@pytest.fixture(scope="module")
def selected(request):
    """Skips unless the model check was asked for (before the demo corpus or a model is touched)."""
    if "default_model" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("runs the default model for minutes: select it with -m default_model")


@pytest.fixture(scope="module")
def service(selected, demo_data_dir, embeddings):
    from pipeline.runtime import Runtime, RuntimeConfig
    from pipeline.service import RunService

    runtime = Runtime(RuntimeConfig(data_dir=demo_data_dir, model=os.environ.get("RQA_EXAMPLES_MODEL", "default")),
                      embeddings=embeddings)
    yield RunService.for_runtime(runtime)
    runtime.close()


@pytest.mark.default_model
@pytest.mark.parametrize("example", demo_examples(), ids=lambda e: f"{e.method}-{e.question[:40]}")
def test_an_example_is_answered_citing_a_passage_that_holds_its_gold_answer(example: DemoExample, service):
    from pipeline.service import RunRequest

    run = service.start(RunRequest(question=example.question, method=example.method,
                                   collections=(DEMO_COLLECTION,)))
    events = list(run)
    state = run.state
    assert not state.errors(), state.errors()
    assert state.route.method == example.method and len(events) > 2
    cited = cited_texts(state)
    assert holds(state.answer_text, example.gold), state.answer_text  # not an abstention that cites the gold
    assert any(holds(text, example.gold) for text in cited), (state.answer_text, [t[:120] for t in cited])
