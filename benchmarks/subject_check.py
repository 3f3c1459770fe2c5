"""Would a subject check change IRCoT's hops: does the passage a later hop took its answer from name the bridge
entity its sub-question was asked about?

    python -m benchmarks.subject_check data/eval/musique.jsonl RESULTS.json [MORE.json ...] [--k 4]

A later hop asks about an earlier hop's answer ("Who is the spouse of Steve Hillage?"); a subject check would keep
its answer only from a passage that names that entity, so that a spouse read from a passage about someone else is
refused. Before building it, this counts on saved runs what it would do: for every IRCoT hop of the results files
with an answer and an earlier answer in its question (its ``hops`` record), the sub-question is retrieved again
from the file's closed corpus (cached in ``--data-dir`` as the evaluation does; ranks k+1..2k for a hop asked
again of its next passages) and the passage it named is checked with IRCoT's own check (``hops.holds``). Each such
hop is one of: its source names the entity (the check keeps it), another of its passages holds the answer and
names the entity (the check would move the source), no passage does (the check would refuse the answer), or the
retrieval no longer gives a passage holding the answer (not comparable; counted apart). Each refusal is listed with
its item's F1, so whether the check would refuse right or wrong answers can be read. No LLM is loaded; the
embedder is.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from langchain_core.documents import Document

from pipeline.methods.ircot.hops import holds

KEPT, MOVED, REFUSED, NOT_COMPARABLE = "source names it", "another passage names it", "refused", "not comparable"


def later_hops(hops: list[dict]) -> Iterable[tuple[dict, list[str]]]:
    """Each hop with an answer whose sub-question holds earlier hops' answers, with those answers (its bridges)."""
    answers: list[str] = []
    for hop in hops:
        bridges = [a for a in answers if a.lower() in hop["question"].lower()]
        if hop.get("answer") and bridges:
            yield hop, bridges
        if hop.get("answer"):
            answers.append(hop["answer"])


def judge(hop: dict, bridges: list[str], retrieve: Callable[[str, int], list[Document]], k: int) -> str:
    """What a subject check would do with ``hop``'s answer, given the passages its sub-question retrieves."""
    ranked = retrieve(hop["question"], 2 * k)
    window = ranked[k:2 * k] if hop.get("again") else ranked[:k]
    source = hop.get("source") or 0
    named = window[source - 1] if 1 <= source <= len(window) else None
    if named is None or not holds(named, hop["answer"]):
        return NOT_COMPARABLE
    if all(holds(named, b) for b in bridges):
        return KEPT
    if any(holds(doc, hop["answer"]) and all(holds(doc, b) for b in bridges) for doc in window):
        return MOVED
    return REFUSED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the evaluation JSONL file the results were run on")
    parser.add_argument("results", nargs="+", help="results files of pipeline.evaluate with IRCoT items")
    parser.add_argument("--k", type=int, default=4, help="passages a hop reads (IRCoTSettings.k)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the closed corpus is indexed (pipeline.evaluate's default)")
    args = parser.parse_args(argv)
    unreadable = [str(p) for p in (args.data, *args.results) if not Path(p).is_file()]
    if unreadable:
        parser.error(f"no such file: {', '.join(unreadable)}")
    from pipeline.evaluation.harness import file_corpus
    from pipeline.retrieval import HybridRetriever
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir

    data_dir = args.data_dir or default_data_dir() / "evaluation"
    runtime = Runtime(RuntimeConfig(data_dir=data_dir, model="default"))
    retriever = HybridRetriever([file_corpus(runtime.store, args.data)])
    counts: Counter[str] = Counter()
    refused_f1: list[float] = []
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as handle:
                items = json.load(handle)["items"]
        except (ValueError, KeyError, TypeError) as exc:
            print(f"error: {path} is not a results file of pipeline.evaluate ({exc})", file=sys.stderr)
            return 2
        for item in items:
            if item.get("method") != "ircot":
                continue
            for hop, bridges in later_hops(item.get("hops") or []):
                outcome = judge(hop, bridges, lambda q, n: retriever.retrieve(q, n).passages, args.k)
                counts[outcome] += 1
                if outcome == REFUSED:
                    f1 = item["scores"].get("f1", 0.0)
                    refused_f1.append(f1)
                    print(f"- {item['id']}: \"{hop['question']}\" → \"{hop['answer']}\" (about {bridges}); "
                          f"item F1 {100 * f1:.0f}")
    total = sum(counts.values())
    print(f"\n{total} later hops with an answer asked about an earlier answer: "
          + "; ".join(f"{name} {counts[name]}" for name in (KEPT, MOVED, REFUSED, NOT_COMPARABLE)))
    if refused_f1:
        right = sum(f >= 0.5 for f in refused_f1)
        print(f"the refused answers' items: {right} with F1 >= 50, {len(refused_f1) - right} below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
