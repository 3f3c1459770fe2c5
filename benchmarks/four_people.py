"""Four people asking at once (issue #33): does the last answer arrive within twice a lone answer's time?

    python -m benchmarks.four_people [--model default] [--repeats 2] [--out four-people.json]

Runs the real app in-process on loopback (personal mode, the app's defaults: up to 8 questions run at once,
their model calls taking turns through one gate) with a real model over the demo collection, and drives it
through ``gradio_client`` as four browser sessions would. Two of the four ask with OneR, two with ToC.

1. **alone**: each of the four questions is asked on its own, one after another (after one warm-up question);
2. **at once**: the four sessions send their questions at the same moment.

Each phase starts with the model's warm prompt prefixes dropped (``forget_prompts``), and so does each lone
question: the same four questions are asked in both phases, and a prefix cached by the first would otherwise
speed the second. Repeated ``--repeats`` times; reports each question's seconds alone and at once, and for each
repeat the last answer's arrival against the median and the longest lone answer. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.flood import ask, cited, free_port
from pipeline.evaluation.tables import machine, median

ASKED = [  # (question, method): answerable from the bundled demo corpus
    ("Who directed the film Back to the Future?", "oner"),
    ("What part did Dan Lewis play for Arsenal Football Club?", "oner"),
    ("Who won the Tour de France?", "toc"),
    ("When did the Haves and Have Nots start?", "toc"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.four_people", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--out", type=Path, default=Path("four-people.json"))
    args = parser.parse_args(argv)

    from gradio_client import Client

    from pipeline.runtime import Runtime, RuntimeConfig
    from ui.app import build_app, launch_options

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rqa-four-"))
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model=args.model))
    runtime.ensure_demo(None)
    runtime.llm()
    model = runtime.catalog.key_of(args.model)
    app = build_app(runtime)
    app.queue(default_concurrency_limit=1)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               **launch_options(data_dir))
    url = f"http://127.0.0.1:{port}/"
    repeats = []

    def forget() -> None:
        """Every question is timed with a cold prompt cache: the same questions are asked alone and at once."""
        llm = runtime.llm()
        if hasattr(llm, "forget_prompts"):
            llm.forget_prompts()

    try:
        clients = [Client(url, verbose=False) for _ in ASKED]
        ask(clients[0], "Who directed Jaws?", ["demo"], model)  # warm-up: the page and the model
        for repeat in range(args.repeats):
            alone = []
            for client, (question, method) in zip(clients, ASKED):
                forget()
                seconds, message = ask(client, question, ["demo"], model, method)
                alone.append({"question": question, "method": method, "seconds": round(seconds, 2),
                              "cited": cited(message)})
                print(f"alone: {seconds:.1f} s {method} {question}", file=sys.stderr, flush=True)
            forget()
            together: list[dict] = [{} for _ in ASKED]
            start = threading.Barrier(len(ASKED))
            began = time.perf_counter()

            def person(i: int) -> None:
                question, method = ASKED[i]
                start.wait()
                seconds, message = ask(clients[i], question, ["demo"], model, method)
                together[i] = {"question": question, "method": method, "seconds": round(seconds, 2),
                               "arrived_s": round(time.perf_counter() - began, 2), "cited": cited(message)}

            threads = [threading.Thread(target=person, args=(i,)) for i in range(len(ASKED))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=1800)
            for entry in together:
                print(f"at once: {entry.get('seconds')} s {entry.get('method')} {entry.get('question')}",
                      file=sys.stderr, flush=True)
            lone = [r["seconds"] for r in alone]
            last = max(r.get("arrived_s", float("inf")) for r in together)
            repeats.append({"alone": alone, "at_once": together, "last_arrival_s": last,
                            "lone_median_s": median(lone), "lone_max_s": max(lone),
                            "last_over_lone_median": round(last / median(lone), 2),
                            "last_over_lone_max": round(last / max(lone), 2)})
    finally:
        app.close()
        runtime.close()
    out = {"machine": machine(), "model": args.model, "date": time.strftime("%Y-%m-%d %H:%M"), "repeats": repeats}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    for r in repeats:
        print(f"last answer at {r['last_arrival_s']} s; lone median {r['lone_median_s']} s, longest "
              f"{r['lone_max_s']} s: {r['last_over_lone_median']}x / {r['last_over_lone_max']}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
