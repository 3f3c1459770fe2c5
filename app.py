"""Start the research QA app: prepare the model, ingest the demo corpus on first start, serve the page.

    python app.py [--model default|fast|PATH.gguf|openai:URL[#MODEL]] [--data-dir DIR] [--chroma-url URL]
                  [--models-dir DIR] [--endpoint NAME=SPEC ...] [--models-config FILE] [--host 127.0.0.1]
                  [--port 7860] [--shared | --allow-anonymous]

On loopback (the default) the app is personal: one person, who owns everything, no login. To listen beyond
loopback it must be told who may use it: ``--shared`` (accounts made with ``python -m pipeline users add``, a
login page, each collection private to its owner unless shared) or ``--allow-anonymous`` (no login; visitors
may only ask over the public collections).

Fair shares (README, "One person or a team"): ``--max-runs-per-person``, ``--max-waiting``, ``--max-run-seconds``,
``--max-upload-mb-per-person``, ``--max-collections-per-person``, ``--max-agent-actions``, ``--max-toc-calls``;
``--keep-traces-days`` says how long saved traces are kept.

The browser offers only the models named here (the bundled ones, the GGUF files in the models folder, the
endpoints and the start model); nobody can type a path or a URL into the page.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from pathlib import Path

from corpora.isolated import add_limit_arguments
from models.errors import ModelError
from pipeline.accounts import ANONYMOUS, PERSONAL, SHARED, Accounts, People
from pipeline.housekeeping import TraceCleaner
from pipeline.progress import ProgressBar
from pipeline.runtime import Runtime, RuntimeConfig, default_data_dir, default_model

log = logging.getLogger("app")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Research QA: answers with a local LLM over your documents.")
    parser.add_argument("--model", default=default_model(),
                        help="default | fast | PATH.gguf | openai:URL[#MODEL] (default: %(default)s)")
    parser.add_argument("--data-dir", default=str(default_data_dir()), help="where collections are stored")
    parser.add_argument("--chroma-url", default=None, help="use a Chroma server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--no-demo", action="store_true", help="do not ingest the bundled demo corpus")
    parser.add_argument("--models-dir", default=None,
                        help="offer every .gguf file in this folder (default: $RQA_MODELS_DIR, else DATA_DIR/models)")
    parser.add_argument("--endpoint", action="append", default=[], metavar="NAME=SPEC",
                        help="offer a model server, e.g. local=openai:http://127.0.0.1:8000/v1 (repeatable)")
    parser.add_argument("--models-config", default=None,
                        help='a TOML file whose [models] table lists NAME = "SPEC" models to offer')
    parser.add_argument("--max-loaded-models", type=int, default=2,
                        help="models kept in memory at once; the least recently used is unloaded (default: 2)")
    parser.add_argument("--max-runs", type=int, default=8,
                        help="questions answered at once; in-process model calls take turns (default: 8)")
    parser.add_argument("--max-question-chars", type=int, default=2000,
                        help="longer questions are refused before any model work (default: 2000)")
    parser.add_argument("--max-runs-per-person", type=int, default=2,
                        help="with --shared: questions one person may have answered at once, over all their tabs "
                             "(default: 2)")
    parser.add_argument("--max-collections-per-person", type=int, default=20,
                        help="collections a person who is not an admin may own (default: 20)")
    parser.add_argument("--max-agent-actions", type=int, default=16,
                        help="with --shared or --allow-anonymous: the most web agent actions a person who is not an "
                             "admin may choose; more is lowered to this, with a note (default: 16; 0: no cap)")
    parser.add_argument("--max-toc-calls", type=int, default=19,
                        help="likewise, the most model calls a ToC run of theirs may make (default: 19; 0: no cap)")
    parser.add_argument("--max-waiting", type=int, default=16,
                        help="questions that may wait for a turn beyond the --max-runs being answered; one more is "
                             "told the server is busy and how many are ahead (default: 16; 0: no limit)")
    parser.add_argument("--max-run-seconds", type=float, default=600,
                        help="a question still running after this long is stopped, keeping what it found "
                             "(default: 600; 0: no limit)")
    parser.add_argument("--max-upload-mb-per-person", type=float, default=200,
                        help="with --shared: megabytes of files a person who is not an admin may keep in their "
                             "collections (default: 200; 0: no limit)")
    parser.add_argument("--keep-traces-days", type=float, default=7,
                        help="saved traces older than this are deleted, checked every hour; uploads left in "
                             "Gradio's cache are deleted after a day (default: 7; 0: keep traces)")
    add_limit_arguments(parser)
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--shared", action="store_true",
                     help="a server for several people: login with the accounts of `python -m pipeline users`")
    who.add_argument("--allow-anonymous", action="store_true",
                     help="no login; visitors may only ask over the public collections (needed beyond loopback "
                          "without --shared)")
    return parser.parse_args(argv)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def people_for(args: argparse.Namespace) -> People:
    """Who the app serves, from the command line; raises ValueError when it would serve everyone on the network
    as its owner, or a shared server has no account yet."""
    if args.shared:
        accounts = Accounts(Path(args.data_dir))
        if not accounts.people():
            raise ValueError(f"--shared needs at least one account: add one with `python -m pipeline --data-dir "
                             f"{args.data_dir} users add NAME --admin`.")
        return People(SHARED, accounts)
    if args.allow_anonymous:
        return People(ANONYMOUS)
    if not is_loopback(args.host):
        raise ValueError(f"--host {args.host} lets anyone on the network in: add --shared (accounts and a login "
                         "page) or --allow-anonymous (visitors may only ask over the public collections).")
    return People(PERSONAL)


def config_for(args: argparse.Namespace) -> RuntimeConfig:
    """The server's settings from its command line."""
    return RuntimeConfig(
        data_dir=Path(args.data_dir), model=args.model, chroma_url=args.chroma_url,
        models_dir=Path(args.models_dir) if args.models_dir else None, endpoints=tuple(args.endpoint),
        models_config=Path(args.models_config) if args.models_config else None,
        max_loaded_models=args.max_loaded_models, max_runs=args.max_runs,
        max_question_chars=args.max_question_chars, max_runs_per_person=args.max_runs_per_person,
        max_collections_per_person=args.max_collections_per_person, max_agent_actions=args.max_agent_actions,
        max_toc_calls=args.max_toc_calls, max_waiting=args.max_waiting, max_run_seconds=args.max_run_seconds,
        max_upload_bytes_per_person=int(args.max_upload_mb_per_person * 1e6),
        keep_traces_days=args.keep_traces_days, parse_memory_mb=args.parse_memory_mb,
        parse_seconds=args.parse_seconds)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        people = people_for(args)
        runtime = Runtime(config_for(args))
        runtime.store.names()  # opens the data directory: one clear line now if it is unusable or in use
        log.info("Loading the model '%s'...", args.model)
        runtime.llm()
        if not args.no_demo:
            bar = ProgressBar("Ingesting the demo corpus (first start only)")
            runtime.ensure_demo(bar)
            bar.close()
        runtime.load_embeddings_in_background()  # beside the page's start, before a first question needs it
    except (ModelError, ValueError) as exc:  # CollectionError and AccountError are ValueErrors
        print(f"error: {exc}", file=sys.stderr)
        return 2

    from ui.app import build_app, launch_options

    app = build_app(runtime, people=people)
    TraceCleaner(Path(args.data_dir) / "traces", args.keep_traces_days).start()
    app.queue(default_concurrency_limit=1)
    log.info("Serving on http://%s:%d (%s)", args.host, args.port, people.mode)
    # show_error stays off: an unexpected exception's text (paths, addresses) would reach the browser.
    app.launch(server_name=args.host, server_port=args.port, show_error=False, auth=people.auth(),
               auth_message="Sign in with the account the operator gave you." if people.auth() else None,
               **launch_options(args.data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
