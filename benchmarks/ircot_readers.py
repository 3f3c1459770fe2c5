"""IRCoT's readers compared on the same chains: each item's chain runs once (IRCoT as the app runs it, with its
``direct`` reader), then every other reader answers from the very passages and reasoning that chain collected,
so the readers differ in nothing else. OneR runs on the same items for reference.

    python -m benchmarks.ircot_readers --data data/eval/2wikimultihopqa.jsonl --limit 30 --out FILE.json

Readers: ``direct`` (the collected passages re-ranked for the question and the reasoning, best 5), ``notes``
(the same passages plus the reasoning sentences as notes), ``direct-8`` and ``notes-8`` (the best 8). Closed
corpus, short answers, greedy decoding, as ``pipeline.evaluate``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from langchain_core.documents import Document
from tqdm import tqdm

from pipeline.answering import stream_answer
from pipeline.evaluation.data import file_sha256, load_items
from pipeline.evaluation.harness import closed_corpus, make_context, run_item, score
from pipeline.evaluation.tables import machine, table
from pipeline.events import Tracer
from pipeline.payloads import HopPayload
from pipeline.prompting import answer_prompt, format_passages
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
from pipeline.service import RunRequest, RunService
from pipeline.settings import Settings
from pipeline.text import strip_citations

READERS = {"direct": ("oner_answer", 5), "notes": ("ircot_read", 5), "direct-8": ("oner_answer", 8),
           "notes-8": ("ircot_read", 8)}


def read(ctx, question: str, pool, sentences: list[str], prompt_name: str, k: int):
    """One reader's answer over a chain's collected passages, and its passage ids."""
    query = " ".join([question, *map(strip_citations, sentences)])
    passages = ctx.reranker.rerank(query, pool, k) if len(pool) > k else pool
    values = {"question": question, "passages": format_passages(passages) or "(no passages found)",
              "reasoning": " ".join(map(strip_citations, sentences)) or "(none)"}
    events = list(stream_answer(ctx, Tracer("ircot"), answer_prompt(prompt_name, "short"), values, passages))
    return events[-1].payload.answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--model", default="default")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model))
    items = load_items(args.data)
    collection = closed_corpus(runtime.store, items, file_sha256(args.data))
    llm, reranker = runtime.llm(), runtime.reranker
    settings = Settings(min_support=0)
    service = RunService()
    done = json.loads(args.out.read_text()) if args.out.exists() else {"items": []}
    seen = {r["id"] for r in done["items"]}
    for item in tqdm(items[args.offset: args.offset + args.limit], desc=args.data.name):
        if item.id in seen:
            continue
        ctx = make_context(llm, item, "closed", collection, reranker, settings)
        started = time.perf_counter()
        run = service.start(RunRequest(question=item.question, method="ircot", settings=ctx.settings), context=ctx)
        for _event in run:
            pass
        answer = run.state.answer
        record = {"id": item.id, "question": item.question, "gold": item.answers,
                  "chain": [hop.sentence for hop in run.state.payloads(HopPayload)], "wall_s": time.perf_counter() - started,
                  "support_recall": score(item, "", run.state.passage_ids()).get("support_recall"), "readers": {}}
        # The chain's collected passages and reasoning, as its answer step recorded them.
        pool = [Document(page_content=p.text, metadata={"title": p.title}, id=p.id) for p in answer.collected]
        sentences = answer.reasoning
        for name, (prompt_name, k) in READERS.items():
            prediction = (answer.answer if name == "direct"
                          else read(ctx, item.question, pool, sentences, prompt_name, k))
            record["readers"][name] = {"prediction": prediction, **score(item, prediction, None)}
        oner = run_item(service, "oner", item, make_context(llm, item, "closed", collection, reranker, settings))
        record["readers"]["oner"] = {"prediction": oner["prediction"], **oner["scores"]}
        done["items"].append(record)
        args.out.write_text(json.dumps(done, indent=1, ensure_ascii=False))

    rows = []
    for name in [*READERS, "oner"]:
        rows.append([name, len(done["items"]),
                     f"{100 * statistics.fmean(r['readers'][name]['em'] for r in done['items']):.1f}",
                     f"{100 * statistics.fmean(r['readers'][name]['f1'] for r in done['items']):.1f}"])
    print(f"{args.data.name}, items {args.offset}-{args.offset + args.limit - 1}; {machine()}\n")
    print(table(["reader", "n", "EM", "F1"], rows))


if __name__ == "__main__":
    main()
