"""Stop ends a run within about a second whatever step it lands in, with the real fast model: while a prompt is
read, while a clarification or a reasoning step is written, while the answer streams. The median and maximum
with the default model are measured by ``benchmarks/stop_latency.py`` (docs/reliability.md)."""

from __future__ import annotations

import time

import pytest

from benchmarks.stop_latency import HOPS_QUESTION, IRCOT_QUESTION, TOC_QUESTION, StopPresser
from pipeline.runtime import Runtime, RuntimeConfig
from pipeline.service import RunRequest, RunService

pytestmark = [pytest.mark.real_model, pytest.mark.faults]


@pytest.fixture(scope="module")
def runtime(demo_data_dir, fast_llm, embeddings):
    runtime = Runtime(RuntimeConfig(data_dir=demo_data_dir, model="fast"), embeddings=embeddings)
    runtime.use_model("fast", fast_llm)
    return runtime


@pytest.mark.parametrize("kind, method, question, delay", [
    ("clarification (ToC)", "toc", TOC_QUESTION, 0.2),  # the prompt is still being read
    ("clarification (ToC)", "toc", TOC_QUESTION, 2.5),  # tokens are being written
    ("reasoning step (IRCoT)", "ircot", IRCOT_QUESTION, 0.5),
    ("hop (IRCoT)", "ircot", HOPS_QUESTION, 0.5),
    # 0.3 s: earlier tests leave this prompt in the prompt-state cache, and the answer may be done within 1.5 s
    ("answer (OneR)", "oner", TOC_QUESTION, 0.3),
])
def test_stop_ends_the_run_within_a_second(runtime, fast_llm, kind, method, question, delay):
    presser = StopPresser(fast_llm, kind, delay)
    runtime.use_model("presser", presser)
    run = RunService.for_runtime(runtime).start(RunRequest(question=question, method=method,
                                                           collections=("demo",), model="presser"))
    for _event in run:
        pass
    ended = time.perf_counter()
    assert presser.pressed_at is not None, f"no {kind} call was made"
    assert ended - presser.pressed_at < 1.2
    assert run.state.stopped()
    assert not run.state.answer_text  # a stopped run writes no answer
    assert runtime.llm("fast").chat([{"role": "user", "content": "Say OK."}]).text  # the model still works


def test_stop_leaves_no_thread_behind(runtime, tmp_path):
    """A browser session's run (its worker thread, the model's token producer) presses Stop mid-clarification:
    within a couple of seconds no thread of the run is left (issue 34, point 6)."""
    import threading

    from ui.ask_tab import Session, run_question

    def run_threads() -> list[str]:
        return [t.name for t in threading.enumerate()
                if t.name.startswith(("run-in-background", "cancellable-producer"))]

    before = len(run_threads())
    session = Session()
    session.question = TOC_QUESTION
    request = RunRequest(question=TOC_QUESTION, method="toc", collections=("demo",), model="fast")
    frames = run_question(RunService.for_runtime(runtime), session, [{"role": "user", "content": TOC_QUESTION}],
                          request, tmp_path)
    started = time.perf_counter()
    for _frame in frames:
        if time.perf_counter() - started > 2.0 and not session.cancel.is_set():
            assert len(run_threads()) > before, "the run should be working in its threads"
            session.cancel.set()
    deadline = time.perf_counter() + 3
    while len(run_threads()) > before and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert len(run_threads()) == before, run_threads()
    assert not session.running
