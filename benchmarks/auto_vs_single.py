"""Auto end to end against each single method, on the same items: for each Auto results file, the mean scores
(x100) and median seconds of Auto and of every method in the other files on the items Auto scored, and how Auto's
items were routed.

    python -m benchmarks.auto_vs_single docs/results/auto/hotpotqa-default.json \
        docs/results/kgp/hotpotqa-baselines.json docs/results/kgp/hotpotqa-default.json

The first file holds the ``auto`` run; the rest hold the single methods (a method found in two files is read from
the first that has it). Prints Markdown; the best single method by the file's main score (STR-EM for ASQA, else F1)
is marked; "-" is a score a method does not have (NoR retrieves nothing, so it has no support recall).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

from pipeline.evaluation.tables import table

SCORES = [("em", "EM"), ("f1", "F1"), ("support_recall", "support recall"), ("str_em", "STR-EM"),
          ("rouge_l", "ROUGE-L")]
MAIN = ("str_em", "f1")  # ASQA is judged by STR-EM, the multi-hop files by F1


def by_method(paths: list[Path]) -> dict[str, dict[str, dict]]:
    """``{method: {item id: record}}`` over ``paths``; the first file holding a method wins."""
    found: dict[str, dict[str, dict]] = {}
    for path in paths:
        records: dict[str, dict[str, dict]] = {}
        for record in json.loads(path.read_text())["items"]:
            records.setdefault(record["method"], {})[record["id"]] = record
        for method, items in records.items():
            found.setdefault(method, items)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("auto", type=Path)
    parser.add_argument("singles", type=Path, nargs="+")
    args = parser.parse_args()
    auto = by_method([args.auto])["auto"]
    singles = by_method(args.singles)
    ids = [i for i in auto if all(i in items for items in singles.values())]
    missing = len(auto) - len(ids)
    names = [(k, label) for k, label in SCORES if all(k in auto[i]["scores"] for i in ids)]
    main_key = next(k for k in MAIN if any(k == n for n, _ in names))

    def mean(records: dict[str, dict], key: str) -> float | None:
        values = [records[i]["scores"].get(key) for i in ids]
        return None if None in values else 100 * statistics.fmean(values)

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    best = max(singles, key=lambda m: mean(singles[m], main_key) or 0.0)
    rows = []
    for method, records in [("auto", auto), *singles.items()]:
        label = method + (" (best single)" if method == best else "")
        rows.append([label, len(ids)] + [cell(mean(records, k)) for k, _ in names]
                    + [f"{statistics.median(records[i]['cost']['wall_s'] for i in ids):.1f}"])
    routed = Counter(auto[i].get("routed_to", "?") for i in ids)
    print(f"{Path(args.auto).stem}: {len(ids)} items" + (f" ({missing} not in every file, left out)" if missing else "")
          + "; Auto sent " + ", ".join(f"{n} to {m}" for m, n in routed.most_common()) + "\n")
    print(table(["method", "n"] + [label for _, label in names] + ["median s"], rows))
    gap = mean(auto, main_key) - mean(singles[best], main_key)
    print(f"\nAuto minus the best single method ({best}) on {dict(names)[main_key]}: {gap:+.1f}")


if __name__ == "__main__":
    main()
