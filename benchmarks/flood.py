"""One person floods a shared server: is anybody else slowed beyond a fair share, and is anything lost?

    python -m benchmarks.flood [--model default] [--questions 5] [--flooder-tabs 6] [--out flood.json]

Runs the real app in-process on loopback in shared mode (accounts alice, bob and mallory, none an admin, the
demo collection public), with the app's own limits (``--max-runs-per-person`` 2, ``--max-waiting`` 16) and a
real model, and drives it through ``gradio_client`` as browsers would:

1. **alone**: alice asks ``--questions`` OneR questions over the demo collection, one after another; each is
   timed from sending to its answer;
2. **flooded**: mallory sends questions from ``--flooder-tabs`` tabs in a loop, without pause, while bob
   creates a collection, uploads a file, asks over it, deletes the file and the collection, and alice asks
   the same questions again.

It reports alice's median time in both phases and their ratio, what became of mallory's questions (answered,
refused and why), bob's steps (each must succeed, his answer must come from his file) and whether every answer
of alice's came back. Loopback only; every loop is bounded in count and time. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from pipeline.evaluation.tables import machine, median

QUESTIONS = [  # answerable from the bundled demo corpus
    "Who directed the film Back to the Future?",
    "When did the Haves and Have Nots start?",
    "What part did Dan Lewis play for Arsenal Football Club?",
    "Who won the Tour de France?",
    "Which board game was published most recently, Pirate's Cove or Catan?",
]
FLOOD_QUESTION = "Tell me everything about the Tour de France."
BOB_FILE = "The Larkspur project review is on the 14th of March in room 4B. Bring the budget sheet.\n"
PASSWORD = "a long enough password"
MAX_FLOOD_SECONDS = 900  # the flood stops by itself after this, whatever happens


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _text(message) -> str:
    return html.unescape(json.dumps(message, ensure_ascii=False))


def ask(client, question: str, collections: list[str], model: str, method: str = "oner") -> tuple[float, str]:
    """Send ``question`` as a browser tab would, with ``method``; (seconds to the final answer, the chat's last
    message or the notice that refused it)."""
    from gradio_client.exceptions import AppError

    started = time.perf_counter()
    client.predict(api_name="/load")
    _cleared, history = client.predict(question, [], api_name="/submit")
    try:
        client.predict(api_name="/admit")  # the notice of a question over a limit, as the page shows it
    except AppError as refused:
        return time.perf_counter() - started, f"refused: {refused}"
    chat = client.predict(history, method, collections, False, model, False, [], api_name="/answer")
    return time.perf_counter() - started, _text(chat[0][-1])


def cited(message: str) -> bool:
    """Whether the chat's message is an answer citing a passage (not an error, a refusal or an abstention)."""
    return bool(re.search(r"\[\d+\]", message))


def refusal(message: str) -> str | None:
    for words in ("You already have", "The server is busy"):
        if words in message:
            return words
    return None


def main(argv: list[str] | None = None) -> int:
    # A command's main reads top to bottom: its arguments, its set-up, the two phases and the report.
    parser = argparse.ArgumentParser(prog="python -m benchmarks.flood", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--flooder-tabs", type=int, default=6)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--out", type=Path, default=Path("flood.json"))
    args = parser.parse_args(argv)

    from gradio_client import Client, handle_file

    from models.llama_backend import CALL_GATE

    from pipeline.accounts import SHARED, Accounts, People
    from pipeline.runtime import Runtime, RuntimeConfig
    from ui.app import build_app, launch_options

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rqa-flood-"))
    accounts = Accounts(data_dir)
    for name in ("alice", "bob", "mallory"):
        if accounts.person(name) is None:
            accounts.add(name, PASSWORD)
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model=args.model, max_runs_per_person=2, max_waiting=16,
                                    max_run_seconds=600))
    runtime.ensure_demo(None)
    runtime.llm()
    model = runtime.catalog.key_of(args.model)
    app = build_app(runtime, people=People(SHARED, accounts))
    app.queue(default_concurrency_limit=1)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
               auth=People(SHARED, accounts).auth(), **launch_options(data_dir))
    url = f"http://127.0.0.1:{port}/"

    def client(name: str) -> Client:
        return Client(url, auth=(name, PASSWORD), verbose=False)

    questions = (QUESTIONS * ((args.questions // len(QUESTIONS)) + 1))[: args.questions]
    try:
        alice = client("alice")
        ask(alice, questions[0], ["demo"], model)  # warm-up: the prompt cache and the page
        alone = []
        for question in questions:
            seconds, message = ask(alice, question, ["demo"], model)
            alone.append({"question": question, "seconds": round(seconds, 2), "cited": cited(message),
                          "answer": message[-300:]})
            print(f"alone: {seconds:.1f} s {question}", file=sys.stderr, flush=True)

        stop = threading.Event()
        flood_log: list[dict] = []

        def flood(tab) -> None:
            deadline = time.time() + MAX_FLOOD_SECONDS
            while not stop.is_set() and time.time() < deadline:
                try:
                    seconds, message = ask(tab, FLOOD_QUESTION, ["demo"], model)
                except Exception as exc:  # noqa: BLE001 - recorded: the flood must not stop the measurement
                    flood_log.append({"outcome": "error", "detail": str(exc)[:200]})
                    continue
                flood_log.append({"outcome": refusal(message) or "answered", "seconds": round(seconds, 2)})
                if refusal(message):
                    time.sleep(0.2)  # a script that hammers: re-sends at once

        flooders = [threading.Thread(target=flood, args=(client("mallory"),), daemon=True)
                    for _ in range(args.flooder_tabs)]
        for thread in flooders:
            thread.start()
        time.sleep(5)  # the flood is under way

        bob_steps: dict = {}

        def bob_works() -> None:
            bob = client("bob")
            upload = data_dir / "larkspur.txt"
            upload.write_text(BOB_FILE, encoding="utf-8")
            started = time.perf_counter()
            report = bob.predict("bob-notes", api_name="/create_collection")[-1]
            bob_steps["create"] = "Created" in report
            report = bob.predict("bob-notes", [handle_file(str(upload))], False, api_name="/add_files")[-1]
            bob_steps["upload"] = "1 of 1 files" in _text(report)
            seconds, message = ask(bob, "When is the Larkspur project review?", ["bob-notes"], model)
            bob_steps["ask_seconds"] = round(seconds, 2)
            bob_steps["answer_from_his_file"] = "14" in message and "March" in message
            report = bob.predict("bob-notes", "larkspur.txt", api_name="/delete_file")[-1]
            bob_steps["delete_file"] = "Deleted" in report
            report = bob.predict("bob-notes", True, api_name="/delete_collection")[-1]
            bob_steps["delete_collection"] = "Deleted" in report
            bob_steps["seconds"] = round(time.perf_counter() - started, 2)

        bob_thread = threading.Thread(target=bob_works, daemon=True)
        bob_thread.start()
        flooded = []
        for question in questions:
            seconds, message = ask(alice, question, ["demo"], model)
            flooded.append({"question": question, "seconds": round(seconds, 2), "cited": cited(message),
                            "refused": refusal(message), "answer": message[-300:]})
            print(f"flooded: {seconds:.1f} s {question}", file=sys.stderr, flush=True)
        bob_thread.join(timeout=600)
        stop.set()
        for thread in flooders:
            thread.join(timeout=120)
    finally:
        app.close()
        runtime.close()

    outcomes = {}
    for entry in flood_log:
        outcomes[entry["outcome"]] = outcomes.get(entry["outcome"], 0) + 1
    alone_median = median([r["seconds"] for r in alone])
    flooded_median = median([r["seconds"] for r in flooded])
    summary = {
        "alice_alone_median_s": alone_median,
        "alice_flooded_median_s": flooded_median,
        "ratio": round(flooded_median / alone_median, 2) if alone_median else None,
        "alice_cited_answers": f"{sum(r['cited'] for r in alone + flooded)} of {len(alone) + len(flooded)}",
        "alice_refused": sum(bool(r.get("refused")) for r in flooded),
        "mallory": outcomes,
        "bob": bob_steps,
        "model_calls_that_gave_way": getattr(CALL_GATE, "gave_way", None),  # None: a gate that never gives way
    }
    result = {"config": {"model": args.model, "questions": len(questions), "flooder_tabs": args.flooder_tabs,
                         "max_runs_per_person": 2, "max_waiting": 16},
              "machine": machine(), "summary": summary, "alone": alone, "flooded": flooded, "flood": flood_log}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(summary, indent=1))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
