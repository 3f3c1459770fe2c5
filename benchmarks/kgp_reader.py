"""KGP's reader orders compared on the same walks (issue 32: readers that keep the hops' evidence).

    python -m benchmarks.kgp_reader --data data/eval/2wikimultihopqa.jsonl --traces DIR --order hops \\
        [--limit 50] [--model default] --out OUT.json

The walks are those of ``pipeline.evaluate --methods kgp --trace-dir DIR`` (``trace-kgp-ITEMID.jsonl``), each
recorded with the default reader order (relevance). For each one, the visits are rebuilt from its trace
(``walk.recorded_visits``: the bridges are found again from the recorded next-evidence lines) and the reader
passages are chosen again in the recorded order and in ``--order``, with the code the method runs. Where the
recorded order gives back the passages the run read (``reproduced``) and ``--order`` chooses other passages,
only the reader is asked again (one call, the default model, greedy); elsewhere the first answer stands. Prints,
and writes to ``OUT.json`` with every item: F1 and support recall before and after, with the paired change and
its 95% interval, how many readers changed, and the bridges found.

    python -m benchmarks.kgp_reader against OUT.json RESULTS.json oner

sets the readers before and after against another method's F1 on the same items (paired changes; no model).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks.compare_results import paired_change
from pipeline.context import RunContext
from pipeline.evaluation.data import load_items
from pipeline.evaluation.harness import item_settings, score
from pipeline.evaluation.tables import machine
from pipeline.events import Tracer
from pipeline.fold import RunState
from pipeline.methods.kgp.walk import KGPSettings, reader_passages, answer_from, recorded_visits
from pipeline.settings import Settings
from pipeline.trace import load_trace


def against(replay: dict, results: dict, method: str) -> dict:
    """F1 of a replay's readers before and after, each against ``method``'s F1 on the same items of a results file
    of ``pipeline.evaluate``, with the paired changes."""
    theirs = {r["id"]: r["scores"]["f1"] for r in results["items"] if r["method"] == method}
    pairs = [(theirs[r["id"]], r["before"]["f1"], r["after"]["f1"]) for r in replay["items"] if r["id"] in theirs]
    base, before, after = (list(column) for column in zip(*pairs))
    out = {"method": method, "n": len(pairs), method: round(100 * statistics.fmean(base), 1)}
    for name, values in (("before", before), ("after", after)):
        mean, low, high = paired_change(base, values)
        out[name] = [round(100 * mean, 1), round(100 * low, 1), round(100 * high, 1)]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["against"]:  # against OUT.json RESULTS.json METHOD: no model
        replay, results = (json.loads(Path(p).read_text()) for p in argv[1:3])
        print(json.dumps(against(replay, results, argv[3])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--traces", type=Path, required=True)
    parser.add_argument("--order", default="hops", choices=["hops", "paths", "fused"])
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--model", default="default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    from models.rerankers import RankFusionReranker
    from pipeline.runtime import Runtime, RuntimeConfig

    runtime = Runtime(RuntimeConfig(model=args.model))
    llm = runtime.llm()
    reranker = RankFusionReranker(runtime.embeddings)
    recorded_cfg, new_cfg = KGPSettings(), KGPSettings(reader_order=args.order)
    records = []
    for item in load_items(args.data)[: args.limit]:
        path = args.traces / f"trace-kgp-{item.id}.jsonl"
        if not path.exists():
            print(f"no trace for {item.id}: skipped", file=sys.stderr)
            continue
        state = load_trace(path)
        read = [p.id for p in state.answer.passages] if state.answer else []
        ctx = RunContext(llm=llm, settings=item_settings(item, Settings()), embeddings=reranker.embeddings,
                         reranker=reranker)
        visits = recorded_visits(state)
        again = [v.doc.id for v in reader_passages(ctx, recorded_cfg, state.question, visits)]
        chosen = reader_passages(ctx, new_cfg, state.question, visits)
        before = score(item, state.answer.answer if state.answer else "", set(read))
        record = {"id": item.id, "question": item.question, "reproduced": again == read,
                  "bridges": sorted({v.bridge for v in visits if v.bridge}), "read_before": read,
                  "read_after": [v.doc.id for v in chosen], "before": before, "after": before,
                  "prediction": state.answer.answer if state.answer else ""}
        if again == read and record["read_after"] != read:
            tracer = Tracer("kgp")
            started = time.perf_counter()
            after = RunState.of(answer_from(ctx, tracer, state.question, [v.doc for v in chosen], "w0", {}))
            record["reader_s"] = time.perf_counter() - started
            record["prediction_after"] = after.answer.answer if after.answer else ""
            record["after"] = score(item, record["prediction_after"], set(record["read_after"]))
        records.append(record)
        print(f"{item.id}: {'changed' if 'reader_s' in record else 'same'}, F1 {100 * before['f1']:.0f} -> "
              f"{100 * record['after']['f1']:.0f}, bridges {record['bridges']}", file=sys.stderr)
    summary = summarize(records)
    out = {"data": str(args.data), "order": args.order, "model": args.model, "machine": machine(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "summary": summary, "items": records}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


def summarize(records: list[dict]) -> dict:
    """F1 and support recall before and after with their paired changes, over every record."""
    out: dict = {"n": len(records), "reproduced": sum(r["reproduced"] for r in records),
                 "readers_changed": sum("reader_s" in r for r in records),
                 "with_a_bridge": sum(bool(r["bridges"]) for r in records)}
    for metric in ("f1", "support_recall"):
        pairs = [(r["before"][metric], r["after"][metric]) for r in records
                 if metric in r["before"] and metric in r["after"]]
        if not pairs:
            continue
        before, after = zip(*pairs)
        mean, low, high = paired_change(list(before), list(after))
        out[metric] = {"before": round(100 * statistics.fmean(before), 1),
                       "after": round(100 * statistics.fmean(after), 1),
                       "change": [round(100 * mean, 1), round(100 * low, 1), round(100 * high, 1)]}
    seconds = [r["reader_s"] for r in records if "reader_s" in r]
    if seconds:
        out["reader_s_median"] = round(statistics.median(seconds), 1)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
