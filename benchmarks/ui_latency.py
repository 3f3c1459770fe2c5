"""How alive the browser app feels: time from pressing Ask to the first visible step, and the app's overhead
per event (from the moment a method yields a step to the moment the browser shows it, in the reasoning list and
in the run's picture), with a real model or a scripted tree of about 60 steps.

    python -m benchmarks.ui_latency [--model default] [--methods oner,toc] [--questions 3] [--data-dir DIR]
    python -m benchmarks.ui_latency --fake-tree 60 [--questions 3]

Runs the real app in-process on loopback, drives Debian's headless Chromium with Playwright, and reads each
run's saved trace (event times) against the times the page first showed each step, and showed it finished,
in the list and in the picture (MutationObservers). Also reports the pure drawing cost per event, without a
browser: fold + list + answer message, and the picture. ``--fake-tree N`` replaces the model by a scripted Tree
of Clarifications that grows to about N steps (no model, a small generated collection), to measure the picture
at that size; the figures "at 50+ steps" are the events drawn once the picture held 50 steps or more. Prints
Markdown.
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import time
from pathlib import Path

from pipeline.evaluation.tables import machine, median, percentile, table
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
from pipeline.steps import kind_of
from ui import headless

QUESTIONS = [  # answerable from the bundled demo corpus
    "Who directed the film Back to the Future?",
    "Which board game was published most recently, Pirate's Cove or Catan?",
    "When did the Haves and Have Nots start?",
    "What part did Dan Lewis play for Arsenal Football Club?",
    "Who won the Tour de France?",
]
# When each step first appeared, and first showed as finished, in the list and in the picture.
OBSERVER = """() => {
  window.__seen = {}; window.__done = {}; window.__pseen = {}; window.__pdone = {};
  const record = () => {
    const now = Date.now() / 1000;
    document.querySelectorAll('#reasoning [data-step]').forEach((el) => {
      const id = el.getAttribute('data-step');
      if (!(id in window.__seen)) window.__seen[id] = now;
      if (el.classList.contains('status-done') && !(id in window.__done)) window.__done[id] = now;
    });
    document.querySelectorAll('#picture .rp-node').forEach((el) => {
      const id = el.getAttribute('data-node');
      if (!(id in window.__pseen)) window.__pseen[id] = now;
      if (el.classList.contains('rp-st-done') && !(id in window.__pdone)) window.__pdone[id] = now;
    });
  };
  for (const id of ['reasoning', 'picture']) {
    new MutationObserver(record).observe(document.getElementById(id),
                                         {childList: true, subtree: true, attributes: true});
  }
}"""
RESET = "window.__seen = {}; window.__done = {}; window.__pseen = {}; window.__pdone = {}"
BIG = 50  # steps: "at 50+ steps" figures
FAKE_QUESTION = "Who won the stages of the Fake Tour?"


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def choose(page, elem_id: str, label: str) -> None:
    """Pick ``label`` in the Gradio dropdown ``elem_id``."""
    page.click(f"#{elem_id} input")
    page.click(f"ul[role=listbox] li:has-text('{label}')")


def drawing_cost(events) -> list[float]:
    """Seconds to fold and draw each event (view and chat message), as the app does, without a browser."""
    from pipeline.fold import RunState
    from ui.answer import answer_message
    from ui.view import render

    state, costs = RunState(), []
    for event in events:
        started = time.perf_counter()
        state.add(event)
        answer_message(state, event.run_id)
        render(state)
        costs.append(time.perf_counter() - started)
    return costs


def picture_cost(events) -> list[tuple[float, int]]:
    """Seconds to draw the picture after each event (``ui.picture.picture_html``, as the app does), with the
    number of steps drawn."""
    from pipeline.fold import RunState
    from ui.picture import picture_html

    state, costs = RunState(), []
    for event in events:
        state.add(event)
        started = time.perf_counter()
        picture_html(state, event.run_id)
        costs.append((time.perf_counter() - started, len(state.steps)))
    return costs


def timed_lags(events, seen: dict[str, float], done: dict[str, float]) -> list[tuple[float, int]]:
    """Seconds from a method yielding an event to the page showing it, with the number of steps the run had
    then: a step's first event against the moment the step appeared, and its first done event (when later)
    against the moment it turned done."""
    first, finished, steps_then = {}, {}, {}
    for event in events:
        if kind_of(event).role != "step":
            continue  # drawn inside another step, not as a step of their own
        if event.id not in first:
            first[event.id] = event
            steps_then[event.id] = len(first)
        if event.status.value == "done" and event.elapsed_s is not None and first[event.id] is not event:
            finished.setdefault(event.id, (event, len(first)))
    lags = [(seen[i] - e.started_at, steps_then[i]) for i, e in first.items() if i in seen and e.started_at]
    lags += [(done[i] - (e.started_at + e.elapsed_s), n) for i, (e, n) in finished.items()
             if i in done and e.started_at]
    return lags


def event_lags(events, seen: dict[str, float], done: dict[str, float]) -> list[float]:
    """``timed_lags`` without the step counts."""
    return [lag for lag, _ in timed_lags(events, seen, done)]


def fake_tree(size: int):
    """A scripted Tree of Clarifications of about ``size`` steps and the passages that support its answers:
    the question has 4 readings, each reading 2 new ones and 2 repeats (pruned as duplicates), and each of those
    1 new one and 3 repeats, until the settings' 20 valid nodes. Returns (script, passages, settings)."""
    from langchain_core.documents import Document

    from tests.fakes import TreeScript

    tree: dict[str, list[tuple[str, str]]] = {}
    answers: list[tuple[str, str]] = []
    level = [(FAKE_QUESTION, None)]
    for fresh, repeats in ((4, 0), (2, 2), (1, 3)):
        below = []
        for question, answer in level:
            pairs = [(f"{question[:-1]}, part {i + 1}?", f"Rider {len(answers) + i + 1}") for i in range(fresh)]
            answers += pairs
            pairs += [(f"{question[:-1]} (asked again {i + 1})?", answer or "Rider 1") for i in range(repeats)]
            tree[question] = pairs
            below += pairs[:fresh]
        level = below
    passages = [Document(page_content=f"{a} won the stage asked about in: {q}", id=f"fake{i}",
                         metadata={"title": f"Stage report {i}", "source": "fake-tour.txt", "collection": "fake"})
                for i, (q, a) in enumerate(answers)]
    settings = {"max_valid_nodes": 20, "max_llm_calls": 60, "max_depth": 3}
    return TreeScript(tree, delay=0.01), passages, settings


def _ms(values: list[float], q: float | None = None, digits: int = 0) -> str:
    """The median (or the q-th percentile) of ``values`` in milliseconds, "-" for none."""
    return f"{(percentile(values, q) if q else median(values)) * 1000:.{digits}f}" if values else "-"


def _set_setting(page, method: str, name: str, value) -> None:
    box = page.locator(f"#setting-{method}-{name.replace('_', '-')} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def main(argv: list[str] | None = None) -> int:
    # A command's main reads top to bottom: its arguments, its set-up, its loop and its report.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--methods", default="oner,toc")
    parser.add_argument("--questions", type=int, default=3, help="questions per method (runs, with --fake-tree)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--fake-tree", type=int, default=0, metavar="N",
                        help="no model: a scripted Tree of Clarifications of about N steps (at most about 68)")
    parser.add_argument("--chromium", default=headless.CHROMIUM)
    args = parser.parse_args(argv)

    from pipeline.events import read_jsonl
    from pipeline.methods import METHODS
    from ui.app import build_app, launch_options

    scratch = tempfile.TemporaryDirectory() if args.fake_tree else None
    if scratch:
        script, passages, fake_settings = fake_tree(args.fake_tree)
        data_dir = Path(scratch.name)
        runtime = Runtime(RuntimeConfig(data_dir=data_dir, model="default"))
        runtime.store.create("fake").add(passages)
        runtime.use_model("default", script.llm)
        methods, questions, model = ["toc"], [FAKE_QUESTION] * args.questions, "scripted (no model)"
    else:
        data_dir = args.data_dir
        runtime = Runtime(RuntimeConfig(data_dir=data_dir, model=args.model))
        runtime.llm()
        runtime.ensure_demo()
        methods, questions, model = args.methods.split(","), QUESTIONS[: args.questions], args.model
    app = build_app(runtime)
    app.queue(default_concurrency_limit=1)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    traces = data_dir / "traces"
    rows, first_steps, lags, costs, picture_lags, picture_costs = [], [], [], [], [], []
    try:
        with headless.launch(args.chromium) as browser:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("#question textarea")
            page.evaluate(OBSERVER)
            if scratch:
                page.click("#method-settings > .label-wrap")
                page.click("#settings-toc > .label-wrap")
                for name, value in fake_settings.items():
                    _set_setting(page, "toc", name, value)
            for method in methods:
                choose(page, "method", METHODS[method].label.split(" (")[0])
                for question in questions:
                    page.click("#new-conversation")
                    page.wait_for_selector("#reasoning:has-text('New conversation')")
                    page.evaluate(RESET)
                    before = set(traces.rglob("*.jsonl")) if traces.exists() else set()
                    page.fill("#question textarea", question)
                    pressed = time.time()
                    page.click("#ask")
                    page.wait_for_selector("#reasoning .rv-node", timeout=120_000)
                    first = time.time() - pressed
                    page.wait_for_selector("#reasoning .rv-done", timeout=600_000)
                    total = time.time() - pressed
                    for _ in range(50):  # the trace is written just after the last event
                        new = set(traces.rglob("*.jsonl")) - before
                        if new:
                            break
                        time.sleep(0.1)
                    events = list(read_jsonl(max(new, key=lambda p: p.stat().st_mtime)))
                    run_lags = event_lags(events, page.evaluate("window.__seen"), page.evaluate("window.__done"))
                    run_picture = timed_lags(events, page.evaluate("window.__pseen"), page.evaluate("window.__pdone"))
                    run_costs = drawing_cost(events)
                    run_picture_costs = picture_cost(events)
                    first_steps.append(first)
                    lags.extend(run_lags)
                    costs.extend(run_costs)
                    picture_lags.extend(run_picture)
                    picture_costs.extend(run_picture_costs)
                    steps = max((n for _, n in run_picture_costs), default=0)
                    rows.append([method, question[:48], f"{first:.2f}", f"{total:.1f}", len(events), steps,
                                 _ms(run_lags), _ms([lag for lag, _ in run_picture]), _ms(run_costs, digits=2),
                                 _ms([c for c, _ in run_picture_costs], digits=2)])
    finally:
        app.close()
        runtime.close()
        if scratch:
            scratch.cleanup()

    big_lags = [lag for lag, n in picture_lags if n >= BIG]
    big_costs = [cost for cost, n in picture_costs if n >= BIG]
    print(f"Machine: {machine()} · model {model}\n")
    print(table(["method", "question", "Ask → first step (s)", "Ask → done (s)", "events", "steps",
                 "event → list median (ms)", "event → picture median (ms)", "list drawing per event median (ms)",
                 "picture drawing per event median (ms)"], rows))
    print(f"\nAll runs: Ask → first visible step median {median(first_steps):.2f} s; event → list median "
          f"{_ms(lags)} ms (p90 {_ms(lags, 90)} ms, {len(lags)} steps); event → picture median "
          f"{_ms([lag for lag, _ in picture_lags])} ms (p90 {_ms([lag for lag, _ in picture_lags], 90)} ms, "
          f"{len(picture_lags)} steps); list drawing per event median {_ms(costs, digits=2)} ms "
          f"(p90 {_ms(costs, 90, 2)} ms, {len(costs)} events); picture drawing per event median "
          f"{_ms([c for c, _ in picture_costs], digits=2)} ms (p90 {_ms([c for c, _ in picture_costs], 90, 2)} ms).")
    if big_lags or big_costs:
        print(f"At {BIG}+ steps: event → picture median {_ms(big_lags)} ms (p90 {_ms(big_lags, 90)} ms, "
              f"{len(big_lags)} steps); picture drawing per event median {_ms(big_costs, digits=2)} ms "
              f"(p90 {_ms(big_costs, 90, 2)} ms, {len(big_costs)} events).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
