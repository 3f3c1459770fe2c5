"""How many readings ToC's tree found per question, from a saved ToC results file: how far "the collection shows
several readings" could go as a routing signal.

    python -m benchmarks.toc_readings docs/results/toc/asqa-default.json [--first 50] [--items-of OTHER.json]

For each item it counts the readings the tree proposed (depth-1 nodes, duplicates and descriptions left out) and
those verification kept (``restored`` nodes, brought back only because too few survived, are not counted). Prints
a Markdown table of how many items have 0, 1, 2 or 3+ of each.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from pipeline.evaluation.tables import table

NOT_A_READING = ("duplicate", "no-clarification", "no-short-answer")


def readings(tree: list[dict]) -> tuple[int, int]:
    """(proposed, kept) readings of one saved tree."""
    proposed = [n for n in tree if n.get("depth") == 1 and n.get("prune_kind") not in NOT_A_READING]
    return len(proposed), sum(n["state"] == "kept" for n in proposed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--first", type=int, help="only the first N ToC items")
    parser.add_argument("--items-of", type=Path, help="only the items (by id) of this other results file")
    args = parser.parse_args()
    try:
        items = [r for r in json.loads(args.results.read_text(encoding="utf-8"))["items"] if r["method"] == "toc"]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"Cannot read ToC results from {args.results}: {exc}") from exc
    items = items[: args.first] if args.first else items
    if args.items_of:
        try:
            wanted = {r["id"] for r in json.loads(args.items_of.read_text(encoding="utf-8"))["items"]}
        except (OSError, ValueError, KeyError) as exc:
            raise SystemExit(f"Cannot read the items of {args.items_of}: {exc}") from exc
        items = [r for r in items if r["id"] in wanted]
    if not items or any("tree" not in r for r in items):
        raise SystemExit(f"{args.results} holds no ToC items with their trees.")
    counts = [readings(r["tree"]) for r in items]
    rows = []
    for label, index in [("proposed", 0), ("kept by verification", 1)]:
        spread = Counter(min(c[index], 3) for c in counts)
        two_or_more = sum(c[index] >= 2 for c in counts)
        rows.append([label, len(items), *(spread[k] for k in range(4)),
                     f"{100 * two_or_more / len(items):.0f}%"])
    print(table(["readings", "n", "0", "1", "2", "3+", "2 or more"], rows))


if __name__ == "__main__":
    main()
