"""People and ownership (issue 34): accounts with hashed passwords, who may read and change each collection, the
modes the app starts in, and every endpoint of a shared server called by someone who may not."""

from __future__ import annotations

import argparse
import html
import io
import json
import os
import stat
import time

import pytest
from langchain_core.documents import Document

import app as app_module
from corpora.demo import DEMO_COLLECTION
from corpora.store import CollectionError
from pipeline.__main__ import main as cli
from pipeline.access import PRIVATE, PUBLIC, SHARED, CollectionAccess
from pipeline.accounts import ANONYMOUS, LOCAL, PERSONAL, VISITOR, AccountError, Accounts, People, Person


# Accounts.

def test_accounts_keep_slow_salted_hashes_never_the_password(tmp_path):
    accounts = Accounts(tmp_path)
    accounts.add("alice", "correct horse", admin=True)
    accounts.add("bob", "correct horse")
    text = (tmp_path / "users.json").read_text()
    assert "correct horse" not in text
    hashes = [entry["hash"] for entry in json.loads(text)["users"].values()]
    assert all(h.startswith("$argon2id$") for h in hashes) and hashes[0] != hashes[1]  # salted: same password
    assert stat.S_IMODE(os.stat(tmp_path / "users.json").st_mode) == 0o600
    assert accounts.check("alice", "correct horse") and accounts.check("bob", "correct horse")
    assert not accounts.check("alice", "wrong horse") and not accounts.check("carol", "correct horse")
    assert not accounts.check("alice", "")
    assert accounts.person("alice") == Person("alice", admin=True) and accounts.person("bob").admin is False
    assert [p.name for p in accounts.people()] == ["alice", "bob"]


@pytest.mark.parametrize("name,password,message", [
    ("alice", "short", "at least 8"),
    ("Alice!", "long enough", "not a valid user name"),
    ("local", "long enough", "reserved"),
])
def test_an_account_is_refused_with_its_reason(tmp_path, name, password, message):
    with pytest.raises(AccountError, match=message):
        Accounts(tmp_path).add(name, password)


def test_a_removed_account_can_no_longer_sign_in(tmp_path):
    accounts = Accounts(tmp_path)
    accounts.add("alice", "correct horse")
    with pytest.raises(AccountError, match="already"):
        accounts.add("alice", "another one")
    accounts.remove("alice")
    assert not accounts.check("alice", "correct horse") and accounts.person("alice") is None
    with pytest.raises(AccountError, match="no account"):
        accounts.remove("alice")


def test_people_tells_who_sent_a_request(tmp_path):
    accounts = Accounts(tmp_path)
    accounts.add("alice", "correct horse")
    assert People().of(None) == LOCAL and People().auth() is None
    assert People(ANONYMOUS).of("alice") == VISITOR and People(ANONYMOUS).auth() is None
    shared = People("shared", accounts)
    assert shared.of("alice") == Person("alice") and shared.of("mallory") is None and shared.of(None) is None
    assert shared.auth()("alice", "correct horse") and not shared.auth()("alice", "nope nope")


# Who may do what with a collection.

ALICE, BOB, ADMIN = Person("alice"), Person("bob"), Person("root", admin=True)


def test_each_visibility_lets_in_exactly_whom_it_says(tmp_path):
    access = CollectionAccess(tmp_path)
    for name, visibility in (("mine", PRIVATE), ("team", SHARED), ("open", PUBLIC)):
        access.set(name, owner="alice", visibility=visibility)
    readers = {name: [p.name for p in (ALICE, BOB, ADMIN, VISITOR, LOCAL) if access.can_read(p, name)]
               for name in ("mine", "team", "open", "orphan", DEMO_COLLECTION)}
    assert readers == {"mine": ["alice", "root", "local"], "team": ["alice", "bob", "root", "local"],
                       "open": ["alice", "bob", "root", "visitor", "local"],
                       "orphan": ["root", "local"],  # no entry: the admins', private
                       DEMO_COLLECTION: ["alice", "bob", "root", "visitor", "local"]}
    changers = {name: [p.name for p in (ALICE, BOB, ADMIN, VISITOR) if access.can_change(p, name)]
                for name in ("mine", "team", "open", "orphan")}
    assert changers == {"mine": ["alice", "root"], "team": ["alice", "root"], "open": ["alice", "root"],
                        "orphan": ["root"]}
    assert access.readable(BOB, ["mine", "team", "open"]) == ["team", "open"]


def test_a_refusal_does_not_confirm_that_a_private_collection_exists(tmp_path):
    access = CollectionAccess(tmp_path)
    access.set("mine", owner="alice", visibility=PRIVATE)
    with pytest.raises(CollectionError) as private:
        access.check_read(BOB, "mine")
    with pytest.raises(CollectionError) as missing:
        access.check_read(BOB, "nothing-here")
    assert str(private.value).replace("mine", "X") == str(missing.value).replace("nothing-here", "X")
    access.set("mine", visibility=SHARED)
    with pytest.raises(CollectionError, match="Only the owner"):
        access.check_change(BOB, "mine")
    with pytest.raises(CollectionError, match="Sign in"):
        access.check_create(VISITOR)
    with pytest.raises(CollectionError, match="not a visibility"):
        access.set("mine", visibility="everyone")
    access.forget("mine")
    assert access.entry("mine").owner == "" and not access.can_read(ALICE, "mine")


# The modes the app starts in.

def _args(**overrides) -> argparse.Namespace:
    return app_module.parse_args([f"--{k.replace('_', '-')}={v}" if v is not True else f"--{k.replace('_', '-')}"
                                  for k, v in overrides.items()])


def test_the_app_refuses_the_network_without_saying_who_may_use_it(tmp_path):
    with pytest.raises(ValueError, match="--shared .* or --allow-anonymous"):
        app_module.people_for(_args(host="0.0.0.0", data_dir=tmp_path))
    assert app_module.main(["--host", "0.0.0.0", "--data-dir", str(tmp_path)]) == 2
    assert app_module.people_for(_args(data_dir=tmp_path)).mode == PERSONAL
    assert app_module.people_for(_args(host="::1", data_dir=tmp_path)).mode == PERSONAL
    assert app_module.people_for(_args(host="0.0.0.0", allow_anonymous=True, data_dir=tmp_path)).mode == ANONYMOUS
    with pytest.raises(ValueError, match="users add NAME --admin"):
        app_module.people_for(_args(host="0.0.0.0", shared=True, data_dir=tmp_path))
    Accounts(tmp_path).add("alice", "correct horse", admin=True)
    assert app_module.people_for(_args(host="0.0.0.0", shared=True, data_dir=tmp_path)).mode == "shared"


def test_the_cli_manages_accounts_and_who_may_read_a_collection(tmp_path, monkeypatch, capsys, embeddings):
    data = ["--data-dir", str(tmp_path)]
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse\n"))
    assert cli([*data, "users", "add", "alice", "--admin", "--password-stdin"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert cli([*data, "users", "add", "bob", "--password-stdin"]) == 2
    assert "at least 8" in capsys.readouterr().err
    assert cli([*data, "users", "list"]) == 0
    assert capsys.readouterr().out == "alice (admin)\n"
    assert Accounts(tmp_path).check("alice", "correct horse")

    monkeypatch.setattr("pipeline.runtime.SentenceEmbeddings", lambda: embeddings)
    notes = tmp_path / "notes.txt"
    notes.write_text("The river Vltava flows through Prague.")
    assert cli([*data, "ingest", "papers", str(notes), "--owner", "alice"]) == 0
    assert cli([*data, "collections"]) == 0
    assert "papers: 1 passages in 1 files; private, owned by alice" in capsys.readouterr().out
    assert cli([*data, "share", "papers", "shared"]) == 0
    assert CollectionAccess(tmp_path).entry("papers").visibility == SHARED
    assert cli([*data, "users", "remove", "alice"]) == 0
    assert CollectionAccess(tmp_path).entry("papers").owner == ""  # a later 'alice' does not inherit it
    assert cli([*data, "share", "no-such-thing", "public"]) == 2


# Every endpoint of a shared server, called by someone who may not.

def _shared_app(tmp_path, embeddings, model=None, **config):
    """A shared server with alice (owner of the private 'alice-notes'), bob, and the public demo collection."""
    from corpora.store import CollectionStore
    from pipeline.runtime import Runtime, RuntimeConfig
    from tests.fakes import ScriptedLLM
    from ui.app import build_app, launch_options

    data_dir = tmp_path / "data"
    accounts = Accounts(data_dir)
    accounts.add("alice", "alice's password")
    accounts.add("bob", "bob's password")
    store = CollectionStore(data_dir, embeddings)
    store.create("alice-notes").add([Document(page_content="Alice's secret: the launch is on Friday.",
                                              metadata={"title": "plans", "source": "plans.txt",
                                                        "collection": "alice-notes"}, id="a0")])
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model="default", **config), embeddings=embeddings)
    runtime.access.set("alice-notes", owner="alice", visibility=PRIVATE)
    runtime.use_model("default", model or ScriptedLLM(lambda messages, options: "Friday [1]."))
    people = People("shared", accounts)
    app = build_app(runtime, people=people)
    app.queue(default_concurrency_limit=1)
    return app, runtime, people, launch_options(data_dir)


# The handlers that never touch a collection, and why; every other handler must be tested below.
NO_COLLECTION = {"stop": "sets the caller's own Stop switch", "new_conversation": "clears the caller's own chat",
                 "replay": "reads a trace file the caller uploads", "show_compared": "shows or hides a list",
                 "closed": "frees the closed page's own place in the waiting line",
                 "admit": "tells the caller why their own question was refused",
                 "stop_ingest_clicked": "stops the caller's own ingest, keyed by their browser session",
                 "steer_offers": "lists the changes to the caller's own last answer (kept in their session)",
                 "ask_reading": "fills the question box from the caller's own offers, by place",
                 "step_chosen": "shows the text of a step of the caller's own last answer"}
# steer_submit and step_submit are checked as submit is; rewrite resumes the caller's own last run, and a chain
# continued from a rewritten step retrieves only from collections the caller may read (ui.steer.resume_last).
CHECKED = {"on_load", "example", "submit", "answer", "show_files", "create_clicked", "add_clicked",
           "delete_file_clicked", "delete_collection_clicked", "visibility_clicked", "steer_submit", "step_submit",
           "rewrite"}


@pytest.fixture
def shared_server(tmp_path, embeddings):
    from gradio_client import Client

    from tests.conftest import free_port

    app, runtime, people, options = _shared_app(tmp_path, embeddings)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               auth=people.auth(), **options)
    url = f"http://127.0.0.1:{port}/"

    def client(name: str, password: str) -> Client:
        return Client(url, auth=(name, password), verbose=False)

    yield app, runtime, client
    app.close()


def test_every_handler_is_either_checked_or_touches_no_collection(tmp_path, embeddings):
    """Hidden ("private") endpoints count too: the browser reaches them, and so can a script."""
    app, *_ = _shared_app(tmp_path, embeddings)
    handlers = {fn.fn.__name__ for fn in app.fns.values() if fn.fn is not None}
    assert handlers == CHECKED | set(NO_COLLECTION), "a new handler: check who may call it, then list it here"
    # The page's config is the same for everyone who loads it: it lists what a visitor may see, no more.
    config = json.dumps(app.get_config_file(), default=str)
    assert "alice-notes" not in config and "plans.txt" not in config


def _listing(result) -> dict:
    table, chosen, files, file_choice, ask_collections, report = result
    return {"table": [row[0] for row in table["data"]], "chosen": [c[1] for c in chosen["choices"]],
            "files": files["data"], "ask": [c[1] for c in ask_collections["choices"]], "report": html.unescape(report)}


def _refused(call) -> dict | None:
    """The lists an endpoint sent back, or None when Gradio refused the call itself (a value not among the
    choices this person's page was given)."""
    from gradio_client.exceptions import AppError

    try:
        return _listing(call())
    except AppError:
        return None


def test_another_person_is_refused_by_every_endpoint(shared_server, tmp_path):
    """Bob's page once listed alice's collection (she shared it, then made it private again): his stale page
    passes Gradio's own check of the choices, so each refusal here is the backend's."""
    from gradio_client import handle_file

    app, runtime, client = shared_server
    with pytest.raises(Exception):
        client("bob", "not bob's password")
    bob, alice = client("bob", "bob's password"), client("alice", "alice's password")

    table, chosen, ask, who = bob.predict(api_name="/load")
    assert [row[0] for row in table["data"]] == [] and "alice-notes" not in json.dumps([chosen, ask])
    assert "Signed in as <b>bob</b>" in who and 'href="/logout"' in who
    upload = tmp_path / "mine.txt"
    upload.write_text("Bob was here.")
    attempts = (("/add_files", ("alice-notes", [handle_file(str(upload))], False)),
                ("/delete_file", ("alice-notes", "plans.txt")),
                ("/delete_collection", ("alice-notes", True)),
                ("/set_visibility", ("alice-notes", PUBLIC)))
    for api, args in attempts:  # never offered to bob: Gradio or the backend refuses
        listing = _refused(lambda: bob.predict(*args, api_name=api))
        assert listing is None or "There is no collection 'alice-notes' you can use" in listing["report"], api

    alice.predict(api_name="/load")
    assert "alice-notes" in _listing(alice.predict("alice-notes", SHARED, api_name="/set_visibility"))["table"]
    table, chosen, ask, _who = bob.predict(api_name="/load")
    assert [row[0] for row in table["data"]] == ["alice-notes"]
    files, _choice, shown = bob.predict("alice-notes", api_name="/list_files")
    assert files["data"] == [["plans.txt", 1]] and shown == SHARED
    listing = _listing(bob.predict("alice-notes", True, api_name="/delete_collection"))
    assert "Only the owner of 'alice-notes'" in listing["report"] and listing["table"] == ["alice-notes"]
    alice.predict("alice-notes", PRIVATE, api_name="/set_visibility")
    files, choice, shown = bob.predict("alice-notes", api_name="/list_files")
    assert "plans" not in json.dumps([files, choice]) and shown == PRIVATE

    def stale_page():
        """Bob's page lists alice's collection and its file; then she makes it private again."""
        alice.predict("alice-notes", SHARED, api_name="/set_visibility")
        bob.predict(api_name="/load")
        bob.predict("alice-notes", api_name="/list_files")
        alice.predict("alice-notes", PRIVATE, api_name="/set_visibility")

    for api, args in attempts:
        stale_page()
        listing = _listing(bob.predict(*args, api_name=api))
        assert "There is no collection 'alice-notes' you can use" in listing["report"], api
        assert "alice-notes" not in json.dumps([listing["table"], listing["chosen"], listing["ask"]])
    assert runtime.store.open("alice-notes").files() == {"plans.txt": 1}
    assert runtime.access.entry("alice-notes").visibility == PRIVATE

    stale_page()
    _question, history = bob.predict("What is Alice's secret?", [], api_name="/submit")
    chat = bob.predict(history, "oner", ["alice-notes"], False, "default", False, [], api_name="/answer")
    shown = html.unescape(json.dumps(chat[0][-1]))
    assert "no collection 'alice-notes' you can use" in shown and "Friday" not in json.dumps(chat), shown


# Fair shares.

def test_admission_bounds_each_persons_questions_and_the_servers_waiting_line():
    from pipeline.limits import Admission, Ticket

    line = Admission(per_person=2, max_waiting=3)
    first, second = line.enter("bob"), line.enter("bob")
    assert isinstance(first, Ticket) and isinstance(second, Ticket)
    assert "You already have 2 questions waiting or being answered" in line.enter("bob")
    line.start(first)
    assert line.counts("bob") == (1, 1) and line.counts() == (1, 1)
    alice = [line.enter("alice"), line.enter("alice")]
    assert line.enter("carol") == "The server is busy: 3 questions are waiting ahead of yours. Try again in a minute."
    line.leave(second)
    line.leave(second)  # twice (the answer ended, then its page closed): counted once
    assert line.counts() == (2, 1) and isinstance(line.enter("carol"), Ticket)
    line.leave(None)  # a question refused before it had a ticket
    unlimited = Admission()
    assert all(isinstance(unlimited.enter("bob"), Ticket) for _ in range(100))
    assert alice


def test_a_run_past_the_servers_time_limit_is_stopped_and_says_why(tmp_path):
    """The deadline presses the run's Stop; the run ends with what it had, and its last step names the limit."""
    from pipeline.context import RunContext
    from pipeline.service import RunRequest, RunService
    from tests.fakes import ScriptedLLM, ScriptedRetriever

    passages = [Document(page_content="The launch is on Friday.", metadata={"title": "plans", "source": "p.txt"})]
    llm = ScriptedLLM(lambda messages, options: "The launch is on Friday, " + "and so on " * 200, delay=0.01)
    service = RunService(lambda request, web, cancel: RunContext(
        llm=llm, retriever=ScriptedRetriever(lambda q, k: passages), settings=request.settings),
        max_run_seconds=0.5)
    started = time.perf_counter()
    run = service.start(RunRequest(question="When is the launch?", method="oner"))
    events = list(run)
    assert time.perf_counter() - started < 3
    assert run.state.stopped() and events[-1].title == "Time limit"
    assert "stops a question after 0.5 s" in events[-1].payload.message
    assert len(llm.calls) == 1  # it was writing when the limit came

    quick = RunService(service.build_context, max_run_seconds=30)  # a run that ends in time is not touched
    llm.script = lambda messages, options: "Friday [1]."
    run = quick.start(RunRequest(question="When is the launch?", method="oner"))
    list(run)
    assert run.state.answer_text == "Friday [1]." and not run.state.stopped()


def test_uploads_beyond_a_persons_bytes_are_refused_and_deleting_frees_them(tmp_path, embeddings):
    from ui import collections_tab as coll

    _app, runtime, _people, _options = _shared_app(tmp_path, embeddings, max_upload_bytes_per_person=3000)
    coll.create_collection(runtime, BOB, "bob-notes")
    files = []
    for n in range(3):
        path = tmp_path / f"notes{n}.txt"
        path.write_text(f"Note {n}. " + "The meeting moved to the blue room. " * 34)  # about 1,200 bytes
        files.append(str(path))
    quiet = lambda *a: None  # noqa: E731
    assert "2 of 2 files" in coll.add_files(runtime, BOB, "bob-notes", files[:2], quiet)
    with pytest.raises(CollectionError, match="limit here is 0.003 MB per person.*Nothing was added"):
        coll.add_files(runtime, BOB, "bob-notes", files[2:], quiet)
    assert sorted(runtime.store.open("bob-notes").files()) == ["notes0.txt", "notes1.txt"]
    coll.delete_file(runtime, BOB, "bob-notes", "notes0.txt")
    assert "1 of 1 files" in coll.add_files(runtime, BOB, "bob-notes", files[2:], quiet)
    coll.create_collection(runtime, ADMIN, "root-notes")  # an admin is not limited
    assert "3 of 3 files" in coll.add_files(runtime, ADMIN, "root-notes", files, quiet)
    assert runtime.access.bytes_owned_by("bob") == sum(os.path.getsize(f) for f in files[1:])


def test_old_traces_are_deleted_and_new_ones_kept(tmp_path):
    from pipeline.housekeeping import TraceCleaner, delete_old_traces

    old, new = tmp_path / "traces" / "bob" / "s1" / "run.jsonl", tmp_path / "traces" / "alice" / "s2" / "run.jsonl"
    for path in (old, new):
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    eight_days = time.time() - 8 * 86400
    os.utime(old, (eight_days, eight_days))
    assert delete_old_traces(tmp_path / "traces", days=0) == 0  # 0: keep everything
    cleaner = TraceCleaner(tmp_path / "traces", days=7, every_s=0.05).start()
    try:
        deadline = time.time() + 30  # generous: on a loaded machine the cleaner runs late
        # one round deletes the file, then the folders it leaves empty: wait for the folders too
        while (tmp_path / "traces" / "bob").exists() and time.time() < deadline:
            time.sleep(0.05)
    finally:
        cleaner.stop()
    assert not old.exists() and not (tmp_path / "traces" / "bob").exists() and new.exists()


def test_the_costliest_settings_are_lowered_to_the_servers_caps_with_a_note():
    from pipeline.limits import cap_costly
    from tests.fakes import settings_with

    caps = {"webagent.max_steps": 16, "toc.max_llm_calls": 19}
    settings, notes = cap_costly(settings_with(**{"webagent.max_steps": 100, "toc.max_llm_calls": 12}), caps)
    assert settings.for_method("webagent", type(settings.methods["webagent"])).max_steps == 16
    assert settings.methods["toc"].max_llm_calls == 12  # under its cap: kept
    assert notes == ["the web agent's actions: 100 lowered to 16, this server's limit"]
    unchanged = settings_with(**{"toc.max_llm_calls": 60})
    assert cap_costly(unchanged, {"toc.max_llm_calls": 0}) == (unchanged, [])  # 0: no cap


def test_a_person_at_the_collections_limit_is_told_and_an_admin_is_not_limited(tmp_path, embeddings):
    from ui import collections_tab as coll

    _app, runtime, _people, _options = _shared_app(tmp_path, embeddings, max_collections_per_person=2)
    assert "only you" in coll.create_collection(runtime, BOB, "bob-one")
    coll.create_collection(runtime, BOB, "bob-two")
    with pytest.raises(CollectionError, match="You have 2 collections"):
        coll.create_collection(runtime, BOB, "bob-three")
    assert not runtime.store.exists("bob-three")
    coll.delete_collection(runtime, BOB, "bob-two", confirmed=True)
    coll.create_collection(runtime, BOB, "bob-three")
    for name in ("root-one", "root-two", "root-three"):
        coll.create_collection(runtime, ADMIN, name)


class _SlowServer:
    """A shared server whose model answers "Friday [1]." only once ``release`` is set, with three tabs (bob's
    two, alice's one) that ask as the page chains its handlers."""

    def __init__(self, tmp_path, embeddings, **config) -> None:
        import threading

        from gradio_client import Client

        from tests.conftest import free_port
        from tests.fakes import ScriptedLLM

        self.release = threading.Event()

        def slow(messages, options):
            self.release.wait(30)
            return "Friday [1]."

        self.model = ScriptedLLM(slow)
        self.app, runtime, people, options = _shared_app(tmp_path, embeddings, model=self.model, **config)
        runtime.access.set("alice-notes", visibility=SHARED)
        port = free_port()
        self.app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        auth=people.auth(), **options)
        url = f"http://127.0.0.1:{port}/"
        self.tabs = {who: Client(url, auth=(who.split("-")[0], f"{who.split('-')[0]}'s password"), verbose=False)
                     for who in ("bob-1", "bob-2", "alice-1")}

    def ask(self, who: str):
        tab = self.tabs[who]
        tab.predict(api_name="/load")
        _q, history = tab.predict("When is the launch?", [], api_name="/submit")
        tab.predict(api_name="/admit")  # raises the notice of a question over a limit
        return tab.submit(history, "oner", ["alice-notes"], False, "default", False, [], api_name="/answer")

    def wait_for_the_model(self) -> None:
        deadline = time.time() + 20
        while not self.model.calls:
            assert time.time() < deadline, "the first question never reached the model"
            time.sleep(0.05)

    def close(self) -> None:
        self.release.set()
        self.app.close()


def _answered(job) -> bool:
    return "Friday" in json.dumps(job.result(timeout=30)[0][-1])


def test_a_person_over_their_runs_is_refused_while_another_is_answered(tmp_path, embeddings):
    """bob asks in two tabs with a limit of one run each: the second tab is told to wait, alice is answered."""
    from gradio_client.exceptions import AppError

    server = _SlowServer(tmp_path, embeddings, max_runs_per_person=1)
    try:
        first = server.ask("bob-1")
        server.wait_for_the_model()
        with pytest.raises(AppError, match="You already have 1 question waiting or being answered"):
            server.ask("bob-2")
        other = server.ask("alice-1")
        server.release.set()
        assert _answered(first) and _answered(other)
        assert _answered(server.ask("bob-2"))  # bob's first run has ended: his slot is free again
    finally:
        server.close()


def test_a_full_waiting_line_is_refused_at_once_with_how_many_are_ahead(tmp_path, embeddings):
    """One question runs at a time and one may wait: bob's first runs, his second waits, alice is told the server
    is busy (not queued behind them); once they are answered she may ask."""
    from gradio_client.exceptions import AppError

    server = _SlowServer(tmp_path, embeddings, max_runs=1, max_waiting=1, max_runs_per_person=0)
    try:
        first = server.ask("bob-1")
        server.wait_for_the_model()
        waiting = server.ask("bob-2")
        started = time.perf_counter()
        with pytest.raises(AppError, match="The server is busy: 1 questions are waiting ahead of yours"):
            server.ask("alice-1")
        assert time.perf_counter() - started < 5  # told at once, not after a turn
        assert len(server.model.calls) == 1 and not waiting.done()
        server.release.set()
        assert _answered(first) and _answered(waiting) and _answered(server.ask("alice-1"))
    finally:
        server.close()


def test_gradios_monitoring_pages_are_closed(tmp_path, embeddings):
    """Gradio opens /monitoring unless told not to; its summary of every event would be open to any visitor of
    an app without a login."""
    import urllib.error
    import urllib.request

    from tests.conftest import free_port

    app, _runtime, _people, options = _shared_app(tmp_path, embeddings)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    try:
        for path in ("monitoring", "monitoring/summary"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=10)
            assert refused.value.code == 403, path
    finally:
        app.close()
