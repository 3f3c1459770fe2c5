"""The minimal page: a question box that streams the steps and the answer (the full UI is issue #5)."""

from __future__ import annotations

import threading

import gradio as gr

from corpora.demo import DEMO_COLLECTION
from corpora.store import CollectionError
from models.errors import ModelError
from pipeline.methods import METHODS, run_method
from pipeline.runtime import Runtime
from pipeline.settings import Settings
from ui.steps_view import StepLog


def build_app(runtime: Runtime) -> gr.Blocks:
    """The Gradio app over ``runtime``; each browser session has its own conversation and Stop switch."""

    def ask(question: str, method: str, collections: list[str], history: list, cancel: threading.Event):
        question = (question or "").strip()
        if not question:
            gr.Warning("Type a question first.")
            yield history, gr.update(), cancel
            return
        cancel = threading.Event()
        history = history + [{"role": "user", "content": question}, {"role": "assistant", "content": "…"}]
        yield history, "_Starting…_", cancel
        try:
            ctx = runtime.context(collections or [], settings=Settings())
        except (CollectionError, ModelError) as exc:
            history[-1] = {"role": "assistant", "content": f"Cannot answer: {exc}"}
            yield history, gr.update(), cancel
            return
        ctx.cancel = cancel
        log = StepLog()
        for event in run_method(method, question, ctx):
            log.add(event)
            history[-1] = {"role": "assistant", "content": (log.answer or "…") + log.citations_markdown()}
            yield history, log.markdown(), cancel

    def stop(cancel: threading.Event | None):
        if cancel is not None:
            cancel.set()

    with gr.Blocks(title="Research QA") as app:
        gr.Markdown("# Research QA\nAsk a question about your collections; watch the steps as the model works.")
        cancel_state = gr.State(None)
        with gr.Row():
            with gr.Column(scale=3):
                chat = gr.Chatbot(label="Conversation", height=420)
                question = gr.Textbox(label="Question", placeholder="Who wrote ...?", lines=2)
                with gr.Row():
                    ask_button = gr.Button("Ask", variant="primary")
                    stop_button = gr.Button("Stop", variant="stop")
            with gr.Column(scale=2):
                method = gr.Dropdown(
                    choices=[(module.LABEL, name) for name, module in METHODS.items()],
                    value="oner",
                    label="Method",
                )
                collections = gr.CheckboxGroup(
                    choices=runtime.store.names(), value=[DEMO_COLLECTION], label="Collections"
                )
                steps = gr.Markdown("_Steps appear here while the model works._", elem_id="steps")
        inputs = [question, method, collections, chat, cancel_state]
        outputs = [chat, steps, cancel_state]
        running = ask_button.click(ask, inputs, outputs, concurrency_limit=1, concurrency_id="llm")
        submitted = question.submit(ask, inputs, outputs, concurrency_limit=1, concurrency_id="llm")
        stop_button.click(stop, [cancel_state], None, cancels=[running, submitted], queue=False)
    return app
