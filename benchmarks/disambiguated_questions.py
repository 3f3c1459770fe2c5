"""A control for any "the collection shows several readings" signal: ASQA's ambiguous questions replaced by one of
their own disambiguated questions, asked against the same collection.

    python -m benchmarks.disambiguated_questions data/eval/asqa.jsonl /tmp/asqa-disambiguated.jsonl [--first 50]

Of each of the first N items, the first ``qa_pairs`` entry whose evidence passage is in the item's passages (it
has a context and a Wikipedia page) becomes the question, scored against that reading's short answers only; items
without one are left out of the questions. The output holds those items first, then every other item unchanged,
so that ``pipeline.evaluate --limit`` (the count is printed) asks only the disambiguated questions while the
closed corpus (all items' passages) stays the one the ambiguous questions were asked against.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def disambiguated(record: dict) -> dict | None:
    """``record`` asking one of its readings (with evidence in the collection), or None when none has any."""
    pair = next((p for p in record.get("qa_pairs") or []
                 if p.get("wikipage") and p.get("context") and p["context"] != "No context provided"), None)
    if pair is None:
        return None
    return {**record, "question": pair["question"], "answers": pair["short_answers"], "qa_pairs": [pair],
            "type": "disambiguated"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("asqa", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--first", type=int, default=50, help="take readings from the first N items")
    args = parser.parse_args()
    try:
        records = [json.loads(line) for line in args.asqa.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, ValueError) as exc:
        raise SystemExit(f"Cannot read {args.asqa}: {exc}") from exc
    asked, rest = [], []
    for i, record in enumerate(records):
        changed = disambiguated(record) if i < args.first else None
        (asked if changed else rest).append(changed or record)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in asked + rest), encoding="utf-8")
    print(f"{len(asked)} disambiguated questions first (use --limit {len(asked)}), then {len(rest)} items as they "
          f"were, in {args.out}")


if __name__ == "__main__":
    main()
