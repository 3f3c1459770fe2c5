"""The reasoning view, the answer message and traces, from events alone (no browser, no model)."""

from __future__ import annotations

import re
from html import unescape

import pytest

from pipeline.events import Status, Tracer
from pipeline.fold import RunState
from pipeline.payloads import (AnswerPayload, Evidence, HopPayload, NodePayload, PassageRef, RetrievePayload,
                               RoutePayload, TokenPayload, VerifyPayload, WarningPayload)
from pipeline.trace import load_trace, markdown_report, save_trace
from ui.answer import answer_message, last_user_text
from pipeline.escaping import BIDI_CONTROLS, esc, md_block, md_safe, plain
from ui.view import render

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def passage(n, text="Some text.", **extra):
    return PassageRef(number=n, id=f"p{n}", title=f"Doc {n}", text=text, source="notes.txt", **extra)


def chain_run():
    tracer = Tracer("ircot", "run1")
    events = [tracer.event(RoutePayload(method="ircot", label="IRCoT", structure="chain",
                                        question="What is the capital?", reason="it chains facts", auto=True),
                           "IRCoT"),
              tracer.event(RetrievePayload(query="What is the capital?"), "Retrieve: q", id="r1",
                           status=Status.RUNNING),
              tracer.event(RetrievePayload(query="What is the capital?", passages=[passage(1)]), "Retrieve: q",
                           id="r1")]
    parent = "r1"
    for step in (1, 2):
        events.append(tracer.event(HopPayload(step=step, sentence=f"Fact {step} [1].", query=f"Fact {step}",
                                              passages=[passage(step + 1)]),
                                   f"Step {step}", id=f"h{step}", parent_id=parent, llm_calls=1, prompt_tokens=10,
                                   completion_tokens=5))
        parent = f"h{step}"
    events.append(tracer.event(TokenPayload(text="Paris "), "Answer", id="a1", parent_id=parent,
                               status=Status.RUNNING))
    events.append(tracer.event(AnswerPayload(answer="Paris [1] and [9].", citations=[1],
                                             passages=[passage(1, "Paris is the capital.")]),
                               "Answer", id="a1", parent_id=parent))
    return events


def folded(events) -> RunState:
    return RunState.of(events)


def test_text_from_passages_titles_and_answers_is_escaped():
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(RetrievePayload(query=EVIL, passages=[
        PassageRef(number=1, title=EVIL, text=EVIL, url="javascript:alert(3)")]), EVIL, id="r1"))
    state.add(tracer.event(AnswerPayload(answer=EVIL + " [1]", citations=[1],
                                         passages=[PassageRef(number=1, title=EVIL, text=EVIL)]), "Answer", id="a1"))
    for html in (render(state, header=EVIL), answer_message(state, "run")):
        assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
        # urls are shown, never made into links: the only links are the answer's own citations
        assert all(href.startswith("#cite-") for href in re.findall(r'href="([^"]*)"', html))
    assert "href=" not in render(state, header=EVIL)


def test_replayed_traces_cannot_inject_markup_through_titles_or_numbers(tmp_path):
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(WarningPayload(message="something else"), EVIL))
    state.add(tracer.event(AnswerPayload(answer="See [1].", citations=[1], passages=[passage(1)]), "Answer",
                           id="a1"))
    page, message = render(state), answer_message(state, "run")
    assert "&lt;script&gt;" in page  # the warning's title, shown as text
    for html in (page, message):
        assert "<img" not in html and "<script" not in html
    assert message.count('class="cite"') == 1
    # A hand-edited trace whose numbers carry markup is refused: numbers and citations are typed.
    jsonl, _ = save_trace(state, tmp_path)
    jsonl.write_text(jsonl.read_text().replace('"citations":[1]', '"citations":["1\\"><img src=x>"]'))
    with pytest.raises(ValueError, match="line 2"):
        load_trace(jsonl)


def test_the_chat_answer_says_which_names_no_source_mentions_escaped():
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(AnswerPayload(answer="Leonardo da Vinci [1].", citations=[1], passages=[passage(1)],
                                         unsourced=["Leonardo", "Vinci", EVIL]), "Answer", id="a1"))
    message = answer_message(state, "run")
    assert 'class="notice notice-warning"' in message
    assert "Not in the sources: “Leonardo”, “Vinci”" in unescape(message)
    assert "<script>" not in message and "<img" not in message
    plain_state = RunState()
    plain_state.add(tracer.event(AnswerPayload(answer="Doc 1 [1].", citations=[1], passages=[passage(1)]),
                                 "Answer", id="a1"))
    assert "notice-warning" not in answer_message(plain_state, "run")


def test_markdown_in_model_and_passage_text_is_shown_literally():
    sneaky = "![x](https://evil.example/?q=secret) [link](https://evil.example) *bold* `code` # head"
    assert "![" not in md_safe(sneaky) and "](" not in md_safe(sneaky) and "*bold*" not in md_safe(sneaky)
    assert md_safe("<b>'\"&") == "&lt;b&gt;&#39;&quot;&amp;"
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(AnswerPayload(answer=sneaky + " [1]", citations=[1], passages=[passage(1, sneaky)]),
                           "Answer", id="a1"))
    message = answer_message(state, "r")
    assert "](" not in message and 'href="#cite-r-1"' in message and 'id="cite-r-1"' in message


def test_updates_of_a_step_fold_into_one_node_and_chains_stay_flat():
    state = folded(chain_run())
    html = render(state)
    assert html.count('data-step="r1"') == 1 and html.count('data-step="h2"') == 1
    # retrieve, both hops and the answer are siblings of one list: a chain, not a staircase
    assert re.search(r'data-step="r1".*</li><li[^>]*data-step="h1".*</li><li[^>]*data-step="h2".*</li>'
                     r'<li[^>]*data-step="a1"', html)
    assert "Step 1: Fact 1 [1]." in html and "query: Fact 1" in html and "1 call · 10+5 tok" in html
    assert "4 steps · 2 LLM calls · 30 tokens" in html
    assert state.totals()[:2] == (2, 30) and state.finished and state.answer_text == "Paris [1] and [9]."
    assert "Auto picked IRCoT because it chains facts" in html
    assert "<summary>1 passage read</summary>" in html and "<summary>1 new passage</summary>" in html
    events = chain_run()
    events[-1] = events[-1].model_copy(update={"payload": events[-1].payload.model_copy(
        update={"passages": [passage(1), passage(2)]})})
    assert "<summary>2 passages read</summary>" in render(folded(events))


def test_tree_nodes_nest_and_show_state_and_verdict():
    tracer = Tracer("toc")
    state = RunState()
    node = {"question": "Which year?", "answer": "2024", "depth": 1}
    state.add(tracer.event(NodePayload(question="Q?", state="root"), "Root", id="n1"))
    state.add(tracer.event(NodePayload(**node, state="candidate"), "Which year?", id="n2", parent_id="n1",
                           status=Status.RUNNING))
    state.add(tracer.event(VerifyPayload(keep=False, score=0.2, reason="low", verifier="evidence",
                                         evidence=Evidence(p_true=0.1, passage=passage(3))), "Prune",
                           parent_id="n2"))
    state.add(tracer.event(NodePayload(**node, state="pruned", reason="low score", score=0.2), "Which year?",
                           id="n2", parent_id="n1"))
    html = render(state)
    assert re.search(r'data-step="n1">.*<ul class="rv-list"><li class="[^"]*state-pruned[^"]*" data-step="n2"', html)
    assert "Verifier: prune, score 0.20" in html and "p_true" in html and "→ 2024" in html
    assert not state.finished
    assert [n.state for n in state.payloads(NodePayload, done=False)] == ["root", "pruned"]


def test_a_stopped_run_shows_interrupted_steps_and_the_notice():
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(AnswerPayload(), "Answer", id="a1", status=Status.RUNNING))
    state.add(tracer.event(TokenPayload(text="Par"), "Answer", id="a1", status=Status.RUNNING))
    state.add(tracer.event(WarningPayload(message="The run was stopped.", stopped=True), "Stopped"))
    assert "Working" not in answer_message(state, "r") and "Par" in answer_message(state, "r")
    assert "The run was stopped." in answer_message(state, "r") and state.stopped()
    state.close()
    assert "status-interrupted" in render(state) and 'data-state="done"' in render(state)
    empty = RunState()
    empty.close()
    assert "No answer." in answer_message(empty, "r")


def test_a_replayed_stopped_run_is_drawn_as_over(tmp_path):
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(RetrievePayload(query="q"), "Retrieve", id="r1", status=Status.RUNNING))
    state.add(tracer.event(WarningPayload(message="The run was stopped.", stopped=True), "Stopped"))
    jsonl, _ = save_trace(state, tmp_path)
    replayed = render(load_trace(jsonl))
    assert 'data-state="done"' in replayed and "status-interrupted" in replayed
    assert "rv-spin" not in replayed


def test_answer_message_makes_existing_citations_open_their_source():
    message = answer_message(folded(chain_run()), "run1")
    # The number is in the link's href and text, which the chat's sanitiser keeps (it drops data-* attributes).
    assert '<a class="cite" href="#cite-run1-1" title="Doc 1 — notes.txt">&#91;1&#93;</a>' in message
    assert '<details class="source" id="cite-run1-1"><summary>&#91;1&#93; Doc 1' in message
    assert "&#91;9&#93;" in message and "cite-run1-9" not in message  # no such passage: left as text
    assert message.count('<details class="source"') == 1 and "Paris is the capital." in message
    assert "data-cite" not in message


def test_citation_anchors_are_safe_whatever_the_run_id():
    message = answer_message(folded(chain_run()), 'x" onclick="alert(1) <b>')
    assert 'href="#cite-xonclickalert1b-1"' in message and 'id="cite-xonclickalert1b-1"' in message
    assert 'cite-run-1' in answer_message(folded(chain_run()), "")


URLS = "See http://evil.example/x, HTTPS://evil.example/y, ftp://evil.example/z, www.evil.example/w and " \
       "bob@evil.example."
MARKDOWN = "[click](javascript:alert(1)) ![x](http://evil.example/img.png) <img src=x onerror=alert(1)> " \
           "<http://evil.example/auto> $$x^2$$"
LINES = "First line.\n\n    indented: http://evil.example/code\n\n- item\r\n\r\nHeading\n===\n"


def test_bare_urls_and_markdown_in_passages_never_become_links():
    text = f"{URLS} {MARKDOWN}\n{LINES}"
    tracer = Tracer("oner")
    state = RunState()
    state.add(tracer.event(RetrievePayload(query="q", passages=[passage(1, text), passage(2, text)]), "Retrieve",
                           id="r1"))
    state.add(tracer.event(AnswerPayload(answer=f"Both [1] and [2]. {URLS} {MARKDOWN}", citations=[1, 2],
                                         passages=[passage(1, text), passage(2, text)]), "Answer", id="a1"))
    view, message = render(state), answer_message(state, "r")
    # The reasoning view is HTML (no Markdown): escaped text has no link, image or markup, and shows the url.
    assert "<a " not in view and "href" not in view and "<img" not in view
    assert "http://evil.example/x" in view and "[click](javascript:alert(1))" in view
    # The chat renders Markdown (GFM, which links bare urls, www. names and e-mail addresses by itself): none of
    # the syntax is left, and the only links are the citations.
    assert re.findall(r'href="([^"]*)"', message) == ["#cite-r-1", "#cite-r-2"]
    for syntax in ("://", "www.", "WWW.", "@", "](", "![", "<img", "<http", "$$", "\n\n", "\r"):
        assert syntax not in message.replace("\n\n<div class=\"sources\">", ""), syntax
    sources = message.split('<div class="sources">', 1)[1]
    assert "\n" not in sources  # one HTML block: Markdown is not read inside it
    assert unescape(md_safe(URLS)) == URLS and unescape(md_block(LINES)) == LINES.replace("\r\n", "\n")


def test_direction_controls_are_dropped_from_names_and_text():
    spoof = "report\u202eFDP.exe"  # shows as "reportexe.PDF"
    name = "".join(f"a{c}" for c in BIDI_CONTROLS)
    assert plain(spoof) == "reportFDP.exe" and esc(spoof) == "reportFDP.exe" and md_safe(spoof) == "reportFDP.exe"
    assert plain(name) == "a" * len(BIDI_CONTROLS) and plain(None) == ""
    assert esc("\u2067<b>\u2069") == "&lt;b&gt;"
    tracer = Tracer("oner")
    state = RunState()
    ref = PassageRef(number=1, id="p1", title=spoof, text=f"Text {name}", source=f"notes\u2066{spoof}.txt",
                     collection=f"coll\u202d{spoof}")
    state.add(tracer.event(RetrievePayload(query="q", passages=[ref]), "Retrieve", id="r1"))
    state.add(tracer.event(AnswerPayload(answer="See [1].", citations=[1], passages=[ref]), "Answer", id="a1"))
    for shown in (render(state, header=f"Collections: coll\u202e{spoof}"), answer_message(state, "r")):
        assert not set(BIDI_CONTROLS) & set(shown)
        assert "reportFDP.exe" in shown


def test_the_pending_question_is_read_back_from_the_chat_history():
    assert last_user_text([]) is None
    assert last_user_text([{"role": "user", "content": "Who?"}]) == "Who?"
    assert last_user_text([{"role": "user", "content": [{"type": "text", "text": "Who&#63;"}]}]) == "Who&#63;"
    assert last_user_text([{"role": "user", "content": "Who?"}, {"role": "assistant", "content": "Him."}]) is None


def test_trace_round_trip_and_report(tmp_path):
    state = folded(chain_run())
    jsonl, report = save_trace(state, tmp_path, "Auto picked IRCoT.")
    replayed = load_trace(jsonl)
    assert replayed.question == "What is the capital?"
    assert [e.model_dump() for e in replayed.events] == [e.model_dump() for e in state.events]
    assert replayed.answer_text == "Paris [1] and [9]."
    text = report.read_text()
    assert text.startswith("# What is the capital?") and "**hop** Step 1: Fact 1 [1]." in text
    assert "Auto picked IRCoT." in text
    assert "## Sources" in text and "[1] Doc 1 — notes.txt" in text
    assert markdown_report(state).count("**hop**") == 2


def test_a_file_that_is_not_a_trace_is_refused(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an event"}\n')
    with pytest.raises(ValueError, match="line 1"):
        load_trace(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no step events"):
        load_trace(empty)


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


def test_traces_under_a_data_dir_outside_the_working_and_temp_folders_can_be_downloaded():
    """Gradio serves files only from the working directory, the temp folder and ``allowed_paths``: the app
    allows its traces folder, and nothing else of the data directory."""
    import os
    import tempfile
    from pathlib import Path

    from gradio import utils

    from ui.app import launch_options

    def served(path: str, extra: list[str]) -> bool:
        return utils.is_allowed_file(Path(path), blocked_paths=[], created_paths=[],
                                     allowed_paths=extra + [os.getcwd(), tempfile.gettempdir()])[0]

    trace = "/var/lib/rqa-data/traces/session-1/run.jsonl"
    assert not served(trace, [])  # Gradio's own rule refuses it: the download failed before
    allowed = launch_options("/var/lib/rqa-data")["allowed_paths"]
    assert served(trace, allowed)
    assert not served("/var/lib/rqa-data/collections/people.sqlite3", allowed)


def test_the_chat_shows_the_caveats_of_the_path_that_wrote_the_answer_and_no_other_warning():
    tracer = Tracer(run_id="r", method="auto")
    events = [
        tracer.event(RoutePayload(method="oner", label="OneR", structure="chain", question="q", auto=True), "Route"),
        tracer.event(WarningPayload(message="Web search is unavailable: this machine is offline.", caveat=True),
                     "Offline"),
        tracer.event(RoutePayload(method="ircot", label="IRCoT", structure="chain", question="q",
                                  escalated_from="OneR"), "Route"),
        tracer.event(WarningPayload(message="Only for the steps."), "A step's note"),
        tracer.event(WarningPayload(message="No passage answers it. The answer may be a guess.", caveat=True), "Guess"),
        tracer.event(WarningPayload(message="No passage answers it. The answer may be a guess.", caveat=True), "Guess"),
        tracer.event(AnswerPayload(answer="Saginaw"), "Answer", id="a1"),
    ]
    message = answer_message(RunState.of(events), "r")
    assert message.count("may be a guess") == 1  # once, however often it was given
    assert "offline" not in message  # the quick answer's path, replaced by the deeper one
    assert "Only for the steps" not in message
