"""The Gradio app: the Ask tab (chat, settings, live reasoning view, traces) and the Collections tab.

Each browser session has its own conversation, settings and Stop switch (``gr.State``). Up to
``RuntimeConfig.max_runs`` questions run at once (``concurrency_id="runs"``; more wait in Gradio's queue, which
shows their place); their in-process model calls take turns through one gate, and a run waiting there shows how
many questions are ahead of it. A run waiting on retrieval, the web or a model server holds up nobody.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from corpora.demo import DEMO_COLLECTION
from corpora.ingest import MAX_FILE_BYTES
from corpora.loaders import SUPPORTED_SUFFIXES
from corpora.store import CollectionError
from models.errors import ModelError
from pipeline.accounts import PERSONAL, SHARED, VISITOR, People, Person
from pipeline.access import PRIVATE
from pipeline.limits import Admission, Ticket, cap_costly
from pipeline.methods import METHODS, settings_models
from pipeline.runtime import Runtime, share_model_turns
from pipeline.service import AUTO, RunRequest, RunService
from pipeline.trace import load_trace
from ui import collections_tab as coll
from ui.answer import answer_message, last_user_text
from ui import steer as steering
from ui.ask_tab import Session, run_comparison, run_question, run_steered, trace_dir
from ui.examples import example_rows, use_example
from ui.picture import picture_html, picture_placeholder, reasoning_html
from ui.settings_form import build_settings_panel, settings_from_values
from pipeline.escaping import esc, md_safe
from ui.view import placeholder

ASSETS = Path(__file__).parent / "assets"


def launch_options(data_dir: Path | str | None = None) -> dict:
    """Arguments for ``Blocks.launch``: the page's stylesheet and script, the upload size limit and, given the
    data directory, its traces folder as a path Gradio may serve: Gradio serves files only from the working
    directory, the temp folder and ``allowed_paths``, so with ``--data-dir`` elsewhere (``/var/lib/...``) every
    trace download failed ("Cannot move ... to the gradio cache dir"). Only the traces, not the collections.
    Gradio's monitoring pages are off."""
    options = {
        "css_paths": [ASSETS / "app.css", ASSETS / "picture.css"],
        "head": "".join(f"<script>{(ASSETS / name).read_text(encoding='utf-8')}</script>"
                        for name in ("cite.js", "picture.js", "steer.js")),
        "max_file_size": MAX_FILE_BYTES,
        # Gradio enables /monitoring by default; its summary of every event is open to anyone signed in, and
        # without a login to anyone at all.
        "enable_monitoring": False,
    }
    if data_dir is not None:
        options["allowed_paths"] = [str(Path(data_dir).resolve() / "traces")]
    return options


class SignedOut(CollectionError):
    """A request of a shared server with no account behind it (the account was removed since signing in)."""


def build_app(runtime: Runtime, default_model: str | None = None, people: People | None = None) -> gr.Blocks:
    """The app over ``runtime``. ``default_model`` is the model choice preselected in the settings; ``people``
    says who sends each request (default: one local person who owns everything). Every handler that touches a
    collection asks ``runtime.access`` whether the person behind its request may, whatever the page shows."""
    # One function, longer than the others: a Gradio page is declared top to bottom inside one Blocks context,
    # and its event wiring needs the components declared before it; the tabs' own logic lives in ask_tab.py,
    # collections_tab.py and settings_form.py.
    default_model = runtime.catalog.key_of(default_model or runtime.config.model)
    methods = [("Auto (answers first, goes deeper when needed)", AUTO)] + [(m.label, name) for name, m in reversed(METHODS.items())]
    service = RunService.for_runtime(runtime)
    traces = Path(runtime.config.data_dir)
    people = people or People()
    # Only accounts tell people apart: a personal app has one person, whose tabs may all ask at once, and every
    # visitor of an anonymous one is the same "visitor" (each browser session asks one question at a time).
    admission = Admission(runtime.config.max_runs_per_person if people.mode == SHARED else 0,
                          runtime.config.max_waiting)
    costly_caps = {"webagent.max_steps": runtime.config.max_agent_actions,
                   "toc.max_llm_calls": runtime.config.max_toc_calls}
    # The page's first lists are in its config, the same for everyone who loads it: on a personal app they are the
    # owner's, elsewhere what a visitor may see; each person's own lists are filled in when their page loads.
    builder = people.of(None) if people.mode == PERSONAL else VISITOR

    def person_of(request: gr.Request | None) -> Person:
        person = people.of(getattr(request, "username", None))
        if person is None:
            raise SignedOut("Your account is no longer on this server: sign in again.")
        return person

    def session_of(session: Session | None) -> Session:
        return session if isinstance(session, Session) else Session()

    tickets: dict[str, Ticket] = {}  # by browser session: the place its question holds until it has run

    def closed(request: gr.Request):
        """A page was closed: its question no longer counts, whether it was waiting for its turn (Gradio drops
        it from the queue, so it never runs) or running (its run is stopped)."""
        admission.leave(tickets.pop(request.session_hash, None))

    def submit(request: gr.Request, question: str, history: list, session: Session | None):
        """Record the question as the session's pending one, so the queued run (``answer``) can start from it.
        A question that cannot be asked now gets a warning (a toast: this handler is queued, with no limit, so
        it runs at once) and changes nothing: no error is raised, so there is no error overlay on the chat and
        no traceback in the log; ``answer`` then finds no pending question and returns. A question over a
        limit of ``admission`` is recorded for ``admit``, which tells the person."""
        session = session_of(session)
        question = (question or "").strip()
        if not let_in(request, session, service.problem(question) or ""):  # a refused question stays in its box
            return gr.skip(), gr.skip(), session
        session.question = question
        return "", history + [{"role": "user", "content": md_safe(question)}], session

    def let_in(request: gr.Request, session: Session, refusal: str = "") -> bool:
        """Whether a question or a rewrite of ``session`` may take a place in the waiting line (a run of the
        model): not when ``refusal`` says why not, the person signed out or has a run going (a notice says so),
        nor over a limit of ``admission`` (recorded for ``admit``, which tells the person; the question stays in
        its box). Let in now, before the run waits for its turn, so that the waiting line and each person's share
        stay bounded; the session is then running."""
        try:
            session.person = person_of(request).name
        except SignedOut as exc:
            gr.Warning(str(exc), duration=6)
            return False
        if refusal or session.running:
            gr.Warning(refusal if not session.running else
                       "Your previous question is still being answered: wait for it, or press Stop.", duration=6)
            return False
        entered = admission.enter(session.person)
        if isinstance(entered, str):
            session.refusal = entered
            return False
        admission.leave(tickets.pop(request.session_hash, None))  # an older one whose run never came
        tickets[request.session_hash] = entered
        if people.mode == SHARED:  # the model's turns go round people, however many tabs each one asks in
            share_model_turns(session.cancel, session.person)
        session.running = True
        session.cancel.clear()
        return True

    def admit(session: Session | None):
        """Between ``submit`` and ``answer``: a question over a limit ends its chain here, with a notice, so that
        the person is told at once instead of after waiting for a turn (``answer`` is queued, this is not). It
        has no outputs, so that nothing on the page shows an error state."""
        refusal = session.refusal if isinstance(session, Session) else ""
        if refusal:
            session.refusal = ""
            raise gr.Error(refusal, duration=10, title="Not now", print_exception=False)

    def answer(request: gr.Request, history: list, session: Session, method, collections, use_web, model, compare,
               compared, *values):
        # Run the pending question only from the event of the submit that recorded it (its history ends with
        # that question): after a refused submit there is none, and an event that waited in the queue since
        # before the question was asked has an older history. Both change nothing (a generator that yields
        # nothing would empty the chat, hence the skips).
        pending = session.question if isinstance(session, Session) else ""
        if not pending or last_user_text(history) != md_safe(pending):
            yield gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return
        session.question = ""  # taken: a later event finds nothing pending
        ticket = tickets.pop(request.session_hash, None)
        try:
            admission.start(ticket)
            person = person_of(request)
            for name in collections or ():
                runtime.access.check_read(person, name)
            settings = settings_from_values(controls, list(values), settings_models())
            if people.mode != PERSONAL and not person.admin:
                settings, lowered = cap_costly(settings, costly_caps)
                for note in lowered:
                    gr.Warning(f"Capped: {note}.", duration=8)
        except ValueError as exc:  # CollectionError is one
            session.running = False
            admission.leave(ticket)
            yield _refused(history, exc)
            return
        try:
            yield from ask(session, history, pending, method, collections, use_web, model, compare, compared,
                           settings)
        finally:
            admission.leave(ticket)

    def ask(session, history, pending, method, collections, use_web, model, compare, compared, settings):
        request = RunRequest(question=pending, method=method, collections=tuple(collections or ()),
                             model=model or None, settings=settings.model_copy(update={"use_web": bool(use_web)}))
        chosen = [name for name in compared or [] if name in METHODS]
        if compare and len(chosen) >= 2:
            yield from run_comparison(service, session, history, request, chosen, traces)
            return
        if compare:
            gr.Warning("Choose at least two methods to compare: this question runs with the Method above.",
                       duration=6)
        yield from run_question(service, session, history, request, traces)

    def step_submit(request: gr.Request, step, text, history: list, session: Session | None):
        """A reading or a chain's step rewritten ("Rewrite from this step"): recorded as a pending rewrite like
        ticked changes."""
        try:
            chosen = steering.step_edit(session.last if isinstance(session, Session) else None, step, text)
        except ValueError as exc:
            gr.Warning(str(exc), duration=6)
            return gr.skip(), session_of(session)
        return steer_submit(request, chosen, history, session)

    def steer_submit(request: gr.Request, chosen: list, history: list, session: Session | None):
        """Record the ticked changes as the session's pending rewrite, as ``submit`` records a question (the same
        checks and limits: a rewrite runs the model as a question does), with the person's request as a chat
        line; ``rewrite`` runs it in its turn."""
        session = session_of(session)
        refusal = ("There is no answer to change: ask a question first." if session.last is None else
                   "Tick at least one change first." if not chosen else "")
        if not refusal:
            try:  # a choice that is no edit at all (a forged request) is told here, before it takes a place
                steering.parse_choices(chosen)
            except ValueError as exc:
                refusal = str(exc)
        if not let_in(request, session, refusal):
            return gr.skip(), session
        session.edits = list(chosen)
        line = steering.describe(chosen, steering.edit_choices(session.last))
        return history + [{"role": "user", "content": md_safe(line)}], session

    def rewrite(request: gr.Request, history: list, session: Session, model, *values):
        """The session's last answer written again from the ticked changes (``RunService.resume``): the original
        steps, the edits and the new answer in the view, the new answer in the chat."""
        edits = session.edits if isinstance(session, Session) else None
        if edits is None:
            yield gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return
        session.edits = None
        ticket = tickets.pop(request.session_hash, None)
        try:
            admission.start(ticket)
            person = person_of(request)
            if session.last is None:
                raise ValueError("There is no answer to change: ask a question first.")
            settings = settings_from_values(controls, list(values), settings_models())
            if people.mode != PERSONAL and not person.admin:
                settings, _ = cap_costly(settings, costly_caps)
            run = steering.resume_last(service, session.last, edits, settings, model or None, session.cancel,
                                       trace_dir(traces, session),
                                       may_read=lambda name: runtime.access.check_read(person, name))
        except ValueError as exc:  # EditError and CollectionError are ones
            session.running = False
            admission.leave(ticket)
            yield _refused(history, exc)
            return
        try:
            yield from run_steered(run, session, history)
        finally:
            admission.leave(ticket)

    def steer_offers(session: Session | None):
        """The changes and the "Did you mean?" readings offered for the session's last answer (hidden when it
        has none)."""
        last = session.last if isinstance(session, Session) and not session.running else None
        choices = steering.edit_choices(last)
        steps = steering.step_choices(last)
        readings = steering.readings_to_ask(last) if last is not None and last.final_answer.method == "toc" else []
        if isinstance(session, Session):
            session.offers = readings
        return (gr.update(choices=choices, value=[]), gr.update(visible=bool(choices)),
                gr.Dataset(samples=[[r] for r in readings], visible=bool(readings)),
                gr.update(choices=steps, value=None), gr.update(value=""), gr.update(visible=bool(steps)),
                steering.offered_steps(steps))

    def ask_reading(index, session: Session | None):
        """A "Did you mean?" reading clicked: its clarified question asked alone, with OneR (the reading is one
        question already). The reading comes from the session's own offers, by its place."""
        offers = session.offers if isinstance(session, Session) else []
        if not isinstance(index, int) or not 0 <= index < len(offers):
            return gr.skip(), gr.skip()
        return offers[index], "oner"

    def step_chosen(step, session: Session | None):
        """The chosen step's text now (a reading's answer or question, a chain's sentence), to be rewritten."""
        last = session.last if isinstance(session, Session) and not session.running else None
        return steering.step_text(last, step if isinstance(step, str) else None)

    def stop(session: Session | None):
        if isinstance(session, Session):
            session.cancel.set()

    def new_conversation(session: Session | None):
        """Clear the chat; a run still going is stopped and no longer writes into it."""
        session = session_of(session)
        if session.running:
            session.cancel.set()
        session.generation += 1
        session.conversation = type(session.conversation)()
        session.last = None
        return [], placeholder("New conversation."), picture_placeholder(""), "", None, session

    def replay(file, history: list, session: Session | None):
        """Show a saved trace (no model runs); its answer may then be steered like one just given."""
        session = session_of(session)
        if session.running:
            gr.Warning("Wait for the question being answered, or press Stop, before replaying a trace.")
            return gr.update(), gr.update(), gr.update(), history, session
        if file is None:
            return gr.update(), gr.update(), gr.update(), history, session
        try:
            state = load_trace(Path(file if isinstance(file, str) else file.name))
        except (ValueError, OSError) as exc:
            gr.Warning(f"Cannot replay this file: {exc}")
            return gr.update(), gr.update(), gr.update(), history, session
        run_id = next((e.run_id for e in state.events), "replay")
        question = state.question
        header = "Replayed from a trace file: no model was run."
        session.last = state if state.final_answer is not None else None
        return reasoning_html(state, run_id, header), picture_html(state, run_id), "", history + [
            {"role": "user", "content": f"(replayed) {md_safe(question)}" if question else "(replayed trace)"},
            {"role": "assistant", "content": answer_message(state, run_id)},
        ], session

    # Uploads that Gradio keeps in its cache (every file a page sends, added to a collection or not) are deleted
    # once a day old, checked every hour; saved traces are the app's (pipeline.housekeeping).
    with gr.Blocks(title="Research QA", delete_cache=(3600, 86400)) as app:
        session = gr.State(None)
        gr.Markdown("# Research QA\nAnswers from your documents and the web with a small local model. "
                    "Watch the reasoning on the right as it happens.")
        signed_in = gr.HTML("", visible=people.mode == SHARED, elem_id="signed-in")
        with gr.Tab("Ask"):
            with gr.Row():
                with gr.Column(scale=4, min_width=340):
                    chat = gr.Chatbot(label="Conversation", height=520, elem_id="chat")
                    # One line that grows: Enter sends (Gradio submits on Enter only when lines=1), Shift+Enter
                    # starts a new line.
                    question = gr.Textbox(label="Question", placeholder="Ask about your collections… (Enter sends, "
                                          "Shift+Enter adds a line)", lines=1, max_lines=8, elem_id="question")
                    with gr.Row():
                        ask_button = gr.Button("Ask", variant="primary", elem_id="ask")
                        stop_button = gr.Button("Stop", variant="stop", elem_id="stop")
                        new_button = gr.Button("New conversation", elem_id="new-conversation")
                    # Under the answer: what a person may change in it (ui.steer), and ToC's readings to ask alone.
                    with gr.Group(visible=False, elem_id="steer-panel") as steer_panel:
                        steer = gr.CheckboxGroup([], label="Change the answer",
                                                 info="Tick readings to leave out, put back or clarify once "
                                                      "more, passages to drop, or passages and sentences to add, "
                                                      "then Rewrite: only what they change is done again.",
                                                 elem_id="steer")
                        rewrite_button = gr.Button("Rewrite the answer", elem_id="rewrite")
                    with gr.Group(visible=False, elem_id="step-panel") as step_panel:
                        step_choice = gr.Dropdown([], label="Rewrite a step",
                                                  info="A reading gets your short answer or clarified question; a "
                                                       "chain's step your text, and the chain goes on from it (the "
                                                       "steps before it kept). The answer is written again.",
                                                  elem_id="step-choice")
                        step_text = gr.Textbox(label="Its new text: a reading's answer or question, a hop's answer, "
                                                     "or a sentence (empty deletes a sentence)",
                                               lines=1, max_lines=3, elem_id="step-text")
                        continue_button = gr.Button("Rewrite from this step", elem_id="continue-chain")
                        step_offers = gr.HTML("", elem_id="step-offers", elem_classes=["rv-hidden"])
                    did_you_mean = gr.Dataset(label="Did you mean? Click a reading to ask it alone (with OneR)",
                                              components=["textbox"], headers=["Reading"], samples=[],
                                              type="index", visible=False, elem_id="did-you-mean")
                    examples = gr.Dataset(label="Examples: click one to ask it (demo corpus)",
                                          components=["textbox", "textbox"], headers=["Question", "Method"],
                                          samples=example_rows(), type="index", samples_per_page=10,
                                          elem_id="examples")
                    trace_files = gr.File(label="Trace of the last question (JSONL events, Markdown report, "
                                                "picture as SVG)",
                                          file_count="multiple", interactive=False, elem_id="trace-files",
                                          height=110)
                    trace_upload = gr.UploadButton("Replay a trace file…", file_types=[".jsonl"],
                                                   elem_id="replay")
                with gr.Column(scale=7, min_width=360):  # the picture needs the width: a tree grows rightwards
                    picture = gr.HTML(picture_placeholder("The run's picture grows here, step by step."),
                                      elem_id="picture")
                    view = gr.HTML(placeholder("The reasoning appears here while the model works."),
                                   elem_id="reasoning")
                with gr.Column(scale=3, min_width=240):
                    method = gr.Dropdown(methods, value=AUTO, label="Method", elem_id="method")
                    collections = gr.CheckboxGroup(coll.names(runtime, builder),
                                                   value=_default_collections(coll.names(runtime, builder)),
                                                   label="Collections", elem_id="collections")
                    use_web = gr.Checkbox(False, label="Search the web (DuckDuckGo)", elem_id="use-web")
                    model = gr.Dropdown(runtime.model_choices(), value=default_model, label="Model",
                                        info="The models the operator offers (see --models-dir, --endpoint)",
                                        elem_id="model")
                    compare = gr.Checkbox(False, label="Compare methods side by side", elem_id="compare-toggle",
                                          info="Runs each method below on the question, one after another")
                    compared = gr.CheckboxGroup([(m.label, name) for name, m in METHODS.items()],
                                                value=[m for m in ("oner", "toc") if m in METHODS],
                                                label="Methods to compare", visible=False, elem_id="compare-methods")
                    with gr.Accordion("Method settings", open=False, elem_id="method-settings"):
                        controls = build_settings_panel({name: (spec.label, spec.settings)
                                                         for name, spec in METHODS.items()})
            comparison = gr.HTML("", elem_id="compare")  # the compared methods side by side
        with gr.Tab("Collections"):
            with gr.Row():
                with gr.Column():
                    table = gr.Dataframe(coll.collection_rows(runtime, builder), headers=coll.OWNER_HEADERS,
                                         interactive=False, label="Collections", elem_id="collections-table")
                    with gr.Row():
                        new_name = gr.Textbox(label="New collection", placeholder="letters, digits, - _ .",
                                              elem_id="new-collection")
                        create_button = gr.Button("Create", elem_id="create-collection")
                    chosen = gr.Dropdown(coll.names(runtime, builder), label="Collection",
                                         elem_id="chosen-collection")
                    with gr.Row(visible=people.mode == SHARED):
                        visibility = gr.Dropdown([("only me", PRIVATE), ("everyone signed in", "shared"),
                                                  ("everyone, visitors too", "public")], value=PRIVATE,
                                                 label="Who can read the chosen collection",
                                                 elem_id="visibility")
                        visibility_button = gr.Button("Set", elem_id="set-visibility")
                    files_table = gr.Dataframe([], headers=["file", "passages"], interactive=False,
                                               label="Files in the collection", elem_id="files-table")
                with gr.Column():
                    uploads = gr.File(label=f"Add files ({', '.join(sorted(SUPPORTED_SUFFIXES))}; up to "
                                            f"{MAX_FILE_BYTES / 1e6:.0f} MB each)",  # as corpora/ingest.py says
                                      file_count="multiple", file_types=sorted(SUPPORTED_SUFFIXES),
                                      elem_id="uploads")
                    replace_files = gr.Checkbox(False, label="Replace files with the same name",
                                                elem_id="replace-files")
                    with gr.Row():
                        add_button = gr.Button("Add files to the collection", variant="primary",
                                               elem_id="add-files")
                        stop_ingest_button = gr.Button("Stop adding", variant="stop", elem_id="stop-ingest")
                    report = gr.HTML("", elem_id="ingest-report")
                    with gr.Accordion("Delete files or the collection", open=False, elem_id="delete-panel"):
                        file_choice = gr.Dropdown([], label="File", elem_id="file-choice")
                        delete_file_button = gr.Button("Delete this file", elem_id="delete-file")
                        confirm = gr.Checkbox(False, label="Yes, delete the whole collection")
                        delete_coll_button = gr.Button("Delete the collection", variant="stop",
                                                       elem_id="delete-collection")

        knobs = [method, collections, use_web, model, compare, compared, *(c.component for c in controls)]
        # An example fills in its question, method and the demo collection, then is asked like a typed question.
        def example(request: gr.Request, index, chosen):
            return use_example(index, chosen, coll.names(runtime, people.of(request.username) or VISITOR))

        example_asked = examples.click(example, [examples, collections], [question, method, collections],
                                       queue=False, api_name="example").then
        reading_asked = did_you_mean.click(ask_reading, [did_you_mean, session], [question, method], queue=False,
                                           api_name="ask_reading").then
        offers = [steer, steer_panel, did_you_mean, step_choice, step_text, step_panel, step_offers]
        for trigger in (ask_button.click, question.submit, example_asked, reading_asked):
            trigger(submit, [question, chat, session], [question, chat, session], concurrency_limit=None,
                    show_progress="hidden", api_name="submit").success(
                admit, [session], None, concurrency_limit=None, show_progress="hidden", api_name="admit").success(
                answer, [chat, session, *knobs], [chat, view, picture, comparison, trace_files],
                concurrency_limit=runtime.config.max_runs, concurrency_id="runs", show_progress="minimal",
                api_name="answer").then(steer_offers, [session], offers, queue=False, api_name="offers")
        for trigger, handler, inputs, name in (
                (rewrite_button.click, steer_submit, [steer], "steer"),
                (continue_button.click, step_submit, [step_choice, step_text], "steer_step")):
            trigger(handler, [*inputs, chat, session], [chat, session], concurrency_limit=None,
                    show_progress="hidden", api_name=name).success(
                admit, [session], None, concurrency_limit=None, show_progress="hidden").success(
                rewrite, [chat, session, model, *(c.component for c in controls)],
                [chat, view, picture, comparison, trace_files], concurrency_limit=runtime.config.max_runs,
                concurrency_id="runs", show_progress="minimal", api_name=f"{name}_run").then(
                steer_offers, [session], offers, queue=False)
        step_choice.input(step_chosen, [step_choice, session], [step_text], queue=False, api_name="step_chosen")

        def show_compared(on):
            return gr.update(visible=on)

        compare.change(show_compared, [compare], [compared], queue=False)
        stop_button.click(stop, [session], None, queue=False, api_name="stop")
        new_button.click(new_conversation, [session], [chat, view, picture, comparison, trace_files, session],
                         queue=False, api_name="new_conversation").then(steer_offers, [session], offers,
                                                                        queue=False)
        # Queued (no model, so no limit): only a queued event carries its toast (gr.Warning) to the browser; a bad
        # file's warning would otherwise reach the server's log alone.
        trace_upload.upload(replay, [trace_upload, chat, session], [view, picture, comparison, chat, session],
                            concurrency_limit=None, api_name="replay").then(steer_offers, [session], offers,
                                                                            queue=False)

        # Collections tab: every change refreshes the lists it affects, including the Ask tab's checkboxes.
        def refreshed(person: Person, name: str | None, message: str = ""):
            names = coll.names(runtime, person)
            name = name if name in names else None
            files = coll.file_rows(runtime, person, name)
            return (coll.collection_rows(runtime, person), gr.update(choices=names, value=name), files,
                    gr.update(choices=[f for f, _ in files], value=None), gr.update(choices=names), message)

        listing = [table, chosen, files_table, file_choice, collections, report]

        def guarded(action, request: gr.Request, name, *args, progress=None):
            """Run a Collections action for the person behind ``request``, then refresh every list with what
            that person may see; a refusal or failure is a message in the report."""
            try:
                person = person_of(request)
            except SignedOut as exc:
                return refreshed(VISITOR, None, f'<div class="notice notice-error">{esc(exc)}</div>')
            try:
                message, name = action(person, name, *args, progress=progress)
            except (CollectionError, ModelError, ValueError, OSError) as exc:
                return refreshed(person, name, f'<div class="notice notice-error">{esc(exc)}</div>')
            return refreshed(person, name, message)

        # Gradio passes the request and the progress tracker only to parameters declared one by one (not after
        # *args), hence one small handler per button.
        def create_clicked(request: gr.Request, name):
            return guarded(do_create, request, name)

        ingest_stops = coll.IngestStops()

        def add_clicked(request: gr.Request, name, files, replace, progress=gr.Progress()):
            with ingest_stops.running(request.session_hash) as cancel:
                return guarded(do_add, request, name, files, replace, cancel, progress=progress)

        def stop_ingest_clicked(request: gr.Request):
            """Stop this browser session's own ingest (never another's): the file being read or stored is dropped
            whole, the files already added stay."""
            gr.Info(coll.stop_ingest(ingest_stops, request.session_hash))

        def delete_file_clicked(request: gr.Request, name, file):
            return guarded(do_delete_file, request, name, file)

        def delete_collection_clicked(request: gr.Request, name, confirmed):
            return guarded(do_delete_collection, request, name, confirmed)

        def visibility_clicked(request: gr.Request, name, chosen_visibility):
            return guarded(do_set_visibility, request, name, chosen_visibility)

        def do_create(person, name, progress):
            return f"<p>{esc(coll.create_collection(runtime, person, name))}</p>", (name or "").strip()

        def do_add(person, name, files, replace, cancel, progress):
            def report_progress(done, total, what):
                progress((done, total), desc=f"Embedding passages of {what}", unit="passages")
            return coll.add_files(runtime, person, name, files, report_progress, replace=replace,
                                  cancel=cancel), name

        def do_delete_file(person, name, file, progress):
            return f"<p>{esc(coll.delete_file(runtime, person, name, file))}</p>", name

        def do_delete_collection(person, name, confirmed, progress):
            return f"<p>{esc(coll.delete_collection(runtime, person, name, confirmed))}</p>", None

        def do_set_visibility(person, name, chosen_visibility, progress):
            return f"<p>{esc(coll.set_visibility(runtime, person, name, chosen_visibility))}</p>", name

        create_button.click(create_clicked, [new_name], listing, queue=False, api_name="create_collection")
        add_button.click(add_clicked, [chosen, uploads, replace_files], listing, concurrency_id="ingest",
                         concurrency_limit=1, api_name="add_files")
        # Not queued: the add it stops holds the ingest slot, and a queued Stop would wait behind it.
        stop_ingest_button.click(stop_ingest_clicked, None, None, concurrency_limit=None,  # queued for its toast
                                 api_name="stop_ingest")
        delete_file_button.click(delete_file_clicked, [chosen, file_choice], listing, queue=False,
                                 api_name="delete_file")
        delete_coll_button.click(delete_collection_clicked, [chosen, confirm], listing, queue=False,
                                 api_name="delete_collection")
        visibility_button.click(visibility_clicked, [chosen, visibility], listing, queue=False,
                                api_name="set_visibility")

        def show_files(request: gr.Request, name):
            """The chosen collection's files, and who may read it (shown only when the person may read it)."""
            person = people.of(request.username) or VISITOR
            readable = bool(name) and runtime.access.can_read(person, name)
            shown = runtime.access.entry(name).visibility if readable else PRIVATE
            return (*refreshed(person, name)[2:4], shown)

        chosen.change(show_files, [chosen], [files_table, file_choice, visibility], queue=False,
                      api_name="list_files")

        def on_load(request: gr.Request):
            person = people.of(request.username) or VISITOR  # collections may have changed since the page was built
            names = coll.names(runtime, person)
            # A plain link in this tab (a Markdown link would open a new one): /logout is Gradio's own.
            who = (f"<p>Signed in as <b>{esc(person.name)}</b>{' (admin)' if person.admin else ''} · "
                   '<a href="/logout" target="_self">Sign out</a></p>') if people.mode == SHARED else ""
            return (coll.collection_rows(runtime, person), gr.update(choices=names),
                    gr.update(choices=names, value=_default_collections(names)), who)

        app.load(on_load, None, [table, chosen, collections, signed_in], queue=False, api_name="load")
        app.unload(closed)
    return app


def _refused(history: list, reason) -> tuple:
    """The outputs of a question or a rewrite that cannot run: the reason as the chat's answer, the rest kept."""
    notice = {"role": "assistant", "content": f'<div class="notice notice-error">{md_safe(reason)}</div>'}
    return history + [notice], gr.update(), gr.update(), gr.update(), None


def _default_collections(names: list[str]) -> list[str]:
    return [DEMO_COLLECTION] if DEMO_COLLECTION in names else names[:1]
