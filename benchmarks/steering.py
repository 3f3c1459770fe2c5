"""What a person's clicks are worth (issue #35): a simulated person steers saved runs, and each steered answer is
scored against the first.

    python -m benchmarks.steering --data data/eval-test/asqa.jsonl --results RESULTS.json --traces DIR \\
        --method toc [--limit 50] [--model default] --out OUT.json

The runs are those of ``pipeline.evaluate --trace-dir DIR`` (``trace-METHOD-ITEMID.jsonl``), and ``RESULTS.json``
the results file of that evaluation (each first run's seconds). The simulated person knows the gold answers:

- on a tree of readings (ToC), it prunes every kept reading whose short answer holds none of the gold short
  answers (normalised, either way round), the rule of the issue;
- on every other method, it drops every passage of the answer that is not a supporting passage of the item
  (the files that mark them: HotpotQA, 2Wiki, MuSiQue).

An item with nothing to change costs no click and keeps its first answer. Each change is applied as the browser
and ``pipeline ask --from-trace`` apply it (``RunService.resume``: only the answer step is written again, with the
default model, greedy). Prints, and writes to ``OUT.json`` with every item: the metric before and after (paired
change, 95% bootstrap interval), clicks per question, and the re-answer's seconds against the first run's.

    python -m benchmarks.steering table OUT.json [OUT.json ...]

prints the Markdown table of docs/benchmarks.md ("Steering") from such files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks.compare_results import paired_change
from pipeline.edits import DropPassage, Prune
from pipeline.evaluation.data import load_items
from pipeline.evaluation.harness import file_corpus, make_context, score
from pipeline.evaluation.tables import machine
from pipeline.fold import RunState
from pipeline.payloads import NodePayload
from pipeline.service import RunService
from pipeline.text import normalize_unaccented
from pipeline.trace import load_trace


def gold_short_answers(item) -> list[str]:
    """Every gold short answer of an item: ASQA's disambiguated answers, else the item's answers."""
    shorts = [a for pair in item.qa_pairs for a in pair.get("short_answers", [])]
    return [normalize_unaccented(a) for a in (shorts or item.answers) if normalize_unaccented(a)]


def simulated_edits(state: RunState, item) -> list:
    """The simulated person's edits of a finished run (see the module's docstring)."""
    answer = state.final_answer
    if answer is None:
        return []
    if answer.method == "toc":
        golds = gold_short_answers(item)
        edits = []
        for step_id, node in state.steps_of(NodePayload):
            if node.state not in ("kept", "restored"):
                continue
            said = normalize_unaccented(node.answer or "")
            if not said or not any(g in said or said in g for g in golds):
                edits.append(Prune(node=step_id))
        return edits
    supporting = item.supporting_ids()
    if not supporting:
        return []
    unsupported = dict.fromkeys(p.id for p in answer.payload.passages if p.id and p.id not in supporting)
    return [DropPassage(passage=p) for p in unsupported]  # a passage read twice (two hops) is one click


def table(paths: list[Path]) -> str:
    """The Markdown table of steering results files (``main``'s ``OUT.json``), one row each."""
    rows = ["| file, method | n | clicks per question | questions changed | before | after | change [95%] | "
            "re-answer median s | first run median s (same items) | ratio | results |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = {"asqa": "ASQA", "hotpotqa": "HotpotQA", "2wikimultihopqa": "2Wiki", "musique": "MuSiQue"}
    labels = {"toc": "ToC (prune)", "oner": "OneR (drop)", "ircot": "IRCoT (drop)", "kgp": "KGP (drop)"}
    for path in paths:
        run = json.loads(Path(path).read_text())
        s = run["summary"]
        data = Path(run["data"])
        split = "test" if "test" in data.parent.name else "dev"
        change = "{:+.1f} [{:+.1f}, {:+.1f}]".format(*s["change"])
        rows.append(f"| {names.get(data.stem, data.stem)} {split}, {labels.get(run['method'], run['method'])} | "
                    f"{s['n']} | {s['clicks_per_question']:.2f} | {s['questions_changed']} | "
                    f"{'STR-EM' if s['metric'] == 'str_em' else 'F1'} {s['before']} | {s['after']} | {change} | "
                    f"{s['reanswer_s_median']} | {s['first_run_s_median_of_changed']} | "
                    f"{s['reanswer_over_first_median']} | [{Path(path).name}](results/steering/{Path(path).name}) |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["table"]:
        print(table([Path(p) for p in argv[1:]]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--traces", type=Path, required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--model", default="default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    from models.rerankers import RankFusionReranker
    from pipeline.runtime import Runtime, RuntimeConfig
    from pipeline.settings import Settings

    items = load_items(args.data)[: args.limit]
    first_s = {(r["id"], r["method"]): r["cost"]["wall_s"]
               for r in json.loads(args.results.read_text())["items"]}
    runtime = Runtime(RuntimeConfig(model=args.model))
    collection = file_corpus(runtime.store, args.data)
    llm = runtime.llm()
    reranker = RankFusionReranker(runtime.embeddings)
    service = RunService()
    metric = "str_em" if items and items[0].is_long_form else "f1"
    records = []
    for item in items:
        path = args.traces / f"trace-{args.method}-{item.id}.jsonl"
        if not path.exists():
            print(f"no trace for {item.id}: skipped", file=sys.stderr)
            continue
        state = load_trace(path)
        before = score(item, state.answer.answer if state.answer else "", state.passage_ids())
        edits = simulated_edits(state, item)
        record = {"id": item.id, "question": item.question, "clicks": len(edits),
                  "edits": [e.model_dump(exclude_none=True) for e in edits], "before": before,
                  "first_run_s": first_s.get((item.id, args.method))}
        if edits:
            ctx = make_context(llm, item, "closed", collection, reranker, Settings())
            started = time.perf_counter()
            run = service.resume(state, edits, settings=ctx.settings, context=ctx)
            for _ in run:
                pass
            record["reanswer_s"] = time.perf_counter() - started
            record["reanswer_calls"] = sum(e.llm_calls for e in run.state.events[len(state.events):])
            after_text = run.state.answer.answer if run.state.answer else ""
            record["after"] = score(item, after_text, state.passage_ids())
            record["prediction_after"] = after_text
        else:
            record["after"] = before
        records.append(record)
        print(f"{item.id}: {len(edits)} clicks, {metric} {100 * before[metric]:.0f} -> "
              f"{100 * record['after'][metric]:.0f}", file=sys.stderr)

    summary = summarize(records, metric)
    out = {"data": str(args.data), "method": args.method, "model": args.model, "metric": metric,
           "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary, "items": records}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


def summarize(records: list[dict], metric: str) -> dict:
    """The figures of a steering run: the metric before and after with its paired change, clicks, and the
    re-answer's seconds against the first run's (medians over the items that were changed)."""
    before = [r["before"][metric] for r in records]
    after = [r["after"][metric] for r in records]
    mean, low, high = paired_change(before, after) if records else (0.0, 0.0, 0.0)
    changed = [r for r in records if r["clicks"]]
    ratios = [r["reanswer_s"] / r["first_run_s"] for r in changed if r.get("first_run_s")]
    return {
        "n": len(records), "metric": metric,
        "before": round(100 * statistics.fmean(before), 1) if before else None,
        "after": round(100 * statistics.fmean(after), 1) if after else None,
        "change": [round(100 * mean, 1), round(100 * low, 1), round(100 * high, 1)],
        "clicks_per_question": round(statistics.fmean(r["clicks"] for r in records), 2) if records else None,
        "questions_changed": len(changed),
        "reanswer_s_median": round(statistics.median(r["reanswer_s"] for r in changed), 1) if changed else None,
        "first_run_s_median_of_changed": round(statistics.median(r["first_run_s"] for r in changed
                                                                 if r.get("first_run_s")), 1) if ratios else None,
        "reanswer_over_first_median": round(statistics.median(ratios), 2) if ratios else None,
    }


if __name__ == "__main__":
    raise SystemExit(main())
