"""A shared server in a real browser (issue 34): the login page, and one person's private collection invisible to
another."""

from __future__ import annotations

import pytest

from pipeline.access import SHARED
from tests.conftest import free_port
from tests.test_access import _shared_app


@pytest.fixture
def shared_url(tmp_path, embeddings):
    app, runtime, people, options = _shared_app(tmp_path, embeddings)
    runtime.store.create("team-notes")
    runtime.access.set("team-notes", owner="alice", visibility=SHARED)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               auth=people.auth(), auth_message="Sign in with the account the operator gave you.", **options)
    yield f"http://127.0.0.1:{port}/"
    app.close()


def _sign_in(page, url: str, name: str, password: str) -> None:
    page.goto(url)
    page.get_by_text("Sign in with the account the operator gave you.").wait_for()
    page.get_by_label("username").fill(name)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()


def test_the_login_page_lets_in_only_an_account_and_each_sees_only_what_they_may(shared_url, page):
    _sign_in(page, shared_url, "bob", "not bob's password")
    page.get_by_text("Incorrect Credentials").wait_for()
    assert page.locator("#chat").count() == 0

    _sign_in(page, shared_url, "bob", "bob's password")
    page.locator("#chat").wait_for()
    page.get_by_role("tab", name="Collections").click()
    page.locator("#collections-table").get_by_text("team-notes").last.wait_for()  # the lists are filled in
    assert "alice-notes" not in page.content()
    assert page.locator("#collections").get_by_text("team-notes").count() == 1

    assert page.locator("#signed-in").get_by_text("Signed in as").is_visible()
    assert "bob" in page.locator("#signed-in").inner_text()
    page.locator("#signed-in").get_by_role("link", name="Sign out").click()  # back to the login page
    page.get_by_text("Sign in with the account the operator gave you.").wait_for()
    assert page.locator("#chat").count() == 0

    _sign_in(page, shared_url, "alice", "alice's password")
    page.locator("#chat").wait_for()
    page.locator("#collections").get_by_text("alice-notes").wait_for()  # filled in when the page loads
    page.get_by_role("tab", name="Collections").click()
    page.locator("#collections-table").get_by_text("alice-notes").last.wait_for()
    assert page.locator("#collections-table").get_by_text("its owner").last.is_visible()


def test_a_question_over_a_persons_limit_gets_a_notice_and_stays_in_its_box(tmp_path, embeddings, chromium):
    """alice (one question at a time here) asks in a second tab while her first is answered: a notice, at once;
    her question stays in the box, the chat is untouched and shows no error state."""
    import threading

    from tests.fakes import ScriptedLLM

    release = threading.Event()

    def slow(messages, options):
        release.wait(30)
        return "Friday [1]."

    app, runtime, people, options = _shared_app(tmp_path, embeddings, model=ScriptedLLM(slow),
                                                max_runs_per_person=1)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               auth=people.auth(), auth_message="Sign in with the account the operator gave you.", **options)
    context = chromium.new_context(viewport={"width": 1500, "height": 1000})
    try:
        first = context.new_page()
        _sign_in(first, f"http://127.0.0.1:{port}/", "alice", "alice's password")
        first.locator("#chat").wait_for()
        second = context.new_page()
        second.goto(f"http://127.0.0.1:{port}/")
        for page in (first, second):
            page.locator("#chat").wait_for()
            page.locator("#collections").get_by_text("alice-notes").wait_for()
            page.locator("#question textarea").fill("When is the launch?")
            page.locator("#ask").click()
            if page is first:
                first.locator("#chat").get_by_text("When is the launch?").wait_for()
        second.get_by_text("You already have 1 question waiting or being answered").wait_for(timeout=5000)
        assert second.locator("#question textarea").input_value() == "When is the launch?"
        assert second.locator("#chat").get_by_text("When is the launch?").count() == 0
        assert second.locator("#chat").get_by_text("Error").count() == 0
        release.set()
        first.locator("#chat").get_by_text("Friday [1]").wait_for()
    finally:
        release.set()
        context.close()
        app.close()
