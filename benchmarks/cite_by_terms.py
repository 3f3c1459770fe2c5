"""How well the citations the app adds to an uncited answer (``pipeline.support.cite_by_terms``) agree with the
model's own, on saved answers that the model did cite: each cited sentence loses its markers, the app cites it
again, and the two are compared.

    python -m benchmarks.cite_by_terms docs/results/.../asqa-oner.json [--method oner] [--thresholds 0.4,0.5,0.6]

No model call: each answer is compared against the passages OneR's retrieval gives its question (the top
``top_k`` of the results file's closed corpus, as the run retrieved them; re-retrieved, so the results file should
come from today's retrieval code). Per sentence with at least one citation of its own: the app cites a passage the
model cited too ("agrees"), cites only other passages ("differs"), or leaves it uncited ("uncited"). Prints
Markdown, one row per threshold.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pipeline.evaluation.tables import machine, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results files of pipeline.evaluate (closed corpus)")
    parser.add_argument("--method", default="oner")
    parser.add_argument("--thresholds", default="0.4,0.5,0.6,0.7,0.8")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the closed corpora are indexed (default: the evaluation's)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from pipeline.answering import cited_numbers
    from pipeline.evaluation.data import file_sha256, load_items
    from pipeline.evaluation.harness import closed_corpus
    from pipeline.retrieval import HybridRetriever
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
    from pipeline.support import cite_by_terms
    from pipeline.text import sentence_spans, strip_citations

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir or default_data_dir() / "evaluation"))
    sentences = []  # (the model's citations, the sentence without them, the passages)
    for path in args.results:
        results = json.loads(path.read_text())
        if results.get("setting") != "closed":
            raise SystemExit(f"{path}: only closed-corpus runs can be re-retrieved")
        data = Path(results["data"])
        retriever = HybridRetriever([closed_corpus(runtime.store, load_items(data), file_sha256(data))])
        for record in (r for r in results["items"] if r["method"] == args.method):
            passages = retriever.retrieve(record["question"], results["top_k"]).passages
            for line in record["prediction"].split("\n"):
                for start, end in sentence_spans(line):
                    own = set(cited_numbers(line[start:end], len(passages)))
                    if own:
                        sentences.append((own, strip_citations(line[start:end]), passages))
    rows = []
    for threshold in map(float, args.thresholds.split(",")):
        counts = {"agrees": 0, "differs": 0, "uncited": 0}
        for own, sentence, passages in sentences:
            app = set(cited_numbers(cite_by_terms(sentence, passages, threshold), len(passages)))
            counts["agrees" if app & own else "differs" if app else "uncited"] += 1
        n = len(sentences)
        rows.append([f"{threshold:.2f}", n, *(f"{counts[k]} ({100 * counts[k] / n:.0f}%)" if n else "0"
                                              for k in ("agrees", "differs", "uncited"))])
    print(f"{machine()}; {args.method}'s saved answers, {', '.join(map(str, args.results))}; passages: the top k of "
          "the closed corpus\n")
    print(table(["threshold", "sentences the model cited", "app cites a passage the model cited",
                 "app cites only other passages", "app leaves it uncited"], rows))


if __name__ == "__main__":
    main()
