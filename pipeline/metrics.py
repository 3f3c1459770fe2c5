"""QA metrics as the datasets' own evaluation scripts define them (all in 0..1; reports multiply by 100).

- EM / F1: SQuAD normalisation (lower case, no punctuation, no articles a/an/the, single spaces), maximum over
  the gold aliases; F1 is 0 when a yes/no/noanswer prediction or gold does not match exactly (HotpotQA).
- STR-EM (ALCE, for ASQA): a qa_pair counts when any of its normalised short answers is a substring of the
  normalised output; averaged over the qa_pairs.
- ROUGE-L (ALCE, for ASQA): rougeLsum with stemming against each long answer, keeping the best. ALCE splits
  sentences with NLTK's punkt, whose data is not available offline; a regular-expression splitter stands in.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from pipeline.text import normalize_answer, strip_citations  # noqa: F401 (the harness calls metrics.strip_citations)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    special = {"yes", "no", "noanswer"}
    if (pred in special or ref in special) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over_aliases(metric, prediction: str, golds: list[str]) -> float:
    return max((metric(prediction, gold) for gold in golds), default=0.0)


def str_em(output: str, qa_pairs: list[dict]) -> float:
    """Share of qa_pairs with a short answer contained in the output (ALCE's STR-EM)."""
    if not qa_pairs:
        return 0.0
    normalized = normalize_answer(output)
    hits = [
        any(normalize_answer(a) and normalize_answer(a) in normalized for a in pair.get("short_answers", []))
        for pair in qa_pairs
    ]
    return sum(hits) / len(hits)


@functools.lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)


def _sentences(text: str) -> str:
    return "\n".join(s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip())


def rouge_l(output: str, long_answers: list[str]) -> float:
    """rougeLsum F-measure against the closest long answer."""
    if not output.strip() or not long_answers:
        return 0.0
    return max(_rouge().score(_sentences(ref), _sentences(output))["rougeLsum"].fmeasure for ref in long_answers)


def geometric_mean(a: float, b: float) -> float:
    return math.sqrt(max(a, 0.0) * max(b, 0.0))


def recall(retrieved: set[str], relevant: set[str]) -> float | None:
    """Share of the relevant ids that were retrieved (None when there is nothing to find)."""
    if not relevant:
        return None
    return len(retrieved & relevant) / len(relevant)


def answer_f1(prediction: str, golds: list[str]) -> float:
    """F1 of a short answer against the aliases, for scoring disambiguated answers against qa_pairs."""
    return best_over_aliases(f1, prediction, golds)
