"""How often the answer step would say "the sources do not answer this" (``pipeline.support``), on questions whose
passages are in the corpus (each dev file's questions over its own closed corpus: abstaining there is wrong) and
on questions whose passages are absent (each file's questions over every other file's corpus: abstaining is right).

    python -m benchmarks.abstention [--top-k 5] [--data-dir storage/evaluation]

The support check costs no model call, so this measures every pair of thresholds at once on the passages hybrid
retrieval returns (the top ``--top-k``, as OneR gives its reader): the lexical one (``min_support``: the weighted
share of the question's key terms that one passage mentions) and the similarity one (``support_similarity``: one
passage's embedding cosine to the question). Protocol: the pair is chosen on dev items 50-99 of each file (the
pair that abstains most often when the passages are absent, without more wrong abstentions than the earlier
check, lexical over all passages at 0.5); items 0-49 are reported, not used to choose. Whether a method abstains in
a full run also depends on the passages it reads (IRCoT's, ToC's pool): the evaluation records each run's
abstentions (``abstained`` in results.json).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.evaluation.tables import machine, table

FILES = ["hotpotqa", "2wikimultihopqa", "musique", "asqa"]
LEXICAL = [0.5, 0.6, 0.7, 0.8, 0.9]
SIMILARITY = [0.35, 0.4, 0.45, 0.5, 0.55, 1.0]
SPLIT = 50  # items [0, 50) are held out, [50, 100) choose
EARLIER = 0.5  # the check before this one: lexical only, terms counted over all passages together


@dataclass(frozen=True)
class Case:
    asked: str  # the file the question comes from
    corpus: str  # the file whose corpus answered it
    item: int
    union: float  # key-term coverage over all passages together (the earlier check)
    coverage: float  # the best single passage's coverage
    similarity: float  # the best passage's cosine similarity to the question

    @property
    def own(self) -> bool:
        return self.asked == self.corpus


def abstains(case: Case, lexical: float, similarity: float) -> bool:
    return case.coverage < lexical and case.similarity < similarity


def earlier_abstains(case: Case) -> bool:
    return case.union < EARLIER


def row(label: str, cases: list[Case], rule) -> list:
    """``label``, then the wrong abstentions per file (own corpus) and the share of right ones (absent)."""
    wrong = [sum(rule(c) for c in cases if c.own and c.asked == name) for name in FILES]
    own = {name: sum(1 for c in cases if c.own and c.asked == name) for name in FILES}
    absent = [c for c in cases if not c.own]
    right = 100 * sum(map(rule, absent)) / len(absent)
    return [label, *(f"{w} of {own[n]}" for w, n in zip(wrong, FILES)), f"{sum(wrong)}", f"{right:.1f}%"]


def choose(cases: list[Case]) -> tuple[float, float]:
    """The pair that abstains most when the passages are absent, with no more wrong abstentions than the
    earlier check (ties: the lower thresholds)."""
    allowed = sum(earlier_abstains(c) for c in cases if c.own)
    absent = [c for c in cases if not c.own]
    best = None
    for lexical in LEXICAL:
        for similarity in SIMILARITY:
            if sum(abstains(c, lexical, similarity) for c in cases if c.own) > allowed:
                continue
            right = sum(abstains(c, lexical, similarity) for c in absent)
            if best is None or right > best[0]:
                best = (right, lexical, similarity)
    return best[1], best[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--eval-dir", type=Path, default=Path("data/eval"))
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the closed corpora are indexed (default: the evaluation's)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tqdm import tqdm

    from pipeline.evaluation.data import file_sha256, load_items
    from pipeline.evaluation.harness import closed_corpus
    from pipeline.retrieval import HybridRetriever
    from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
    from pipeline.settings import Settings
    from pipeline.support import best_similarity, check_support

    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir or default_data_dir() / "evaluation"))
    corpora, questions = {}, {}
    for name in FILES:
        path = args.eval_dir / f"{name}.jsonl"
        corpora[name] = HybridRetriever([closed_corpus(runtime.store, load_items(path), file_sha256(path))])
        questions[name] = [item.question for item in load_items(path, 2 * SPLIT)]

    cases = []
    with tqdm(total=len(FILES) ** 2 * 2 * SPLIT, desc="questions x corpora", unit="check") as bar:
        for asked in FILES:
            for corpus in FILES:
                for item, question in enumerate(questions[asked]):
                    passages = corpora[corpus].retrieve(question, args.top_k).passages
                    union = check_support(question, [_joined(passages)], 1.0).coverage if passages else 0.0
                    coverage = check_support(question, passages, 1.0).coverage
                    similarity = best_similarity(question, passages, runtime.embeddings) if passages else 0.0
                    cases.append(Case(asked, corpus, item, union, coverage, similarity))
                    bar.update()

    tuning = [c for c in cases if c.item >= SPLIT]
    held = [c for c in cases if c.item < SPLIT]
    lexical, similarity = choose(tuning)
    defaults = Settings()
    header = ["rule", *(f"wrong: {f} (own corpus)" for f in FILES), "wrong in all", "right: passages absent"]
    print(f"{machine()}; top {args.top_k} passages; the pair chosen on items {SPLIT}-{2 * SPLIT - 1}: lexical "
          f"{lexical}, similarity {similarity} (the app's defaults: {defaults.min_support}, "
          f"{defaults.support_similarity})\n")
    for title, split in [(f"Items {SPLIT}-{2 * SPLIT - 1} (choose)", tuning), (f"Items 0-{SPLIT - 1} (held out)", held)]:
        rows = [row(f"earlier: all passages' terms >= {EARLIER}", split, earlier_abstains)]
        rows += [row(f"one passage's terms >= {lx} or similarity >= {sm}", split,
                     lambda c, lx=lx, sm=sm: abstains(c, lx, sm))
                 for lx, sm in [(lexical, similarity), (lexical, 1.0), (EARLIER, similarity)]]
        print(f"**{title}**\n\n{table(header, rows)}\n")


def _joined(passages):
    """All passages as one, so that terms are counted over all of them together (the earlier check)."""
    from langchain_core.documents import Document

    text = " ".join(f"{p.metadata.get('title', '')} {p.page_content}" for p in passages)
    return Document(page_content=text, metadata={"title": ""})


if __name__ == "__main__":
    main()
