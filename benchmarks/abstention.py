"""How often the answer step would say "the sources do not answer this" (``pipeline.support``), on questions whose
passages are in the corpus (each dev file's questions over its own closed corpus: abstaining there is wrong) and
on questions whose passages are absent (each file's questions over every other file's corpus).

    python -m benchmarks.abstention [--top-k 5] [--limit 100] [--data-dir storage/evaluation]

The support check costs no model call, so this measures it for every threshold at once on the passages hybrid
retrieval returns (the top ``--top-k``, as OneR gives its reader). Whether a method abstains in a full run also
depends on the passages it reads (IRCoT's reader, ToC's answer passages): the evaluation records each run's
abstentions (``abstained`` in results.json).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipeline.reporting import machine, table

FILES = ["hotpotqa", "2wikimultihopqa", "musique", "asqa"]
THRESHOLDS = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--eval-dir", type=Path, default=Path("data/eval"))
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the closed corpora are indexed (default: the evaluation's)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from pipeline.evaluation.data import file_sha256, load_items
    from pipeline.evaluation.harness import closed_corpus
    from pipeline.retrieval import HybridRetriever
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
    from pipeline.support import check_support

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir or default_data_dir() / "evaluation"))
    corpora, questions = {}, {}
    for name in FILES:
        path = args.eval_dir / f"{name}.jsonl"
        corpora[name] = HybridRetriever([closed_corpus(runtime.store, load_items(path), file_sha256(path))])
        questions[name] = [item.question for item in load_items(path, args.limit)]

    coverage: dict[tuple[str, str], list[float]] = {}
    for asked in FILES:
        for corpus in FILES:
            coverage[(asked, corpus)] = [
                check_support(q, corpora[corpus].retrieve(q, args.top_k).passages, 1.0).coverage
                for q in questions[asked]]

    rows = []
    for threshold in THRESHOLDS:
        row = [f"{threshold:.1f}"]
        for asked in FILES:
            own = coverage[(asked, asked)]
            row.append(f"{100 * sum(c < threshold for c in own) / len(own):.0f}%")
        absent = [c for (asked, corpus), values in coverage.items() if asked != corpus for c in values]
        row.append(f"{100 * sum(c < threshold for c in absent) / len(absent):.0f}%")
        rows.append(row)
    print(f"{machine()}; top {args.top_k} passages; {args.limit} questions per file\n")
    print(table(["threshold"] + [f"wrongly abstains: {f} (own corpus)" for f in FILES]
                + ["abstains: passages absent (other corpora)"], rows))


if __name__ == "__main__":
    main()
