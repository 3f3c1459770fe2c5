"""Would a classifier trained on questions route better than Auto's vote? A measured alternative, not used by the app.

    python -m benchmarks.routing_probe [--eval-dir data/eval]

Auto's last stage lets the nearest hand-written labelled questions vote (``pipeline/routing.py``). This script
replaces that vote with a logistic-regression probe over the same question embeddings, trained on more and
in-distribution data: the labelled questions plus the whole **tuning** split of ``benchmarks.routing_accuracy``
(dev items 50-99 of each file, the tuning plain questions). Questions are lower-cased and stripped of the final
question mark first, so that the probe cannot learn the sets' punctuation. The probe's strength ``C`` is chosen by
5-fold cross-validation on the training questions (the best lowest per-method accuracy); the **held-out** split
(dev items 0-49, ``plain_questions.txt``) is scored once, with the cues first as in the app. Two probes:

- ToC or OneR (the vote's hard case; a question with no cue never goes to IRCoT);
- IRCoT, ToC or OneR.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.routing_accuracy import ROOT, questions, splits, PLAIN_TUNING
from pipeline.evaluation.tables import machine, table
from pipeline.routing import ambiguity_cue, labelled_questions, multi_hop_cue

C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
FOLDS = 5


def normalise(question: str) -> str:
    return question.strip().lower().rstrip(" ?")


def training_questions(tuning_rows: list[tuple[str, list[str], str]], labels: set[str]) -> list[tuple[str, str]]:
    """``(question, method)`` pairs to train on: the tuning split's and the labelled file's, among ``labels``."""
    pairs = [(q, expected) for _, items, expected in tuning_rows for q in items] + list(labelled_questions())
    return [(q, m) for q, m in pairs if m in labels]


def with_cues(question: str, probe_pick: str) -> str:
    """The app's cues first (IRCoT, then ToC), the probe's pick otherwise."""
    if multi_hop_cue(question):
        return "ircot"
    if ambiguity_cue(question):
        return "toc"
    return probe_pick


def choose_c(x: np.ndarray, y: np.ndarray, texts: list[str]) -> tuple[float, dict[str, float]]:
    """The ``C`` whose cross-validated routing (cues first) has the best lowest per-method accuracy."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    best: tuple[float, float, dict[str, float]] | None = None
    for c in C_GRID:
        probe = LogisticRegression(C=c, max_iter=3000, class_weight="balanced")
        predicted = cross_val_predict(probe, x, y, cv=StratifiedKFold(FOLDS, shuffle=True, random_state=0))
        routed = np.array([with_cues(q, p) for q, p in zip(texts, predicted)])
        accuracy = {m: float((routed[y == m] == m).mean()) for m in sorted(set(y))}
        if best is None or min(accuracy.values()) > best[1]:
            best = (c, min(accuracy.values()), accuracy)
    return best[0], best[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eval-dir", type=Path, default=Path(os.environ.get("RQA_EVAL_DIR", ROOT / "data/eval")),
                        help="folder of the dev JSONL files (default: data/eval, or $RQA_EVAL_DIR)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sklearn.linear_model import LogisticRegression

    from models.embeddings import SentenceEmbeddings

    embedder = SentenceEmbeddings()

    def unit(texts: list[str]) -> np.ndarray:
        vectors = np.asarray(embedder.embed_documents([normalise(t) for t in texts]))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    sets = splits(args.eval_dir)
    held_out = sets["held out"]
    print(f"Machine: {machine()}; trained on the tuning split ({len(questions(PLAIN_TUNING))} tuning plain "
          f"questions, dev items 50-99) and the labelled file; held-out split scored once, cues first.")
    for title, labels in [("ToC or OneR", {"toc", "oner"}), ("IRCoT, ToC or OneR", {"ircot", "toc", "oner"})]:
        train = training_questions(sets["tuning"], labels)
        texts = [q for q, _ in train]
        x, y = unit(texts), np.array([m for _, m in train])
        c, cv = choose_c(x, y, texts)
        probe = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(x, y)
        counts = Counter(y)
        print(f"\n**Probe: {title}** ({len(train)} training questions: "
              f"{', '.join(f'{m} {counts[m]}' for m in sorted(counts))}; C = {c}, cross-validated right: "
              f"{', '.join(f'{m} {100 * a:.0f}%' for m, a in cv.items())})\n")
        body = []
        for name, items, expected in held_out:
            picked = Counter(with_cues(q, p) for q, p in zip(items, probe.predict(unit(items))))
            body.append([name, len(items), expected, f"{100 * picked[expected] / len(items):.0f}%",
                         ", ".join(f"{m} {n}" for m, n in picked.most_common())])
        print(table(["questions (held out)", "n", "should go to", "right", "picked"], body))


if __name__ == "__main__":
    main()
