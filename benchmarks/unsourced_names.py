"""How often the answer step's "names not in the sources" warning (``pipeline.support.unsourced_names``) fires on
saved answers, split by whether the answer was right: a warning on a wrong answer is a catch, on a right one a
false alarm.

    python -m benchmarks.unsourced_names docs/results/oner/checks/*-oner.json [--method oner] [--limit 50]

No model call: each saved answer is checked against the passages OneR's retrieval gives its question (the top
``top_k`` of the results file's closed corpus, as the run retrieved them). An answer counts as right at token F1
0.5 or more (STR-EM above 0 for ASQA's long answers); abstentions are left out, as the app never warns on them.
With ``--method nor`` the closed-book answers are checked against the passages OneR would have read: how often an
answer from the model's own knowledge is caught. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pipeline.evaluation.tables import machine, table


def right(scores: dict) -> bool:
    if "str_em" in scores:
        return scores["str_em"] > 0
    return scores.get("f1", 0.0) >= 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results files of pipeline.evaluate (closed corpus)")
    parser.add_argument("--method", default="oner")
    parser.add_argument("--limit", type=int, default=None, help="the first N items of each file")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the closed corpora are indexed (default: the evaluation's)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from pipeline.evaluation.data import file_sha256, load_items
    from pipeline.evaluation.harness import closed_corpus
    from pipeline.retrieval import HybridRetriever
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
    from pipeline.support import says_unanswerable, unsourced_names

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir or default_data_dir() / "evaluation"))
    rows, examples = [], []
    totals = [0, 0, 0, 0, 0]
    for path in args.results:
        results = json.loads(path.read_text())
        if results.get("setting") != "closed":
            raise SystemExit(f"{path}: only closed-corpus runs can be re-retrieved")
        data = Path(results["data"])
        order = {item.id: n for n, item in enumerate(load_items(data))}
        retriever = HybridRetriever([closed_corpus(runtime.store, load_items(data), file_sha256(data))])
        records = sorted((r for r in results["items"] if r["method"] == args.method), key=lambda r: order[r["id"]])
        records = records[: args.limit] if args.limit is not None else records
        answered = [r for r in records if not r.get("abstained") and not says_unanswerable(r["prediction"])]
        counts = {"right": 0, "wrong": 0, "right warned": 0, "wrong warned": 0}
        for record in answered:
            passages = retriever.retrieve(record["question"], results["top_k"]).passages
            names = unsourced_names(record["prediction"], passages, record["question"])
            kind = "right" if right(record["scores"]) else "wrong"
            counts[kind] += 1
            counts[f"{kind} warned"] += bool(names)
            if names and len(examples) < 12:
                examples.append(f"- {data.stem}, {kind}: {record['question']} → {record['prediction'][:120]!r} "
                                f"(not in the passages: {', '.join(names)})")
        values = [len(answered), counts["wrong"], counts["wrong warned"], counts["right"], counts["right warned"]]
        totals = [t + v for t, v in zip(totals, values)]
        rows.append([data.stem, *_cells(values)])
    rows.append(["all", *_cells(totals)])
    print(f"{machine()}; {args.method}'s saved answers; passages: the top k of the closed corpus\n")
    print(table(["file", "answers (not abstained)", "wrong answers", "warned: wrong (catches)",
                 "right answers", "warned: right (false alarms)", "warnings that are catches"], rows))
    print("\n" + "\n".join(examples))


def _cells(values: list[int]) -> list[str]:
    answered, wrong, caught, right_, false = values
    share = lambda n, of: f"{n} ({100 * n / of:.0f}%)" if of else "0"  # noqa: E731
    precision = f"{100 * caught / (caught + false):.0f}%" if caught + false else "-"
    return [str(answered), str(wrong), share(caught, wrong), str(right_), share(false, right_), precision]


if __name__ == "__main__":
    main()
