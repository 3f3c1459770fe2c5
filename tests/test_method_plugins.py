"""Methods as plug-ins: every consumer (view, chat message, report, CLI printer, evaluation) reads every
method's events through the typed payloads and the one fold; a method registered in one place gets its UI
controls, CLI flags, evaluation and Auto support from its spec."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from typing import Iterator, Literal

import gradio as gr
import pytest
from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.rerankers import RankFusionReranker
from pipeline import methods as registry
from pipeline.__main__ import Printer, build_parser
from pipeline.context import RunContext
from pipeline.evaluation.data import EvalItem
from pipeline.evaluation.harness import method_config, run_item
from pipeline.events import Link, Tracer
from pipeline.methods import METHODS, MethodSpec, settings_models
from pipeline.payloads import AnswerPayload, HopPayload, RetrievePayload, passage_refs
from pipeline.prompting import load_prompt
from pipeline.service import RunRequest, RunService
from pipeline.settings import Settings
from pipeline.settings_cli import settings_from_args
from pipeline.steps import kind_of
from pipeline.trace import markdown_report
from tests.fakes import ScriptedLLM, ScriptedRetriever, TreeScript, settings_with
from ui.answer import answer_message
from ui.settings_form import build_settings_panel, settings_from_values
from ui.view import render

AQ = "Who won the Tour de France?"
DOCS = [Document(page_content=text, metadata={"title": title, "source": "tour.txt"}, id=f"d{i}")
        for i, (title, text) in enumerate([
            ("2024 Tour de France", "Tadej Pogacar won the 2024 Tour de France."),
            ("2023 Tour de France", "Jonas Vingegaard won the 2023 Tour de France."),
            ("Tour de France", "The Tour de France is a men's multiple-stage bicycle race held in France."),
        ])]


def scripted_llm(method: str):
    """A scripted model that plays each registered method's part."""
    if method == "toc":
        return TreeScript({AQ: [("Who won the 2024 Tour de France?", "Tadej Pogacar"),
                                ("Who won the 2023 Tour de France?", "Jonas Vingegaard")]}).llm
    if method == "ircot":
        return ScriptedLLM(["Tadej Pogacar won the 2024 Tour [1].", "So the answer is: Tadej Pogacar.",
                            "Tadej Pogacar [1]."])
    if method == "webagent":
        return ScriptedLLM(['{"action": "search", "query": "Tour de France winner"}', '{"action": "load", "result": 1}',
                            '{"action": "quote", "sentences": [1]}', '{"action": "finish"}',
                            "Tadej Pogacar won in 2024 [1]."])
    return ScriptedLLM(["Tadej Pogacar won in 2024 [1]."])


def context(method: str, embeddings) -> RunContext:
    # The web agent's script is the interactive agent's actions, whose steps are the most varied of its modes.
    settings = settings_with(webagent={"mode": "interactive"}) if method == "webagent" else Settings()
    return RunContext(llm=scripted_llm(method), retriever=ScriptedRetriever(lambda q, k: DOCS),
                      embeddings=embeddings, reranker=RankFusionReranker(embeddings), settings=settings)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_consumer_reads_every_methods_events(method, embeddings):
    run = RunService().start(RunRequest(question=AQ, method=method), context=context(method, embeddings))
    printer, printed = Printer(), io.StringIO()
    with redirect_stdout(printed):
        for event in run:
            printer.show(event, run.state)
            render(run.state)  # drawn after every event, as the browser does
    state = run.state
    assert not state.errors() and state.answer is not None and state.route.method == method
    assert "Pogacar" in render(state) and "Pogacar" in answer_message(state, run.id)
    assert "## Answer" in markdown_report(state) and "Answer:" in printed.getvalue()
    # Every step reaches every consumer: the view draws each, the report lists each, the CLI prints each.
    view, report = render(state), markdown_report(state)
    for step in state.steps.values():
        assert f'data-step="{step.id}"' in view
        assert f"- **{step.kind.value}** " in report
        if step.status.value == "done" and step is not state.final_answer:
            assert kind_of(step).title(step).split("\n")[0][:40] in printed.getvalue(), step.title
    assert report.count("- **") == len(state.steps)
    item = EvalItem(id="x", dataset="toy", question=AQ, answers=["Tadej Pogacar"],
                    passages=[{"title": d.metadata["title"], "text": d.page_content} for d in DOCS])
    record = run_item(RunService(), method, item, context(method, embeddings))
    assert record["scores"]["f1"] > 0 and "error" not in record


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_prompt_a_method_loads_is_one_its_spec_records(method, embeddings, monkeypatch):
    """Results record the versions of the spec's prompts, and a resumed run refuses other versions: a prompt
    the method loads but its spec leaves out would change without either noticing."""
    import sys

    from pipeline import prompting

    original, loaded = prompting.load_prompt, []

    def spy(name: str):
        loaded.append(name)
        return original(name)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("pipeline") and getattr(module, "load_prompt", None) is original:
            monkeypatch.setattr(module, "load_prompt", spy)
    for _ in RunService().start(RunRequest(question=AQ, method=method), context=context(method, embeddings)):
        pass
    assert loaded and set(loaded) <= set(METHODS[method].prompts), set(loaded) - set(METHODS[method].prompts)


def test_a_field_that_does_not_exist_fails_loudly():
    payload = RetrievePayload(query="q")
    with pytest.raises(AttributeError):
        payload.passage  # noqa: B018 - a consumer's typo
    with pytest.raises(ValidationError):
        HopPayload(step=1, sentense="a typo in a method")


# A trivial method, registered the way a real one is: a module-level run generator, a settings model and a spec.

class EchoSettings(BaseModel):
    """Settings of the echo method (a test fixture)."""

    model_config = ConfigDict(extra="forbid")
    repeat: int = Field(1, ge=1, le=3, description="How many times to repeat the question.")
    tone: Literal["plain", "loud"] = Field("plain", description="Shout or not.")


def echo_run(question: str, ctx: RunContext, tracer: Tracer, cfg: EchoSettings) -> Iterator:
    passages = ctx.retrieve(question).passages
    first = tracer.new_id("r")
    yield tracer.event(RetrievePayload(query=question, passages=passage_refs(passages)), "Retrieve", id=first)
    text = " ".join([question.upper() if cfg.tone == "loud" else question] * cfg.repeat) + " [1]"
    yield tracer.event(AnswerPayload(answer=text, citations=[1], passages=passage_refs(passages)), "Answer",
                       parent_id=first, links=[Link(target=first, type="cites")])


ECHO = MethodSpec(name="echo", label="Echo (test fixture)", run=echo_run, settings=EchoSettings,
                  summary="Repeats the question.", structure="chain")


@pytest.fixture
def with_echo(monkeypatch):
    monkeypatch.setitem(registry.METHODS, "echo", ECHO)
    yield ECHO


def test_a_registered_method_gets_cli_flags_settings_and_runs(with_echo, embeddings):
    parser = build_parser()
    help_text = parser._subparsers._group_actions[0].choices["ask"].format_help()
    assert "--echo-repeat" in help_text and "How many times to repeat the question" in help_text
    assert "--toc-max-depth" in help_text and "Maximum tree depth" in help_text  # every method's settings
    args = parser.parse_args(["ask", "q", "--method", "echo", "--echo-repeat", "2", "--set", "echo.tone=loud"])
    settings = settings_from_args(args, settings_models())
    assert settings.for_method("echo", EchoSettings) == EchoSettings(repeat=2, tone="loud")
    with pytest.raises(ValueError, match="echo.repeat"):
        settings_from_args(parser.parse_args(["ask", "q", "--echo-repeat", "9"]), settings_models())
    ctx = RunContext(llm=ScriptedLLM([]), retriever=ScriptedRetriever(lambda q, k: DOCS), settings=settings)
    run = RunService().start(RunRequest(question="hi", method="echo", settings=settings), context=ctx)
    events = list(run)
    assert run.state.answer.answer == "HI HI [1]"
    assert ("cites" in {e.type for e in run.state.edges()}) and events[0].payload.structure == "chain"
    assert method_config("echo", settings)["settings"] == {"repeat": 2, "tone": "loud"}


def test_a_registered_method_gets_its_browser_controls(with_echo):
    with gr.Blocks():
        controls = build_settings_panel({name: (spec.label, spec.settings) for name, spec in METHODS.items()})
    by_key = {c.key: c.component for c in controls}
    slider = by_key["echo.repeat"]
    assert isinstance(slider, gr.Slider) and (slider.minimum, slider.maximum, slider.value) == (1, 3, 1)
    assert isinstance(by_key["echo.tone"], gr.Radio) and "Shout" in by_key["echo.tone"].info
    assert isinstance(by_key["toc.keep_threshold"], gr.Slider) and "ircot.reader" in by_key
    values = [c.component.value for c in controls]
    values[list(by_key).index("echo.repeat")] = 3
    settings = settings_from_values(controls, values, settings_models())
    assert settings.for_method("echo", EchoSettings).repeat == 3
    values[list(by_key).index("echo.repeat")] = 7  # out of bounds: a hand-crafted request
    with pytest.raises(ValueError):
        settings_from_values(controls, values, settings_models())


def test_results_record_settings_and_prompt_versions():
    settings = settings_from_args(build_parser().parse_args(["ask", "q", "--toc-max-depth", "2"]),
                                  settings_models())
    config = method_config("toc", settings)
    assert config["settings"]["max_depth"] == 2
    assert config["prompts"]["toc_clarify"] == load_prompt("toc_clarify").version >= 2
    assert json.loads(json.dumps(config)) == config  # stored in results.json, read back the same
