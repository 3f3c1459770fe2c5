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

    page.context.clear_cookies()
    _sign_in(page, shared_url, "alice", "alice's password")
    page.locator("#chat").wait_for()
    page.locator("#collections").get_by_text("alice-notes").wait_for()  # filled in when the page loads
    page.get_by_role("tab", name="Collections").click()
    page.locator("#collections-table").get_by_text("alice-notes").last.wait_for()
    assert page.locator("#collections-table").get_by_text("its owner").last.is_visible()
