"""Command line: ask a question, ingest files, list collections, prepare models.

    python -m pipeline ask "QUESTION" [--method auto|oner|toc|...] [--corpus demo] [--json] [--model fast]
    python -m pipeline ask --from-trace T.jsonl --edit prune:n4 --edit drop:3 [--edits EDITS.json]
    python -m pipeline ingest COLLECTION FILE...
    python -m pipeline collections
    python -m pipeline share COLLECTION private|shared|public [--owner NAME]
    python -m pipeline users add NAME [--admin] [--password-stdin] | users remove NAME | users list
    python -m pipeline graph COLLECTION...
    python -m pipeline prepare-models default fast

Options that apply to every command (--model, --data-dir, --chroma-url) go before or after the command.
``ask --help`` lists every method's settings as flags.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from tqdm import tqdm

from corpora.demo import DEMO_COLLECTION
from corpora.ingest import ingest_files
from corpora.isolated import ParseLimits, add_limit_arguments
from corpora.store import CollectionError
from models.errors import ModelError
from models.prepare import prepare
from models.registry import BUNDLED
from pipeline.access import PRIVATE, VISIBILITIES, CollectionAccess
from pipeline.accounts import AccountError, Accounts
from pipeline.edits import USAGE, parse_edit, read_edits_file
from pipeline.events import Status, StepEvent
from pipeline.fold import RunState
from pipeline.methods import METHODS, settings_models
from pipeline.payloads import ErrorPayload
from pipeline.progress import ProgressBar
from pipeline.resume import Resumption, targets
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir, default_model
from pipeline.service import AUTO, RunRequest, RunService
from pipeline.settings_cli import add_settings_arguments, settings_from_args
from pipeline.steps import kind_of
from pipeline.trace import load_trace
from pipeline.web import WebSource


def _runtime(args) -> Runtime:
    return Runtime(RuntimeConfig(data_dir=Path(args.data_dir), model=args.model, chroma_url=args.chroma_url))


class Printer:
    """Prints a run for people as its events arrive, from the table of step kinds: the route, each finished
    step's headline and lines (indented by its depth), the streamed answer, and warnings and errors on stderr."""

    def __init__(self) -> None:
        self.answer_open = False

    def show(self, event: StepEvent, state: RunState) -> None:
        kind = kind_of(event)
        if kind.role == "route":
            if self.answer_open:
                print()
            self.answer_open = False  # Auto going deeper: the deeper method's answer is streamed anew
            print(f"# {kind.title(event)}")
        elif getattr(event.payload, "preliminary", False):
            return  # Auto's quick answer, printed when it was written, now marked preliminary
        elif kind.role == "stream":
            if not self.answer_open:
                print("\nAnswer: ", end="")
                self.answer_open = True
            print(event.payload.text, end="", flush=True)
        elif kind.role == "note":
            if kind.alert:
                for line in kind.lines(event, state):
                    print(f"! {line}", file=sys.stderr)
        elif event.status == Status.DONE:
            lines = kind.lines(event, state)
            if self.answer_open and event is state.final_answer:
                print()  # the answer was streamed: its lines after it
                lines = lines[1:]
            else:
                indent = "  " * _depth(state, event)
                print(f"{indent}- {kind.title(event)} ({event.elapsed_s or 0:.1f} s)")
                lines = [f"{indent}    {line}" for line in lines]
            for line in lines:
                print(line)


def _depth(state: RunState, step: StepEvent) -> int:
    """How far ``step`` is indented: one level per ancestor, except where a sequence (a chain, a timeline)
    continues at the same level, as the reasoning view draws it."""
    depth, child, parent = 0, step, step.parent_id
    for _ in range(200):  # a hand-made trace may nest without end
        if parent not in state.steps:
            break
        above = state.steps[parent]
        continues = len(state.children.get(parent, [])) == 1 and (kind_of(above).sequential or kind_of(child).sequential)
        depth += 0 if continues else 1
        child, parent = above, above.parent_id
    return depth


def _ask(args) -> int:
    global _EXIT_AT_ONCE
    if args.from_trace:
        return _resume(args)
    if args.edit or args.edits:
        raise ValueError("--edit and --edits change a finished run: give its trace with --from-trace T.jsonl.")
    if not (args.question or "").strip():
        raise ValueError("ask needs a QUESTION (or --from-trace T.jsonl with edits).")
    settings = settings_from_args(args, settings_models()).model_copy(update={"use_web": args.web})  # before loading
    runtime = _runtime(args)
    # The embedder (importing torch and transformers: about 4 s) loads in the background while the model loads
    # here, outside the GIL. Not the other way round: loading a model points stdout and stderr at /dev/null
    # while it runs, which would swallow whatever this thread printed meanwhile. NoR embeds nothing.
    if args.method != "nor":
        runtime.load_embeddings_in_background()
    runtime.llm()
    collections = [c for c in args.corpus.split(",") if c] if args.corpus else []
    if DEMO_COLLECTION in collections:
        bar = ProgressBar("Ingesting the demo corpus (first run only)")
        runtime.ensure_demo(bar)
        bar.close()
    request = RunRequest(question=args.question, method=args.method, collections=tuple(collections),
                         settings=settings)
    trace_dir = Path(args.trace_dir) if args.trace_dir else None
    service = RunService.for_runtime(runtime, trace_dir=trace_dir)
    run = service.start(request, web=WebSource() if args.web else None)
    printer = Printer()
    for event in run:
        if args.json:
            print(event.to_json(), flush=True)
        else:
            printer.show(event, run.state)
    _saved(run.trace_files)
    _EXIT_AT_ONCE = True  # the answer is printed and the trace saved
    return 1 if run.state.errors() else 0


def _resume(args) -> int:
    """``ask --from-trace T.jsonl --edit ...``: the run of a saved trace resumed with edits (``--edit`` in the
    short form of ``pipeline.edits.parse_edit``, ``--edits`` a JSON file of them); only what they touch is
    recomputed (``RunService.resume``). Prints the new steps and answer and saves the new trace (beside the old
    one unless ``--trace-dir``). A trace that cannot be read or an edit that does not fit the run is a one-line
    error, exit code 2, before any model is loaded and with nothing written; without edits, lists what may be
    edited."""
    global _EXIT_AT_ONCE
    if args.question:
        raise ValueError("give either a QUESTION or --from-trace, not both: a resumed run keeps its question.")
    path = Path(args.from_trace)
    if not path.is_file():
        raise ValueError(f"there is no trace file {path}.")
    state = load_trace(path)
    edits = [parse_edit(text) for text in args.edit or []]
    edits += read_edits_file(Path(args.edits)) if args.edits else []
    if not edits:
        lines = targets(state)
        print(f"# {state.question}")
        print("\n".join(lines) if lines else "(nothing in this run can be edited)")
        print(f"Resume it with edits: --edit {' | --edit '.join(USAGE.split(', '))}", file=sys.stderr)
        return 0
    Resumption(state, edits)  # checked before the model loads: EditError is a ValueError, exit code 2
    settings = settings_from_args(args, settings_models())
    runtime = _runtime(args)
    runtime.load_embeddings_in_background()
    runtime.llm()
    trace_dir = Path(args.trace_dir) if args.trace_dir else path.parent
    run = RunService.for_runtime(runtime, trace_dir=trace_dir).resume(state, edits, settings=settings)
    replayed, failed = len(state.events), False
    if not args.json:
        print(f"# Resumed from {path.name} with {len(edits)} edit{'s' if len(edits) != 1 else ''}: "
              f"{METHODS[run.request.method].label}")
    printer = Printer()
    for number, event in enumerate(run):
        if args.json:
            print(event.to_json(), flush=True)
        elif number >= replayed:
            printer.show(event, run.state)
        failed = failed or (number >= replayed and isinstance(event.payload, ErrorPayload))
    _saved(run.trace_files)
    _EXIT_AT_ONCE = True
    return 1 if failed else 0


def _saved(files: list[Path]) -> None:
    if files:
        print(f"Trace saved: {', '.join(str(f) for f in files)}", file=sys.stderr)


def _ingest(args) -> int:
    """Files are keyed by their path relative to the current directory when inside it (``docs/README.md`` and
    ``README.md`` are two files), else by their own name; one line is printed per file as it finishes. Each file
    is read in a child process within ``--parse-memory-mb`` and ``--parse-seconds``. Ctrl-C stops the ingest
    (the file being read or stored is dropped whole; a second Ctrl-C stops at once) and ends with one line
    saying what was stored and what not, exit code 130."""

    here = Path(os.path.abspath(os.getcwd()))

    def key(file: str) -> str:
        full = Path(os.path.abspath(file))
        try:
            return full.relative_to(here).as_posix()
        except ValueError:
            return full.name

    finished = []

    def show(outcome) -> None:
        finished.append(outcome)
        if outcome.status == "cancelled":  # counted in the last line
            return
        note = outcome.message.removeprefix(f"{outcome.name}: ")
        text = note if outcome.status == "failed" else \
            f"{outcome.passages} passages" + (f" ({note.rstrip('.')})" if note else "")
        tqdm.write(f"{outcome.status:9} {outcome.name}: {text}", file=sys.stdout)
        sys.stdout.flush()

    runtime = _runtime(args)
    new = not runtime.store.exists(args.collection)
    collection = runtime.store.create(args.collection)
    if new or args.owner is not None or args.visibility is not None:
        runtime.access.set(args.collection, owner=args.owner if args.owner is not None else ("" if new else None),
                           visibility=args.visibility or (PRIVATE if new else None))
    files = [(Path(f), key(f)) for f in args.files]
    limits = ParseLimits(memory_mb=args.parse_memory_mb, seconds=args.parse_seconds)
    cancel = threading.Event()

    def interrupted(_signum, _frame) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        tqdm.write("Stopping: the file being read or stored is dropped whole (Ctrl-C again to stop at once).",
                   file=sys.stderr)

    bar = ProgressBar(f"Ingesting into {args.collection}")
    previous = signal.signal(signal.SIGINT, interrupted) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        outcomes = ingest_files(collection, files, bar, replace=args.replace, on_file=show, keep_folders=True,
                                limits=limits, cancel=cancel)
    except KeyboardInterrupt:
        outcomes = None
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        bar.close()
    if outcomes is None or any(o.status == "cancelled" for o in outcomes):
        print(_stopped_summary(args.collection, len(files), finished), flush=True)
        return 130
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _stopped_summary(collection: str, total: int, finished: list) -> str:
    """One line for an ingest stopped part-way: how many files are in the collection, how many not, which."""
    stored = [o.name for o in finished if o.status in ("added", "replaced", "completed", "unchanged")]
    failed = sum(o.status == "failed" for o in finished)
    not_added = [o.name for o in finished if o.status == "cancelled"]
    unreported = total - len(finished)  # a second Ctrl-C: the files not reached have no outcome
    missing = len(not_added) + unreported
    shown = not_added[:3]
    names = ", ".join(shown) + (f" and {missing - len(shown)} more" if missing > len(shown) else "") if shown else ""
    return (f"stopped: {len(stored)} of {total} files are in '{collection}'"
            + (f", {failed} failed" if failed else "")
            + f"; {missing} not added" + (f" ({names})" if names else "") + ".")


def _collections(args) -> int:
    runtime = _runtime(args)
    for summary in runtime.store.summaries():
        entry = runtime.access.entry(summary.name)
        print(f"{summary.name}: {summary.passages} passages in {len(summary.files)} files; "
              f"{entry.visibility}, owned by {entry.owner or 'the admins'}")
    return 0


def _share(args) -> int:
    runtime = _runtime(args)
    if not runtime.store.exists(args.collection):
        raise CollectionError(f"There is no collection '{args.collection}'.")
    entry = runtime.access.set(args.collection, owner=args.owner, visibility=args.visibility)
    print(f"{args.collection}: {entry.visibility}, owned by {entry.owner or 'the admins'}")
    return 0


def _users(args) -> int:
    accounts = Accounts(Path(args.data_dir))
    if args.action == "list":
        for person in accounts.people():
            print(f"{person.name}{' (admin)' if person.admin else ''}")
        return 0
    if args.action == "remove":
        accounts.remove(args.name)
        access = CollectionAccess(Path(args.data_dir))
        for name in access.owned_by(args.name):  # a later account of that name must not inherit them
            access.set(name, owner="")
        print(f"Removed '{args.name}'; their collections now belong to the admins.")
        return 0
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"Password for {args.name}: ")
        if getpass.getpass("Again: ") != password:
            raise AccountError("The two passwords differ.")
    accounts.add(args.name, password, admin=args.admin)
    print(f"Added '{args.name}'{' (admin)' if args.admin else ''}.")
    return 0


def _graph(args) -> int:
    """Build or bring up to date the passage graph (KGP) of each named collection, and describe it."""
    from corpora.graph import describe_stats

    store = _runtime(args).store
    for name in args.collections:
        change = store.open(name).update_graph(refit=args.refit)
        graph = store.open(name).graph()
        print(f"{name}: +{change.added} -{change.removed} passages{', keywords refitted' if change.refitted else ''}"
              f" in {change.seconds:.1f} s; {describe_stats(graph.stats()) if graph else 'no graph'}")
    return 0


def _prepare(args) -> int:
    return prepare(args.models)


def _global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The options every command takes; on sub-commands they default to nothing, so that a value given
    before the command is kept."""
    def default(value):
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--data-dir", default=default(str(default_data_dir())), help="collections live here")
    parser.add_argument("--chroma-url", default=default(None), help="a Chroma server (chroma run) instead of "
                        "the embedded store, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", default=default(default_model()),
                        help="default | fast | PATH.gguf | openai:URL[#MODEL] | langchain:PROVIDER:MODEL[@URL] "
                        "(default: $RQA_MODEL or default)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.split("\n")[0])
    _global_options(parser, defaults=True)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        child = sub.add_parser(name, help=help_text)
        _global_options(child, defaults=False)
        return child

    ask = command("ask", "answer a question and print the steps")
    ask.add_argument("question", nargs="?", default=None)
    ask.add_argument("--method", choices=[AUTO, *METHODS], default="oner",
                     help="auto answers first with one retrieval and goes deeper when its check asks "
                          "(default: %(default)s)")
    ask.add_argument("--corpus", default=DEMO_COLLECTION, help="comma-separated collections ('' for none)")
    ask.add_argument("--web", action="store_true", help="add DuckDuckGo results")
    ask.add_argument("--json", action="store_true", help="print the step events as JSONL")
    ask.add_argument("--trace-dir", default=None, help="save the run's trace here (JSONL, Markdown report and "
                     "picture); a resumed run's goes beside the trace it resumes unless given")
    ask.add_argument("--from-trace", default=None, metavar="T.jsonl",
                     help="resume the run of a saved trace with --edit / --edits instead of asking: only what the "
                          "edits touch is recomputed (without edits: list what may be edited)")
    ask.add_argument("--edit", action="append", default=[], metavar="ACTION:TARGET",
                     help=f"an edit of the --from-trace run, repeatable: {USAGE}")
    ask.add_argument("--edits", default=None, metavar="EDITS.json",
                     help='a JSON file of edits: [{"action": "prune", "node": "n4"}, {"action": "drop_passage", '
                          '"passage": 3}, {"action": "edit_reading", "node": "n6", "answer": "..."}]')
    add_settings_arguments(ask, settings_models())
    ask.set_defaults(handler=_ask)

    ingest = command("ingest", "add files to a collection (created if missing)")
    ingest.add_argument("collection")
    ingest.add_argument("files", nargs="+")
    ingest.add_argument("--replace", action="store_true",
                        help="replace a file of the same name (path) already in the collection")
    ingest.add_argument("--owner", default=None, help="the account that owns the collection (default: the admins)")
    ingest.add_argument("--visibility", choices=VISIBILITIES, default=None,
                        help="who may read it on a shared server (a new collection: private)")
    add_limit_arguments(ingest)
    ingest.set_defaults(handler=_ingest)

    command("collections", "list collections").set_defaults(handler=_collections)

    share = command("share", "say who may read a collection on a shared server (and who owns it)")
    share.add_argument("collection")
    share.add_argument("visibility", choices=VISIBILITIES)
    share.add_argument("--owner", default=None, help="give it to this account ('' for the admins)")
    share.set_defaults(handler=_share)

    users = command("users", "the accounts of a shared server (app.py --shared)")
    users.add_argument("action", choices=["add", "remove", "list"])
    users.add_argument("name", nargs="?")
    users.add_argument("--admin", action="store_true", help="add: may see and change every collection")
    users.add_argument("--password-stdin", action="store_true", help="add: read the password from one line of "
                       "standard input instead of asking twice")
    users.set_defaults(handler=_users)

    graph = command("graph", "build or update the passage graph of collections (KGP; adding files does it too)")
    graph.add_argument("collections", nargs="+")
    graph.add_argument("--refit", action="store_true", help="refit the keyword vocabulary and IDF as well")
    graph.set_defaults(handler=_graph)

    prepare = command("prepare-models", "assemble and verify bundled models")
    prepare.add_argument("models", nargs="+", choices=sorted(BUNDLED))
    prepare.set_defaults(handler=_prepare)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "users" and args.action != "list" and not args.name:
        parser.error(f"users {args.action} needs a NAME")
    try:
        return args.handler(args)
    except (ModelError, CollectionError, ValueError) as exc:  # ValueError: a bad setting value
        print(f"error: {exc}", file=sys.stderr)
        return 2


# Set once ``ask`` has printed its answer and saved its trace: nothing is left to write, and Python's teardown of
# torch and transformers would keep the prompt waiting about 1.3 s more (docs/performance.md).
_EXIT_AT_ONCE = False

if __name__ == "__main__":
    code = main()
    if _EXIT_AT_ONCE:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
