"""Whether evidence from the collection tells an ambiguous question from a plain one asked of the same collection:
ASQA's ambiguous questions against their own disambiguated forms (``benchmarks/disambiguated_questions.py``).

    python -m benchmarks.ambiguity_evidence docs/results/auto/checks/signals/asqa-first50.json \
        docs/results/auto/checks/signals/asqa-disambiguated-first39.json \
        --data data/eval/asqa.jsonl /tmp/asqa-disambiguated.jsonl --limit 50 39

Two kinds of evidence, each as the ROC AUC of ambiguous against disambiguated (0.5: no signal):

- the model's probability that the passages give different answers for different readings, asked in the quick
  answer's own conversation (the Auto runs given first; recorded by the check of commit de9c7ac);
- how the top-5 passages fit the question (no model): how many distinct titles fit it within 0.1 of the best
  passage's share of the question's key terms, how many fit it at all (share 0.7 or more), the best share, and
  the gap between the best and the second best. An ambiguous question should fit passages of several readings
  equally well; its disambiguated form, one better than the others.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from pipeline.evaluation.tables import table

PROBE = "P(the passages give different answers for different readings)"


def auc(positive: list[float], negative: list[float]) -> float:
    """The probability that a random positive scores above a random negative (ties count half)."""
    pairs = [(p > n) + 0.5 * (p == n) for p in positive for n in negative]
    return sum(pairs) / len(pairs)


def probe_values(path: Path) -> list[float]:
    items = json.loads(path.read_text())["items"]
    return [i["check"]["signals"][PROBE] for i in items
            if i.get("check") and i["check"]["signals"].get(PROBE) is not None]


def fit(coverages: list[float], titles: list[str]) -> dict[str, float]:
    """The passage-fit features of one question's top passages."""
    best = max(coverages, default=0.0)
    ranked = sorted(coverages)
    return {
        "titles fitting within 0.1 of the best": len({t for c, t in zip(coverages, titles) if c >= best - 0.1}),
        "titles fitting (share >= 0.7)": len({t for c, t in zip(coverages, titles) if c >= 0.7}),
        "best share": best,
        "gap between the two best": best - ranked[-2] if len(ranked) > 1 else 1.0,
    }


def passage_fit(data: Path, limit: int, data_dir: Path) -> list[dict[str, float]]:
    """The features of the first ``limit`` questions of ``data`` over its closed corpus (as the evaluation
    retrieves: hybrid, top 5)."""
    from pipeline.evaluation.data import file_sha256, load_items
    from pipeline.evaluation.harness import closed_corpus
    from pipeline.retrieval import HybridRetriever
    from pipeline.runtime import Runtime, RuntimeConfig
    from pipeline.support import coverage

    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model="default"))
    items = load_items(data)
    retriever = HybridRetriever([closed_corpus(runtime.store, items, file_sha256(data))])
    out = []
    for item in items[:limit]:
        passages = retriever.retrieve(item.question, 5).passages
        out.append(fit([coverage(item.question, p) for p in passages],
                       [str(p.metadata.get("title", "")) for p in passages]))
    return out


def main() -> None:
    from pipeline.runtime import default_data_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ambiguous_run", type=Path)
    parser.add_argument("disambiguated_run", type=Path)
    parser.add_argument("--data", type=Path, nargs=2, required=True, help="the two data files, in the same order")
    parser.add_argument("--limit", type=int, nargs=2, required=True)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation")
    args = parser.parse_args()
    rows = []
    ambiguous, plain = probe_values(args.ambiguous_run), probe_values(args.disambiguated_run)
    rows.append([PROBE, f"{len(ambiguous)} / {len(plain)}", f"{statistics.median(ambiguous):.3f} (median)",
                 f"{statistics.median(plain):.3f} (median)", f"{auc(ambiguous, plain):.2f}"])
    fits = [passage_fit(data, limit, args.data_dir) for data, limit in zip(args.data, args.limit)]
    for name in fits[0][0]:
        a, b = [f[name] for f in fits[0]], [f[name] for f in fits[1]]
        rows.append([name, f"{len(a)} / {len(b)}", f"{statistics.mean(a):.2f} (mean)", f"{statistics.mean(b):.2f} (mean)",
                     f"{auc(a, b):.2f}"])
    print(table(["evidence", "n ambiguous / disambiguated", "ambiguous", "disambiguated", "ROC AUC"], rows))


if __name__ == "__main__":
    main()
