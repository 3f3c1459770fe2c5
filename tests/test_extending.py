"""What it takes to add a kind of step or a method, done for real on a copy of the code: a kind is one entry in
the table of step kinds, a method is its own folder, its prompt file and one registration line; every consumer
then shows the kind, and the CLI, the service, the evaluation and Auto know the method."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO

NEW_KIND = '''


# A kind added by tests/test_extending.py.
from typing import Literal as _Literal

from pydantic import BaseModel as _BaseModel, ConfigDict as _ConfigDict

from pipeline.escaping import esc as _esc
from pipeline.steps.kind import no_passages as _no_passages


class TallyPayload(_BaseModel):
    model_config = _ConfigDict(extra="forbid")
    kind: _Literal["tally"] = "tally"
    count: int
    label: str


KINDS = KINDS + (StepKind(
    "tally", TallyPayload, "step", title=lambda step: step.title,
    lines=lambda step, state: [f"counted {step.payload.count} {step.payload.label}"],
    card=lambda step, state: f'<div>counted {_esc(step.payload.count)} {_esc(step.payload.label)}</div>',
    style=KindStyle("tally", "pill", Paint("#ffffff", "#000000")), passages=_no_passages),)
'''

USE_KIND = '''
import io, sys, tempfile
from contextlib import redirect_stdout
from pathlib import Path

from pipeline.__main__ import Printer
from pipeline.events import Tracer, read_jsonl
from pipeline.fold import RunState
from pipeline.picture import draw
from pipeline.steps.chain import TallyPayload
from pipeline.trace import markdown_report, save_trace
from ui.view import render

tracer = Tracer("anymethod")
state = RunState.of([tracer.event(TallyPayload(count=3, label="<apples>"), "Tally of apples", id="t1")])
out = io.StringIO()
with redirect_stdout(out):
    for event in state.events:
        Printer().show(event, state)
folder = Path(tempfile.mkdtemp())
replayed = RunState.of(read_jsonl(save_trace(state, folder, picture=True)[0]))
print("view" if "counted 3 &lt;apples&gt;" in render(state) else "", "report" if "counted 3 <apples>" in
      markdown_report(replayed) else "", "cli" if "counted 3 <apples>" in out.getvalue() else "",
      "picture" if 'data-kind="tally"' in draw(state) and ">tally<" in draw(state, standalone=True) else "")
'''

ECHO_METHOD = '''
"""Echo (a method added by tests/test_extending.py): retrieves with the question and repeats it."""

from typing import Iterator

from pydantic import BaseModel, ConfigDict, Field

from pipeline.answering import retrieve_step, stream_answer
from pipeline.methods.base import MethodSpec
from pipeline.payloads import RetrievePayload
from pipeline.prompting import load_prompt


class EchoSettings(BaseModel):
    """Echo's settings."""

    model_config = ConfigDict(extra="forbid")
    repeat: int = Field(1, ge=1, le=3, description="How many times to repeat the question.")


def run(question, ctx, tracer, settings: EchoSettings) -> Iterator:
    passages = yield from retrieve_step(ctx, tracer, question)
    yield from stream_answer(ctx, tracer, load_prompt("echo_answer"),
                             {"question": " ".join([question] * settings.repeat)}, passages)


METHOD = MethodSpec(
    name="echo", label="Echo", run=run, summary="Repeats the question.",
    chosen_because="it asks to be repeated", settings=EchoSettings, structure="chain", prompts=("echo_answer",),
    record=lambda state: {"echoed": [p.query for p in state.payloads(RetrievePayload)]},
)
'''

ECHO_PROMPT = '''# Echo (a test fixture): repeat the question.
version: 1
max_tokens: 50
system: |
  Repeat the question.
user: |
  Question: {question}
'''

USE_METHOD = '''
import subprocess, sys
from langchain_core.documents import Document

from pipeline.context import RunContext
from pipeline.evaluation.data import EvalItem
from pipeline.evaluation.harness import method_config, run_item
from pipeline.methods import METHODS
from pipeline.routing import Router
from pipeline.service import RunRequest, RunService
from pipeline.settings import Settings
from tests.fakes import ScriptedLLM, ScriptedRetriever

docs = [Document(page_content="Echo lives in a cave.", metadata={"title": "Echo"}, id="d1")]
settings = Settings(methods={"echo": METHODS["echo"].settings(repeat=2)})
llm = ScriptedLLM(["Where does Echo live? [1]"])
ctx = RunContext(llm=llm, retriever=ScriptedRetriever(lambda q, k: docs), settings=settings)
run = RunService().start(RunRequest(question="Where does Echo live?", method="echo", settings=settings), context=ctx)
list(run)
asked = llm.calls[0][0][-1]["content"]
item = EvalItem(id="x", dataset="toy", question="Where does Echo live?", answers=["Where does Echo live?"],
                passages=[{"title": "Echo", "text": "Echo lives in a cave."}])
record = run_item(RunService(), "echo", item, RunContext(llm=ScriptedLLM(["Where does Echo live? [1]"]),
                                                       retriever=ScriptedRetriever(lambda q, k: docs)))
flags = subprocess.run([sys.executable, "-m", "pipeline", "ask", "--help"], capture_output=True, text=True).stdout
print("service" if run.state.answer.answer.startswith("Where does Echo live?") else "",
      "settings" if asked.count("Where does Echo live?") == 2 else "",
      "evaluation" if record["echoed"] == ["Where does Echo live?"] and record["scores"]["em"] == 1 else "",
      "prompts" if method_config("echo", settings)["prompts"] == {"echo_answer": 1} else "",
      "cli" if "--echo-repeat" in flags else "",
      "auto" if Router(embeddings=None).reasons["echo"] == "it asks to be repeated" else "")
'''


def _copy(tmp_path: Path) -> Path:
    """The code (not the data) in a git repository of its own, so that the change can be listed."""
    repo = tmp_path / "repo"
    for name in ("pipeline", "models", "corpora", "ui", "tests"):
        shutil.copytree(REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "browser"))
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *command], cwd=repo, check=True)
    return repo


def _changed(repo: Path) -> list[str]:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    out = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True)
    return sorted(out.stdout.split())


def _python(repo: Path, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=repo, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_a_new_kind_of_step_is_one_table_entry_and_every_consumer_shows_it(tmp_path):
    repo = _copy(tmp_path)
    with open(repo / "pipeline/steps/chain.py", "a", encoding="utf-8") as family:
        family.write(NEW_KIND)
    assert _changed(repo) == ["pipeline/steps/chain.py"]
    assert _python(repo, USE_KIND) == ["view", "report", "cli", "picture"]


def test_a_new_method_is_its_folder_its_prompt_and_one_registration(tmp_path):
    repo = _copy(tmp_path)
    (repo / "pipeline/methods/echo").mkdir()
    (repo / "pipeline/methods/echo/__init__.py").write_text(ECHO_METHOD, encoding="utf-8")
    (repo / "pipeline/prompts/echo_answer.yaml").write_text(ECHO_PROMPT, encoding="utf-8")
    registry = repo / "pipeline/methods/__init__.py"
    text = registry.read_text(encoding="utf-8")
    text = text.replace("from pipeline.methods import ircot,", "from pipeline.methods import echo, ircot,")
    text = text.replace("kgp.METHOD)", "kgp.METHOD, echo.METHOD)")
    registry.write_text(text, encoding="utf-8")
    assert _changed(repo) == ["pipeline/methods/__init__.py", "pipeline/methods/echo/__init__.py",
                              "pipeline/prompts/echo_answer.yaml"]
    assert _python(repo, USE_METHOD) == ["service", "settings", "evaluation", "prompts", "cli", "auto"]
