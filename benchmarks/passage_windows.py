"""Passage windows without a model: how many words each budget leaves of a file's passages, and how often the
window still holds what the question needs. For choosing ``Settings.passage_window`` on dev files only.

    python -m benchmarks.passage_windows data/eval/hotpotqa.jsonl [--limit 50] [--budgets 30,40,50,60,80] [--lexical]

Windows are cut as the app cuts them, ranking sentences with the bundled embedder (``--lexical``: by shared key
terms, as without an embedder). Over the first ``--limit`` items: *words kept* is the share of the words of all the items' passages that their
windows keep (each passage windowed for its own item's question); *answer kept* counts the supporting passages
whose text holds a gold answer (case-insensitive) and whose window still does; *fact kept* counts the
supporting sentences (HotpotQA and 2Wiki mark them) that the window keeps whole.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from langchain_core.documents import Document

from pipeline.evaluation.data import load_items
from pipeline.evaluation.tables import table
from pipeline.windows import GAP, windows


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def measure(path: Path, limit: int, budgets: list[int], embeddings=None) -> list[list[str]]:
    """One table row per budget (see the module)."""
    items = load_items(path, limit)
    with open(path, encoding="utf-8") as handle:
        facts_of = {str(row["id"]): {(t, i) for t, i in row.get("supporting_facts") or []}
                    for row in map(json.loads, filter(str.strip, handle))}
    rows = []
    for budget in budgets:
        full = kept = answers = answers_kept = facts = facts_kept = 0
        for item in items:
            gold = [_norm(a) for a in item.answers if a.strip()]
            wanted = facts_of.get(item.id, set())
            docs = [Document(page_content=p["text"], metadata={"title": p["title"]}) for p in item.passages]
            for p, shown_doc in zip(item.passages, windows(item.question, docs, budget, embeddings)):
                cut = shown_doc.page_content
                full += len(p["text"].split())
                kept += sum(word != GAP for word in cut.split())
                if not p.get("supporting"):
                    continue
                text, shown = _norm(p["text"]), _norm(cut)
                if any(g in text for g in gold):
                    answers += 1
                    answers_kept += any(g in shown for g in gold)
                for i, sentence in enumerate(p.get("sentences") or []):
                    if (p["title"], i) in wanted and sentence.strip():
                        facts += 1
                        facts_kept += _norm(sentence) in shown
        rows.append([str(budget), f"{100 * kept / full:.0f}%", f"{answers_kept}/{answers}",
                     f"{facts_kept}/{facts}" if facts else "-"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--budgets", default="30,40,50,60,80")
    parser.add_argument("--lexical", action="store_true", help="rank sentences by shared key terms only")
    args = parser.parse_args()
    embeddings = None
    if not args.lexical:
        from models.embeddings import SentenceEmbeddings

        embeddings = SentenceEmbeddings()
    rows = measure(args.data, args.limit, [int(b) for b in args.budgets.split(",")], embeddings)
    print(table(["budget (words)", "words kept", "answer kept", "fact kept"], rows))


if __name__ == "__main__":
    main()
