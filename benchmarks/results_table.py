"""Render results files of ``pipeline.evaluate`` as one Markdown table (the tables in docs/benchmarks.md).

    python -m benchmarks.results_table docs/results/*-default.json docs/results/*-fast.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pipeline.evaluation.tables import table

COLUMNS = [("em", "EM"), ("f1", "F1"), ("str_em", "STR-EM"), ("rouge_l", "ROUGE-L"),
           ("str_em_rouge_l_geomean", "geomean(STR-EM, ROUGE-L)"), ("support_recall", "support recall"),
           ("kept_dq_answer_f1", "kept DQ Answer-F1"), ("pruned_dq_answer_f1", "pruned DQ Answer-F1"),
           ("walk_recall", "walk recall"), ("visited_per_question", "visited")]


def _link(path: str) -> str:
    """The results file as linked from a page in docs/ (where the tables go), else its name."""
    resolved = Path(path).resolve()
    docs = Path("docs").resolve()
    return resolved.relative_to(docs).as_posix() if resolved.is_relative_to(docs) else resolved.name


def main(paths: list[str]) -> None:
    results = [json.loads(Path(p).read_text()) for p in paths]
    present = [(k, label) for k, label in COLUMNS
               if any(k in m["metrics"] for r in results for m in r["methods"].values())]
    rows = []
    for path, r in zip(paths, results):
        for method, summary in r["methods"].items():
            cost = summary["cost"]
            rows.append([Path(r["data"]).stem, r["model"], method, cost["n"]]
                        + [f"{summary['metrics'][k]:.1f}" if k in summary["metrics"] else "-" for k, _ in present]
                        + [f"{cost['llm_calls_mean']:.1f}", f"{cost['wall_s_median']:.1f}", f"{cost['wall_s_p90']:.1f}",
                           f"[{Path(path).name}]({_link(path)})"])
    header = ["data", "model", "method", "n"] + [label for _, label in present] + [
        "LLM calls", "median s", "p90 s", "items"]
    print(table(header, rows))


if __name__ == "__main__":
    main(sys.argv[1:])
