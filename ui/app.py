"""The Gradio app: the Ask tab (chat, settings, live reasoning view, traces) and the Collections tab.

Each browser session has its own conversation, settings and Stop switch (``gr.State``); model calls share one
queue (``concurrency_id="llm"``, one at a time), so a waiting person sees their place in it.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from corpora.demo import DEMO_COLLECTION
from corpora.ingest import MAX_FILE_BYTES
from corpora.loaders import SUPPORTED_SUFFIXES
from corpora.store import CollectionError
from models.errors import ModelError
from pipeline.methods import METHODS, settings_models
from pipeline.runtime import Runtime
from pipeline.service import AUTO, RunRequest, RunService
from pipeline.trace import load_trace
from ui import collections_tab as coll
from ui.answer import answer_message
from ui.ask_tab import Session, run_question
from ui.settings_form import build_settings_panel, settings_from_values
from ui.view import esc, md_safe, placeholder, render

ASSETS = Path(__file__).parent / "assets"
MODEL_CHOICES = [("Default (Qwen2.5-Coder 1.5B)", "default"), ("Fast (Qwen2.5-Coder 0.5B)", "fast")]


def launch_options() -> dict:
    """Arguments for ``Blocks.launch``: the page's stylesheet and script, and the upload size limit."""
    return {
        "css_paths": [ASSETS / "app.css"],
        "head": f"<script>{(ASSETS / 'cite.js').read_text(encoding='utf-8')}</script>",
        "max_file_size": MAX_FILE_BYTES,
    }


def build_app(runtime: Runtime, default_model: str | None = None) -> gr.Blocks:
    """The app over ``runtime``. ``default_model`` is the model choice preselected in the settings."""
    default_model = default_model or runtime.config.model
    methods = [("Auto (picks from the question)", AUTO)] + [(m.label, name) for name, m in reversed(METHODS.items())]
    service = RunService.for_runtime(runtime)
    traces = Path(runtime.config.data_dir)

    def session_of(session: Session | None) -> Session:
        return session if isinstance(session, Session) else Session()

    def submit(question: str, history: list, session: Session | None):
        """Record the question (no queue: instant), so the queued run can start from it."""
        session = session_of(session)
        question = (question or "").strip()
        if not question:
            raise gr.Error("Type a question first.", duration=5)
        if session.running:
            raise gr.Error("Your previous question is still being answered: wait for it, or press Stop.",
                           duration=5)
        session.running = True
        session.cancel.clear()
        session.question = question
        return "", history + [{"role": "user", "content": md_safe(question)}], session

    def answer(history: list, session: Session, method, collections, use_web, model, *values):
        try:
            settings = settings_from_values(controls, list(values), settings_models())
        except ValueError as exc:
            session.running = False
            yield history + [{"role": "assistant", "content": f'<div class="notice notice-error">'
                                                              f'{md_safe(exc)}</div>'}], gr.update(), None
            return
        request = RunRequest(question=session.question, method=method, collections=tuple(collections or ()),
                             model=model or None, settings=settings.model_copy(update={"use_web": bool(use_web)}))
        yield from run_question(service, session, history, request, traces)

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
        return [], placeholder("New conversation."), None, session

    def replay(file, history: list):
        if file is None:
            return gr.update(), history
        try:
            state = load_trace(Path(file if isinstance(file, str) else file.name))
        except (ValueError, OSError) as exc:
            gr.Warning(f"Cannot replay this file: {exc}")
            return gr.update(), history
        run_id = next((e.run_id for e in state.events), "replay")
        question = state.question
        header = "Replayed from a trace file: no model was run."
        return render(state, header), history + [
            {"role": "user", "content": f"(replayed) {md_safe(question)}" if question else "(replayed trace)"},
            {"role": "assistant", "content": answer_message(state, run_id)},
        ]

    with gr.Blocks(title="Research QA") as app:
        session = gr.State(None)
        gr.Markdown("# Research QA\nAnswers from your documents and the web with a small local model. "
                    "Watch the reasoning on the right as it happens.")
        with gr.Tab("Ask"):
            with gr.Row():
                with gr.Column(scale=5, min_width=360):
                    chat = gr.Chatbot(label="Conversation", height=520, elem_id="chat")
                    question = gr.Textbox(label="Question", placeholder="Ask about your collections…", lines=2,
                                          elem_id="question")
                    with gr.Row():
                        ask_button = gr.Button("Ask", variant="primary", elem_id="ask")
                        stop_button = gr.Button("Stop", variant="stop", elem_id="stop")
                        new_button = gr.Button("New conversation", elem_id="new-conversation")
                    trace_files = gr.File(label="Trace of the last question (JSONL events + Markdown report)",
                                          file_count="multiple", interactive=False, elem_id="trace-files",
                                          height=110)
                    trace_upload = gr.UploadButton("Replay a trace file…", file_types=[".jsonl"],
                                                   elem_id="replay")
                with gr.Column(scale=6, min_width=360):
                    view = gr.HTML(placeholder("The reasoning appears here while the model works."),
                                   elem_id="reasoning")
                with gr.Column(scale=3, min_width=240):
                    method = gr.Dropdown(methods, value=AUTO, label="Method", elem_id="method")
                    collections = gr.CheckboxGroup(_names(runtime), value=_default_collections(runtime),
                                                   label="Collections", elem_id="collections")
                    use_web = gr.Checkbox(False, label="Search the web (DuckDuckGo)", elem_id="use-web")
                    model = gr.Dropdown(MODEL_CHOICES, value=default_model, allow_custom_value=True,
                                        label="Model (or a GGUF path, or openai:URL)", elem_id="model")
                    with gr.Accordion("Method settings", open=False, elem_id="method-settings"):
                        controls = build_settings_panel({name: (spec.label, spec.settings)
                                                         for name, spec in METHODS.items()})
        with gr.Tab("Collections"):
            with gr.Row():
                with gr.Column():
                    table = gr.Dataframe(coll.collection_rows(runtime), headers=["collection", "files", "passages"],
                                         interactive=False, label="Collections", elem_id="collections-table")
                    with gr.Row():
                        new_name = gr.Textbox(label="New collection", placeholder="letters, digits, - _ .",
                                              elem_id="new-collection")
                        create_button = gr.Button("Create", elem_id="create-collection")
                    chosen = gr.Dropdown(_names(runtime), label="Collection", elem_id="chosen-collection")
                    files_table = gr.Dataframe([], headers=["file", "passages"], interactive=False,
                                               label="Files in the collection", elem_id="files-table")
                with gr.Column():
                    uploads = gr.File(label=f"Add files ({', '.join(sorted(SUPPORTED_SUFFIXES))}; up to "
                                            f"{MAX_FILE_BYTES // 2**20} MB each)",
                                      file_count="multiple", file_types=sorted(SUPPORTED_SUFFIXES),
                                      elem_id="uploads")
                    add_button = gr.Button("Add files to the collection", variant="primary", elem_id="add-files")
                    report = gr.HTML("", elem_id="ingest-report")
                    with gr.Accordion("Delete files or the collection", open=False, elem_id="delete-panel"):
                        file_choice = gr.Dropdown([], label="File", elem_id="file-choice")
                        delete_file_button = gr.Button("Delete this file", elem_id="delete-file")
                        confirm = gr.Checkbox(False, label="Yes, delete the whole collection")
                        delete_coll_button = gr.Button("Delete the collection", variant="stop",
                                                       elem_id="delete-collection")

        knobs = [method, collections, use_web, model, *(c.component for c in controls)]
        for trigger in (ask_button.click, question.submit):
            trigger(submit, [question, chat, session], [question, chat, session], queue=False).success(
                answer, [chat, session, *knobs], [chat, view, trace_files],
                concurrency_limit=1, concurrency_id="llm", show_progress="minimal",
            )
        stop_button.click(stop, [session], None, queue=False)
        new_button.click(new_conversation, [session], [chat, view, trace_files, session], queue=False)
        trace_upload.upload(replay, [trace_upload, chat], [view, chat], queue=False)

        # Collections tab: every change refreshes the lists it affects, including the Ask tab's checkboxes.
        def refreshed(name: str | None, message: str = ""):
            names = _names(runtime)
            name = name if name in names else None
            files = coll.file_rows(runtime, name)
            return (coll.collection_rows(runtime), gr.update(choices=names, value=name), files,
                    gr.update(choices=[f for f, _ in files], value=None), gr.update(choices=names), message)

        listing = [table, chosen, files_table, file_choice, collections, report]

        def guarded(action):
            def handler(*args, progress=gr.Progress()):
                name = args[0]
                try:
                    message, name = action(*args, progress=progress)
                except (CollectionError, ModelError, ValueError, OSError) as exc:
                    return refreshed(name, f'<div class="notice notice-error">{esc(exc)}</div>')
                return refreshed(name, message)
            return handler

        def do_create(name, progress):
            return f"<p>{esc(coll.create_collection(runtime, name))}</p>", (name or "").strip()

        def do_add(name, files, progress):
            def report_progress(done, total, what):
                progress((done, total), desc=f"Embedding passages of {what}", unit="passages")
            return coll.add_files(runtime, name, files, report_progress), name

        def do_delete_file(name, file, progress):
            return f"<p>{esc(coll.delete_file(runtime, name, file))}</p>", name

        def do_delete_collection(name, confirmed, progress):
            return f"<p>{esc(coll.delete_collection(runtime, name, confirmed))}</p>", None

        create_button.click(guarded(do_create), [new_name], listing, queue=False)
        add_button.click(guarded(do_add), [chosen, uploads], listing, concurrency_id="ingest", concurrency_limit=1)
        delete_file_button.click(guarded(do_delete_file), [chosen, file_choice], listing, queue=False)
        delete_coll_button.click(guarded(do_delete_collection), [chosen, confirm], listing, queue=False)
        chosen.change(lambda name: refreshed(name)[2:4], [chosen], [files_table, file_choice], queue=False)

        def on_load():
            names = _names(runtime)  # collections may have changed since the page was built
            return coll.collection_rows(runtime), gr.update(choices=names), gr.update(choices=names)

        app.load(on_load, None, [table, chosen, collections], queue=False)
    return app


def _names(runtime: Runtime) -> list[str]:
    return runtime.store.names()


def _default_collections(runtime: Runtime) -> list[str]:
    names = _names(runtime)
    return [DEMO_COLLECTION] if DEMO_COLLECTION in names else names[:1]
