"""KGP with its walk read hop by hop against one read, on the same walks, without running every item twice.

    python -m benchmarks.kgp_hop_read AUTO.json OFF_HOP_ITEMS.json [--traces TRACES_DIR] --out OFF.json
    python -m benchmarks.compare_results OFF.json AUTO.json --method kgp

AUTO.json is a ``pipeline.evaluate`` run with ``--kgp-hop-read auto`` (and ``--trace-dir TRACES_DIR``);
OFF_HOP_ITEMS.json a run with ``--kgp-hop-read off`` on only the items whose hops gave the answer
(``hop_answer`` in AUTO.json). Where the hops gave none, the auto run's answer is what ``off`` writes: the same
walk, then KGP's reader exactly as ``off`` runs it. OFF.json is the ``off`` results of every item of AUTO.json put
together from the two: the off run's items where the hops answered (their walks must equal the auto run's, which
is checked and printed), elsewhere the auto run's items less their plan and hops, the cost of those steps (from the
traces) taken off their seconds, calls and tokens; without the traces those items' costs are not recorded.
Nothing is run; no model is loaded.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

HOP_KEYS = ("plan", "hops", "hop_answer", "compare")
COST_KEYS = ("llm_calls", "prompt_tokens", "cached_tokens")


def hop_cost(trace: Path) -> dict[str, float]:
    """What the plan, the hops and the comparison cost in one run's trace (JSON lines of its events)."""
    cost = {"wall_s": 0.0, **{key: 0 for key in COST_KEYS}}
    for line in trace.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("status") == "done" and event.get("kind") in ("plan", "subquestion", "compare"):
            cost["wall_s"] += event.get("elapsed_s") or 0.0
            for key in COST_KEYS:
                cost[key] += event.get(key) or 0
    return cost


def walk_of(item: dict) -> list[str]:
    return [visit["id"] for visit in item.get("walk", [])]


def compose(auto: dict, off: dict, traces: Path | None) -> tuple[dict, list[str]]:
    """The ``off`` results of ``auto``'s items, and one line per item the off run gave (its walk checked)."""
    ran = {item["id"]: item for item in off["items"]}
    composed = copy.deepcopy(auto)
    items, lines = [], []
    for item in auto["items"]:
        if item.get("hop_answer"):
            if item["id"] not in ran:
                raise SystemExit(f"{item['id']}: the hops answered it, but the off run did not run it")
            alone = ran[item["id"]]
            same = "walk same" if walk_of(alone) == walk_of(item) else "WALK DIFFERS"
            lines.append(f"{item['id']}: {same}; F1 {alone['scores']['f1']:.2f} -> {item['scores']['f1']:.2f} "
                         f"({alone['prediction'][:40]!r} -> {item['prediction'][:40]!r})")
            items.append(alone)
            continue
        read = {key: value for key, value in copy.deepcopy(item).items() if key not in HOP_KEYS}
        if traces is None:
            read["cost"] = {key: None for key in read["cost"]}
        else:
            for key, value in hop_cost(traces / f"trace-kgp-{item['id']}.jsonl").items():
                if read["cost"].get(key) is not None:
                    read["cost"][key] -= value
        items.append(read)
    composed["items"] = items
    composed["method_configs"] = off["method_configs"]
    composed["composed"] = ("hop_read off, put together by benchmarks.kgp_hop_read: the off run's items where the "
                            "hops answered, elsewhere the auto run's less the plan and hops (their cost from the "
                            "traces)" if traces is not None else "hop_read off, put together by benchmarks.kgp_hop_read: "
                            "the off run's items where the hops answered, elsewhere the auto run's less the plan and "
                            "hops (their costs not recorded: no traces)")
    return composed, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("auto", type=Path, help="results of --kgp-hop-read auto")
    parser.add_argument("off", type=Path, help="results of --kgp-hop-read off on the items whose hops answered")
    parser.add_argument("--traces", type=Path, help="the auto run's --trace-dir (without it, the costs of the items "
                        "whose hops gave no answer are not recorded)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    composed, lines = compose(json.loads(args.auto.read_text(encoding="utf-8")),
                              json.loads(args.off.read_text(encoding="utf-8")), args.traces)
    args.out.write_text(json.dumps(composed, indent=1, ensure_ascii=False), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
