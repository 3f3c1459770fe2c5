"""Where ``python -m pipeline ask`` spends its seconds before and around its first model call.

    python -m benchmarks.ask_startup [--corpus demo] [--question "..."] [--repeats 3]

Each repeat is a fresh process, as a command-line question is. The child times, from its first line: the imports
of the CLI, the runtime, opening the collection, loading the embedder, loading the model (the run context's
parts, done first one by one), then the run until its first step and the rest of the run (retrieval, checks,
answer). The parent times the
whole process; what the child did not see is the interpreter's start and its exit (the CLI prints its answer before exiting). The default question is one the demo
corpus cannot answer, so the run ends after retrieval and the support check without a model call (the issue's
case: 11.1 s with no model call). Prints the median of each phase.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import time

QUESTION = "What is the default glob weight, and what is its maximum?"


def child(question: str, corpus: str, method: str) -> None:
    clock = time.perf_counter()
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        marks[name] = round(now - clock, 3)
        clock = now

    importlib.import_module("pipeline.__main__")  # what the CLI imports before it parses its arguments
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
    from pipeline.service import RunRequest, RunService
    mark("imports")
    runtime = Runtime(RuntimeConfig(data_dir=default_data_dir(), model="default"))
    mark("runtime")
    runtime.store.open_many([corpus])
    mark("open the collection")
    runtime.embeddings
    mark("load the embedder")
    runtime.llm()
    mark("load the model")
    service = RunService.for_runtime(runtime)
    run = service.start(RunRequest(question=question, method=method, collections=(corpus,)))
    first_step = None
    for event in run:
        if first_step is None and event.kind.value == "retrieve":
            first_step = time.perf_counter()
            mark("the run until its first step (the context, now warm)")
    mark("the run (retrieval, checks, answer)")
    state = run.state
    print(json.dumps({"marks": marks, "llm_calls": state.cost()["llm_calls"],
                      "answer": (state.answer.answer if state.answer else "")[:120]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--corpus", default="demo")
    parser.add_argument("--method", default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.question, args.corpus, args.method)
        return
    runs = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "benchmarks.ask_startup", "--child", "--question", args.question,
                               "--corpus", args.corpus, "--method", args.method],
                              capture_output=True, text=True, check=True)
        total = time.perf_counter() - started
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["marks"] = {"interpreter start and exit": round(total - sum(result["marks"].values()), 3), **result["marks"],
                           "whole process": round(total, 3)}
        runs.append(result)
    print(f"{args.repeats} fresh processes; question: {args.question!r} over {args.corpus}, method {args.method}; "
          f"model calls: {runs[0]['llm_calls']}\n")
    print("| phase | median s | each run s |\n|---|---|---|")
    for name in runs[0]["marks"]:
        values = [r["marks"][name] for r in runs]
        print(f"| {name} | {statistics.median(values):.2f} | {', '.join(f'{v:.2f}' for v in values)} |")


if __name__ == "__main__":
    main()
