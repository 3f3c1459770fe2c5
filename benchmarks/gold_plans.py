"""How far IRCoT hop by hop goes when its plan is right: MuSiQue items planned by their gold decompositions.

    python -m benchmarks.gold_plans data/eval/musique.jsonl --out runs/gold-plans.json [--ids A,B] [--limit N]
    python -m benchmarks.gold_plans data/eval/musique.jsonl --summarize RESULTS.json [MORE.json ...]
    python -m benchmarks.gold_plans data/eval/musique.jsonl --hop-reading TRACE_DIR

``--hop-reading`` reads a gold-plan run's traces (``--trace-dir``): for each hop reached with every earlier hop
answered right, whether the gold hop's supporting passage was among the hop's passages, and whether the hop's
answer was right (F1 of at least 0.5 against the gold hop answer), wrong, or "not found".

A diagnostic, never a method: MuSiQue gives each question's decomposition (one sub-question per hop, "#k" for an
earlier hop's answer; a Wikidata hop is written "X >> relation" and is worded here as a question, by fixed
templates written before any run). Every item is run hop by hop (``IRCoTSettings.mode = "hops"``) with today's
other defaults, the closed corpus and the default model, through the run service as ``pipeline.evaluate`` runs it;
the one difference is the plan call, answered with the gold plan instead of by the model (no model call, no
cost). Everything after the plan (retrieval for each hop, the hop reader and its checks, the answer) is IRCoT's
own. The results file has ``pipeline.evaluate``'s schema, so ``benchmarks.compare_results`` pairs it with a run of
today's defaults on the same items: the difference bounds what a better planner could give at this model size.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from tqdm import tqdm

from models.llm import ChatModel, ChatResult
from models.rerankers import RankFusionReranker
from pipeline.evaluation.data import load_items
from pipeline.evaluation.harness import (ResultsFile, closed_corpus, data_config, make_context, method_config,
                                         run_item)
from pipeline.evaluation.tables import machine
from pipeline.metrics import f1
from pipeline.methods.ircot.chain import IRCoTSettings
from pipeline.prompting import load_prompt
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
from pipeline.service import RunService
from pipeline.settings import Settings

# "X >> relation" hops worded as questions; {x} is the subject. Any other relation: "What is the R of X?", or
# "Who is ..." for the relations of people below.
RELATIONS = {
    "located in the administrative territorial entity": "In which administrative territorial entity is {x} located?",
    "place of birth": "Where was {x} born?",
    "place of death": "Where did {x} die?",
    "shares border with": "What shares a border with {x}?",
    "country": "Which country is {x} in?",
    "named after": "What is {x} named after?",
    "part of": "What is {x} part of?",
    "owned by": "Who owns {x}?",
    "capital of": "What is {x} the capital of?",
    "has part": "What is part of {x}?",
    "member of sports team": "Which sports team was {x} a member of?",
    "member of political party": "Which political party was {x} a member of?",
    "member of": "What was {x} a member of?",
    "educated at": "Where was {x} educated?",
    "licensed to broadcast to": "What place is {x} licensed to broadcast to?",
    "position held": "What position did {x} hold?",
    "location": "Where is {x} located?",
    "headquarters location": "Where is the headquarters of {x}?",
    "country of citizenship": "What is the country of citizenship of {x}?",
}
PEOPLE = {"spouse", "sibling", "father", "mother", "child", "performer", "author", "producer", "creator", "composer",
          "cast member", "director", "screenwriter", "founded by", "employer"}


def hop_question(text: str) -> str:
    """A gold decomposition step as a sub-question: "X >> relation" by the templates, any other step as written,
    capitalised and ending in one question mark."""
    if ">>" in text:
        subject, relation = (part.strip() for part in text.split(">>", 1))
        if relation in RELATIONS:
            text = RELATIONS[relation].format(x=subject)
        else:
            text = f"{'Who' if relation in PEOPLE else 'What'} is the {relation} of {subject}?"
    text = re.sub(r"\s+", " ", text).strip().rstrip("?").strip()
    return text[:1].upper() + text[1:] + "?"


def gold_plan(decomposition: list[dict]) -> str:
    """The plan text IRCoT's parser reads: the numbered sub-questions, then the last one as the answer."""
    lines = [f"{n}. {hop_question(step['question'])}" for n, step in enumerate(decomposition, 1)]
    return "\n".join(lines + [f"Answer: #{len(decomposition)}"])


class GivenPlan(ChatModel):
    """A chat model whose plan call (the ``ircot_plan`` prompt's system message) is answered with ``plan``; every
    other call goes to ``llm``. It answers ``stream``, which the run's Stop wrapper (``CancellableModel``) calls."""

    def __init__(self, llm: ChatModel, plan: str) -> None:
        self.llm, self.plan, self.planned = llm, plan, 0
        self.name = llm.name
        self.system = load_prompt("ircot_plan").messages(question="")[0]["content"]

    def stream(self, messages, options):
        if messages and messages[0].get("content") == self.system:
            self.planned += 1
            yield ChatResult(text=self.plan)
            return
        yield from self.llm.stream(messages, options)

    def backend_settings(self) -> dict:
        return self.llm.backend_settings()

    def __getattr__(self, name):
        return getattr(self.llm, name)


def chain_end(record: dict) -> str:
    """How an IRCoT record's chain ended: the sentence chain, every hop answered, or stopped at a hop not found."""
    hops = record.get("hops") or []
    if not hops:
        return "sentence chain"
    return "stopped at a hop not found" if hops[-1].get("answer") is None else "every hop answered"


def gold_hops_found(record: dict, decomposition: list[dict]) -> int:
    """How many of the item's gold hop answers some hop of the chain answered (F1 of at least 0.5 against it)."""
    answers = [hop.get("answer") or "" for hop in record.get("hops") or []]
    return sum(any(f1(answer, step["answer"]) >= 0.5 for answer in answers) for step in decomposition)


def summarize(rows: dict[str, dict], path: Path) -> str:
    """F1 by number of hops and by how the chains ended, and the gold hop answers the hops found, of one file."""
    records = [r for r in json.loads(path.read_text())["items"] if r["method"] == "ircot"]
    lines = [f"{path} ({len(records)} items)", "| group | n | F1 | gold hop answers found |", "|---|---|---|---|"]
    groups: dict[str, list[dict]] = {"all": records}
    for record in records:
        hops = len(rows[record["id"]]["decomposition"])
        groups.setdefault(f"{hops} hops", []).append(record)
        groups.setdefault(chain_end(record), []).append(record)
    order = ["all", "2 hops", "3 hops", "4 hops", "every hop answered", "stopped at a hop not found", "sentence chain"]
    for name, group in sorted(groups.items(), key=lambda pair: order.index(pair[0])):
        found = sum(gold_hops_found(r, rows[r["id"]]["decomposition"]) for r in group)
        total = sum(len(rows[r["id"]]["decomposition"]) for r in group)
        mean = 100 * sum(r["scores"]["f1"] for r in group) / len(group)
        lines.append(f"| {name} | {len(group)} | {mean:.1f} | {found} of {total} |")
    seconds = sorted(r["cost"]["wall_s"] for r in records)
    lines.append(f"median seconds per item: {seconds[len(seconds) // 2]:.1f}")
    return "\n".join(lines)


def hop_reading(rows: dict[str, dict], trace_dir: Path) -> str:
    """The table of ``--hop-reading``: hops reached on a right chain, by position, passage found and answer."""
    counts: dict[tuple[int, bool, str], int] = {}
    for path in sorted(trace_dir.glob("trace-ircot-*.jsonl")):
        row = rows[path.stem.removeprefix("trace-ircot-")]
        steps = row["decomposition"]
        asked: dict[int, dict] = {}
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event["kind"] == "subquestion" and event["status"] == "done":
                asked[event["payload"]["step"]] = event["payload"]  # a hop asked again: its last asking
        for number in sorted(k for k in asked if k <= len(steps)):
            hop, gold = asked[number], steps[number - 1]
            held = row["passages"][gold["paragraph_support_idx"]]["title"] in {p.get("title") for p in hop["passages"]}
            answer = hop.get("answer") or ""
            said = "not found" if not answer else "right" if f1(answer, gold["answer"]) >= 0.5 else "wrong"
            counts[number, held, said] = counts.get((number, held, said), 0) + 1
            if said != "right":
                break
    lines = ["| hop | its gold passage among its passages | right | wrong | not found |", "|---|---|---|---|---|"]
    for number in sorted({key[0] for key in counts}):
        for held in (True, False):
            cells = [counts.get((number, held, said), 0) for said in ("right", "wrong", "not found")]
            if any(cells):
                lines.append(f"| {number} | {'yes' if held else 'no'} | " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gold_plans", description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="MuSiQue JSONL (data/eval/musique.jsonl: its decompositions)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--summarize", nargs="+", type=Path, default=None,
                        help="print the summary of these results files (IRCoT records), run nothing")
    parser.add_argument("--ids", default=None, help="comma-separated item ids: only these")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--trace-dir", type=Path, default=None)
    parser.add_argument("--hop-reading", type=Path, default=None, metavar="TRACE_DIR",
                        help="print how the hops of a gold-plan run's traces were read, run nothing")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "evaluation")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: no such data file: {args.data}", file=sys.stderr)
        return 2
    rows = {row["id"]: row for row in map(json.loads, args.data.read_text().splitlines()) if row}
    if args.hop_reading:
        print(hop_reading(rows, args.hop_reading))
        return 0
    if args.summarize:
        print("\n\n".join(summarize(rows, path) for path in args.summarize))
        return 0
    if args.out is None:
        parser.error("--out is needed to run")
    items = load_items(args.data)[: args.limit]
    if args.ids:
        wanted = set(args.ids.split(","))
        items = [item for item in items if item.id in wanted]
    if any(not rows[item.id].get("decomposition") for item in items):
        print("error: every item needs a decomposition (MuSiQue's)", file=sys.stderr)
        return 2
    settings = Settings(methods={"ircot": IRCoTSettings(mode="hops")})
    config = data_config(args.data, "default", "closed", settings.top_k)
    results = ResultsFile(args.out, config, machine())
    results.use_method("ircot", {**method_config("ircot", settings), "plan": "gold decomposition"})
    runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model="default"))
    collection = closed_corpus(runtime.store, load_items(args.data), config.data_sha256, None)
    llm = runtime.llm()
    results.use_backend(llm.backend_settings())
    reranker = RankFusionReranker(runtime.embeddings)
    service = RunService(trace_dir=args.trace_dir)
    for item in tqdm([i for i in items if not results.done(i.id, "ircot")], desc="gold plans", file=sys.stderr):
        plan = gold_plan(rows[item.id]["decomposition"])
        given = GivenPlan(llm, plan)
        ctx = make_context(given, item, "closed", collection, reranker, settings, runtime.llm)
        record = run_item(service, "ircot", item, ctx)
        record["gold_plan"] = plan.splitlines()
        record["plan_calls_answered"] = given.planned
        results.add(record)
    results.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
