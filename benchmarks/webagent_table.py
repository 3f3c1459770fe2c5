"""The web agent against the baselines on the same items: one Markdown table for docs/benchmarks.md.

    python -m benchmarks.webagent_table docs/results/webagent/hotpotqa-default.json \
        --baselines docs/results/ircot/hotpotqa-100.json [--methods oner,ircot] [--skip-timing ID ...]

For each web agent results file and the matching baselines file (same order), only the items both hold are
compared (the web agent ran on the first 50, the baselines on 100). Rows: each method's EM, F1 and support recall
(x100), then the agent's own counts per question (actions, queries, pages loaded, facts quoted, refused
actions), the share of runs that ended by Finish rather than the budget, abstentions, LLM calls, prompt tokens
and their share served from the prefix cache, and median and p90 seconds. ``--skip-timing`` leaves web agent
items out of its seconds only (items that ran while another process shared the machine); their quality counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from pipeline.reporting import percentile, table

AGENT_COUNTS = [("actions_per_question", "actions"), ("queries_per_question", "queries"),
                ("pages_per_question", "pages"), ("facts_per_question", "facts"),
                ("refused_per_question", "refused")]


def _items(path: Path) -> tuple[str, list[dict]]:
    data = json.loads(path.read_text())
    return Path(data["data"]).stem, data["items"]


def _mean(rows: list[dict], key: str) -> float:
    return statistics.fmean(r["scores"][key] for r in rows)


def rows_for(agent_path: Path, baseline_path: Path, methods: list[str], skip_timing: set[str]) -> list[list]:
    """The table rows of one dev file: the baselines, then the web agent, on the items the agent ran."""
    name, agent_items = _items(agent_path)
    agent = [r for r in agent_items if r["method"] == "webagent"]
    ids = {r["id"] for r in agent}
    _, baseline_items = _items(baseline_path)
    out = []
    for method in [*methods, "webagent"]:
        rows = agent if method == "webagent" else [r for r in baseline_items if r["method"] == method
                                                    and r["id"] in ids]
        if len(rows) != len(ids):
            raise SystemExit(f"{baseline_path} holds {len(rows)} of the {len(ids)} items for {method}")
        timed = [r["cost"]["wall_s"] for r in rows if method != "webagent" or r["id"] not in skip_timing]
        prompt = statistics.fmean(r["cost"]["prompt_tokens"] for r in rows)
        cached = statistics.fmean(r["cost"].get("cached_tokens", 0) for r in rows)
        counts = [f"{statistics.fmean(r['scores'][k] for r in rows):.1f}" if method == "webagent" else "-"
                  for k, _ in AGENT_COUNTS]
        finish = f"{100 * _mean(rows, 'ended_by_finish'):.0f}%" if method == "webagent" else "-"
        out.append([name, method, len(rows), f"{100 * _mean(rows, 'em'):.1f}", f"{100 * _mean(rows, 'f1'):.1f}",
                    f"{100 * _mean(rows, 'support_recall'):.1f}", *counts, finish,
                    sum(bool(r.get("abstained")) for r in rows),
                    f"{statistics.fmean(r['cost']['llm_calls'] for r in rows):.1f}", f"{prompt:,.0f}",
                    f"{100 * cached / prompt:.0f}%" if prompt else "-",
                    f"{statistics.median(timed):.1f} (n={len(timed)})", f"{percentile(timed, 90):.1f}"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("agent", nargs="+", type=Path, help="web agent results files")
    parser.add_argument("--baselines", nargs="+", type=Path, required=True,
                        help="results files holding the baselines, one per agent file, in the same order")
    parser.add_argument("--methods", default="oner,ircot", help="baseline methods to show (comma-separated)")
    parser.add_argument("--skip-timing", nargs="*", default=[], help="web agent item ids left out of its seconds only")
    args = parser.parse_args()
    if len(args.agent) != len(args.baselines):
        raise SystemExit("give one baselines file per web agent file")
    rows = []
    for agent, baseline in zip(args.agent, args.baselines):
        rows += rows_for(agent, baseline, args.methods.split(","), set(args.skip_timing))
    header = ["data", "method", "n", "EM", "F1", "support recall", *(label for _, label in AGENT_COUNTS),
              "ended by Finish", "abstained", "LLM calls", "prompt tokens", "from cache", "median s", "p90 s"]
    print(table(header, rows))


if __name__ == "__main__":
    main()
