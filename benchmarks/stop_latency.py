"""How fast Stop ends a run, by the kind of step it lands in: a model load, a ToC clarification, a verification,
an IRCoT reasoning step and an answer being written, with the real model on the demo corpus.

    python -m benchmarks.stop_latency [--model default] [--delays 0.3,1.5,3] [--out FILE.json]

For each kind, a run is started and Stop is pressed ``delay`` seconds after the first model call of that kind
begins (0.3 s usually lands while the prompt is being read, later delays while tokens are written); the
latency is the time from Stop to the run's last event. Run it alone: another model process on the same cores
slows every step.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Iterator

import yaml

from models.llm import ChatModel, ChatResult, GenerationOptions, Message
from pipeline.evaluation.tables import machine, table
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
from pipeline.service import RunRequest, RunService

TOC_QUESTION = "When did the Haves and Have Nots start?"
IRCOT_QUESTION = "What heritage site, known for a British explorer, is listed Seventeen Seventy Australia?"  # sentences
HOPS_QUESTION = "Where was the director of Back to the Future born?"  # IRCoT goes hop by hop
# kind: (method, question)
KINDS = {
    "clarification (ToC)": ("toc", TOC_QUESTION),
    "verification (ToC)": ("toc", TOC_QUESTION),
    "answer (ToC)": ("toc", TOC_QUESTION),
    "reasoning step (IRCoT)": ("ircot", IRCOT_QUESTION),
    "hop (IRCoT)": ("ircot", HOPS_QUESTION),
    "answer (OneR)": ("oner", TOC_QUESTION),
}


PROMPT_KINDS = {"toc_clarify": "clarification (ToC)", "toc_read_passage": "clarification (ToC)",
                "toc_verify": "verification (ToC)",
                "toc_answer": "answer (ToC)", "ircot_reason": "reasoning step (IRCoT)",
                "ircot_hop_answer": "hop (IRCoT)", "ircot_hop_infer": "hop (IRCoT)", "oner_answer": "answer (OneR)"}


@functools.cache
def _system_openings() -> dict[str, str]:
    folder = Path(__file__).resolve().parent.parent / "pipeline" / "prompts"
    return {yaml.safe_load((folder / f"{name}.yaml").read_text(encoding="utf-8"))["system"][:80]: kind
            for name, kind in PROMPT_KINDS.items()}


def call_kind(messages: list[Message]) -> str:
    """Which kind of step a model call is, from its prompt's system message."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    return next((kind for opening, kind in _system_openings().items() if system.startswith(opening)), "other")


class StopPresser(ChatModel):
    """Passes calls to ``model`` and presses the run's Stop ``delay`` seconds into the first call of ``kind``."""

    def __init__(self, model: ChatModel, kind: str, delay: float) -> None:
        self.model, self.kind, self.delay = model, kind, delay
        self.name = model.name
        self.armed = False
        self.pressed_at: float | None = None
        self.tokens_before_stop = 0

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str | ChatResult]:
        tokens = [0]
        if not self.armed and options.cancel is not None and call_kind(messages) == self.kind:
            self.armed = True
            def press() -> None:
                self.pressed_at = time.perf_counter()
                self.tokens_before_stop = tokens[0]
                options.cancel.set()
            threading.Timer(self.delay, press).start()
        for item in self.model.stream(messages, options):
            if isinstance(item, str):
                tokens[0] += 1
            yield item


def stop_during_load(data_dir: Path, model: str, delay: float) -> tuple[float, bool]:
    """Stop ``delay`` s into a run whose model is not loaded yet; (latency, whether the load was still going)."""
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model=model))
    runtime.store.names()
    runtime.embeddings.embed_query("warm up")
    cancel = threading.Event()
    run = RunService.for_runtime(runtime).start(RunRequest(question=TOC_QUESTION, method="nor"), cancel=cancel)
    pressed: list[float] = []
    timer = threading.Timer(delay, lambda: (pressed.append(time.perf_counter()), cancel.set()))
    timer.start()
    loading = not runtime.loaded_models()
    for _event in run:
        pass
    ended = time.perf_counter()
    loading = loading and bool(pressed)
    runtime.close()
    return (ended - pressed[0]) if pressed else float("nan"), loading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="a data directory holding the demo collection (default: the app's)")
    parser.add_argument("--delays", default="0.3,1.5,3")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    delays = [float(d) for d in args.delays.split(",")]

    rows: dict[str, list[dict]] = {"model load": []}
    for delay in [0.2, 0.5]:
        latency, loading = stop_during_load(args.data_dir, args.model, delay)
        rows["model load"].append({"delay": delay, "latency_s": latency, "during_load": loading})

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model))
    runtime.ensure_demo()
    real = runtime.llm(args.model)
    service = RunService.for_runtime(runtime)
    for kind, (method, question) in KINDS.items():
        rows[kind] = []
        for delay in delays:
            presser = StopPresser(real, kind, delay)
            runtime.use_model("stop-presser", presser)
            run = service.start(RunRequest(question=question, method=method, collections=("demo",),
                                           model="stop-presser"))
            for _event in run:
                pass
            ended = time.perf_counter()
            stopped = run.state.stopped()
            rows[kind].append({"delay": delay, "stopped": stopped,
                               "latency_s": (ended - presser.pressed_at) if presser.pressed_at else None,
                               "tokens_before_stop": presser.tokens_before_stop})
            print(kind, rows[kind][-1], flush=True)

    lines = []
    for kind, trials in rows.items():
        latencies = [t["latency_s"] for t in trials if t.get("latency_s") is not None]
        lines.append([kind, len(latencies), f"{statistics.median(latencies):.2f}" if latencies else "-",
                      f"{max(latencies):.2f}" if latencies else "-",
                      ", ".join(f"{t['delay']:g}s" for t in trials)])
    report = table(["step Stop lands in", "n", "median s", "max s", "Stop pressed after"], lines)
    print(report)
    print(machine())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"model": args.model, "machine": machine(), "trials": rows}, indent=1))


if __name__ == "__main__":
    main()
