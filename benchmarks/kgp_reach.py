"""What the passage graph puts within the reader's reach, without the model: recall of the supporting passages
of each item's question on the closed corpus of an evaluation file.

    python -m benchmarks.kgp_reach --data data/eval/hotpotqa.jsonl --limit 50

Rows: OneR's top 5 (what its reader reads) and top 30; the KGP walk with its defaults but guided by the question
instead of the model (``--kgp-guide question``: the paper's KG-TF-IDF / KG-BM25 rows; no LLM is loaded): its
seeds, everything it visits (30), and the 5 its reader reads in each ``reader_order``; the seeds and all their
neighbours one edge away (what a walk of depth 1 can reach, whatever guides it); and the no-graph baseline at
the same budget: OneR's top 30 re-ranked for the question to 5 (the DESIGN's trap: a no-graph variant beat the
graph on two of the paper's datasets). Closed corpora are indexed in ``--data-dir`` as ``pipeline.evaluate``
caches them.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from corpora.graph import describe_stats
from corpora.store import CollectionStore
from models.embeddings import SentenceEmbeddings
from models.llm import ChatModel, ChatResult
from models.rerankers import RankFusionReranker
from pipeline.context import RunContext
from pipeline.evaluation.data import file_sha256, load_items
from pipeline.evaluation.harness import closed_corpus
from pipeline.evaluation.tables import machine, table
from pipeline.fold import RunState
from pipeline.methods import get_method, run_method, settings_models
from pipeline.payloads import VisitPayload
from pipeline.retrieval import HybridRetriever
from pipeline.runtime import default_data_dir
from pipeline.settings import Settings


class NoModel(ChatModel):
    """Stands in for the reader (the walk guided by the question calls no model before it)."""

    name = "none"

    def stream(self, messages, options):
        yield ChatResult(text="", prompt_tokens=0, completion_tokens=0, finish_reason="stop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation")
    args = parser.parse_args()
    embeddings = SentenceEmbeddings()
    store = CollectionStore(args.data_dir, embeddings)
    collection = closed_corpus(store, load_items(args.data), file_sha256(args.data))
    graph = collection.graph()
    reranker = RankFusionReranker(embeddings)
    retriever = HybridRetriever([collection])
    spec = get_method("kgp")
    rows: dict[str, list[float]] = {}
    reach_sizes: list[int] = []

    def add(name: str, found: set[str], gold: set[str]) -> None:
        rows.setdefault(name, []).append(len(found & gold) / len(gold))

    for item in load_items(args.data, args.limit):
        gold = item.supporting_ids()
        if not gold:
            continue
        top30 = retriever.retrieve(item.question, 30).passages  # fused from deeper lists than a top 5
        add("OneR top 5", {d.id for d in retriever.retrieve(item.question, 5).passages}, gold)
        add("OneR top 30", {d.id for d in top30}, gold)
        add("no graph: OneR top 30 re-ranked to 5", {d.id for d in reranker.rerank(item.question, top30, 5)}, gold)
        for order in ("relevance", "fused", "paths"):
            settings = Settings().changed({"answer_style": "short", "kgp.guide": "question",
                                           "kgp.reader_order": order}, settings_models())
            ctx = RunContext(llm=NoModel(), retriever=retriever, settings=settings, embeddings=embeddings,
                             reranker=reranker)
            state = RunState.of(run_method(spec, item.question, ctx))
            add(f"KGP (guided by the question), reader's 5, {order}", state.passage_ids() or set(), gold)
        seeds = {v.passage.id for v in state.payloads(VisitPayload) if v.seed}
        add("KGP seeds (10)", seeds, gold)
        add("KGP visited (30)", {v.passage.id for v in state.payloads(VisitPayload) if v.passage}, gold)
        reach = set(seeds) | {n.key for s in seeds for n in graph.neighbours(s)}
        add("seeds and their neighbours one edge away", reach, gold)
        reach_sizes.append(len(reach))
    print(f"{args.data} · first {args.limit} items · graph: {describe_stats(graph.stats())} · seeds and "
          f"neighbours: {statistics.fmean(reach_sizes):.0f} passages on average · Machine: {machine()}\n")
    print(table(["passages", "recall of supporting passages"],
                [[name, f"{100 * statistics.fmean(values):.1f}"] for name, values in rows.items()]))


if __name__ == "__main__":
    main()
