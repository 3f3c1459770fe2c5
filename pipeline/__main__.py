"""Command line: ask a question, ingest files, list collections, prepare models.

    python -m pipeline ask "QUESTION" --method oner --corpus demo [--json] [--model fast|default|PATH]
    python -m pipeline ingest COLLECTION FILE...
    python -m pipeline collections
    python -m pipeline prepare-models default fast
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from tqdm import tqdm

from corpora.demo import DEMO_COLLECTION
from corpora.ingest import ingest_files
from corpora.store import CollectionError
from models.errors import ModelError
from models.registry import BUNDLED, prepare_bundled
from pipeline.events import EventKind, Status
from pipeline.methods import METHODS, run_method
from pipeline.progress import ProgressBar
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir
from pipeline.settings import Settings
from pipeline.web import WebSource


def _runtime(args) -> Runtime:
    return Runtime(RuntimeConfig(data_dir=Path(args.data_dir), model=args.model, chroma_url=args.chroma_url))


def _ask(args) -> int:
    runtime = _runtime(args)
    collections = [c for c in args.corpus.split(",") if c] if args.corpus else []
    if DEMO_COLLECTION in collections:
        bar = ProgressBar("Ingesting the demo corpus (first run only)")
        runtime.ensure_demo(bar)
        bar.close()
    settings = Settings(top_k=args.top_k, use_web=args.web)
    ctx = runtime.context(collections, settings=settings, web=WebSource() if args.web else None)
    failed = False
    answer_open = False
    for event in run_method(args.method, args.question, ctx):
        if args.json:
            print(event.to_json(), flush=True)
            failed |= event.kind == EventKind.ERROR
            continue
        if event.kind == EventKind.ANSWER_TOKEN:
            if not answer_open:
                print("\nAnswer: ", end="")
                answer_open = True
            print(event.payload["text"], end="", flush=True)
        elif event.kind == EventKind.ANSWER and event.status == Status.DONE:
            print()
            for passage in event.payload.get("passages", []):
                mark = "*" if passage["number"] in event.payload["citations"] else " "
                where = passage.get("url") or passage.get("source", "")
                print(f" {mark}[{passage['number']}] {passage['title']} ({where})")
        elif "node" in event.payload and event.status == Status.DONE and event.payload["state"] != "root":
            node = event.payload["node"]
            print(f"{'  ' * node['depth']}[{event.payload['state']}] {node['question']} -> {node['answer']}"
                  + (f"  ({event.payload['reason']})" if event.payload.get("reason") else ""))
        elif event.kind == EventKind.HOP and event.status == Status.DONE:
            p = event.payload
            found = f"; +{len(p.get('passages', []))} passages" if p.get("query") else ""
            print(f"- Step {p.get('step')}: {p.get('sentence') or '(nothing)'}{found} ({event.elapsed_s:.1f} s)")
        elif event.kind == EventKind.RETRIEVE and event.status == Status.DONE:
            print(f"- {event.title}: {len(event.payload.get('passages', []))} passages ({event.elapsed_s:.2f} s)")
        elif event.kind in (EventKind.WARNING, EventKind.ERROR):
            failed |= event.kind == EventKind.ERROR
            print(f"! {event.title}: {event.payload.get('message', '')}", file=sys.stderr)
    return 1 if failed else 0


def _ingest(args) -> int:
    runtime = _runtime(args)
    collection = runtime.store.create(args.collection)
    bar = ProgressBar(f"Ingesting into {args.collection}")
    outcomes = ingest_files(collection, [(Path(f), Path(f).name) for f in args.files], bar)
    bar.close()
    for outcome in outcomes:
        print(f"{outcome.status:9} {outcome.name}: {outcome.passages} passages {outcome.message}".rstrip())
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _collections(args) -> int:
    for summary in _runtime(args).store.summaries():
        print(f"{summary.name}: {summary.passages} passages in {len(summary.files)} files")
    return 0


def _prepare(args) -> int:
    for key in args.models:
        bar = tqdm(total=BUNDLED[key].size, desc=f"Assembling the {key} model", unit="B", unit_scale=True,
                   file=sys.stderr, leave=False)
        path = prepare_bundled(key, progress=lambda done, total: bar.update(done - bar.n))
        bar.close()
        print(f"{key}: {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(default_data_dir()), help="collections live here")
    parser.add_argument("--chroma-url", default=None, help="a Chroma server (chroma run) instead of the "
                        "embedded store, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", default="default",
                        help="default | fast | PATH.gguf | openai:URL[#MODEL] (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="answer a question and print the steps")
    ask.add_argument("question")
    ask.add_argument("--method", choices=sorted(METHODS), default="oner")
    ask.add_argument("--corpus", default=DEMO_COLLECTION, help="comma-separated collections ('' for none)")
    ask.add_argument("--web", action="store_true", help="add DuckDuckGo results")
    ask.add_argument("--top-k", type=int, default=Settings().top_k)
    ask.add_argument("--json", action="store_true", help="print the step events as JSONL")
    ask.set_defaults(handler=_ask)

    ingest = sub.add_parser("ingest", help="add files to a collection (created if missing)")
    ingest.add_argument("collection")
    ingest.add_argument("files", nargs="+")
    ingest.set_defaults(handler=_ingest)

    sub.add_parser("collections", help="list collections").set_defaults(handler=_collections)

    prepare = sub.add_parser("prepare-models", help="assemble and verify bundled models")
    prepare.add_argument("models", nargs="+", choices=sorted(BUNDLED))
    prepare.set_defaults(handler=_prepare)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ModelError, CollectionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
