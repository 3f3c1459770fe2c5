"""Conversations kept per person (issue 34): a reload or a second tab gets the person's conversation back, from a
file of theirs under the data directory; nobody else's, never the anonymous visitor's, always escaped, bounded,
and gone with the account."""

from __future__ import annotations

import html
import io
import json
import logging
import os
import stat

import pytest
from langchain_core.documents import Document

from pipeline import conversation_store
from pipeline.__main__ import main as cli
from pipeline.accounts import Accounts, People
from pipeline.conversation_store import (CONVERSATIONS_DIR, MAX_MESSAGE_CHARS, MAX_TURNS, TOO_LONG,
                                         ConversationStore, Turn)
from pipeline.service import Conversation
from ui.ask_tab import UNFINISHED, Session, keeping


def _turn(question: str, answer: str = "An answer.", asked: str | None = None) -> Turn:
    return Turn([{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
                asked if asked is not None else question)


# The store.

def test_each_person_has_their_own_file_that_only_the_server_reads(tmp_path):
    store = ConversationStore(tmp_path)
    store.append("alice", _turn("When is the launch?", "Friday [1]."))
    store.append("bob", _turn("Who won the Tour?"))
    store.append("alice", _turn("And where?", asked="When is the launch? And where?"))
    assert [t.asked for t in store.load("alice")] == ["When is the launch?", "When is the launch? And where?"]
    assert [t.messages[0]["content"] for t in store.load("bob")] == ["Who won the Tour?"]
    assert store.load("carol") == []
    path = tmp_path / CONVERSATIONS_DIR / "alice.json"
    assert store.path_of("alice") == path and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text())["turns"][0]["messages"][1]["content"] == "Friday [1]."
    assert sorted(p.name for p in path.parent.iterdir()) == ["alice.json", "bob.json"]  # no half-written file
    store.clear("alice")
    assert store.load("alice") == [] and not path.exists() and store.load("bob")


@pytest.mark.parametrize("name", ["../x", "../../etc/passwd", "/etc/passwd", "..", ".", "a/b", "a\\b", "",
                                  "Alice", "x" * 300, "nul\0byte", "alice\n"])
def test_a_name_that_is_not_an_account_name_stays_inside_the_folder(tmp_path, name):
    store = ConversationStore(tmp_path / "data")
    path = store.path_of(name)
    assert path.parent == tmp_path / "data" / CONVERSATIONS_DIR and path.name.startswith("_")
    store.append(name, _turn("Mine?"))
    assert [t.asked for t in store.load(name)] == ["Mine?"]
    assert store.load("x") == [] and not (tmp_path / "x.json").exists() and not (tmp_path / "data" / "x.json").exists()
    assert [p.name for p in (tmp_path / "data" / CONVERSATIONS_DIR).iterdir()] == [path.name]
    assert store.path_of(name + "!") != path  # another name, another file


def test_only_the_last_turns_and_characters_are_kept(tmp_path, monkeypatch):
    store = ConversationStore(tmp_path)
    for i in range(MAX_TURNS + 5):
        store.append("alice", _turn(f"Question {i}?"))
    kept = store.load("alice")
    assert len(kept) == MAX_TURNS and kept[0].asked == "Question 5?" and kept[-1].asked == f"Question {MAX_TURNS + 4}?"
    assert len(json.loads(store.path_of("alice").read_text())["turns"]) == MAX_TURNS  # on disk too

    store.append("bob", _turn("Long?", "x" * (MAX_MESSAGE_CHARS + 1)))
    assert store.load("bob")[0].messages[1]["content"] == TOO_LONG
    store.append("bob", Turn([{"role": "user", "content": "Kept?"}, {}, {"role": "system", "content": "no"}]))
    assert store.load("bob")[1].messages == [{"role": "user", "content": "Kept?"}]  # only chat messages
    monkeypatch.setattr(conversation_store, "MAX_KEPT_CHARS", 25_000)
    for i in range(5):
        store.append("carol", _turn(f"Q{i}?", "y" * 10_000))
    assert [t.asked for t in store.load("carol")] == ["Q3?", "Q4?"]
    assert len(store.path_of("carol").read_text()) < 25_000 + 1_000


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"turns": "x"}', b'{"turns": [1]}',
                                     b'{"turns": [{"messages": [{"role": "system", "content": "x"}]}]}',
                                     b'{"turns": [{"messages": [{"role": "user", "content": 3}]}]}',
                                     b'{"turns": [{"messages": "x"}]}', b'{"turns": [{"messages": [], "asked": 1}]}',
                                     b"\xff\xfe\x00garbage", b'{"turns": [{"messages": [{"role": "user", "cont'])
def test_a_corrupt_file_gives_an_empty_conversation_and_a_log_line(tmp_path, caplog, content):
    store = ConversationStore(tmp_path)
    path = store.path_of("alice")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="pipeline.conversation_store"):
        assert store.load("alice") == []
    assert "cannot be read" in caplog.text and str(path) in caplog.text
    store.append("alice", _turn("A new start?"))  # the next question starts a new one
    assert [t.asked for t in store.load("alice")] == ["A new start?"]


def test_an_unreadable_file_gives_an_empty_conversation_and_a_log_line(tmp_path, caplog):
    store = ConversationStore(tmp_path)
    store.path_of("alice").mkdir(parents=True)  # a folder where the file should be: unreadable, even by root
    with caplog.at_level(logging.WARNING, logger="pipeline.conversation_store"):
        assert store.load("alice") == []
        store.append("alice", _turn("Kept?"))  # cannot be written either: logged, not raised
    assert "cannot be read" in caplog.text and "cannot keep the conversation" in caplog.text


def test_removing_an_account_removes_its_conversation(tmp_path, monkeypatch):
    data = ["--data-dir", str(tmp_path)]
    for name in ("alice", "bob"):
        monkeypatch.setattr("sys.stdin", io.StringIO("correct horse\n"))
        assert cli([*data, "users", "add", name, "--password-stdin"]) == 0
    store = ConversationStore(tmp_path)
    store.append("alice", _turn("Alice's question?"))
    store.append("bob", _turn("Bob's question?"))
    assert cli([*data, "users", "remove", "alice"]) == 0
    assert store.load("alice") == [] and not store.path_of("alice").exists()
    assert [t.asked for t in store.load("bob")] == ["Bob's question?"]

    store.append("alice", _turn("Kept by a question that ended as she was removed?"))
    Accounts(tmp_path).add("alice", "another horse")  # a new alice does not inherit it
    assert store.load("alice") == []


# Keeping a run's turn.

def _frames(chat: list, answers: list[str]):
    for answer in answers:
        yield chat + [{"role": "assistant", "content": answer}], "", "", "", None


def test_a_runs_turn_is_kept_when_it_ends_unless_a_new_conversation_began():
    kept = []
    shown = [{"role": "user", "content": "Earlier?"}, {"role": "assistant", "content": "Earlier."},
             {"role": "user", "content": "Now?"}]
    session = Session(conversation=Conversation(["Earlier?"]))

    def run():  # as the run service does, the conversation records the question once the run starts
        session.conversation.asked.append("Now?")
        yield from _frames(shown, ["Work", "Done [1]."])

    assert len(list(keeping(run(), session, len(shown), lambda *turn: kept.append(turn)))) == 2
    assert kept == [([{"role": "assistant", "content": "Done [1]."}], "Now?")]

    kept.clear()  # the page went away during the run: the question is kept, with a note
    frames = keeping(_frames(shown, ["Work", "Done."]), session, len(shown), lambda *turn: kept.append(turn))
    next(frames)
    frames.close()
    assert kept == [([{"role": "assistant", "content": UNFINISHED}], None)]

    kept.clear()  # "New conversation" during the run: nothing of it is kept
    frames = keeping(_frames(shown, ["Work", "Done."]), session, len(shown), lambda *turn: kept.append(turn))
    next(frames)
    session.generation += 1
    list(frames)
    assert kept == []


# The app: a reload or a second tab.

MARKUP = "<script>window.__injected = 1</script><img src=x onerror=alert(1)>"


def _serve(tmp_path, embeddings, mode: str = "personal", accounts: Accounts | None = None):
    from corpora.store import CollectionStore
    from pipeline.runtime import Runtime, RuntimeConfig
    from tests.conftest import free_port
    from tests.fakes import ScriptedLLM
    from ui.app import build_app, launch_options

    data_dir = tmp_path / "data"
    store = CollectionStore(data_dir, embeddings)
    store.create("notes").add([
        Document(page_content=f"Tadej Pogacar won the 2024 Tour de France. {MARKUP}",
                 metadata={"title": f"Tour {MARKUP}", "source": "notes.txt", "collection": "notes"}, id="n0"),
        Document(page_content="Jonas Vingegaard came second in the 2024 Tour de France.",
                 metadata={"title": "Tour", "source": "notes.txt", "collection": "notes"}, id="n1")])
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model="default"), embeddings=embeddings)
    runtime.access.set("notes", visibility="public")
    llm = ScriptedLLM(lambda messages, options: f"Pogacar {MARKUP} [1].")
    runtime.use_model("default", llm)
    app = build_app(runtime, people=People(mode, accounts))
    app.queue(default_concurrency_limit=1)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               **launch_options(data_dir))
    return app, f"http://127.0.0.1:{port}/", llm, data_dir


def _kept(load: tuple) -> list:
    """The chat a page's load filled in: its kept conversation; [] when it left the chat alone (an update)."""
    chat = load[4]
    return [] if isinstance(chat, dict) and chat.get("__type__") == "update" else chat


def _text(chat: list) -> str:
    """The chat's messages as the page gets them (Gradio hands each content back as text parts)."""
    return "\n".join(part["text"] for message in chat for part in message["content"])


def _ask(client, question: str, chat: list | None = None) -> list:
    _question, history = client.predict(question, chat or [], api_name="/submit")
    return client.predict(history, "oner", ["notes"], False, "default", False, [], api_name="/answer")[0]


def test_a_reload_or_a_second_tab_gets_the_conversation_back_as_it_was_shown(tmp_path, embeddings):
    from gradio_client import Client

    app, url, llm, data_dir = _serve(tmp_path, embeddings)
    try:
        first = Client(url, verbose=False)
        assert _kept(first.predict(api_name="/load")) == []
        live = _ask(first, "Who won the 2024 Tour de France?", _ask(first, f"Who won the 2024 Tour? {MARKUP}"))
        assert len(live) == 4

        second = Client(url, verbose=False)  # another tab, or the same one reloaded
        restored = _kept(second.predict(api_name="/load"))
        assert restored == live
        shown = _text(restored)
        assert "<script" not in shown and "<img" not in shown and "&lt;script&gt;" in shown
        assert 'class="cite"' in shown and "Tadej Pogacar" in shown  # the citation and its passage came back
        # The restored conversation is the one follow-ups lean on.
        _ask(second, "And who came second?", restored)
        assert "Who won the 2024 Tour de France? And who came second?" in llm.calls[-1][0][-1]["content"]
        kept = _kept(Client(url, verbose=False).predict(api_name="/load"))
        assert len(kept) == 6

        # A page that asks before its load has filled in the chat (or a script that never loads): the question goes
        # under the kept conversation, and a load answered after it leaves the chat alone.
        third = Client(url, verbose=False)
        _question, history = third.predict("Who came third?", [], api_name="/submit")
        assert history[:-1] == kept and "Who came third?" in _text(history[-1:])
        assert _kept(third.predict(api_name="/load")) == []

        second.predict(api_name="/new_conversation")
        assert _kept(Client(url, verbose=False).predict(api_name="/load")) == []
        assert not (data_dir / CONVERSATIONS_DIR / "local.json").exists()

        (data_dir / CONVERSATIONS_DIR).mkdir(exist_ok=True)
        (data_dir / CONVERSATIONS_DIR / "local.json").write_text('{"turns": [{"messages": "<b>"}]}')
        assert _kept(Client(url, verbose=False).predict(api_name="/load")) == []  # a corrupt file: an empty chat
    finally:
        app.close()


def test_the_anonymous_visitor_has_nothing_kept(tmp_path, embeddings):
    from gradio_client import Client

    app, url, _llm, data_dir = _serve(tmp_path, embeddings, mode="anonymous")
    try:
        visitor = Client(url, verbose=False)
        visitor.predict(api_name="/load")
        assert "Pogacar" in html.unescape(json.dumps(_ask(visitor, "Who won the 2024 Tour?")))
        assert _kept(Client(url, verbose=False).predict(api_name="/load")) == []
        assert not (data_dir / CONVERSATIONS_DIR).exists()
    finally:
        app.close()
