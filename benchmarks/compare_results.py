"""Before and after: two results files of ``pipeline.evaluate`` compared on the items both hold.

    python -m benchmarks.compare_results BEFORE.json AFTER.json [--method toc] [--after-method auto]

For each method (or the named pair), on the items both files scored: how many predictions are identical, the
mean scores (x100) before and after, and the cost: median and p90 seconds per question, mean LLM calls, prompt
tokens, and prompt tokens served from the prefix cache (where the file recorded them). Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np
from pathlib import Path

from pipeline.reporting import table


def _stat(function, digits: int = 1):
    def summary(values: list) -> str:
        known = [v for v in values if v is not None]
        return f"{function(known):.{digits}f}" if len(known) == len(values) and known else "not recorded"
    return summary


COSTS = [
    ("median s per question", "wall_s", _stat(statistics.median)),
    ("p90 s per question", "wall_s", _stat(lambda v: float(np.percentile(v, 90)))),  # as the harness reports it
    ("LLM calls (mean)", "llm_calls", _stat(statistics.fmean)),
    ("prompt tokens (mean)", "prompt_tokens", _stat(statistics.fmean, 0)),
    ("of which from the prefix cache (mean)", "cached_tokens", _stat(statistics.fmean, 0)),
]


def records(path: Path, method: str) -> dict[str, dict]:
    data = json.loads(Path(path).read_text())
    return {r["id"]: r for r in data["items"] if r["method"] == method}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--method", required=True, help="the method in BEFORE")
    parser.add_argument("--after-method", default=None, help="the method in AFTER (default: the same)")
    args = parser.parse_args()
    before = records(args.before, args.method)
    after = records(args.after, args.after_method or args.method)
    if args.after_method == "auto":  # compare only the items Auto sent to the method of BEFORE
        after = {i: r for i, r in after.items() if r.get("routed_to") == args.method}
    shared = [i for i in before if i in after]
    if not shared:
        raise SystemExit("the files share no scored item")
    same = sum(before[i]["prediction"] == after[i]["prediction"] for i in shared)
    names = sorted({k for i in shared for k in before[i]["scores"]} & {k for i in shared for k in after[i]["scores"]})
    rows = []
    for name in names:
        b = [before[i]["scores"][name] for i in shared if name in before[i]["scores"]]
        a = [after[i]["scores"][name] for i in shared if name in after[i]["scores"]]
        rows.append([name, len(b), f"{100 * statistics.fmean(b):.1f}", f"{100 * statistics.fmean(a):.1f}"])
    for label, key, summary in COSTS:
        b = [before[i]["cost"].get(key) for i in shared]
        a = [after[i]["cost"].get(key) for i in shared]
        rows.append([label, len(shared), summary(b), summary(a)])
    print(f"{len(shared)} items in both; identical predictions: {same} of {len(shared)}\n")
    print(table(["score", "n", f"before ({args.before.name})", f"after ({args.after.name})"], rows))
    changed = [i for i in shared if before[i]["prediction"] != after[i]["prediction"]]
    for item in changed:
        print(f"\n- {before[item]['question']}\n  before: {before[item]['prediction'][:200]!r}\n"
              f"  after:  {after[item]['prediction'][:200]!r}")


if __name__ == "__main__":
    main()
