"""Whether MuSiQue's hops can be answered by copying: is each hop's gold answer held by its supporting passage?

    python -m benchmarks.hop_answers data/eval/musique.jsonl [MORE.jsonl ...] [--limit 50]

IRCoT hop by hop keeps a hop's answer only when a retrieved passage holds it (``pipeline.methods.ircot.hops.holds``,
the check used here). For every item with a gold decomposition (MuSiQue's ``decomposition``: each hop's question,
answer and supporting paragraph), this counts the hops whose answer that check finds in the hop's own supporting
passage. A hop held there can be answered by a reader that copies; whether the passage *states* it as the answer
(rather than naming it in passing, as a cast list names the child actress) needs reading, and is not counted.
Nothing is run; no model is loaded.
"""

from __future__ import annotations

import argparse
import json
import sys

from langchain_core.documents import Document

from pipeline.methods.ircot.hops import holds


def held_hops(item: dict) -> list[bool]:
    """For each gold hop of ``item``, whether its supporting passage holds its answer (no passage: False)."""
    by_idx = {p.get("idx"): p for p in item.get("passages", [])}
    out = []
    for hop in item.get("decomposition") or []:
        passage = by_idx.get(hop.get("paragraph_support_idx"))
        doc = Document(page_content=passage["text"], metadata={"title": passage["title"]}) if passage else None
        out.append(doc is not None and holds(doc, str(hop.get("answer", ""))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+", help="evaluation JSONL files (items without a decomposition are skipped)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N items of each file")
    args = parser.parse_args(argv)
    print("| file | items | hops | answer held by its supporting passage | items with every hop held |")
    print("|---|---|---|---|---|")
    for path in args.data:
        with open(path, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()][: args.limit]
        items = [row for row in rows if row.get("decomposition")]
        held = [held_hops(it) for it in items]
        hops = sum(len(h) for h in held)
        if not hops:
            print(f"| {path} | {len(items)} | 0 | - | - |")
            continue
        n_held = sum(sum(h) for h in held)
        print(f"| {path} | {len(items)} | {hops} | {n_held} ({100 * n_held / hops:.1f}%) | "
              f"{sum(all(h) for h in held)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
