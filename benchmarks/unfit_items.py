"""The items of saved hop-by-hop results where a hop's recorded answer is unfit (``hops.unfit``): the only items that
the web agent's ``refuse_unfit`` (or IRCoT's ``ask_again_unfit``) can change, so the only ones worth re-running.

    python -m benchmarks.unfit_items RESULTS.json [MORE.json ...] [--method webagent]

For each results file of ``pipeline.evaluate``, prints each such item (its id, F1, the hop, its answer and why it is
unfit) and a last line per file of comma-separated ids for ``pipeline.evaluate --ids``. A hop's ``given`` answers are
the earlier hops' answers its question contains. A yes / no is a judgement and never unfit. The recorded answer is
the first one a page or passage gave, so the count holds for the code of the run; a later code that answers a hop
differently may fire elsewhere. No model is loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.methods.ircot.hops import unfit


def unfit_hop(hops: list[dict]) -> tuple[dict, str] | None:
    """The first hop of a ``hops`` record whose answer ``unfit`` refuses, with why; None when every answer fits."""
    earlier: list[str] = []
    for hop in hops:
        answer = hop.get("answer")
        if not answer or answer.lower() in ("yes", "no"):
            continue
        given = tuple(a for a in earlier if a.lower() in hop["question"].lower())
        why = unfit(hop["question"], answer, given)
        if why:
            return hop, why
        earlier.append(answer)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results files of pipeline.evaluate")
    parser.add_argument("--method", default="webagent", help="the method whose items are read (default: webagent)")
    args = parser.parse_args(argv)
    for path in args.results:
        try:
            items = json.loads(path.read_text(encoding="utf-8"))["items"]
        except (OSError, ValueError, KeyError) as exc:
            parser.exit(2, f"{path}: not a readable results file ({exc})\n")
        ids = []
        runs = [r for r in items if r["method"] == args.method and r.get("hops")]
        for item in runs:
            found = unfit_hop(item["hops"])
            if found:
                hop, why = found
                ids.append(item["id"])
                print(f"{item['id']}  F1 {item['scores']['f1'] * 100:.0f}  {hop['question']} → {hop['answer']}: {why}")
        print(f"{path}: {len(ids)} of {len(runs)} hop-by-hop {args.method} items with an unfit hop answer")
        print(",".join(ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
