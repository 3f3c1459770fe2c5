"""How alive the browser app feels: time from pressing Ask to the first visible step, and the app's overhead
per event (from the moment a method yields a step to the moment the browser shows it), with a real model.

    python -m benchmarks.ui_latency [--model default] [--methods oner,toc] [--questions 3] [--data-dir DIR]

Runs the real app in-process on loopback, drives Debian's headless Chromium with Playwright, and reads each
run's saved trace (event times) against the times the page first showed each step (a MutationObserver).
Also reports the pure drawing cost per event (fold + view + answer message, no browser). Prints Markdown.
"""

from __future__ import annotations

import argparse
import socket
import time
from pathlib import Path

from pipeline.reporting import machine, median, percentile, table
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir

QUESTIONS = [  # answerable from the bundled demo corpus
    "Who directed the film Back to the Future?",
    "Which board game was published most recently, Pirate's Cove or Catan?",
    "When did the Haves and Have Nots start?",
    "What part did Dan Lewis play for Arsenal Football Club?",
    "Who won the Tour de France?",
]
OBSERVER = """() => {
  window.__seen = {}; window.__done = {};
  const record = () => document.querySelectorAll('#reasoning [data-step]').forEach((el) => {
    const id = el.getAttribute('data-step');
    if (!(id in window.__seen)) window.__seen[id] = Date.now() / 1000;
    if (el.classList.contains('status-done') && !(id in window.__done)) window.__done[id] = Date.now() / 1000;
  });
  new MutationObserver(record).observe(document.querySelector('#reasoning'),
                                       {childList: true, subtree: true, attributes: true});
}"""


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _choose(page, elem_id: str, label: str) -> None:
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


def event_lags(events, seen: dict[str, float], done: dict[str, float]) -> list[float]:
    """Seconds from a method yielding an event to the page showing it: a step's first event against the
    moment the step appeared, and its first done event (when later) against the moment it turned done."""
    first, finished = {}, {}
    for event in events:
        if event.kind.value in ("answer_token", "route", "verify", "prune", "warning", "error"):
            continue  # drawn inside another step, not as a step of their own
        first.setdefault(event.id, event)
        if event.status.value == "done" and event.elapsed_s is not None and first[event.id] is not event:
            finished.setdefault(event.id, event)
    lags = [seen[i] - e.started_at for i, e in first.items() if i in seen and e.started_at]
    lags += [done[i] - (e.started_at + e.elapsed_s) for i, e in finished.items() if i in done and e.started_at]
    return lags


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--methods", default="oner,toc")
    parser.add_argument("--questions", type=int, default=3, help="questions per method")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from pipeline.events import read_jsonl
    from pipeline.methods import METHODS
    from ui.app import build_app, launch_options

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model))
    runtime.llm()
    runtime.ensure_demo()
    app = build_app(runtime)
    app.queue(default_concurrency_limit=1)
    port = _port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    traces = args.data_dir / "traces"
    rows, first_steps, lags, costs = [], [], [], []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("#question textarea")
            page.evaluate(OBSERVER)
            for method in args.methods.split(","):
                _choose(page, "method", METHODS[method].label.split(" (")[0])
                for question in QUESTIONS[: args.questions]:
                    page.click("#new-conversation")
                    page.wait_for_selector("#reasoning:has-text('New conversation')")
                    page.evaluate("window.__seen = {}; window.__done = {}")
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
                    run_costs = drawing_cost(events)
                    first_steps.append(first)
                    lags.extend(run_lags)
                    costs.extend(run_costs)
                    rows.append([method, question[:48], f"{first:.2f}", f"{total:.1f}", len(events),
                                 f"{median(run_lags) * 1000:.0f}", f"{median(run_costs) * 1000:.2f}"])
            browser.close()
    finally:
        app.close()
        runtime.close()

    print(f"Machine: {machine()} · model {args.model}\n")
    print(table(["method", "question", "Ask → first step (s)", "Ask → done (s)", "events",
                 "event → screen median (ms)", "drawing per event median (ms)"], rows))
    print(f"\nAll runs: Ask → first visible step median {median(first_steps):.2f} s; event → screen median "
          f"{median(lags) * 1000:.0f} ms (p90 {percentile(lags, 90) * 1000:.0f} ms, {len(lags)} steps); drawing "
          f"per event median {median(costs) * 1000:.2f} ms (p90 {percentile(costs, 90) * 1000:.2f} ms, "
          f"{len(costs)} events).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
