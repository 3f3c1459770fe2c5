"""IRCoT's (or the web agent's) mode chosen per question, replayed on saved runs of both modes: which questions
the rule sends hop by hop, and what the mixture would have scored against each mode alone. For choosing
``IRCoTSettings.mode`` and ``WebAgentSettings.mode`` on dev files only.

    python -m benchmarks.ircot_mode_replay SENTENCES.json HOPS.json [SENTENCES.json HOPS.json ...]
    python -m benchmarks.ircot_mode_replay INTERACTIVE.json HOPS.json [...] --method webagent

Each pair holds the method's other mode (IRCoT's sentence chain, the web agent's interactive browsing) and its
hop-by-hop mode on the same items (``pipeline.evaluate --ircot-mode sentences|hops``, ``--webagent-mode
interactive|hops``). The rule is the app's own (``pipeline.routing.hop_structure_cue``, as the ``auto`` modes
read it): an item it sends hop by hop scores the hop run's F1, the others the other run's. Greedy decoding makes a
saved run what that mode would write again, but for llama.cpp's prefix cache. Prints one Markdown row per pair: n,
items sent hop by hop, each mode's F1, the mixture's, and its paired change (95% bootstrap interval) against each
mode alone. ``--write OUT`` (one pair) also writes the mixture as a results file, recorded as the ``auto`` mode:
each item the rule sends hop by hop from the hop run, the others from the other run (which then needs to hold
only those: ``pipeline.evaluate --ids``), for replays that need the method as its default now runs
(``benchmarks.auto_replay``) and for the default's figures from two runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks.compare_results import paired_change, records
from pipeline.evaluation.harness import summarize
from pipeline.evaluation.tables import table
from pipeline.routing import hop_structure_cue

OTHER_MODE = {"ircot": "sentences", "webagent": "interactive"}


def columns(method: str = "ircot") -> list[str]:
    other = OTHER_MODE[method]
    return ["file", "n", "sent hop by hop", other, "hops", "chosen per question", f"vs {other}", "vs hops"]


def _interval(before: list[float], after: list[float]) -> str:
    mean, low, high = paired_change(before, after)
    return f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def replay_row(other_file: str, hops_file: str, score: str = "f1", method: str = "ircot") -> list:
    """The row of one pair of runs (see the module's docstring)."""
    other, hops = records(other_file, method), records(hops_file, method)
    keys = [k for k in other if k in hops]
    if not keys:
        raise SystemExit(f"{other_file} and {hops_file} share no item")
    to_hops = [hop_structure_cue(other[k]["question"]) is not None for k in keys]
    s = [other[k]["scores"][score] for k in keys]
    h = [hops[k]["scores"][score] for k in keys]
    mixed = [hk if chosen else sk for sk, hk, chosen in zip(s, h, to_hops)]
    return [Path(other_file).name, len(keys), sum(to_hops), f"{100 * statistics.fmean(s):.1f}",
            f"{100 * statistics.fmean(h):.1f}", f"{100 * statistics.fmean(mixed):.1f}", _interval(s, mixed),
            _interval(h, mixed)]


def write_mixture(other_file: str, hops_file: str, out: Path, method: str = "ircot") -> None:
    """The other run's results file with each item the rule sends hop by hop taken from the hop run (items only
    the hop run holds are added in its order), recorded as the ``auto`` mode."""
    data = json.loads(Path(other_file).read_text())
    other = {r["id"]: r for r in data["items"] if r["method"] == method}
    hops = {r["id"]: r for r in json.loads(Path(hops_file).read_text())["items"] if r["method"] == method}
    mixed = []
    for key in dict.fromkeys([*other, *hops]):
        record = other.get(key) or hops[key]
        chosen = hops if hop_structure_cue(record["question"]) else other
        if key not in chosen:
            raise SystemExit(f"{hops_file if chosen is hops else other_file} lacks item {key}, which the rule sends "
                             f"{'hop by hop' if chosen is hops else 'to the other mode'}")
        mixed.append(chosen[key])
    data["items"] = [*mixed, *(r for r in data["items"] if r["method"] != method)]
    data["methods"] = summarize(data["items"])  # the other run's summary would describe the other mode's items
    settings = data.setdefault("method_configs", {}).setdefault(method, {}).setdefault("settings", {})
    settings["mode"] = "auto"
    data["note"] = f"{method}'s mode chosen per question, replayed from {other_file} and {hops_file}"
    out.write_text(json.dumps(data, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="pairs of results files: the other mode, then hops")
    parser.add_argument("--method", choices=sorted(OTHER_MODE), default="ircot")
    parser.add_argument("--score", default="f1")
    parser.add_argument("--write", type=Path, default=None, help="with one pair: write the mixture's results here")
    args = parser.parse_args()
    other = OTHER_MODE[args.method]
    if len(args.files) % 2:
        raise SystemExit(f"give the files in pairs: a {other} run, then a hop-by-hop run of the same items")
    if args.write is not None:
        if len(args.files) != 2:
            raise SystemExit("--write takes one pair of files")
        write_mixture(args.files[0], args.files[1], args.write, args.method)
    pairs = zip(args.files[::2], args.files[1::2])
    print(table(columns(args.method), [replay_row(s, h, args.score, args.method) for s, h in pairs]))


if __name__ == "__main__":
    main()
