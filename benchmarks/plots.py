"""Charts of the results files of ``pipeline.evaluate``: answer quality against seconds per question, one chart per
evaluation file, every method of every results file a point (the charts in docs/benchmarks.md).

    python -m benchmarks.plots [RESULTS.json ...] [--out docs/plots]

Without files, every results file under docs/results/ except the checks: the code-regression checks
(docs/results/regression and docs/results/same-answers: same items re-run to compare two versions of the code,
with timings taken on a busy machine) and runs kept to compare machines or a model-layer setting on the same items (any ``checks`` folder,
such as docs/results/ircot/checks: the prompt-state cache off, the defaults re-run on a faster machine; or
docs/results/toc/checks: ToC on control questions made from ASQA's; docs/results/auto/checks: Auto recording
its check without going deeper). Each method is drawn at its current defaults: a run recorded with other settings (a variant measured in a table of its own) is left
out, except another mode of a method (``webagent (pipeline)``), drawn as a point of its own. Quality is F1 for
the short-answer files (HotpotQA, 2WikiMultihopQA, MuSiQue) and the geometric mean of STR-EM and ROUGE-L for
ASQA's long answers; time is the median wall-clock seconds per question (log scale), with a line to the p90.
Writes one SVG per evaluation file and prints the Markdown that shows them (paths relative to docs/).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

RESULTS = Path("docs/results")
QUALITY = [("f1", "F1"), ("str_em_rouge_l_geomean", "geomean(STR-EM, ROUGE-L)")]  # the first a file has
MARKERS = {"nor": "o", "oner": "s", "toc": "^", "ircot": "D", "kgp": "P", "webagent": "X", "auto": "*"}
COLOURS = {"default": "#1d4ed8", "fast": "#c2410c"}


def default_files(root: Path = RESULTS) -> list[Path]:
    """Every results file under ``root`` except the checks (folders named ``regression``, ``same-answers`` or
    ``checks``)."""
    checks = {"regression", "same-answers", "checks"}
    return sorted(p for p in root.rglob("*.json") if not checks & set(p.relative_to(root).parts))


def mode_label(result: dict, method: str) -> str:
    """The method's name, with its mode when the run recorded another than the default (``webagent (pipeline)``)."""
    from pipeline.methods import METHODS

    mode = result.get("method_configs", {}).get(method, {}).get("settings", {}).get("mode")
    field = METHODS[method].settings.model_fields.get("mode") if method in METHODS else None
    return f"{method} ({mode})" if mode and field is not None and mode != field.default else method


def point_label(result: dict, method: str) -> str | None:
    """The method's name, with its mode when the run used another than the default (``webagent (pipeline)``: a
    mode is another algorithm, drawn as a point of its own); None for a run whose other settings differ from the
    method's defaults (a variant measured in a table of its own, such as IRCoT with 40-word passages)."""
    from pipeline.methods import METHODS

    settings = result.get("method_configs", {}).get(method, {}).get("settings")
    if method not in METHODS or not settings:
        return method  # a results file from before settings were recorded
    defaults = METHODS[method].settings().model_dump()
    changed = {k for k, v in settings.items() if k in defaults and defaults[k] != v and k != "mode"}
    return None if changed else mode_label(result, method)


def points(paths: list[Path]) -> dict[str, list[dict]]:
    """Per evaluation file (its stem): one point per method of each results file, with its quality, median and
    p90 seconds, items and model. A method run again with the same model on as many items is drawn from its
    latest run only (two points with one label would be told apart by nothing; runs from different days may come
    from different machines)."""
    out: dict[str, list[dict]] = defaultdict(list)
    loaded = [(json.loads(Path(path).read_text()), path) for path in paths]
    results = [(result, path) for result, path in loaded if isinstance(result, dict)]  # other benchmarks' lists
    latest: dict[tuple, str] = {}
    labels = {(id(result), method): point_label(result, method)
              for result, _ in results for method in result.get("methods", {})}
    for result, _ in sorted(results, key=lambda r: r[0].get("date", "")):
        for method, summary in result.get("methods", {}).items():
            if labels[id(result), method] is not None:
                key = (Path(result["data"]).stem, labels[id(result), method], result["model"], summary["cost"]["n"])
                latest[key] = result["date"]
    for result, path in results:
        for method, summary in result.get("methods", {}).items():  # other benchmarks' files have none
            metric = next(((key, label) for key, label in QUALITY if key in summary["metrics"]), None)
            if metric is None:
                continue
            cost = summary["cost"]
            name = labels[id(result), method]
            if name is None or latest[(Path(result["data"]).stem, name, result["model"], cost["n"])] != result["date"]:
                continue
            out[Path(result["data"]).stem].append({
                "method": method, "label": name, "model": result["model"], "n": cost["n"], "metric": metric[1],
                "quality": summary["metrics"][metric[0]], "median_s": cost["wall_s_median"],
                "p90_s": cost["wall_s_p90"], "file": str(path)})
    return dict(out)


def plot(name: str, rows: list[dict], out: Path) -> Path:
    """One chart: quality against median seconds per question, a point per (results file, method)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401 - the tick formatter below

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "research-qa", "font.size": 9})
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for row in rows:
        colour = COLOURS.get(row["model"], "#4b5563")
        ax.plot([row["median_s"], row["p90_s"]], [row["quality"]] * 2, color=colour, alpha=0.35, lw=1.2)
        ax.scatter(row["median_s"], row["quality"], marker=MARKERS.get(row["method"], "o"), s=46, color=colour,
                   edgecolor="white", linewidth=0.6, zorder=3)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_xlabel("seconds per question (median; the line reaches the p90), log scale")
    ax.set_ylabel(rows[0]["metric"])
    ax.set_title(f"{name}: quality against time per question", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    top = max(r["quality"] for r in rows)
    ax.set_ylim(0, max(10.0, top * 1.18))
    ax.set_xlim(min(r["median_s"] for r in rows) * 0.7, max(r["p90_s"] for r in rows) * 1.6)
    fig.tight_layout()
    _label(fig, ax, rows)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.svg"
    fig.savefig(path, metadata={"Date": None, "Creator": "benchmarks/plots.py"})
    plt.close(fig)
    return path


def _label(fig, ax, rows: list[dict]) -> None:
    """Names each point "method (model, n=items)" (with the method's mode, if not the default) beside it, on the
    first side where it stays inside the chart and overlaps no other label."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed = []
    sides = [((5, 3), "left", "bottom"), ((5, -3), "left", "top"), ((-5, 3), "right", "bottom"),
             ((-5, -3), "right", "top"), ((5, 11), "left", "bottom"), ((5, -11), "left", "top")]
    for row in sorted(rows, key=lambda r: (-r["quality"], r["median_s"])):
        colour = COLOURS.get(row["model"], "#4b5563")
        for offset, ha, va in sides:
            text = ax.annotate(f"{row['label']} ({row['model']}, n={row['n']})", (row["median_s"], row["quality"]),
                               xytext=offset, textcoords="offset points", fontsize=7.5, color=colour, ha=ha, va=va)
            box = text.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if (inside and not any(box.overlaps(other) for other in placed)) or (offset, ha, va) == sides[-1]:
                placed.append(box)
                break
            text.remove()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="results files (default: all under docs/results)")
    parser.add_argument("--out", type=Path, default=Path("docs/plots"))
    args = parser.parse_args(argv)
    files = args.files or default_files()
    for name, rows in sorted(points(files).items()):
        path = plot(name, rows, args.out)
        shown = path.relative_to("docs") if path.is_relative_to("docs") else path  # as docs/benchmarks.md links it
        print(f"![{name}: quality against seconds per question]({shown.as_posix()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
