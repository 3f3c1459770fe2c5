"""Accuracy and seconds per question of methods (Auto included) over real documents nobody here wrote (issue 33).

The documents are a PDF manual, a PDF paper and 17 HTML pages of a third manual from Debian packages
(``benchmarks/data/real_documents/SOURCES.md``); the 54 questions have gold answers written down before any run
(``questions.jsonl``).

    python -m benchmarks.real_documents --methods oner,auto [--model default] [--out real-documents.json] \\
        [--data-dir DIR] [--limit N] [--ids rd01,rd02] [--trace-dir DIR]

The documents are ingested into one collection, ``real-docs``, of a data directory kept apart from the app's
(``--data-dir``, default ``$RQA_DATA_DIR/real-documents``; skipped when it already holds them all), as
``python -m pipeline ingest`` does. Every question then runs through the app's own ``RunService.for_runtime``
with the browser's default settings (long, cited answers), one method after another over all questions (not
question by question, so that a method never finds the previous method's prompt for the same question in the
model's prefix cache). The model is loaded before the clock starts. An Auto run also records what
``pipeline.auto.auto_record`` keeps (its quick answer, the seconds to it, the check's signals).

Scores, per item in 0..1 (``score``): an answerable item is right when its answer, citations left out, contains
an accepted answer (both normalised: lower case, NFKC, punctuation and white space collapsed, whole tokens, so a
number matches only the same number: "3" is not in "30" or "3.5"); a ``two-part`` or ``ambiguous`` item scores the
share of its parts (or readings) found; a run that abstained scores 0 on an answerable item. An ``unanswerable``
item is right when the run abstained or its answer says the sources do not answer
(``pipeline.support.says_unanswerable``). Per method it prints n, the mean score (accuracy), the mean by kind,
median and p90 seconds, model calls, abstentions, errors and the routes taken ("oner>ircot": Auto's quick
answer, then IRCoT), and writes a results JSON with the machine, date and commit (resumable: items already in
``--out`` for the same questions, documents, model and settings are skipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data" / "real_documents"
QUESTIONS = DATA / "questions.jsonl"
DOCS = DATA / "docs"
COLLECTION = "real-docs"
KINDS = ("lookup", "two-part", "multi-step", "ambiguous", "unanswerable")
WITH_PARTS = ("two-part", "ambiguous")


@dataclass(frozen=True)
class Question:
    """One question of ``questions.jsonl`` (the schema is in SOURCES.md)."""

    id: str
    kind: str
    question: str
    answers: list[str]
    parts: list[list[str]] = field(default_factory=list)
    source: str = ""
    files: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    note: str = ""


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    """The questions of ``path``; ``ValueError`` naming the line of a malformed one."""
    out: list[Question] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            question = Question(**json.loads(line))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        problem = _problem(question)
        if problem:
            raise ValueError(f"{path}:{number} ({question.id}): {problem}")
        out.append(question)
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: ids repeat: {sorted(i for i, n in Counter(ids).items() if n > 1)}")
    return out


def _problem(q: Question) -> str | None:
    if q.kind not in KINDS:
        return f"kind {q.kind!r} is not one of {', '.join(KINDS)}"
    if not q.question.strip():
        return "empty question"
    if q.kind == "unanswerable":
        return "an unanswerable question has no answers" if q.answers or q.parts else None
    if not q.answers:
        return "no accepted answers"
    if q.kind in WITH_PARTS and len(q.parts) < 2:
        return f"a {q.kind} question needs two parts or more"
    if q.parts and sorted(q.answers) != sorted(a for p in q.parts for a in p):
        return "answers must be the union of the parts"
    if any(not tokens(a) for a in q.answers):
        return "an accepted answer has no letter or digit"
    return None


# -- scoring (pure) ---------------------------------------------------------------------------------------------

# A run of letters and digits, with the decimal or thousands parts of a number kept ("4.2.0", "0.0082", "1,000").
_TOKEN = re.compile(r"[^\W_]+(?:[.,]\d+)*")


def tokens(text: str) -> list[str]:
    """``text`` lower-cased (NFKC: "ﬁ" is "fi") as tokens of letters and digits; punctuation, underscores and
    white space only separate them."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def normalise(text: str) -> str:
    return " ".join(tokens(text))


def mentions(answer: str, alias: str) -> bool:
    """Whether ``answer`` holds ``alias`` as whole tokens ("--skip-text" in "use skip text"; "3" not in "30")."""
    wanted = normalise(alias)
    return bool(wanted) and f" {wanted} " in f" {normalise(answer)} "


def found(answer: str, aliases: list[str]) -> bool:
    return any(mentions(answer, alias) for alias in aliases)


def share_of_parts(answer: str, parts: list[list[str]]) -> float:
    """The share of ``parts`` (each a list of aliases) that ``answer`` mentions."""
    return sum(found(answer, part) for part in parts) / len(parts) if parts else 0.0


def declines(answer: str, abstained: bool) -> bool:
    """Whether the run said that the sources do not answer: it abstained, or its answer says so."""
    from pipeline.support import says_unanswerable

    return abstained or says_unanswerable(answer)


def score(question: Question, answer: str, abstained: bool = False) -> float:
    """The item's score in 0..1 (see the module's description); citation markers such as [2] are left out."""
    from pipeline.text import strip_citations

    answer = strip_citations(answer or "")
    if question.kind == "unanswerable":
        return float(declines(answer, abstained))
    if abstained:
        return 0.0
    if question.parts:
        return share_of_parts(answer, question.parts)
    return float(found(answer, question.answers))


def summarise(records: list[dict]) -> dict[str, dict]:
    """Per method: n, accuracy and accuracy by kind (mean score x100), median and p90 seconds, mean model calls,
    abstentions, errors, and how many runs took each route ("oner", or "oner>ircot" when Auto went deeper)."""
    from pipeline.evaluation.tables import percentile

    by_method: dict[str, list[dict]] = {}
    for record in records:
        by_method.setdefault(record["method"], []).append(record)
    out = {}
    for method, rows in by_method.items():
        seconds = [r["seconds"] for r in rows]
        kinds = {k: [r["score"] for r in rows if r["kind"] == k] for k in KINDS}
        out[method] = {
            "n": len(rows),
            "accuracy": 100 * statistics.fmean(r["score"] for r in rows),
            "by_kind": {k: {"n": len(v), "accuracy": 100 * statistics.fmean(v)} for k, v in kinds.items() if v},
            "median_s": statistics.median(seconds),
            "p90_s": percentile(seconds, 90),
            "llm_calls_mean": statistics.fmean(r["llm_calls"] for r in rows),
            "abstained": sum(r["abstained"] for r in rows),
            "errors": sum(bool(r["errors"]) for r in rows),
            "routes": dict(Counter(">".join(r["routes"]) or "-" for r in rows).most_common()),
        }
    return out


def report(summary: dict[str, dict]) -> str:
    """The Markdown table of ``summarise``'s output."""
    from pipeline.evaluation.tables import table

    kinds = [k for k in KINDS if any(k in s["by_kind"] for s in summary.values())]
    rows = []
    for method, s in summary.items():
        rows.append([method, s["n"], f"{s['accuracy']:.1f}"]
                    + [f"{s['by_kind'][k]['accuracy']:.1f} ({s['by_kind'][k]['n']})" if k in s["by_kind"] else "-"
                       for k in kinds]
                    + [f"{s['median_s']:.1f}", f"{s['p90_s']:.1f}", f"{s['llm_calls_mean']:.1f}", s["abstained"],
                       s["errors"], ", ".join(f"{m} {n}" for m, n in s["routes"].items())])
    return table(["method", "n", "accuracy"] + [f"{k} (n)" for k in kinds]
                 + ["median s", "p90 s", "LLM calls", "abstained", "errors", "routes"], rows)


# -- the documents and the runs --------------------------------------------------------------------------------

def document_files(folder: Path = DOCS) -> list[tuple[Path, str]]:
    """(path, name in the collection) of every document: its path under ``folder`` ("ocrmypdf/api.html")."""
    return [(p, p.relative_to(folder).as_posix()) for p in sorted(folder.rglob("*")) if p.is_file()]


def file_hashes(folder: Path = DOCS) -> dict[str, str]:
    return {name: hashlib.sha256(path.read_bytes()).hexdigest() for path, name in document_files(folder)}


def ensure_collection(runtime, folder: Path = DOCS, progress=None) -> str:
    """Ingest the documents into ``real-docs`` unless every one of them is already there whole; returns
    "present" or "ingested". ``RuntimeError`` when a file fails (a different file of the same name, say)."""
    from corpora.ingest import ingest_files
    from pipeline.access import PRIVATE

    files = document_files(folder)
    hashes = file_hashes(folder)
    store = runtime.store
    if store.exists(COLLECTION):
        collection = store.open(COLLECTION)
        if all(any(v.complete and v.sha256 == hashes[name] for v in collection.file_versions(name))
               for _, name in files):
            return "present"
    new = not store.exists(COLLECTION)
    collection = store.create(COLLECTION)
    if new:  # as `python -m pipeline ingest` leaves a new collection: the admins', private
        runtime.access.set(COLLECTION, owner="", visibility=PRIVATE)
    outcomes = ingest_files(collection, files, progress, keep_folders=True)
    failed = [o.message for o in outcomes if o.status == "failed"]
    if failed:
        raise RuntimeError("ingestion failed: " + "; ".join(failed))
    return "ingested"


def run_question(service, question: Question, method: str, model: str | None, settings) -> dict:
    """Run one question as the app does and return its record, read from the run's events and folded state."""
    from pipeline.payloads import RoutePayload
    from pipeline.service import AUTO, RunRequest

    request = RunRequest(question=question.question, method=method, collections=(COLLECTION,), model=model,
                         settings=settings)
    started = time.perf_counter()
    run = service.start(request)
    events = list(run)
    seconds = time.perf_counter() - started
    state = run.state
    answer = state.answer_text
    abstained = bool(state.answer and state.answer.abstained)
    cost = state.cost()
    extra = {}
    if method == AUTO:
        from pipeline.auto import auto_record

        extra = auto_record(state)
    return {
        "id": question.id,
        "kind": question.kind,
        "method": method,
        "question": question.question,
        "answer": answer,
        "gold": question.parts or question.answers,
        "score": score(question, answer, abstained),
        "routes": [e.payload.method for e in events if isinstance(e.payload, RoutePayload)],
        "seconds": round(seconds, 3),
        "abstained": abstained,
        "says_unanswerable": declines(answer, False),
        "llm_calls": cost["llm_calls"],
        "prompt_tokens": cost["prompt_tokens"],
        "completion_tokens": cost["completion_tokens"],
        "llm_s": round(cost["llm_s"], 3),
        "cited": [f"{p.source} p. {p.page}" if p.page else str(p.source) for p in state.cited_passages()],
        "errors": state.errors(),
        **extra,
    }


def _config(args, methods: list[str], settings) -> dict:
    from pipeline.evaluation.harness import method_config

    return json.loads(json.dumps({  # as it reads back from the results file
        "questions": QUESTIONS.relative_to(ROOT).as_posix(),
        "questions_sha256": hashlib.sha256(QUESTIONS.read_bytes()).hexdigest(),
        "documents": file_hashes(),
        "collection": COLLECTION,
        "model": args.model,
        "settings": settings.model_dump(exclude={"methods"}),
        "method_configs": {m: method_config(m, settings) for m in methods},
    }))


def _previous(path: Path, config: dict) -> list[dict]:
    """The items of an earlier run in ``path`` with the same questions, documents, model and settings (its
    methods' configurations are added to ``config``); ``ValueError`` when it was run with others."""
    if not path.exists():
        return []
    old = json.loads(path.read_text(encoding="utf-8"))
    before = old.get("config", {})
    same = all(before.get(k) == v for k, v in config.items() if k != "method_configs")
    changed = [m for m, c in config["method_configs"].items()
               if m in before.get("method_configs", {}) and json.loads(json.dumps(c)) != before["method_configs"][m]]
    if not same or changed:
        raise ValueError(f"{path} holds a run with other questions, documents, model, settings or prompts. Choose "
                         "another --out, or delete the file to start over.")
    config["method_configs"] = {**before.get("method_configs", {}), **config["method_configs"]}
    return list(old.get("items", []))


def main(argv: list[str] | None = None) -> int:
    # A command's main reads top to bottom: its arguments, its set-up, its loop and its report.
    from pipeline.runtime import default_data_dir

    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_documents", description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default="oner,auto", help="comma-separated: auto and any method "
                        "(default: %(default)s)")
    parser.add_argument("--model", default="default", help="default | fast | any model the runtime offers")
    parser.add_argument("--out", type=Path, default=Path("real-documents.json"))
    parser.add_argument("--data-dir", type=Path, default=default_data_dir() / "real-documents",
                        help="the data directory holding the collection, apart from the app's (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, help="the first N questions")
    parser.add_argument("--ids", default="", help="comma-separated question ids (default: all)")
    parser.add_argument("--trace-dir", type=Path, default=None, help="save each run's trace here")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="change a setting from the browser's default, e.g. --set passage_window=60 (repeatable)")
    args = parser.parse_args(argv)

    from corpora.store import CollectionError
    from models.errors import ModelError
    from pipeline.evaluation.tables import machine
    from pipeline.json_file import write_json
    from pipeline.methods import METHODS, settings_models
    from pipeline.progress import ProgressBar
    from pipeline.runtime import Runtime, RuntimeConfig
    from pipeline.service import AUTO, RunService
    from pipeline.settings import Settings
    from benchmarks import commit as _commit

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m != AUTO and m not in METHODS]
    if unknown or not methods:
        print(f"error: unknown method(s) {', '.join(unknown) or '(none)'}; choose from {AUTO}, "
              f"{', '.join(METHODS)}", file=sys.stderr)
        return 2
    questions = load_questions()
    wanted = {i.strip() for i in args.ids.split(",") if i.strip()}
    if wanted - {q.id for q in questions}:
        print(f"error: no question {', '.join(sorted(wanted - {q.id for q in questions}))}", file=sys.stderr)
        return 2
    questions = [q for q in questions if not wanted or q.id in wanted][: args.limit]
    try:  # the browser's defaults (long, cited answers) unless --set changes one
        settings = Settings().changed(dict(o.partition("=")[::2] for o in args.overrides), settings_models())
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = _config(args, methods, settings)
    try:
        records = _previous(args.out, config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    try:
        runtime = Runtime(RuntimeConfig(data_dir=args.data_dir, model=args.model))
    except (ModelError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = {"config": {**config, "commit": _commit()}, "machine": machine(), "items": records}
    try:
        clock = time.perf_counter()
        bar = ProgressBar(f"Ingesting into {COLLECTION}")
        status = ensure_collection(runtime, progress=bar)
        bar.close()
        collection = runtime.store.open(COLLECTION)
        result["collection"] = {"status": status, "passages": collection.count(), "files": len(collection.files()),
                                "seconds": round(time.perf_counter() - clock, 1)}
        print(f"{COLLECTION}: {status}, {collection.count()} passages in {len(collection.files())} files",
              file=sys.stderr)
        llm = runtime.llm(args.model)  # loaded before the clock starts, as in a running app
        result["backend"] = llm.backend_settings()
        service = RunService.for_runtime(runtime, trace_dir=args.trace_dir)
        done = {(r["id"], r["method"]) for r in records}
        todo = [(m, q) for m in methods for q in questions if (q.id, m) not in done]
        for n, (method, question) in enumerate(todo, 1):
            record = run_question(service, question, method, args.model, settings)
            records.append(record)
            result["summary"] = summarise(records)
            write_json(args.out, result)
            print(f"[{n}/{len(todo)}] {method} {question.id} {question.kind}: {record['score']:.2f} "
                  f"{record['seconds']:.1f} s via {'>'.join(record['routes']) or '-'} "
                  f"{' '.join(record['answer'].split())[:90]!r}", file=sys.stderr, flush=True)
    except (CollectionError, ModelError, RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        runtime.close()

    result["summary"] = summarise(records)
    write_json(args.out, result)
    print(f"{COLLECTION} ({len(document_files())} files) · model {args.model} · {machine()}\n")
    print(report(result["summary"]))
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
