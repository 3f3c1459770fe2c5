"""Where an unanswered hop's answer was: in the passages the hop read, in the next ones its retrieval ranks, or in
neither.

    python -m benchmarks.unanswered_hops data/eval/musique.jsonl RESULTS.json [MORE.json ...] [--k 4]

For every IRCoT item of the results files whose hop-by-hop chain ended at a hop with no answer (its ``hops``
record), the last hop's asked sub-question is retrieved again from the file's closed corpus (cached in
``--data-dir`` as the evaluation does) and the ranks 1..k and k+1..2k are checked for a gold hop answer of the item
(its ``decomposition``) that the sub-question does not already name, with the check IRCoT uses (``hops.holds``).
Held in 1..k: the hop-answer call read it and said "not found" (or it answers another hop); held only in k+1..2k:
asking the hop again of its next passages (``IRCoTSettings.hop_next``) could find it. No LLM is loaded; the
embedder is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.evaluation.harness import file_corpus
from pipeline.methods.ircot.hops import holds
from pipeline.retrieval import HybridRetriever
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the evaluation JSONL file the results were run on")
    parser.add_argument("results", nargs="+", help="results files of pipeline.evaluate with IRCoT items")
    parser.add_argument("--k", type=int, default=4, help="passages a hop reads (IRCoTSettings.k)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation",
                        help="where the closed corpus is indexed (pipeline.evaluate's default)")
    args = parser.parse_args(argv)
    with open(args.data, encoding="utf-8") as handle:
        gold = {row["id"]: row for row in map(json.loads, filter(str.strip, handle))}
    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model="default"))
    retriever = HybridRetriever([file_corpus(runtime.store, args.data)])
    unanswered = first = only_next = 0
    for path in args.results:
        with open(path, encoding="utf-8") as handle:
            items = json.load(handle)["items"]
        for item in items:
            hops = item.get("hops") or []
            if item.get("method") != "ircot" or not hops or hops[-1].get("answer") is not None:
                continue
            asked = hops[-1]["question"]
            answers = [h["answer"] for h in gold[item["id"]].get("decomposition") or []
                       if h["answer"].lower() not in asked.lower()]
            ranked = retriever.retrieve(asked, 2 * args.k).passages
            held = [a for a in answers if any(holds(doc, a) for doc in ranked[:args.k])]
            later = [a for a in answers if a not in held and any(holds(doc, a) for doc in ranked[args.k:])]
            unanswered += 1
            first += bool(held)
            only_next += bool(later)
            print(f"- {item['id']}: \"{asked}\" | in 1-{args.k}: {held} | only in {args.k + 1}-{2 * args.k}: {later}")
    print(f"\n{unanswered} chains ended at an unanswered hop; a gold hop answer in ranks 1-{args.k}: {first}; "
          f"one more only in ranks {args.k + 1}-{2 * args.k}: {only_next}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
