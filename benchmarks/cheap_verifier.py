"""Could the bundled 0.5B model verify ToC's readings in place of the default model? Replays the verifications
of a ToC results file with both models and compares their decisions and their cost (issue 33, "the 0.5B model
for cheap steps where quality holds").

    python -m benchmarks.cheap_verifier docs/results/toc/asqa-dev-first50-2026-11-27.json \\
        --data data/eval/asqa.jsonl --out docs/results/toc/cheap-verifier-asqa-dev.json

For every reading the run's verifier scored, the verification prompt is rebuilt as ``EvidenceVerifier`` builds
it: the passage is the reading's own (the title in its parentheses) when it holds the answer, else the first of
the item's passages that does. Each model reads each prompt from a cold prompt cache for its first call per item,
as in a run. The default model's replayed P(True) is compared with the one the run recorded, which says how
faithful the rebuilt prompts are. A reading is kept when the mean of P(True) and the recorded relevance reaches the
file's threshold; a reading is right when its answer's token F1 against the item's gold reaches 0.5.
Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pipeline import metrics
from pipeline.evaluation.data import load_items, passage_document
from pipeline.evaluation.tables import machine, median, table

TITLE = re.compile(r"\(([^()]*(?:\([^()]*\))?[^()]*)\)\?*\s*$")


def rebuilt(item, node: dict):
    """The passage the verifier most likely read for ``node``, or None when its answer is in none (or was cut
    short in the results file)."""
    from pipeline.support import answer_passage

    if node["answer"].endswith("..."):
        return None
    docs = [passage_document(p, item.dataset) for p in item.passages]
    match = TITLE.search(node["question"])
    source = [d for d in docs if match and d.metadata["title"] == match.group(1).strip()]
    return answer_passage(node["answer"], source[:1] + docs)


def verify(model, prompt, item, node: dict, passage) -> tuple[float, float, int]:
    """(P(True), seconds, prompt tokens read anew) of one verification by ``model``."""
    from models.llm import probability_true
    from pipeline.untrusted import format_passage

    messages = prompt.messages(ambiguous_question=item.question, passage=format_passage(passage),
                               clarified_question=node["question"], answer=node["answer"])
    result = model.chat(messages, prompt.options(0.0, top_logprobs=10))
    return probability_true(result), result.elapsed_s, result.prompt_tokens - result.cached_tokens


def _auc(rows: list[dict], score) -> float:
    """The probability that a right reading scores above a wrong one (ties count half)."""
    right = [score(r) for r in rows if r["right"]]
    wrong = [score(r) for r in rows if not r["right"]]
    if not right or not wrong:
        return float("nan")
    return sum((a > b) + 0.5 * (a == b) for a in right for b in wrong) / (len(right) * len(wrong))


def summarize(rows: list[dict], threshold: float, skipped: int) -> dict:
    """Agreement, the two models' keep decisions against right and wrong readings, their separation (AUC) and
    their cost, as a dict holding a Markdown table."""

    def line(name: str) -> list[object]:
        kept = [r for r in rows if r[name]["keep"]]
        right_kept = sum(r["right"] for r in kept)
        return [name, len(kept), f"{right_kept}/{len(kept)}", f"{right_kept}/{sum(r['right'] for r in rows)}",
                round(_auc(rows, lambda r: r[name]["p_true"]), 3),
                round(_auc(rows, lambda r: (r[name]["p_true"] + r["relevance"]) / 2), 3),
                round(median([r[name]["p_true"] for r in rows]), 3),
                round(median([r[name]["seconds"] for r in rows]), 3),
                round(median([r[name]["read_tokens"] for r in rows]), 1)]

    return {
        "verifications": len(rows), "skipped_not_rebuilt": skipped, "threshold": threshold,
        "replayed_p_true_within_0.01_of_recorded": sum(abs(r["model"]["p_true"] - r["p_true_recorded"]) < 0.01
                                                       for r in rows),
        "same_decision": sum(r["model"]["keep"] == r["cheap"]["keep"] for r in rows),
        "table": table(["verifier model", "kept", "right among kept", "right kept of all right", "AUC of P(True)",
                        "AUC of the score", "median P(True)", "median s per call", "median tokens read anew"],
                       [line("model"), line("cheap")]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cheap_verifier", description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--cheap", default="fast")
    parser.add_argument("--model", default="default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    from models.loading import load_chat_model
    from pipeline.prompting import load_prompt

    results = json.loads(args.results.read_text())
    threshold = results["method_configs"]["toc"]["settings"]["keep_threshold"]
    items = {item.id: item for item in load_items(args.data)}
    prompt = load_prompt("toc_verify")
    models = {"model": load_chat_model(args.model), "cheap": load_chat_model(args.cheap)}
    rows, skipped = [], 0
    for name, model in models.items():
        for record in results["items"]:
            item = items[record["id"]]
            model.forget_prompts()
            for index, node in enumerate(record.get("tree") or []):
                if node.get("p_true") is None:
                    continue
                passage = rebuilt(item, node)
                if passage is None:
                    skipped += name == "model"
                    continue
                p_true, seconds, read = verify(model, prompt, item, node, passage)
                if name == "model":
                    rows.append({"id": item.id, "node": index, "question": node["question"], "answer": node["answer"],
                                 "relevance": node["relevance"], "p_true_recorded": node["p_true"],
                                 "right": metrics.best_over_aliases(metrics.f1, node["answer"], record["gold"]) >= 0.5})
                row = next(r for r in rows if r["id"] == item.id and r["node"] == index)
                row[name] = {"p_true": round(p_true, 4), "seconds": round(seconds, 3), "read_tokens": read,
                             "keep": (p_true + node["relevance"]) / 2 >= threshold}
            print(f"{name}: {record['id']}", file=sys.stderr, flush=True)

    summary = summarize(rows, threshold, skipped)
    out = {"config": {"results": str(args.results), "data": str(args.data), "model": args.model, "cheap": args.cheap,
                      "backends": {k: m.backend_settings() for k, m in models.items()}},
           "machine": machine(), "summary": summary, "rows": rows}
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "table"}, indent=1))
    print(summary["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
