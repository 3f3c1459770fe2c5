"""How often Auto picks the method each question needs: the four dev files (multi-hop HotpotQA, 2Wiki and
MuSiQue questions should go to IRCoT, ambiguous ASQA questions to ToC) and a held-out set of plain single-fact
questions written for this benchmark (they should go to OneR).

    python -m benchmarks.routing_accuracy [--k 7]

None of these questions is in the router's labelled file (``pipeline/routing_examples.yaml``); the script
checks that. It prints a Markdown table (the one in docs/benchmarks.md) and the questions it got wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

from pipeline.reporting import machine, table
from pipeline.routing import Router, labelled_questions

ROOT = Path(__file__).resolve().parent.parent
SETS = [
    ("HotpotQA dev", ROOT / "data/eval/hotpotqa.jsonl", "ircot"),
    ("2WikiMultihopQA dev", ROOT / "data/eval/2wikimultihopqa.jsonl", "ircot"),
    ("MuSiQue dev", ROOT / "data/eval/musique.jsonl", "ircot"),
    ("ASQA dev", ROOT / "data/eval/asqa.jsonl", "toc"),
    ("plain single-fact (benchmarks/data)", ROOT / "benchmarks/data/plain_questions.txt", "oner"),
]


def questions(path: Path) -> list[str]:
    if path.suffix == ".jsonl":
        return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=7, help="nearest labelled questions that vote")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from models.embeddings import SentenceEmbeddings

    labelled = {q.strip().lower() for q, _ in labelled_questions()}
    router = Router(SentenceEmbeddings(), k=args.k)
    rows, wrong = [], []
    started = time.perf_counter()
    total = 0
    for name, path, expected in SETS:
        items = questions(path)
        overlap = [q for q in items if q.strip().lower() in labelled]
        if overlap:
            raise SystemExit(f"{name}: {len(overlap)} questions are also in the labelled file, e.g. {overlap[0]!r}")
        picked = Counter()
        for question in items:
            method = router.choose(question).method
            picked[method] += 1
            if method != expected:
                wrong.append((name, question, method))
        total += len(items)
        rows.append([name, len(items), expected, f"{100 * picked[expected] / len(items):.0f}%",
                     ", ".join(f"{m} {c}" for m, c in picked.most_common())])
    per_question_ms = 1000 * (time.perf_counter() - started) / total
    print(f"Machine: {machine()}; k = {args.k}; {len(labelled)} labelled questions; "
          f"{per_question_ms:.1f} ms per question (embedding included)\n")
    print(table(["questions", "n", "should go to", "right", "picked"], rows))
    print("\nWrong picks:")
    for name, question, method in wrong:
        print(f"- {name}: {question!r} -> {method}")


if __name__ == "__main__":
    main()
