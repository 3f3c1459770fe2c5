"""Which items a hop asked again of its subject's own passages (``IRCoTSettings.focus_hop``) can act on, from saved
runs, without the LLM.

    python -m benchmarks.subject_hops data/eval/musique.jsonl RESULTS.json [MORE.json ...] [--k 4] [--ids-out F]

For every IRCoT item of the results files whose hop-by-hop chain ended at a hop with no answer (its ``hops``
record), the last hop's asked sub-question is retrieved again from the file's closed corpus (cached in
``--data-dir`` as the evaluation does) and its k passages are split by ``hops.about_subject``: those whose title
the sub-question names. An item counts when some, but not all, are (the re-ask's condition); each is printed with
those titles and the gold answers (hop answers of MuSiQue's ``decomposition`` and the item's answers) that they
hold and the sub-question does not already name. ``--ids-out`` writes the counted item ids, one line, comma
separated, for ``pipeline.evaluate --ids``. The embedder is loaded; no LLM is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from langchain_core.documents import Document

from pipeline.evaluation.harness import file_corpus
from pipeline.methods.ircot.hops import about_subject, holds
from pipeline.retrieval import HybridRetriever
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir


def subject_rows(gold: dict[str, dict], items: list[dict], retrieve: Callable[[str, int], list[Document]],
                 k: int = 4) -> tuple[int, list[dict]]:
    """How many IRCoT ``items`` ended at an unanswered hop (each item id once), and a row for each whose last
    sub-question, retrieved again (``retrieve(query, k)``), gets some but not all of its k passages titled by it:
    the item id, the sub-question, those titles, and the gold answers (``gold[id]``'s decomposition hop answers
    and answers) they hold that the sub-question does not name."""
    unanswered: set[str] = set()
    rows = []
    for item in items:
        hops = item.get("hops") or []
        if item.get("method") != "ircot" or not hops or hops[-1].get("answer") is not None \
                or item["id"] in unanswered:
            continue
        unanswered.add(item["id"])
        asked = hops[-1]["question"]
        ranked = retrieve(asked, k)
        subject = about_subject(asked, ranked)
        if not 0 < len(subject) < len(ranked):
            continue
        row = gold[item["id"]]
        answers = [h["answer"] for h in row.get("decomposition") or []] + list(row.get("answers") or [])
        held = sorted({a for a in answers if a.lower() not in asked.lower()
                       and any(holds(ranked[n - 1], a) for n in subject)})
        rows.append({"id": item["id"], "asked": asked, "titles": [ranked[n - 1].metadata.get("title") for n in subject],
                     "held": held})
    return len(unanswered), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the evaluation JSONL file the results were run on")
    parser.add_argument("results", nargs="+", help="results files of pipeline.evaluate with IRCoT items")
    parser.add_argument("--k", type=int, default=4, help="passages a hop reads (IRCoTSettings.k)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation",
                        help="where the closed corpus is indexed (pipeline.evaluate's default)")
    parser.add_argument("--ids-out", type=Path, help="write the counted item ids here, comma separated")
    args = parser.parse_args(argv)
    with open(args.data, encoding="utf-8") as handle:
        gold = {row["id"]: row for row in map(json.loads, filter(str.strip, handle))}
    items = []
    for path in args.results:
        with open(path, encoding="utf-8") as handle:
            items += json.load(handle)["items"]
    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model="default"))
    retriever = HybridRetriever([file_corpus(runtime.store, args.data)])
    unanswered, rows = subject_rows(gold, items, lambda query, k: retriever.retrieve(query, k).passages, args.k)
    for row in rows:
        print(f"- {row['id']}: \"{row['asked']}\" | its subject's passages: {row['titles']} | gold held: {row['held']}")
    print(f"\n{unanswered} chains ended at an unanswered hop; some but not all of its {args.k} passages titled "
          f"by it: {len(rows)}; a gold answer in those: {sum(bool(row['held']) for row in rows)}")
    if args.ids_out:
        args.ids_out.write_text(",".join(sorted(row["id"] for row in rows)) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
