"""The app process's memory over many questions and over many model choices.

    python -m benchmarks.memory [--questions 200] [--question-model fast] [--choices 20] [--out FILE.json]

Questions: ``--questions`` OneR questions in a row through the run service over the demo collection (the path
a browser question takes: retrieval, the model, trace saving), with the real ``--question-model``; resident
memory (RSS) is read after 20 warm-up questions and after every 50.

Model choices: ``--choices`` picks in a row among four catalog entries (``default``, ``fast``, and two more
names of the fast model's file in a models folder, as an operator might list them), with at most two models
loaded: RSS after each choice, and how many models were loaded. Before the fix, four spellings of one path
loaded four copies and nothing was ever unloaded (docs/reliability.md). Run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from pipeline.evaluation.tables import machine, table
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
from pipeline.service import Conversation, RunRequest, RunService
from pipeline.settings import Settings

QUESTIONS = ["Who directed Back to the Future?", "When did the Haves and Have Nots start?",
             "Who wrote the novel Dracula?", "Where was Marie Curie born?", "What is the capital of Australia?"]


def rss_mb() -> float:
    """This process's resident memory in MB (/proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def questions(data_dir: Path, model: str, count: int) -> list[dict]:
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model=model))
    runtime.ensure_demo()
    service = RunService.for_runtime(runtime, trace_dir=Path(tempfile.mkdtemp(prefix="rqa-memory-")))
    settings = Settings(answer_max_tokens=24)  # the answer's length does not change what is kept in memory
    conversation = Conversation()
    readings = []
    for n in range(count + 20):
        # Distinct questions (no follow-up joins), so that every question retrieves and saves a trace of its own.
        question = f"{QUESTIONS[n % len(QUESTIONS)]} (question {n})"
        run = service.start(RunRequest(question=question, method="oner", collections=("demo",),
                                       settings=settings), conversation=conversation)
        for _event in run:
            pass
        done = n + 1 - 20
        if done == 0 or (done > 0 and done % 50 == 0) or done == count:
            readings.append({"questions": done, "rss_mb": round(rss_mb(), 1)})
            print(readings[-1], flush=True)
    runtime.close()
    return readings


def choices(data_dir: Path, count: int) -> list[dict]:
    from models.registry import prepare_bundled

    folder = Path(tempfile.mkdtemp(prefix="rqa-models-"))
    fast = prepare_bundled("fast")
    for name in ("fast-copy.gguf", "fast-again.gguf"):
        os.symlink(fast, folder / name)
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model="default", models_dir=folder, max_loaded_models=2))
    keys = ["default", "fast", "fast-copy.gguf", "fast-again.gguf"]
    readings = [{"choices": 0, "rss_mb": round(rss_mb(), 1), "loaded": 0}]
    for n in range(count):
        runtime.llm(keys[n % len(keys)]).chat([{"role": "user", "content": "Say OK."}])
        readings.append({"choices": n + 1, "choice": keys[n % len(keys)], "rss_mb": round(rss_mb(), 1),
                         "loaded": len(runtime.loaded_models())})
        print(readings[-1], flush=True)
    runtime.close()
    return readings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--question-model", default="fast")
    parser.add_argument("--choices", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="a data directory holding the demo collection (default: the app's)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    asked = questions(args.data_dir, args.question_model, args.questions)
    picked = choices(args.data_dir, args.choices)
    print(table(["questions after warm-up", "RSS MB"], [[r["questions"], r["rss_mb"]] for r in asked]))
    print()
    print(table(["model choices", "RSS MB", "models loaded"],
                [[r["choices"], r["rss_mb"], r["loaded"]] for r in picked if r["choices"] % 4 == 0]))
    print(machine())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"machine": machine(), "questions": asked, "choices": picked}, indent=1))


if __name__ == "__main__":
    main()
