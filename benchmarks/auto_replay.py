"""Auto's check replayed with other settings, on items whose quick answers and single-method runs are saved: how
often it would go deeper, to which method, and what that would score and cost. For choosing
``Settings.auto_hop_coverage``, ``Settings.auto_bridge_always``, whether the wording's readings send a question
to ToC, and with what share of the router's vote (``--toc-share``), on dev files only.

    python -m benchmarks.auto_replay docs/results/auto/checks/signals/hotpotqa-first50.json \
        docs/results/kgp/hotpotqa-baselines.json docs/results/kgp/hotpotqa-default.json [--hop-coverage 0.4,0.6] \
        [--toc-share 0.4,0.3]

The first file is an Auto run that recorded its check without going deeper (``pipeline.evaluate --methods auto
--no-auto-deeper``); the others hold each single method's run on the same items (OneR's is the quick answer's
score and time). For each setting, an item Auto would send to a method scores that method's saved score and
costs OneR's seconds plus that method's (what Auto spends: its quick answer, then the deeper run); the other
items score and cost OneR's. Auto's mean against the best single method's comes with a 95% paired-bootstrap
interval. The wording's readings are read from the question with the app's current code (a record keeps what the
check of its day read), as are the hop cues a record lacks. Greedy decoding makes a saved run what Auto's deeper
run would write, but for llama.cpp's prefix cache (a method run after another question can differ slightly;
docs/benchmarks.md). A file whose single methods hold no ToC run counts an item sent to ToC as OneR's: there the
replay understates Auto's time.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks.auto_vs_single import MAIN, by_method
from benchmarks.compare_results import paired_change
from pipeline.evaluation.tables import table
from pipeline.settings import Settings


def _evidence(record: dict, embeddings, router=None):
    from pipeline.auto import HOPS, READINGS, Evidence, _readings
    from pipeline.routing import hop_structure_cue

    signals = dict(record["check"]["signals"])
    question = record["question"]
    signals[READINGS] = _readings(question, embeddings, router)  # the wording, as the app reads it now
    if not isinstance(signals[HOPS], str):
        signals[HOPS] = hop_structure_cue(question)
    return Evidence.from_record(signals)


def replay(auto_file: Path, single_files: list[Path], settings: list[tuple[str, Settings]], embeddings,
           toc_shares: tuple[float | None, ...] = (None,)) -> str:
    """The Markdown table of Auto under each of ``settings`` against the single methods; with ``toc_shares``,
    under each for each share of the vote with which the router's ToC wins over OneR (None: the app's router)."""
    from pipeline.routing import Router

    runs = by_method(single_files)
    auto = {r["id"]: r for r in json.loads(auto_file.read_text())["items"] if r.get("check")}
    oner = runs["oner"]
    ids = [i for i in auto if i in oner]
    metric = next(m for m in MAIN if m in oner[ids[0]]["scores"])
    available = set(runs)
    best = max((m for m in runs if all(i in runs[m] for i in ids)),
               key=lambda m: statistics.fmean(runs[m][i]["scores"][metric] for i in ids))
    best_scores = [runs[best][i]["scores"][metric] for i in ids]
    rows = []
    for share in toc_shares:
        router = None if share is None else Router(embeddings, toc_share=share)
        evidence = {i: _evidence(auto[i], embeddings, router) for i in ids}
        named = settings if share is None else [(f"{label}, ToC from {share:.0%} of the vote", setting)
                                                for label, setting in settings]
        rows += _rows(named, ids, evidence, runs, oner, metric, available, best, best_scores)
    head = ["setting", "n", "Auto ran", f"Auto {metric}", f"best single {metric}", "Auto minus best [95%]",
            "Auto median s (replayed)", "OneR median s"]
    return table(head, rows)


def _rows(settings, ids, evidence, runs, oner, metric, available, best, best_scores) -> list[list]:
    from pipeline.auto import decide

    rows = []
    for label, setting in settings:
        scores, seconds, routes = [], [], {}
        for i in ids:
            deeper = decide(evidence[i], setting, available).deeper
            chosen = runs[deeper][i] if deeper and i in runs[deeper] else oner[i]
            scores.append(chosen["scores"][metric])
            seconds.append(oner[i]["cost"]["wall_s"] + (chosen["cost"]["wall_s"] if chosen is not oner[i] else 0))
            routes[deeper or "oner"] = routes.get(deeper or "oner", 0) + 1
        change, low, high = paired_change(best_scores, scores)
        rows.append([label, len(ids), ", ".join(f"{m} {n}" for m, n in sorted(routes.items())),
                     f"{100 * statistics.fmean(scores):.1f}", f"{best} {100 * statistics.fmean(best_scores):.1f}",
                     f"{100 * change:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]",
                     f"{statistics.median(seconds):.1f}", f"{statistics.median(oner[i]['cost']['wall_s'] for i in ids):.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("auto", type=Path, help="an Auto run that recorded its check without going deeper")
    parser.add_argument("single", type=Path, nargs="+", help="results files of the single methods, OneR included")
    parser.add_argument("--hop-coverage", default="0.0,0.4,0.5,0.6,0.7,0.8,1.01",
                        help="values of auto_hop_coverage to replay (comma-separated)")
    parser.add_argument("--bridge-always", default="on",
                        help="auto_bridge_always values to replay: on, off or on,off")
    parser.add_argument("--toc-share", default="",
                        help="shares of the router's ToC+OneR vote with which ToC wins, to replay (comma-separated; "
                             "default: the app's router only)")
    args = parser.parse_args()
    from models.embeddings import SentenceEmbeddings

    settings = []
    for bridge in (b == "on" for b in args.bridge_always.split(",")):
        for value in (float(v) for v in args.hop_coverage.split(",")):
            for readings in (True, False):
                label = (f"hop coverage {value:g}" + ("" if readings else ", readings off")
                         + ("" if bridge else ", bridge by coverage"))
                settings.append((label, Settings().model_copy(update={
                    "auto_hop_coverage": value, "auto_readings": readings, "auto_bridge_always": bridge})))
    shares = tuple(float(v) for v in args.toc_share.split(",") if v) or (None,)
    print(replay(args.auto, args.single, settings, SentenceEmbeddings(), shares))


if __name__ == "__main__":
    main()
