"""Several people at once in real browser sessions: eight ask together, one of them on a model server that
accepts requests and never answers. Each gets its own answer, nobody waits on the dead server, and the person
waiting on it can stop at once."""

from __future__ import annotations

import time

import pytest

from models.llama_backend import CALL_GATE
from tests.browser.test_app import choose, last_answer, open_app
from tests.fakes import ScriptedLLM, silent_server

pytestmark = pytest.mark.faults


@pytest.fixture
def dead_server():
    with silent_server() as url:
        yield url


def test_eight_sessions_each_get_their_own_answer_and_none_waits_on_a_dead_server(chromium, serve, dead_server):
    def reply(messages, options):
        question = messages[-1]["content"].rsplit("Question: ", 1)[1].split("\n")[0]
        return f"The answer to {question} is here [1]."

    url = serve(ScriptedLLM(reply, delay=0.02, gate=CALL_GATE), endpoints=[f"dead=openai:{dead_server}"])
    contexts = [chromium.new_context(viewport={"width": 1400, "height": 900}) for _ in range(8)]
    pages = [context.new_page() for context in contexts]
    try:
        for page in pages:
            open_app(page, url)
            choose(page, "method", "OneR")
        choose(pages[0], "model", "dead")
        questions = [f"Who won the Tour de France in {year}?" for year in range(2017, 2025)]
        for page, question in zip(pages, questions):
            page.fill("#question textarea", question)
        started = time.perf_counter()
        for page in pages:
            page.click("#ask")
        for page in pages[1:]:
            page.wait_for_selector("#reasoning .rv-done", timeout=60_000)
        others_done = time.perf_counter() - started
        for page, mine in zip(pages[1:], questions[1:]):
            assert f"The answer to {mine} is here" in last_answer(page).inner_text()
            assert sum(q in page.inner_text("#chat") for q in questions) == 1  # nobody else's question or answer
        # The dead server's person is still waiting, and held up nobody.
        assert pages[0].query_selector("#reasoning .rv-done") is None
        assert others_done < 45
        pages[0].click("#stop")
        stop_clicked = time.perf_counter()
        pages[0].wait_for_selector("#chat .notice:has-text('stopped')", timeout=10_000)
        assert time.perf_counter() - stop_clicked < 5
    finally:
        for context in contexts:
            context.close()
