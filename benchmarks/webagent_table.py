"""The web agent against the baselines on the same items: one Markdown table for docs/benchmarks.md.

    python -m benchmarks.webagent_table docs/results/webagent/hotpotqa-default.json \
        [docs/results/webagent/hotpotqa-pipeline.json] --baselines docs/results/ircot/hotpotqa-100.json \
        [--methods oner,ircot] [--skip-timing docs/results/webagent/hotpotqa-default.json=IDS.txt]

Web agent results files are grouped by their dev file; each group is compared with the baselines file of the same
dev file, on the items the agent ran (the agent ran on the first 50, the baselines on 100; every agent file of a
group must hold the same items). Rows: each method's EM, F1 and support recall (x100), then for each agent file
(``webagent`` at its default mode, else labelled by its mode: ``webagent (interactive)``) its own counts per
question (actions, queries, pages loaded, facts quoted, refused actions), the share of runs that ended by Finish
rather than the budget (not for the pipeline and hop modes, which have no Finish action),
abstentions, LLM calls, prompt tokens and their share served from the prefix cache, and median and p90 seconds.
``--skip-timing RESULTS=IDS`` leaves the items listed in the file IDS (one id per line or space-separated) out of
that agent file's seconds only (items that ran while another process shared the machine); their quality counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks.plots import mode_label
from pipeline.evaluation.tables import percentile, table

AGENT_COUNTS = [("actions_per_question", "actions"), ("queries_per_question", "queries"),
                ("pages_per_question", "pages"), ("facts_per_question", "facts"),
                ("refused_per_question", "refused")]


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"{path}: {err}") from None


def _stem(data: dict) -> str:
    return Path(data["data"]).stem


def _mean(rows: list[dict], key: str) -> float:
    return statistics.fmean(r["scores"][key] for r in rows)


def rows_for(agent_paths: list[Path], baseline_path: Path, methods: list[str],
             skip_timing: dict[Path, set[str]]) -> list[list]:
    """The table rows of one dev file: the baselines, then each web agent run, on the items the agents ran."""
    agents = [(path, _load(path)) for path in agent_paths]
    name = _stem(agents[0][1])
    runs = [(path, mode_label(data, "webagent"), [r for r in data["items"] if r["method"] == "webagent"])
            for path, data in agents]
    ids = {r["id"] for r in runs[0][2]}
    for path, _, rows in runs[1:]:
        if {r["id"] for r in rows} != ids:
            raise SystemExit(f"{path} does not hold the same items as {runs[0][0]}")
    baseline_items = _load(baseline_path)["items"]
    out = []
    for method in methods:
        rows = [r for r in baseline_items if r["method"] == method and r["id"] in ids]
        if len(rows) != len(ids):
            raise SystemExit(f"{baseline_path} holds {len(rows)} of the {len(ids)} items for {method}")
        out.append(_row(name, method, rows, [r["cost"]["wall_s"] for r in rows], agent=False))
    skip = {Path(k).resolve(): v for k, v in skip_timing.items()}
    for path, label, rows in runs:
        skipped = skip.get(path.resolve(), set())
        out.append(_row(name, label, rows, [r["cost"]["wall_s"] for r in rows if r["id"] not in skipped],
                        agent=True))
    return out


def _row(name: str, label: str, rows: list[dict], timed: list[float], agent: bool) -> list:
    prompt = statistics.fmean(r["cost"]["prompt_tokens"] for r in rows)
    cached = statistics.fmean(r["cost"].get("cached_tokens", 0) for r in rows)
    counts = [f"{statistics.fmean(r['scores'].get(k, 0.0) for r in rows):.1f}" if agent else "-"
              for k, _ in AGENT_COUNTS]
    interactive = agent and not label.endswith(("(pipeline)", "(hops)"))  # a run that may end by Finish
    finish = f"{100 * _mean(rows, 'ended_by_finish'):.0f}%" if interactive else "-"
    return [name, label, len(rows), f"{100 * _mean(rows, 'em'):.1f}", f"{100 * _mean(rows, 'f1'):.1f}",
            f"{100 * _mean(rows, 'support_recall'):.1f}", *counts, finish,
            sum(bool(r.get("abstained")) for r in rows),
            f"{statistics.fmean(r['cost']['llm_calls'] for r in rows):.1f}", f"{prompt:,.0f}",
            f"{100 * cached / prompt:.0f}%" if prompt else "-",
            f"{statistics.median(timed):.1f} (n={len(timed)})", f"{percentile(timed, 90):.1f}"]


def _skip_list(spec: str) -> tuple[Path, set[str]]:
    results, sep, ids = spec.partition("=")
    if not sep:
        raise SystemExit(f"--skip-timing {spec}: expected RESULTS=IDS_FILE")
    try:
        return Path(results), set(Path(ids).read_text().split())
    except OSError as err:
        raise SystemExit(f"--skip-timing {spec}: {err}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("agent", nargs="+", type=Path, help="web agent results files (several per dev file allowed)")
    parser.add_argument("--baselines", nargs="+", type=Path, required=True,
                        help="results files holding the baselines, one per dev file")
    parser.add_argument("--methods", default="oner,ircot", help="baseline methods to show (comma-separated)")
    parser.add_argument("--skip-timing", nargs="*", default=[], metavar="RESULTS=IDS",
                        help="leave the item ids listed in the file IDS out of the seconds of the agent file RESULTS")
    args = parser.parse_args()
    baselines = {_stem(_load(path)): path for path in args.baselines}
    groups: dict[str, list[Path]] = {}
    for path in args.agent:
        groups.setdefault(_stem(_load(path)), []).append(path)
    missing = sorted(set(groups) - set(baselines))
    if missing:
        raise SystemExit(f"no baselines file for {', '.join(missing)}")
    skip = dict(_skip_list(spec) for spec in args.skip_timing)
    unknown = {path.resolve() for path in skip} - {path.resolve() for path in args.agent}
    if unknown:
        raise SystemExit(f"--skip-timing names a file that is not among the agent files: {sorted(map(str, unknown))}")
    rows = []
    for name, paths in groups.items():
        rows += rows_for(paths, baselines[name], args.methods.split(","), skip)
    header = ["data", "method", "n", "EM", "F1", "support recall", *(label for _, label in AGENT_COUNTS),
              "ended by Finish", "abstained", "LLM calls", "prompt tokens", "from cache", "median s", "p90 s"]
    print(table(header, rows))


if __name__ == "__main__":
    main()
