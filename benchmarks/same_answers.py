"""Same behaviour before and after a change that should not alter it: two folders of ``pipeline.evaluate``
results files (the same file names, run on two commits) compared item by item.

    python -m benchmarks.same_answers BEFORE_DIR AFTER_DIR

For each file both folders hold, on the items both scored: how many answers are identical, how many made the
same number of model calls with the same number of generated tokens, and how many kept the same record of
their run (ToC's tree, IRCoT's chain, KGP's walk; a record only one side has is not compared). Every
difference is listed. Prints Markdown; exits 1 when an answer differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.evaluation.tables import table

RECORDS = ("tree", "chain", "walk")


def _items(path: Path) -> dict[tuple[str, str], dict]:
    return {(r["id"], r["method"]): r for r in json.loads(path.read_text(encoding="utf-8"))["items"]}


def _same_cost(a: dict, b: dict) -> bool:
    return all(a["cost"].get(k) == b["cost"].get(k) for k in ("llm_calls", "completion_tokens"))


def _same_record(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in RECORDS if k in a and k in b)


def compare(before: Path, after: Path) -> tuple[list[list], list[str]]:
    """One row per results file (file, n, identical answers, same calls and tokens, same records) and one line
    per difference."""
    rows, differences = [], []
    for path in sorted(before.glob("*.json")):
        if not (after / path.name).exists():
            differences.append(f"{path.name}: no after run")
            continue
        b, a = _items(path), _items(after / path.name)
        keys = [k for k in b if k in a]
        answers = [k for k in keys if b[k]["prediction"] == a[k]["prediction"]]
        costs = [k for k in keys if _same_cost(b[k], a[k])]
        records = [k for k in keys if _same_record(b[k], a[k])]
        rows.append([path.stem, len(keys), len(answers), len(costs), len(records)])
        for key in keys:
            what = [name for name, same in (("answer", key in answers), ("calls/tokens", key in costs),
                                            ("record", key in records)) if not same]
            if what:
                differences.append(f"{path.stem} {key[0]}: not the same {' or '.join(what)}")
    return rows, differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    rows, differences = compare(args.before, args.after)
    print(table(["results file", "n", "same answer", "same calls and tokens", "same record"], rows))
    for line in differences:
        print(f"- {line}")
    return 1 if any(r[2] != r[1] for r in rows) or any("no after run" in d for d in differences) else 0


if __name__ == "__main__":
    sys.exit(main())
