"""How often a method stops at a bridge: its answer is an earlier hop's gold answer rather than the question's.

    python -m benchmarks.bridge_answers DATA.jsonl RESULTS.json [MORE_RESULTS.json ...]

For MuSiQue-style items (a ``decomposition`` giving each hop's answer), each prediction of a saved results file is
put in one of three groups: the question's answer (exact match after SQuAD normalisation, against any gold
alias), an earlier hop's answer ("Frederick Douglass" for "Who married the publisher of The North Star?"), or
anything else. A reader that answers with the bridge has found the first hop and not gone on. Nothing is run; no
model is loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from pipeline.text import normalize_answer

GROUPS = ("right", "bridge", "other")


def group(item: dict, prediction: str | None) -> str:
    """Which group ``prediction`` falls in for ``item``: "right", "bridge" (an earlier hop's answer) or "other"."""
    said = normalize_answer(prediction or "")
    if said and any(normalize_answer(str(a)) == said for a in item.get("answers", [])):
        return "right"
    earlier = [str(hop.get("answer", "")) for hop in (item.get("decomposition") or [])[:-1]]
    if said and any(normalize_answer(a) == said for a in earlier if a):
        return "bridge"
    return "other"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="the evaluation JSONL file the results were run on")
    parser.add_argument("results", nargs="+", help="results files of pipeline.evaluate")
    args = parser.parse_args(argv)
    with open(args.data, encoding="utf-8") as handle:
        items = {row["id"]: row for row in map(json.loads, filter(str.strip, handle))}
    print("| results | method | n | exact answer | an earlier hop's answer | other |")
    print("|---|---|---|---|---|---|")
    for path in args.results:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
        counts: dict[str, Counter] = {}
        for row in saved["items"]:
            if row["id"] in items:
                counts.setdefault(row["method"], Counter())[group(items[row["id"]], row.get("prediction"))] += 1
        for method, count in counts.items():
            print(f"| {path} | {method} | {sum(count.values())} | " + " | ".join(str(count[g]) for g in GROUPS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
