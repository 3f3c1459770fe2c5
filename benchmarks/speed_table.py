"""Issue 33's speed table: each method's seconds per question before and after, on the same items, against the
issue's targets (a median at most so many seconds, and at least so many times faster than before).

    python -m benchmarks.speed_table oner=BEFORE.json,AFTER.json toc=BEFORE.json,AFTER.json ...

Each pair is two results files of ``pipeline.evaluate`` run one after the other on one machine; only the items
both hold count. Per method: the medians and p90s of seconds per question, their ratio (before / after), the
prompt tokens read anew (prompt tokens less those served from the prefix cache) and the generated tokens per
question (means), the quality score with its paired 95% interval (F1, or STR-EM where the files hold it), and
whether each target is met. Prints Markdown.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from benchmarks.compare_results import paired_change, records
from pipeline.evaluation.tables import table

# Issue 33: median at most (seconds, on the AMD EPYC machine of docs/benchmarks.md), and before / after at least.
TARGETS = {"oner": (8, 1.2), "ircot": (12, 1.5), "toc": (15, 1.8), "kgp": (15, 1.8), "webagent": (35, 2.0)}


def _cost(items: list[dict], key: str) -> list[float]:
    values = [item["cost"].get(key) for item in items]
    if any(v is None for v in values):
        raise SystemExit(f"a results file does not record {key} for every item")
    return values


def _read_anew(items: list[dict]) -> float:
    return statistics.fmean(p - c for p, c in zip(_cost(items, "prompt_tokens"), _cost(items, "cached_tokens")))


def row(method: str, before_path: str, after_path: str) -> list[object]:
    """One method's row of the table."""
    before, after = records(before_path, method), records(after_path, method)
    shared = [i for i in before if i in after]
    if not shared:
        raise SystemExit(f"{method}: the files share no scored item")
    b, a = [before[i] for i in shared], [after[i] for i in shared]
    median_b, median_a = (statistics.median(_cost(x, "wall_s")) for x in (b, a))
    p90_b, p90_a = (float(np.percentile(_cost(x, "wall_s"), 90)) for x in (b, a))
    score = "str_em" if "str_em" in b[0]["scores"] else "f1"
    mean, low, high = paired_change([x["scores"][score] for x in b], [x["scores"][score] for x in a])
    ratio = median_b / median_a
    most, least = TARGETS.get(method, (None, None))
    met = "" if most is None else \
        f"{'yes' if median_a <= most else 'no'} / {'yes' if ratio >= least else 'no'} (≤ {most} s, ≥ {least} ×)"
    quality = (f"{100 * statistics.fmean(x['scores'][score] for x in b):.1f} → "
               f"{100 * statistics.fmean(x['scores'][score] for x in a):.1f} "
               f"({100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}])")
    return [method, len(shared), f"{median_b:.1f} → {median_a:.1f}", f"{ratio:.2f} ×", f"{p90_b:.1f} → {p90_a:.1f}",
            f"{_read_anew(b):.0f} → {_read_anew(a):.0f}",
            f"{statistics.fmean(_cost(b, 'completion_tokens')):.0f} → "
            f"{statistics.fmean(_cost(a, 'completion_tokens')):.0f}",
            f"{score} {quality}", met]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", nargs="+", metavar="METHOD=BEFORE,AFTER",
                        help="a method and its two results files, before and after")
    args = parser.parse_args()
    rows = []
    for pair in args.pairs:
        method, _, paths = pair.partition("=")
        files = paths.split(",")
        if not method or len(files) != 2:
            parser.error(f"{pair!r}: give METHOD=BEFORE.json,AFTER.json")
        rows.append(row(method, *files))
    print(table(["method", "n", "median s (before → after)", "before / after", "p90 s", "prompt tokens read anew",
                 "generated tokens", "quality (paired change [95%])", "target met: median / ratio"], rows))


if __name__ == "__main__":
    main()
