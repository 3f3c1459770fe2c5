"""How much IRCoT's hop-answer call leans to answering, against whether its passages hold a gold hop answer.

    python -m benchmarks.hop_answer_odds data/eval/musique.jsonl TRACE_DIR [MORE ...] --out ODDS.json

Every hop of the saved traces (``pipeline.evaluate --trace-dir``) is asked again exactly as its run asked it (the
``ircot_hop_answer`` prompt over the passages the trace recorded), with the first token's alternatives, and its
odds of answering, P("[") / (P("[") + P("not")) (``hops.answer_odds``), are set against what it found and whether
its passages hold a gold hop answer the sub-question does not already name (the item's ``decomposition``, checked
with ``hops.holds``). Prints the odds per group (not found with a gold answer in the passages / without; found
right / wrong) and writes one row per hop to ``--out``. Loads the model (``--model``), one call per hop.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from langchain_core.documents import Document

from pipeline.methods.ircot.hops import ODDS_ALTERNATIVES, answer_odds, holds
from pipeline.metrics import f1
from pipeline.prompting import format_passages, load_prompt
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir


def hop_rows(data: Path, trace_dirs: list[Path], llm) -> list[dict]:
    """One row per finished hop of the traces: its question, what it found, the gold answers its passages hold
    and the odds of answering on asking it again."""
    with open(data, encoding="utf-8") as handle:
        gold = {row["id"]: row for row in map(json.loads, filter(str.strip, handle))}
    prompt = load_prompt("ircot_hop_answer")
    rows = []
    for folder in trace_dirs:
        for path in sorted(folder.glob("*.jsonl")):
            events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            item = gold[events[0]["run_id"].split("-", 1)[1]]
            answers = [h["answer"] for h in item.get("decomposition") or []]
            for event in events:
                hop = event["payload"]
                if event["kind"] != "subquestion" or event["status"] != "done" or not hop["passages"]:
                    continue
                docs = [Document(page_content=p["text"], metadata={"title": p["title"]}) for p in hop["passages"]]
                held = [a for a in answers if a.lower() not in hop["question"].lower()
                        and any(holds(doc, a) for doc in docs)]
                result = llm.chat(prompt.messages(question=hop["question"], passages=format_passages(docs)),
                                  prompt.options(0.0, top_logprobs=ODDS_ALTERNATIVES))
                right = hop["found"] and max(f1(hop["answer"], a) for a in answers + item["answers"]) >= 0.5
                rows.append(dict(id=item["id"], question=hop["question"], found=hop["found"],
                                 again=hop.get("again", False), answer=hop["answer"], right=right, held=held,
                                 odds=round(answer_odds(result), 3), reply=result.text[:80]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the evaluation JSONL file the traces were run on")
    parser.add_argument("traces", nargs="+", type=Path, help="trace folders of IRCoT runs")
    parser.add_argument("--model", default="default", help="the model the traces were run with")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation",
                        help="the data folder whose models/ offers extra models (pipeline.evaluate's default)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file for one row per hop")
    args = parser.parse_args(argv)
    llm = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model)).llm()
    rows = hop_rows(args.data, args.traces, llm)
    args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    groups = {"not found, a gold hop answer in its passages": [r for r in rows if not r["found"] and r["held"]],
              "not found, none in its passages": [r for r in rows if not r["found"] and not r["held"]],
              "found, right": [r for r in rows if r["found"] and r["right"]],
              "found, wrong": [r for r in rows if r["found"] and not r["right"]]}
    print("| hops | n | odds of answering: median | min - max | at least 0.4 |")
    print("|---|---|---|---|---|")
    for name, group in groups.items():
        odds = [r["odds"] for r in group]
        if odds:
            print(f"| {name} | {len(odds)} | {statistics.median(odds):.2f} | {min(odds):.2f} - {max(odds):.2f} | "
                  f"{sum(o >= 0.4 for o in odds)} |")
        else:
            print(f"| {name} | 0 | - | - | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
