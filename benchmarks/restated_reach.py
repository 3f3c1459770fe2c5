"""Which items reach IRCoT's re-ask of a restated plan (``IRCoTSettings.ask_again_restated``), with today's
defaults, from the model's first plan only.

    python -m benchmarks.restated_reach data/eval/musique.jsonl [MORE.jsonl ...] [--limit 100] [--ids-out F]

For each item the route is IRCoT's own (by wording, ``chain.hop_reason``); for an item it sends hop by hop, the
plan is written as ``hops.write_plan`` writes it with IRCoT's settings, the first plan call made with the default
model and the second call (the re-ask) stopped before it is made. An item counts when its plan would be asked for again:
a change to the re-ask alone (``restated_example``) can act on these items and no others. ``--ids-out`` writes
each file's counted ids, one comma-separated line per file, for ``pipeline.evaluate --ids``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.context import RunContext
from pipeline.evaluation.data import load_items
from pipeline.methods.ircot.chain import IRCoTSettings, hop_reason
from pipeline.methods.ircot.hops import write_plan
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir


class ReAsked(Exception):
    """The plan's second call: the re-ask was reached."""


class FirstCallOnly:
    """A chat model that answers its first call and raises ``ReAsked`` on the next."""

    def __init__(self, llm) -> None:
        self.llm, self.calls = llm, 0

    def chat(self, *args, **kwargs):
        self.calls += 1
        if self.calls > 1:
            raise ReAsked
        return self.llm.chat(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.llm, name)


def hop_by_hop(question: str, cfg: IRCoTSettings) -> bool:
    """Whether IRCoT with ``cfg`` sends ``question`` hop by hop (``chain.run``'s route)."""
    return cfg.mode == "hops" or hop_reason(question, cfg) is not None


def re_asked(question: str, llm, cfg: IRCoTSettings) -> bool:
    """Whether the plan of ``question`` would be asked for again (one model call)."""
    model = FirstCallOnly(llm)
    try:
        write_plan(question, RunContext(llm=model), "", ask_again=cfg.ask_again_restated, clause=cfg.clause_plan,
                   chain=cfg.chain_plan, reorder=cfg.reorder_plan, both=cfg.both_plan)
    except ReAsked:
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.restated_reach", description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="+", type=Path)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--ids-out", type=Path, default=None)
    args = parser.parse_args(argv)
    missing = [str(path) for path in args.data if not path.is_file()]
    if missing:
        print(f"error: no such data file: {', '.join(missing)}", file=sys.stderr)
        return 2
    cfg = IRCoTSettings()
    llm = Runtime(RuntimeConfig(data_dir=default_data_dir() / "evaluation", model="default")).llm()
    lines = []
    for path in args.data:
        items = [item for item in load_items(path)[: args.limit] if hop_by_hop(item.question, cfg)]
        ids = [item.id for item in items if re_asked(item.question, llm, cfg)]
        print(f"{path}: {len(ids)} of {len(items)} hop-by-hop items reach the re-ask", flush=True)
        for item_id in ids:
            print(f"  {item_id}")
        lines.append(",".join(ids))
    if args.ids_out:
        args.ids_out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
