"""The app in a real headless Chromium: the live tree, uploads and citations, escaping (markup, Markdown, bare
urls, direction overrides), Enter to ask, refused questions, several sessions at once, Stop, traces, and one
question answered by the real fast model."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from models.llama_backend import CALL_GATE
from tests.browser.conftest import MARKUP, NOTES
from tests.fakes import ScriptedLLM, TreeScript

AQ = "Who won the Tour de France?"
Q24, Q23, Q19 = ("Who won the 2024 Tour de France?", "Who won the 2023 Tour de France?",
                 "Who won the 1919 Tour de France?")


def open_app(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#question textarea")


def choose(page, elem_id: str, label: str) -> None:
    """Pick ``label`` in the Gradio dropdown ``elem_id``."""
    page.click(f"#{elem_id} input")
    page.click(f"ul[role=listbox] li:has-text('{label}')")


def ask(page, question: str, method: str | None = None) -> None:
    if method:
        choose(page, "method", method)
    page.fill("#question textarea", question)
    page.click("#ask")


def upload(page, collection: str, path) -> None:
    """Add the file ``path`` to ``collection`` in the Collections tab and wait until it is reported added."""
    choose(page, "chosen-collection", collection)
    page.set_input_files("#uploads input[type=file]", str(path))
    page.click("#add-files")
    page.wait_for_selector(f"#ingest-report .outcome-added:has-text('{path.name}')")


def last_answer(page):
    return page.locator("#chat .message-row.bot-row").last


def wait_done(page, timeout: float = 60_000) -> None:
    page.wait_for_selector("#reasoning .rv-done", timeout=timeout)


def answers_by_prompt(answer: str, delay: float = 0.0) -> ScriptedLLM:
    return ScriptedLLM(lambda messages, options: answer, delay=delay)


def test_tree_nodes_appear_before_the_answer_is_complete(page, serve):
    script = TreeScript({AQ: [(Q24, "Tadej Pogacar"), (Q23, "Jonas Vingegaard"), (Q19, "Firmin Lambot")]},
                        p_true={"Firmin Lambot": 0.0}, delay=0.08)
    open_app(page, serve(script.llm))
    ask(page, AQ, method="Tree of Clarifications")
    page.wait_for_selector("#reasoning .kind-expand .rv-node-answer")  # a clarified question with its answer
    assert page.query_selector("#reasoning .rv-done") is None
    assert "Pogacar won" not in last_answer(page).inner_text()  # the answer has not been written yet
    wait_done(page)
    assert page.locator("#reasoning .state-kept").count() == 2
    assert page.locator("#reasoning .state-pruned").count() == 1
    assert "Firmin Lambot" in page.locator("#reasoning .state-pruned").inner_text()
    page.locator("#reasoning .state-kept .rv-verdict summary").first.click()  # evidence on demand
    assert "p_true" in page.locator("#reasoning .state-kept .rv-verdict").first.inner_text()
    assert "The 2024 Tour was won by Tadej Pogacar" in last_answer(page).inner_text()
    assert "Tree of Clarifications" in page.inner_text("#reasoning .rv-head")


def test_an_uploaded_pdf_is_cited(page, serve, tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, "The Zorblax festival is held every March in the town of Lindenfeld. It celebrates the "
                         "first harvest of winter barley with music and bread.")
    path = tmp_path / "festival.pdf"
    pdf.output(str(path))

    def reply(messages, options):
        return "The Zorblax festival is held every March in Lindenfeld [1]."

    open_app(page, serve(ScriptedLLM(reply)))
    page.click("button[role=tab]:has-text('Collections')")
    page.fill("#new-collection textarea, #new-collection input", "papers")
    page.click("#create-collection")
    page.wait_for_selector("#ingest-report:has-text('Created the collection')")
    page.wait_for_selector("#collections-table:has-text('papers')")
    upload(page, "papers", path)
    page.wait_for_selector("#files-table:has-text('festival.pdf')")

    page.click("button[role=tab]:has-text('Ask')")
    page.check("#collections label:has-text('papers') input")
    page.uncheck("#collections label:has-text('notes') input")
    ask(page, "When is the Zorblax festival held?", method="OneR")
    wait_done(page)
    message = last_answer(page)
    assert "festival.pdf, p. 1" in message.inner_text()
    message.locator(".cite").first.click()
    source = message.locator("details.source").first
    assert source.evaluate("el => el.open") and "Lindenfeld" in source.inner_text()


def test_a_citation_opens_the_passage_it_cites(page, serve):
    open_app(page, serve(answers_by_prompt("Pogacar won in 2024 [1]; Niewiadoma won the Femmes [3].")))
    ask(page, AQ, method="OneR")
    wait_done(page)
    numbered = page.locator("#reasoning .kind-answer .rv-passages li")
    first, third = (numbered.nth(i).locator(".rv-passage").text_content() for i in (0, 2))
    message = last_answer(page)
    message.locator(".cite:text-is('[3]')").click()
    opened = message.locator("details.source[open]")
    assert opened.count() == 1
    assert opened.locator("summary").inner_text().startswith("[3]")
    assert opened.locator(".source-text").inner_text() == third != first
    expect(opened).to_be_in_viewport()
    assert "#" not in page.url  # the page's address is left alone
    message.locator(".cite:text-is('[1]')").click()
    assert message.locator("details.source[open] .source-text").first.inner_text() == first


def test_enter_sends_the_question_and_shift_enter_adds_a_line(page, serve):
    llm = answers_by_prompt("Tadej Pogacar [1].")
    open_app(page, serve(llm))
    choose(page, "method", "OneR")
    box = page.locator("#question textarea")
    box.click()
    box.press_sequentially("Who won the 2024")
    box.press("Shift+Enter")
    box.press_sequentially("Tour de France?")
    assert box.input_value() == "Who won the 2024\nTour de France?"
    assert page.locator("#chat .user-row").count() == 0 and not llm.calls  # not sent
    box.press("Enter")
    page.wait_for_selector("#chat .user-row:has-text('Tour de France?')")
    wait_done(page)
    assert "Tadej Pogacar" in last_answer(page).inner_text()
    assert box.input_value() == "" and len(llm.calls) == 1
    assert "Who won the 2024\nTour de France?" in llm.calls[0][0][-1]["content"]


def test_an_empty_or_early_question_gets_a_notice_and_changes_nothing(page, serve):
    def reply(messages, options):
        # Long enough (about 6 s) that the second question surely comes while it streams, on a slow machine too.
        return "A slow answer " + "and more " * 150 if "slowly" in messages[-1]["content"] else "A quick answer."

    llm = ScriptedLLM(reply, delay=0.04)
    open_app(page, serve(llm))
    ask(page, "Who won the 2024 Tour de France?", method="OneR")
    wait_done(page)
    chat_before = page.inner_text("#chat")
    page.click("#ask")  # nothing typed
    page.wait_for_selector(".toast-body:has-text('Type a question first')", timeout=10_000)
    page.wait_for_timeout(300)  # the refused Ask's answer event has run by now
    assert page.locator("[data-testid=status-tracker]:has-text('Error'), .toast-body:has-text('Error')").count() == 0
    assert page.locator("#chat").is_visible() and page.inner_text("#chat") == chat_before
    assert len(llm.calls) == 1
    # A question over the length limit is refused the same way, and stays in its box to be shortened.
    long_question = "Why " + "and why " * 300
    ask(page, long_question)
    page.wait_for_selector(".toast-body:has-text('characters long; the limit is')", timeout=10_000)
    page.wait_for_timeout(300)
    assert page.input_value("#question textarea") == long_question
    assert page.inner_text("#chat") == chat_before and len(llm.calls) == 1
    page.fill("#question textarea", "")
    # A question asked while the previous one is being answered is refused the same way, and not run later.
    ask(page, "Tell me slowly about the Tour de France.")
    page.wait_for_selector("#chat .bot-row:has-text('A slow answer')")
    ask(page, "And in 2023?")
    page.wait_for_selector(".toast-body:has-text('still being answered')", timeout=10_000)
    wait_done(page)
    page.wait_for_timeout(500)  # the refused Ask's answer event, queued after the run, has run by now
    assert len(llm.calls) == 2 and page.locator("#chat .user-row").count() == 2
    assert "and more" in last_answer(page).inner_text()
    assert page.locator("[data-testid=status-tracker]:has-text('Error')").count() == 0
    ask(page, "And in 2023?")
    expect(page.locator("#chat .bot-row")).to_have_count(3)
    expect(last_answer(page)).to_contain_text("A quick answer.")
    assert len(llm.calls) == 3


def test_urls_and_names_in_passages_are_shown_as_inert_text(page, serve):
    notes = [("Links", "The race results are at http://evil.example/x and www.evil.example/y (bob@evil.example)."),
             ("report\u202eFDP.exe", "[click](javascript:window.__clicked=1) ![x](http://evil.example/img.png)"),
             ("Tour de France", "Tadej Pogacar won the 2024 Tour de France.")]
    open_app(page, serve(answers_by_prompt("Results are online [1]; see [2] and [3]. http://evil.example/z"),
                         notes=notes))
    ask(page, "Where are the Tour de France race results?", method="OneR")
    wait_done(page)
    message = last_answer(page)
    page.locator("#reasoning .kind-answer .rv-passages summary").click()
    for where in ("#reasoning", "#chat"):
        assert "http://evil.example/x" in page.locator(where).text_content()
    assert page.locator("a[href*='evil.example'], img[src*='evil.example']").count() == 0
    assert page.locator("#chat a:not(.cite), #chat img, #reasoning a, #reasoning img").count() == 0
    assert "reportFDP.exe" in message.inner_text() and "\u202e" not in page.text_content("body")
    message.locator(".cite[title^='Links']").click()  # the citations still work
    assert "http://evil.example/x" in message.locator("details.source[open]").inner_text()


def test_markup_in_passages_and_answers_is_shown_as_text(page, serve):
    # Inert markup from the model is shown as text; active markup is removed from the answer (with a warning).
    llm = answers_by_prompt('It has <b>bold</b> markup <img src=x onerror="window.__injected = 3"> [1].')
    open_app(page, serve(llm, notes=NOTES + [MARKUP]))
    ask(page, "Which page contains markup about cycling?", method="OneR")
    wait_done(page)
    page.locator("#reasoning .kind-retrieve .rv-passages summary").click()
    assert "<script>window.__injected = 1</script>" in page.inner_text("#reasoning")
    answer = last_answer(page).inner_text()
    assert "It has <b>bold</b> markup" in answer and "onerror" not in answer
    assert "Answer sanitised" in page.inner_text("#reasoning")
    assert page.evaluate("window.__injected") is None
    assert page.locator("#reasoning script, #reasoning img, #chat .message-content img").count() == 0


def test_two_sessions_asking_at_once_each_get_their_own_answer(chromium, serve):
    llm = ScriptedLLM(lambda messages, options: "The answer to " + messages[-1]["content"].rsplit("Question: ", 1)[1]
                      .split("\n")[0] + " is here [1]." + " So it is." * 8, delay=0.2, gate=CALL_GATE)
    # A reply of about 6 s: long enough for the second person's page to show its place in the line even when
    # the machine is busy.
    url = serve(llm)
    contexts = [chromium.new_context(viewport={"width": 1400, "height": 900}) for _ in range(2)]
    pages = [c.new_page() for c in contexts]
    try:
        for page in pages:
            open_app(page, url)
            choose(page, "method", "OneR")
        questions = ["Who won the 2024 Tour de France?", "Who won the Tour de France Femmes?"]
        for page, question in zip(pages, questions):
            page.fill("#question textarea", question)
        for page in pages:
            page.click("#ask")
        # model calls take turns: whoever reached the model second sees their place while the other is answered
        # (the two clicks are a few milliseconds apart, so either may be first)
        waiting = "#chat .notice-wait:has-text('1 question ahead of yours')"
        deadline = time.monotonic() + 10
        while not any(page.locator(waiting).count() for page in pages):
            assert time.monotonic() < deadline, ("neither page showed its place in the line within 10 s: "
                                                 + " | ".join(page.inner_text("#chat")[-200:] for page in pages))
            pages[0].wait_for_timeout(50)
        for page in pages:
            wait_done(page)
        for page, mine, other in zip(pages, questions, reversed(questions)):
            text = last_answer(page).inner_text()
            assert f"The answer to {mine} is here" in text and other not in page.inner_text("#chat")
    finally:
        for context in contexts:
            context.close()


def test_stop_ends_the_run_and_the_next_question_runs(page, serve):
    words = " ".join(f"word{i}" for i in range(300))
    calls = []

    def reply(messages, options):
        calls.append(messages)
        return words if len(calls) == 1 else "A short second answer."

    open_app(page, serve(ScriptedLLM(reply, delay=0.05)))
    ask(page, "Tell me everything about the Tour de France.", method="OneR")
    page.wait_for_selector("#chat .bot-row:has-text('word5')")
    page.click("#stop")
    page.wait_for_selector("#chat .notice:has-text('stopped')", timeout=10_000)
    assert "word299" not in last_answer(page).inner_text()
    assert "Stopped" in page.inner_text("#reasoning")
    ask(page, "And who won in 2024?")
    page.wait_for_selector("#chat .bot-row:has-text('A short second answer.')")


def test_trace_download_and_replay(page, serve, tmp_path):
    open_app(page, serve(answers_by_prompt("Tadej Pogacar won in 2024 [1].")))
    ask(page, "Who won the 2024 Tour de France?", method="OneR")
    wait_done(page)
    with page.expect_download() as download:
        page.locator("#trace-files tr:has-text('.jsonl') a").first.click()
    trace = tmp_path / "trace.jsonl"
    download.value.save_as(trace)
    with page.expect_download() as report_download:
        page.locator("#trace-files tr:has-text('.md') a").first.click()
    report = tmp_path / "trace.md"
    report_download.value.save_as(report)
    assert "## Answer" in report.read_text() and "Tadej Pogacar won in 2024 [1]." in report.read_text()

    page.click("#new-conversation")
    with page.expect_file_chooser() as chooser:
        page.click("#replay")
    chooser.value.set_files(str(trace))
    page.wait_for_selector("#reasoning:has-text('Replayed from a trace file')")
    assert page.locator("#reasoning .kind-retrieve").count() == 1
    assert "Tadej Pogacar won in 2024" in last_answer(page).inner_text()

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a trace"')
    with page.expect_file_chooser() as chooser:
        page.click("#replay")
    chooser.value.set_files(str(bad))  # said in a toast, not only in the server's log
    page.wait_for_selector(".toast-body:has-text('Cannot replay this file')", timeout=10_000)
    assert "Tadej Pogacar won in 2024" in last_answer(page).inner_text()


def test_collections_tab_reports_bad_files_and_deletes(page, serve, tmp_path):
    good, bad = tmp_path / "good.txt", tmp_path / "broken.pdf"
    good.write_text("Velodromes are tracks for cycling races with steep banked curves.")
    bad.write_bytes(b"this is not a pdf at all")
    open_app(page, serve(answers_by_prompt("unused")))
    page.click("button[role=tab]:has-text('Collections')")
    choose(page, "chosen-collection", "notes")
    page.set_input_files("#uploads input[type=file]", [str(good), str(bad)])
    page.click("#add-files")
    page.wait_for_selector("#ingest-report .outcome-failed:has-text('broken.pdf')")
    assert "good.txt" in page.inner_text("#ingest-report .outcome-added")
    page.wait_for_selector("#files-table:has-text('good.txt')")
    other = tmp_path / "other" / "good.txt"  # another file of the same name: refused, then replaced on request
    other.parent.mkdir()
    other.write_text("Keirin is a track cycling race behind a pacer.")
    page.click("#uploads button[aria-label='Clear']")
    page.set_input_files("#uploads input[type=file]", str(other))
    page.click("#add-files")
    page.wait_for_selector("#ingest-report .outcome-failed:has-text('Replace files with the same name')")
    page.check("#replace-files input")
    page.click("#add-files")
    page.wait_for_selector("#ingest-report .outcome-replaced:has-text('good.txt')")
    page.click("#delete-panel .label-wrap")
    choose(page, "file-choice", "good.txt")
    page.click("#delete-file")
    page.wait_for_selector("#ingest-report:has-text('Deleted')")
    assert "good.txt" not in page.inner_text("#files-table")
    page.click("#delete-collection")
    page.wait_for_selector("#ingest-report:has-text('Tick')")  # nothing deleted without confirmation
    assert "notes" in page.inner_text("#collections-table")


@pytest.mark.real_model
def test_a_question_answered_by_the_real_fast_model(page, serve, fast_llm):
    open_app(page, serve(fast_llm, choice="fast"))
    ask(page, "Who won the 2023 Tour de France?", method="OneR")
    page.wait_for_selector("#reasoning .kind-retrieve.status-done")
    wait_done(page, timeout=180_000)
    text = last_answer(page).inner_text()
    assert "Vingegaard" in text
    assert page.locator("#reasoning .rv-node").count() >= 2



def test_one_persons_stop_leaves_the_other_run_alone(chromium, serve):
    # Long enough (about 10 s) that the first run is still streaming when its Stop arrives, however late the
    # page shows "word3" on a busy machine.
    words = " ".join(f"word{i}" for i in range(200))
    url = serve(ScriptedLLM(lambda messages, options: words, delay=0.05))
    contexts = [chromium.new_context(viewport={"width": 1400, "height": 900}) for _ in range(2)]
    first, second = [c.new_page() for c in contexts]
    try:
        for page in (first, second):
            open_app(page, url)
            ask(page, "Tell me about the Tour de France.", method="OneR")
        first.wait_for_selector("#chat .bot-row:has-text('word3')")
        first.click("#stop")
        first.wait_for_selector("#chat .notice:has-text('stopped')", timeout=10_000)
        wait_done(second)
        assert "word199" in last_answer(second).inner_text()
        assert "stopped" not in second.inner_text("#chat").lower()
    finally:
        for context in contexts:
            context.close()


def test_a_follow_up_keeps_the_conversation(page, serve):
    llm = ScriptedLLM(lambda messages, options: "Answer " + str(len(messages)) + ".")
    open_app(page, serve(llm))
    ask(page, "Who won the 2024 Tour de France?", method="OneR")
    wait_done(page)
    ask(page, "And who came second?")
    page.wait_for_selector("#reasoning .rv-head:has-text('follow-up')")
    wait_done(page)
    assert page.locator("#chat .bot-row").count() == 2 and page.locator("#chat .user-row").count() == 2
    assert "Who won the 2024 Tour de France? And who came second?" in llm.calls[-1][0][-1]["content"]


def test_an_oversized_upload_is_refused_with_a_clear_message(page, serve, tmp_path):
    from corpora.ingest import MAX_FILE_BYTES

    big = tmp_path / "huge.txt"
    with open(big, "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1024)
    open_app(page, serve(answers_by_prompt("unused")))
    page.click("button[role=tab]:has-text('Collections')")
    # The label states the limit in corpora/ingest.py's unit (decimal MB, as its "over the limit" message)
    assert f"up to {MAX_FILE_BYTES / 1e6:.0f} MB each" in page.inner_text("#uploads")
    page.set_input_files("#uploads input[type=file]", str(big))
    page.wait_for_selector("text=/exceed the maximum allowed size of 50(\\.0)? ?Mb: \"huge.txt\"/i", timeout=20_000)
    assert page.locator("#files-table:has-text('huge.txt')").count() == 0


def test_a_missing_model_gets_a_clear_message_and_keeps_the_conversation(page, serve):
    # The operator offers a model whose file has gone; a person cannot type a path or URL of their own.
    open_app(page, serve(answers_by_prompt("First answer [1]."), endpoints=["gone=/nowhere/missing-model.gguf"]))
    ask(page, "Who won the 2024 Tour de France?", method="OneR")
    wait_done(page)
    page.fill("#model input", "/etc/passwd")
    page.press("#model input", "Enter")
    page.click("#question textarea")
    assert page.input_value("#model input") != "/etc/passwd"  # typed text is no choice
    choose(page, "model", "gone")
    ask(page, "And who won in 2023?")
    page.wait_for_selector("#chat .notice-error:has-text('Cannot answer')")
    assert "missing-model.gguf" in last_answer(page).inner_text()
    assert "First answer" in page.inner_text("#chat")  # the earlier answer is still there
    page.wait_for_selector("#reasoning .rv-done")
