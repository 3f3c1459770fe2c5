"""Before and after: two results files of ``pipeline.evaluate`` compared on the items both hold.

    python -m benchmarks.compare_results BEFORE.json AFTER.json [--method toc] [--after-method auto [--all-routes]]
    python -m benchmarks.compare_results B1.json,B2.json A1.json,A2.json --method ircot   # pooled: B1 with A1...

For each method (or the named pair), on the items both files scored: how many predictions are identical, the
mean scores (x100; counts per question as they are) before and after with the paired change (how many items
scored better and worse, and a 95% paired-bootstrap interval of the mean change: an interval that holds 0 is a
change within the items' noise),
and the cost: median and p90 seconds per question, mean LLM calls, prompt tokens, and prompt tokens served from
the prefix cache (where the file recorded them). With ``--after-method auto`` only the items Auto sent to the
method of BEFORE are compared (the same method, run by Auto), or with ``--all-routes`` all of Auto's items (Auto
end to end against that one method). With ``--rest-unchanged``, one file holds only the items a change touches
(``pipeline.evaluate --ids``): AFTER (the change re-run there), or BEFORE when it holds fewer items (the run
without the change, re-run where the full run with it shows the change acted): the scores are over all of the
fuller file's items, the others counted as unchanged; the costs stay over the re-run items. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np
from pathlib import Path

from pipeline.evaluation.harness import PER_QUESTION
from pipeline.evaluation.tables import table


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


def paired_change(before: list[float], after: list[float], resamples: int = 10_000,
                  seed: int = 0) -> tuple[float, float, float]:
    """The mean of after minus before, and the 2.5th and 97.5th percentiles of that mean over items resampled
    with replacement (a fixed seed, so a table is reproducible)."""
    change = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    draws = np.random.default_rng(seed).integers(0, len(change), size=(resamples, len(change)))
    means = change[draws].mean(axis=1)
    return float(change.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def records(paths: str, method: str) -> dict[tuple[int, str], dict]:
    """The method's items of one results file, or of several (comma-separated) pooled, keyed by the file's
    position in the list and the item's id: the n-th BEFORE file is paired with the n-th AFTER file."""
    pooled = {}
    for position, path in enumerate(paths.split(",")):
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"cannot read the results file {path}: {error}") from None
        pooled.update({(position, r["id"]): r for r in data["items"] if r["method"] == method})
    return pooled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="a results file, or several separated by commas (pooled)")
    parser.add_argument("after", help="as many files as BEFORE, in the same order")
    parser.add_argument("--method", required=True, help="the method in BEFORE")
    parser.add_argument("--after-method", default=None, help="the method in AFTER (default: the same)")
    parser.add_argument("--all-routes", action="store_true",
                        help="with --after-method auto: every Auto item, whichever method Auto sent it to")
    parser.add_argument("--rest-unchanged", action="store_true",
                        help="one file re-ran only the items a change touches (AFTER, or BEFORE when it holds "
                        "fewer items): score all of the other file's items, the others as they were")
    args = parser.parse_args()
    if len(args.before.split(",")) != len(args.after.split(",")):
        parser.error("give as many AFTER files as BEFORE files")
    before = records(args.before, args.method)
    after = records(args.after, args.after_method or args.method)
    if args.all_routes and args.after_method != "auto":
        parser.error("--all-routes needs --after-method auto")
    if args.after_method == "auto" and not args.all_routes:  # only the items Auto sent to the method of BEFORE
        after = {i: r for i, r in after.items() if r.get("routed_to") == args.method}
    shared = [i for i in before if i in after]
    if not shared:
        raise SystemExit("the files share no scored item")
    rerun = shared
    if args.rest_unchanged and len(before) < len(after):
        before = {**after, **{i: before[i] for i in shared}}
        shared = list(after)
    elif args.rest_unchanged:
        after = {**before, **{i: after[i] for i in shared}}
        shared = list(before)
    same = sum(before[i]["prediction"] == after[i]["prediction"] for i in shared)
    names = sorted({k for i in shared for k in before[i]["scores"]} & {k for i in shared for k in after[i]["scores"]})
    rows = []
    for name in names:
        scored = [i for i in shared if name in before[i]["scores"] and name in after[i]["scores"]]
        b = [before[i]["scores"][name] for i in scored]
        a = [after[i]["scores"][name] for i in scored]
        mean, low, high = paired_change(b, a)
        better = sum(y > x for x, y in zip(b, a))
        worse = sum(y < x for x, y in zip(b, a))
        scale = 1 if name.endswith(PER_QUESTION) else 100  # a count per question is shown as its mean
        rows.append([name, len(scored), f"{scale * statistics.fmean(b):.1f}", f"{scale * statistics.fmean(a):.1f}",
                     f"{scale * mean:+.1f} [{scale * low:+.1f}, {scale * high:+.1f}]", f"{better} / {worse}"])
    for label, key, summary in COSTS:
        b = [before[i]["cost"].get(key) for i in rerun]
        a = [after[i]["cost"].get(key) for i in rerun]
        rows.append([label + (" (re-run items)" if rerun is not shared else ""), len(rerun), summary(b),
                     summary(a), "", ""])
    if rerun is not shared:
        print(f"{len(rerun)} of {len(shared)} items re-run; the others count as unchanged")
    print(f"{len(shared)} items in both; identical predictions: {same} of {len(shared)}\n")
    print(table(["score", "n", f"before ({_names(args.before)})", f"after ({_names(args.after)})",
                 "change [95% interval]", "items better / worse"], rows))
    changed = [i for i in shared if before[i]["prediction"] != after[i]["prediction"]]
    for item in changed:
        print(f"\n- {before[item]['question']}\n  before: {before[item]['prediction'][:200]!r}\n"
              f"  after:  {after[item]['prediction'][:200]!r}")


def _names(paths: str) -> str:
    return ", ".join(Path(path).name for path in paths.split(","))


if __name__ == "__main__":
    main()
