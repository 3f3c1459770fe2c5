"""IRCoT against OneR in results files of ``pipeline.evaluate``, by slices of items, with what IRCoT's reader
adds: each chain's own conclusion ("So the answer is: X", the paper's chain-of-thought reader where the chain
reached one, without its extra call) scored beside the answer of the reader the run used.

    python -m benchmarks.ircot_chains docs/results/ircot/*-100.json [--slices 0-50,50-100]

Items are numbered in file order (the order of the dev file). Prints Markdown: per file and slice, EM, F1 and
support recall of OneR and IRCoT, IRCoT's median seconds, and the F1 of the chains' conclusions (a chain
without one scores 0) with how many chains concluded, and on how many items one of the two was right (token F1
at least 0.5) and the other not.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from pipeline.metrics import best_over_aliases, f1
from pipeline.evaluation.tables import table
from pipeline.methods.ircot.chain import extract_answer

RIGHT = 0.5  # an answer counts as right at token F1 0.5 or more


def conclusion(record: dict) -> str | None:
    """The answer the chain stated itself, if its last sentence gave one."""
    chain = record.get("chain") or []
    return extract_answer(chain[-1]) if chain else None


def _mean(values: list[float]) -> str:
    return f"{100 * statistics.fmean(values):.1f}" if values else "-"


def rows_for(path: Path, slices: list[tuple[int, int]]) -> list[list[object]]:
    data = json.loads(path.read_text())
    by_item: dict[str, dict[str, dict]] = {}
    for record in data["items"]:
        by_item.setdefault(record["id"], {})[record["method"]] = record
    ids = list(by_item)
    rows = []
    for start, end in slices:
        chosen = [by_item[i] for i in ids[start:end] if {"oner", "ircot"} <= set(by_item[i])]
        if not chosen:
            raise SystemExit(f"{path}: no item in {start}-{end} was scored by both oner and ircot")
        oner = [r["oner"] for r in chosen]
        ircot = [r["ircot"] for r in chosen]
        ends = [conclusion(r) for r in ircot]
        cot = [best_over_aliases(f1, e, r["gold"]) if e else 0.0 for e, r in zip(ends, ircot)]
        read = [r["scores"]["f1"] for r in ircot]
        rows.append([
            Path(data["data"]).stem, f"{start + 1}-{start + len(chosen)}", len(chosen),
            *(_mean([r["scores"][k] for r in oner if k in r["scores"]]) for k in ("em", "f1", "support_recall")),
            *(_mean([r["scores"][k] for r in ircot if k in r["scores"]]) for k in ("em", "f1", "support_recall")),
            _mean(cot), sum(e is not None for e in ends),
            sum(c >= RIGHT > r for c, r in zip(cot, read)), sum(r >= RIGHT > c for c, r in zip(cot, read)),
            f"{statistics.median(r['cost']['wall_s'] for r in ircot):.1f}",
        ])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--slices", default="0-100", help="item ranges, 0-based and end-exclusive: 0-50,50-100")
    args = parser.parse_args()
    try:
        slices = [(int(a), int(b)) for a, b in (part.split("-") for part in args.slices.split(","))]
    except ValueError:
        parser.error(f"--slices {args.slices!r}: expected ranges such as 0-50,50-100")
    for path in args.files:
        if not path.is_file():
            parser.error(f"{path}: no such results file")
    rows = [row for path in args.files for row in rows_for(path, slices)]
    print(table(["data", "items", "n", "OneR EM", "OneR F1", "OneR support recall", "IRCoT EM", "IRCoT F1",
                 "IRCoT support recall", "chain's own conclusion F1", "chains that concluded",
                 "conclusion right, reader wrong", "reader right, conclusion wrong",
                 "IRCoT median s"], rows))


if __name__ == "__main__":
    main()
