"""Score methods on a QA dataset with the same method code the app runs.

    python -m pipeline.evaluate --data data/eval/hotpotqa.jsonl --methods nor,oner --limit 20 \\
        --model default --out results.json [--setting closed|per-question] [--top-k 5] [--toc-max-depth 2 ...]

``--methods`` takes any registered method and ``auto`` (answers first with OneR and goes deeper when the
evidence asks, as in the app: ``pipeline.auto``).
Resumable: items already in ``--out`` (computed with the same data, model, setting, method settings and prompt
versions) are skipped; a run with other settings is refused.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from tqdm import tqdm

from corpora.store import CollectionError
from models.errors import ModelError
from models.rerankers import RankFusionReranker
from pipeline.evaluation.data import load_items
from pipeline.evaluation.harness import (ResultsFile, closed_corpus, data_config, make_context, method_config,
                                         pool_files, run_item)
from pipeline.evaluation.tables import machine, table
from pipeline.methods import METHODS, settings_models
from pipeline.progress import ProgressBar
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir, default_model
from pipeline.service import AUTO, RunService
from pipeline.settings_cli import add_settings_arguments, settings_from_args

COLUMNS = [("em", "EM"), ("f1", "F1"), ("str_em", "STR-EM"), ("rouge_l", "ROUGE-L"),
           ("str_em_rouge_l_geomean", "geomean(STR-EM, ROUGE-L)"), ("support_recall", "support recall"),
           ("kept_dq_answer_f1", "kept DQ Answer-F1"), ("pruned_dq_answer_f1", "pruned DQ Answer-F1"),
           ("actions_per_question", "actions"), ("queries_per_question", "queries"),
           ("pages_per_question", "pages"), ("facts_per_question", "facts"), ("ended_by_finish", "Finish %"),
           ("invalid_per_question", "invalid"), ("refused_per_question", "refused"),
           ("walk_recall", "walk recall"), ("visited_per_question", "visited")]


def report(results: dict) -> str:
    """The side-by-side table of a results file."""
    present = [(k, label) for k, label in COLUMNS if any(k in m["metrics"] for m in results["methods"].values())]
    rows = []
    for method, summary in results["methods"].items():
        cost = summary["cost"]
        rows.append([method, cost["n"]] + [f"{summary['metrics'][k]:.1f}" if k in summary["metrics"] else "-"
                                           for k, _ in present]
                    + [f"{cost['llm_calls_mean']:.1f}", f"{cost['prompt_tokens_mean']:.0f}",
                       f"{100 * cost.get('cached_tokens_mean', 0) / max(cost['prompt_tokens_mean'], 1):.0f}%",
                       f"{cost['completion_tokens_mean']:.0f}", f"{cost['wall_s_median']:.1f}",
                       f"{cost['wall_s_p90']:.1f}", f"{100 * cost['llm_share_of_wall']:.0f}%", cost.get("abstained", 0), cost["errors"]])
    header = ["method", "n"] + [label for _, label in present] + [
        "LLM calls", "prompt tok", "cached", "gen tok", "median s", "p90 s", "LLM share", "abstained", "errors"]
    return table(header, rows)


def main(argv: list[str] | None = None) -> int:
    # A command's main reads top to bottom: its arguments, its set-up, its loop and its report.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="python -m pipeline.evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="JSONL in the schema of data/eval")
    parser.add_argument("--methods", default="nor,oner", help=f"comma-separated: {AUTO}, {', '.join(METHODS)}")
    parser.add_argument("--limit", type=int, default=None, help="the first N items (after --skip)")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N items (e.g. a tuning split)")
    parser.add_argument("--ids", default=None, help="comma-separated item ids: only these (after --skip and "
                        "--limit), e.g. to re-run the items a setting changes")
    parser.add_argument("--model", default=default_model(),
                        help="default | fast | PATH.gguf | openai:URL[#MODEL] | langchain:PROVIDER:MODEL[@URL] "
                        "(default: $RQA_MODEL or default)")
    parser.add_argument("--out", type=Path, default=Path("results.json"))
    parser.add_argument("--trace-dir", type=Path, default=None,
                        help="save each run's trace there as trace-METHOD-ITEMID.jsonl (and its report and picture), "
                             "for replay and for resuming with edits")
    parser.add_argument("--setting", default="closed", help="closed (all passages of the file pooled), "
                        "per-question (each item's own passages) or pooled (all passages of every file in data/eval "
                        "and data/eval-test, dev and test: a mixed library 4-10 times the size of one file's)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation",
                        help="where corpora are indexed and cached, apart from the app's collections "
                        "(default: %(default)s)")
    add_settings_arguments(parser, settings_models(), skip=frozenset({"answer_style"}))
    args = parser.parse_args(argv)

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS and m != AUTO]
    try:
        if unknown:
            raise ValueError(f"Unknown method(s) {', '.join(unknown)}; choose from {AUTO}, {', '.join(METHODS)}.")
        settings = settings_from_args(args, settings_models())
        items = load_items(args.data)[args.skip:]
        items = items[: args.limit] if args.limit is not None else items
        if args.ids is not None:
            wanted = {i.strip() for i in args.ids.split(",") if i.strip()}
            absent = wanted - {item.id for item in items}
            if absent:
                raise ValueError(f"No item with id {', '.join(sorted(absent))} in {args.data} (after --skip/--limit).")
            items = [item for item in items if item.id in wanted]
        pool = pool_files(args.data) if args.setting == "pooled" else None
        config = data_config(args.data, args.model, args.setting, settings.top_k, pool)
        results = ResultsFile(args.out, config, machine())
        for method in methods:
            results.use_method(method, method_config(method, settings))
        runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model))
        collection = None
        if args.setting == "closed":
            bar = ProgressBar("Indexing the closed corpus (cached)")
            collection = closed_corpus(runtime.store, load_items(args.data), config.data_sha256, bar)
            bar.close()
        elif pool:
            bar = ProgressBar(f"Indexing the pooled corpus of {len(pool)} files (cached)")
            collection = closed_corpus(runtime.store, [i for path in pool for i in load_items(path)],
                                       config.pool_sha256, bar)
            bar.close()
        llm = runtime.llm()
        results.use_backend(llm.backend_settings())
        reranker = RankFusionReranker(runtime.embeddings)
        service = RunService(trace_dir=args.trace_dir)
    except (ValueError, OSError, ModelError, CollectionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    todo = [(m, item) for m in methods for item in items if not results.done(item.id, m)]
    with tqdm(total=len(todo), desc=f"{args.data.name}", unit="run", file=sys.stderr) as bar:
        for method, item in todo:
            bar.set_postfix_str(method)
            ctx = make_context(llm, item, args.setting, collection, reranker, settings, runtime.llm)
            results.add(run_item(service, method, item, ctx))
            bar.update()
    results.save()
    print(f"{args.data} · {args.setting} corpus · model {args.model} · {results.data['n']} items\n")
    print(report(results.data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
