"""Scores by question type: two results files of ``pipeline.evaluate`` compared type by type (2Wiki's
compositional / inference / comparison / bridge comparison, HotpotQA's bridge / comparison, MuSiQue's hop counts).

    python -m benchmarks.by_type BEFORE.json AFTER.json --data data/eval/2wikimultihopqa.jsonl --method ircot \\
        [--after-method ircot] [--score f1]

For each type, on the items both files scored: n, the mean score (x100) before and after, the paired change with
its 95% bootstrap interval (``compare_results.paired_change``), and the median seconds per question of each side.
Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks.compare_results import paired_change, records
from pipeline.evaluation.tables import table


def types_of(data: str) -> dict[str, str]:
    """Each item's type, by id, from a dataset file."""
    lines = Path(data).read_text(encoding="utf-8").splitlines()
    return {str(item["id"]): str(item.get("type") or "-") for item in map(json.loads, filter(str.strip, lines))}


def rows_by_type(before: dict, after: dict, types: dict[str, str], score: str) -> list[list[str]]:
    """One row per type, then one for all types."""
    shared = [i for i in before if i in after and score in before[i]["scores"] and score in after[i]["scores"]]
    groups: dict[str, list] = {}
    for key in shared:
        groups.setdefault(types.get(str(key[1]), "-"), []).append(key)
    rows = []
    for name, keys in sorted(groups.items()) + [("all", shared)]:
        b = [before[k]["scores"][score] for k in keys]
        a = [after[k]["scores"][score] for k in keys]
        mean, low, high = paired_change(b, a)
        seconds = [statistics.median(side[k]["cost"]["wall_s"] for k in keys) for side in (before, after)]
        rows.append([name, len(keys), f"{100 * statistics.fmean(b):.1f}", f"{100 * statistics.fmean(a):.1f}",
                     f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]",
                     f"{seconds[0]:.1f} / {seconds[1]:.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="a results file")
    parser.add_argument("after", help="a results file of the same items")
    parser.add_argument("--data", required=True, help="the dataset file the items come from (for their types)")
    parser.add_argument("--method", required=True, help="the method in BEFORE")
    parser.add_argument("--after-method", default=None, help="the method in AFTER (default: the same)")
    parser.add_argument("--score", default="f1", help="the score to compare (default: f1)")
    args = parser.parse_args()
    before = records(args.before, args.method)
    after = records(args.after, args.after_method or args.method)
    rows = rows_by_type(before, after, types_of(args.data), args.score)
    if not rows[-1][1]:
        raise SystemExit("the files share no scored item")
    print(table(["type", "n", f"{args.score} before ({Path(args.before).name})",
                 f"{args.score} after ({Path(args.after).name})", "change [95% interval]",
                 "median s before / after"], rows))


if __name__ == "__main__":
    main()
