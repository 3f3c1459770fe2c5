"""IRCoT's mode chosen per question, replayed on saved runs of both modes: which questions the rule sends hop by
hop, and what the mixture would have scored against each mode alone. For choosing ``IRCoTSettings.mode`` on dev
files only.

    python -m benchmarks.ircot_mode_replay SENTENCES.json HOPS.json [SENTENCES.json HOPS.json ...]

Each pair holds IRCoT's sentence chain and its hop-by-hop mode on the same items (``pipeline.evaluate
--ircot-mode sentences|hops``). The rule is the app's own (``pipeline.routing.hop_structure_cue``, as
``--ircot-mode auto`` reads it): an item it sends hop by hop scores the hop run's F1, the others the sentence
run's. Greedy decoding makes a saved run what that mode would write again, but for llama.cpp's prefix cache.
Prints one Markdown row per pair: n, items sent hop by hop, each mode's F1, the mixture's, and its paired change
(95% bootstrap interval) against each mode alone. ``--write OUT`` (one pair) also writes the mixture as a results
file: the sentence run's file with each item the rule sends hop by hop replaced by the hop run's record, for replays
that need IRCoT as its default now runs (``benchmarks.auto_replay``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks.compare_results import paired_change, records
from pipeline.evaluation.tables import table
from pipeline.routing import hop_structure_cue

COLUMNS = ["file", "n", "sent hop by hop", "sentences", "hops", "chosen per question", "vs sentences", "vs hops"]


def _interval(before: list[float], after: list[float]) -> str:
    mean, low, high = paired_change(before, after)
    return f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def replay_row(sentences_file: str, hops_file: str, score: str = "f1") -> list:
    """The row of one pair of runs (see the module's docstring)."""
    sentences, hops = records(sentences_file, "ircot"), records(hops_file, "ircot")
    keys = [k for k in sentences if k in hops]
    if not keys:
        raise SystemExit(f"{sentences_file} and {hops_file} share no item")
    to_hops = [hop_structure_cue(sentences[k]["question"]) is not None for k in keys]
    s = [sentences[k]["scores"][score] for k in keys]
    h = [hops[k]["scores"][score] for k in keys]
    mixed = [hk if chosen else sk for sk, hk, chosen in zip(s, h, to_hops)]
    return [Path(sentences_file).name, len(keys), sum(to_hops), f"{100 * statistics.fmean(s):.1f}",
            f"{100 * statistics.fmean(h):.1f}", f"{100 * statistics.fmean(mixed):.1f}", _interval(s, mixed),
            _interval(h, mixed)]


def write_mixture(sentences_file: str, hops_file: str, out: Path) -> None:
    """The sentence run's results file with each item the rule sends hop by hop taken from the hop run."""
    data = json.loads(Path(sentences_file).read_text())
    hops = {r["id"]: r for r in json.loads(Path(hops_file).read_text())["items"] if r["method"] == "ircot"}
    data["items"] = [hops[r["id"]] if r["method"] == "ircot" and r["id"] in hops and hop_structure_cue(r["question"])
                     else r for r in data["items"]]
    data["note"] = f"IRCoT's mode chosen per question, replayed from {sentences_file} and {hops_file}"
    out.write_text(json.dumps(data, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="pairs of results files: sentences, then hops")
    parser.add_argument("--score", default="f1")
    parser.add_argument("--write", type=Path, default=None, help="with one pair: write the mixture's results here")
    args = parser.parse_args()
    if len(args.files) % 2:
        raise SystemExit("give the files in pairs: a sentence-chain run, then a hop-by-hop run of the same items")
    if args.write is not None:
        if len(args.files) != 2:
            raise SystemExit("--write takes one pair of files")
        write_mixture(args.files[0], args.files[1], args.write)
    pairs = zip(args.files[::2], args.files[1::2])
    print(table(COLUMNS, [replay_row(s, h, args.score) for s, h in pairs]))


if __name__ == "__main__":
    main()
