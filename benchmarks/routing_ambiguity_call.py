"""Can one model call tell an ambiguous question from a plain one? Asks the model, for each ASQA dev question and
each plain single-fact question of ``benchmarks/routing_accuracy.py``, whether the question is ambiguous (prompt:
``benchmarks/data/ambiguity_call.yaml``, reply True/False under a grammar) and reads P(True) from the first token's
log-probabilities. Prints the mean P(True) per set and the ROC AUC of P(True) for ASQA against plain (0.5: no
signal; 1: P(True) is higher on every ASQA question than on every plain one).

    python -m benchmarks.routing_ambiguity_call [--model default]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import yaml

from benchmarks.routing_accuracy import PLAIN_HELD_OUT, PLAIN_TUNING, ROOT, SPLIT, questions
from pipeline.evaluation.tables import machine, table

PROMPT = Path(__file__).with_name("data") / "ambiguity_call.yaml"


def auc(positives: list[float], negatives: list[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--eval-dir", type=Path, default=Path(os.environ.get("RQA_EVAL_DIR", ROOT / "data/eval")))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from models.llm import GenerationOptions
    from models.loading import load_chat_model
    from models.llm import probability_true

    spec = yaml.safe_load(PROMPT.read_text(encoding="utf-8"))
    grammar = (ROOT / "pipeline/prompts/true_false.gbnf").read_text()
    llm = load_chat_model(args.model)
    asqa = questions(args.eval_dir / "asqa.jsonl")
    sets = {"ASQA dev 0-49": asqa[:SPLIT], "ASQA dev 50-99": asqa[SPLIT:],
            "plain (plain_questions.txt)": questions(PLAIN_HELD_OUT),
            "plain (plain_questions_tuning.txt)": questions(PLAIN_TUNING)}
    started, p_true = time.perf_counter(), {}
    for name, items in sets.items():
        p_true[name] = [probability_true(llm.chat(
            [{"role": "system", "content": spec["system"].strip()},
             {"role": "user", "content": spec["user"].strip().format(question=q)}],
            GenerationOptions(max_tokens=1, grammar=grammar, top_logprobs=10))) for q in items]
    calls = sum(len(v) for v in p_true.values())
    print(f"Machine: {machine()}; model {args.model}; {calls} calls, "
          f"{(time.perf_counter() - started) / calls:.2f} s per question\n")
    print(table(["questions", "n", "mean P(True)", "min", "max"],
                [[n, len(v), f"{sum(v) / len(v):.3f}", f"{min(v):.2f}", f"{max(v):.2f}"] for n, v in p_true.items()]))
    names = list(sets)
    print("\nROC AUC of P(True), ASQA (ambiguous) against plain: "
          f"held-out {auc(p_true[names[0]], p_true[names[2]]):.2f}, tuning {auc(p_true[names[1]], p_true[names[3]]):.2f}")


if __name__ == "__main__":
    main()
