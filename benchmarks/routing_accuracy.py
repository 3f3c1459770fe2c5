"""How often Auto picks the method each question needs: multi-hop HotpotQA, 2Wiki and MuSiQue dev questions should
go to IRCoT, ambiguous ASQA dev questions to ToC, plain single-fact questions written for this benchmark to OneR.

    python -m benchmarks.routing_accuracy [--k 7] [--toc-share 0.4] [--eval-dir data/eval] [--show-held-out-errors]

Protocol (no tuning on the test questions):

- tuning: items 50-99 of each dev file and ``benchmarks/data/plain_questions_tuning.txt`` (75 plain questions
  written for tuning). The cues in ``pipeline/routing.py``, ``k`` and ``toc_share`` were chosen on these, and
  only their wrong picks are printed.
- held out: items 0-49 of each dev file and ``benchmarks/data/plain_questions.txt`` (60 plain questions). Their
  numbers are reported, never used to choose anything; their wrong picks are printed only with
  ``--show-held-out-errors``.
- all 100 items of each dev file (with the held-out plain set), for continuity with the earlier table.

The labelled questions (``pipeline/routing_examples.yaml``) are written by hand: the script stops if any evaluated
question is also in that file, or a near-duplicate of one (embedding cosine >= 0.9), or if a tuning plain
question is a near-duplicate of a held-out one. It prints Markdown tables (the ones in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from pipeline.evaluation.tables import machine, table
from pipeline.routing import Router, ambiguity_cue, labelled_questions, multi_hop_cue

ROOT = Path(__file__).resolve().parent.parent
DEV = [  # (name, file in the eval folder, method the questions should go to)
    ("HotpotQA dev", "hotpotqa.jsonl", "ircot"),
    ("2WikiMultihopQA dev", "2wikimultihopqa.jsonl", "ircot"),
    ("MuSiQue dev", "musique.jsonl", "ircot"),
    ("ASQA dev", "asqa.jsonl", "toc"),
]
PLAIN_HELD_OUT = ROOT / "benchmarks/data/plain_questions.txt"
PLAIN_TUNING = ROOT / "benchmarks/data/plain_questions_tuning.txt"
SPLIT = 50  # dev items [0, 50) are held out, [50, 100) tune
NEAR_DUPLICATE = 0.9


def questions(path: Path) -> list[str]:
    if path.suffix == ".jsonl":
        return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def splits(eval_dir: Path) -> dict[str, list[tuple[str, list[str], str]]]:
    """``{split: [(set name, questions, expected method)]}`` for the held-out, tuning and all-100 splits."""
    missing = [file for _, file, _ in DEV if not (eval_dir / file).exists()]
    if missing:
        raise SystemExit(f"No {', '.join(missing)} in {eval_dir}. Fix: give their folder with --eval-dir or "
                         "$RQA_EVAL_DIR.")
    dev = [(name, questions(eval_dir / file), expected) for name, file, expected in DEV]
    held = [(f"{name} 0-{SPLIT - 1}", items[:SPLIT], expected) for name, items, expected in dev]
    tune = [(f"{name} {SPLIT}-{len(items) - 1}", items[SPLIT:], expected) for name, items, expected in dev]
    plain_held = ("plain single-fact (plain_questions.txt)", questions(PLAIN_HELD_OUT), "oner")
    plain_tune = ("plain single-fact (plain_questions_tuning.txt)", questions(PLAIN_TUNING), "oner")
    return {"held out": held + [plain_held], "tuning": tune + [plain_tune],
            "all 100 (plain: held-out set)": [(f"{n} (all)", q, e) for n, q, e in dev] + [plain_held]}


def check_no_overlap(router: Router, sets: dict[str, list[tuple[str, list[str], str]]]) -> None:
    """Stop if an evaluated question is (nearly) a labelled one, or a tuning plain question a held-out one."""
    labelled = [q for q, _ in labelled_questions()]
    evaluated = sorted({q for rows in sets.values() for _, items, _ in rows for q in items})
    exact = {q.strip().lower() for q in labelled} & {q.strip().lower() for q in evaluated}
    if exact:
        raise SystemExit(f"{len(exact)} evaluated questions are also in the labelled file, e.g. {sorted(exact)[0]!r}")
    embedder = router._embedder()

    def unit(texts: list[str]) -> np.ndarray:
        vectors = np.asarray(embedder.embed_documents(texts))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    for left, right, what in [(evaluated, labelled, "a labelled question"),
                              (questions(PLAIN_TUNING), questions(PLAIN_HELD_OUT), "a held-out plain question")]:
        similarity = unit(left) @ unit(right).T
        i, j = np.unravel_index(np.argmax(similarity), similarity.shape)
        if similarity[i, j] >= NEAR_DUPLICATE:
            raise SystemExit(f"{left[i]!r} is a near-duplicate of {what}, {right[j]!r} "
                             f"(cosine {similarity[i, j]:.2f} >= {NEAR_DUPLICATE})")


def stage(question: str) -> str:
    """Which stage decides ``question`` when every method is available."""
    if multi_hop_cue(question):
        return "multi-hop cue"
    if ambiguity_cue(question):
        return "ambiguity cue"
    return "vote"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=7, help="nearest labelled questions that vote")
    parser.add_argument("--toc-share", type=float, default=0.4,
                        help="share of the ToC+OneR vote with which ToC wins over OneR")
    parser.add_argument("--eval-dir", type=Path, default=Path(os.environ.get("RQA_EVAL_DIR", ROOT / "data/eval")),
                        help="folder of the dev JSONL files (default: data/eval, or $RQA_EVAL_DIR)")
    parser.add_argument("--show-held-out-errors", action="store_true",
                        help="also list the held-out questions Auto got wrong (do not tune on them)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from models.embeddings import SentenceEmbeddings

    router = Router(SentenceEmbeddings(), k=args.k, toc_share=args.toc_share)
    sets = splits(args.eval_dir)
    check_no_overlap(router, sets)

    started = time.perf_counter()
    picks = {q: router.choose(q).method for rows in sets.values() for _, items, _ in rows for q in items}
    per_question_ms = 1000 * (time.perf_counter() - started) / len(picks)
    print(f"Machine: {machine()}; k = {args.k}; ToC wins over OneR from {args.toc_share:.0%} of their vote; "
          f"{len(router.examples)} labelled questions, {len(router.voters)} of them vote (no cue); "
          f"{per_question_ms:.1f} ms per question (embedding included)")
    wrong: dict[str, list[tuple[str, str, str]]] = {}
    for split, rows in sets.items():
        body = []
        for name, items, expected in rows:
            picked = Counter(picks[q] for q in items)
            stages = Counter(stage(q) for q in items)
            wrong.setdefault(split, []).extend((name, q, picks[q]) for q in items if picks[q] != expected)
            body.append([name, len(items), expected, f"{100 * picked[expected] / len(items):.0f}%",
                         ", ".join(f"{m} {c}" for m, c in picked.most_common()),
                         ", ".join(f"{s} {c}" for s, c in stages.most_common())])
        print(f"\n{split.capitalize()}:\n")
        print(table(["questions", "n", "should go to", "right", "picked", "decided by"], body))
    for split in ["tuning"] + (["held out"] if args.show_held_out_errors else []):
        print(f"\nWrong picks ({split}):")
        for name, question, method in wrong[split]:
            print(f"- {name}: {question!r} -> {method}")


if __name__ == "__main__":
    main()
