"""How much of a method's F1 loss is the answer's form alone (issue 32, item 5), measured before changing prompts.

    python -m benchmarks.answer_form RESULTS.json [RESULTS.json ...] [--methods oner,ircot] [--out OUT.json]

For every answer of the saved runs that scores below F1 1 against the gold and its aliases, it asks whether the
answer is right in another form:

- **number**: the same number as a word or in digits ("8" for "eight");
- **country**: the country where the gold names its people, or the reverse ("France" for "French"; the table is
  ``benchmarks/data/demonyms.yaml``);
- **says more**: the whole gold inside an answer at most twice its length and three words ("Paris, France" for
  "Paris"), unless the answer names both options of an "A or B" question;
- **spelling**: the same words but for accents, a plural or a possessive ("Yellowcraigs" for "Yellowcraig").

Abstentions ("The selected sources do not answer ...") are never right in another form. Prints, per results file
and method, the F1, the answers below 1, how many of those are right in another form
(by rule and by question type), and the F1 they would give if their form were right: the most a change of form
alone could win. Nothing is re-run; no model is loaded.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import yaml

from benchmarks.by_type import types_of
from pipeline.evaluation.data import load_items
from pipeline.methods.ircot.plan import options
from pipeline.text import normalize_unaccented

DEMONYMS = Path(__file__).parent / "data" / "demonyms.yaml"
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
RULES = ("number", "country", "says more", "spelling")


@lru_cache(maxsize=1)
def _countries() -> dict[str, str]:
    table = yaml.safe_load(DEMONYMS.read_text(encoding="utf-8"))
    return {normalize_unaccented(name): country
            for country, names in table.items() for name in [country, *names]}


def _numbers(text: str) -> str:
    return " ".join(str(NUMBERS.index(w)) if w in NUMBERS else w for w in text.split())


def _stem(word: str) -> str:
    return re.sub(r"(?:es|s)$", "", word) if len(word) > 3 else word


def form_rule(question: str, prediction: str, golds: list[str]) -> str | None:
    """The rule under which ``prediction`` is one of ``golds`` in another form (``RULES``), or None."""
    said = normalize_unaccented(prediction)
    if not said:
        return None
    choices = [normalize_unaccented(o) for o in options(question)]
    for gold in map(normalize_unaccented, golds):
        if not gold:
            continue
        if said == gold:  # equal but for accents, which the metric keeps
            return "spelling"
        if _numbers(said) == _numbers(gold):
            return "number"
        countries = _countries()
        if said in countries and countries[said] == countries.get(gold):
            return "country"
        both = len(choices) == 2 and all(f" {c} " in f" {said} " for c in choices if c)
        short = len(said.split()) <= 2 * len(gold.split()) + 3
        if f" {gold} " in f" {said} " and short and not both:
            return "says more"
        if [_stem(w) for w in said.split()] == [_stem(w) for w in gold.split()]:
            return "spelling"
    return None


def measure(path: Path, methods: list[str] | None) -> list[dict]:
    """One summary per method of a results file (see the module's docstring)."""
    run = json.loads(path.read_text())
    items = {item.id: item for item in load_items(Path(run["data"]))}
    kinds = types_of(run["data"])
    out = []
    for method in sorted({r["method"] for r in run["items"]}):
        if methods and method not in methods:
            continue
        records = [r for r in run["items"] if r["method"] == method and "f1" in r["scores"]]
        if not records:
            continue
        rules: Counter = Counter()
        types: Counter = Counter()
        examples = []
        f1_if_right = []
        for r in records:
            item = items[r["id"]]
            wrong = r["scores"]["f1"] < 1 and not r.get("abstained")
            rule = form_rule(item.question, r["prediction"], item.answers) if wrong else None
            f1_if_right.append(1.0 if rule else r["scores"]["f1"])
            if rule:
                rules[rule] += 1
                types[kinds.get(item.id, "-")] += 1
                examples.append({"rule": rule, "question": item.question, "prediction": r["prediction"],
                                 "gold": item.answers})
        out.append({"file": str(path), "data": run["data"], "method": method, "n": len(records),
                    "f1": round(100 * statistics.fmean(r["scores"]["f1"] for r in records), 1),
                    "below_1": sum(r["scores"]["f1"] < 1 for r in records),
                    "form_only": sum(rules.values()), "by_rule": dict(rules), "by_type": dict(types),
                    "f1_if_form_right": round(100 * statistics.fmean(f1_if_right), 1), "examples": examples})
    return out


def table(rows: list[dict]) -> str:
    """The Markdown table of docs/benchmarks.md ("Answers in another form")."""
    lines = ["| results file | method | n | F1 | answers below F1 1 | right in another form | by rule | "
             "F1 if their form were right |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        rules = ", ".join(f"{k} {v}" for k, v in sorted(row["by_rule"].items())) or "-"
        lines.append(f"| {Path(row['file']).name} | {row['method']} | {row['n']} | {row['f1']} | {row['below_1']} | "
                     f"{row['form_only']} | {rules} | {row['f1_if_form_right']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--methods", default=None, help="comma-separated; default: every method of each file")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    methods = [m for m in (args.methods or "").split(",") if m]
    rows = [row for path in args.results for row in measure(path, methods)]
    print(table(rows))
    for row in rows:
        for example in row["examples"][:4]:
            print(f"- {Path(row['file']).name}, {row['method']}, {example['rule']}: {example['question']} -> "
                  f"{example['prediction']!r} (gold {example['gold']})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
