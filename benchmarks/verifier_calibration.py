"""How well ToC's verifier separates right from wrong interpretations: precision and recall of keeping a node
whose answer is right, at each threshold of the verification score (and of its two parts), from a results file
run with ``--toc-keep-threshold 0`` (every verified node kept, its scores recorded in the item's tree).

    python -m benchmarks.verifier_calibration docs/results/toc/asqa-calibration.json [--right 0.5]

A node's answer is right when its token F1 against the item's gold short answers reaches ``--right``. Prints
Markdown.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline import metrics
from pipeline.evaluation.tables import table

THRESHOLDS = [0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
PARTS = [("score (mean of both)", "score"), ("P(True)", "p_true"), ("relevance", "relevance")]


def verified_nodes(path: Path) -> list[dict]:
    """Every node of every ToC item that the verifier scored, with ``f1``: its answer against the gold."""
    data = json.loads(path.read_text())
    nodes = []
    for item in data["items"]:
        for node in item.get("tree") or []:
            if node.get("p_true") is None:
                continue
            f1 = metrics.best_over_aliases(metrics.f1, node["answer"], item["gold"])
            nodes.append({**node, "f1": f1})
    return nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--right", type=float, default=0.5)
    args = parser.parse_args()
    nodes = verified_nodes(args.results)
    right = sum(n["f1"] >= args.right for n in nodes)
    print(f"{len(nodes)} verified nodes, {right} with a right answer (F1 >= {args.right})\n")
    rows = []
    for label, key in PARTS:
        for threshold in THRESHOLDS:
            kept = [n for n in nodes if n[key] >= threshold]
            good = sum(n["f1"] >= args.right for n in kept)
            rows.append([label, f"{threshold:.1f}", len(kept), f"{good / max(1, len(kept)):.2f}",
                         f"{good / max(1, right):.2f}"])
    print(table(["kept when", "at least", "nodes kept", "precision", "recall"], rows))


if __name__ == "__main__":
    main()
