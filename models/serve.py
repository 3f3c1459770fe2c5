"""Serve a model over the OpenAI API with llama-cpp-python's server, with the AMX work-around applied.

``python -m models.serve --model fast --port 8000 [server options]``: ``--model`` takes ``default``, ``fast``
or a GGUF path; every other option goes to ``llama_cpp.server`` unchanged.
"""

from __future__ import annotations

import sys

from models.llama_runtime import configure_llama_cpp
from models.registry import resolve_model_path


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--model" in args:
        at = args.index("--model") + 1
        args[at] = str(resolve_model_path(args[at]))
    configure_llama_cpp()
    from llama_cpp.server.__main__ import main as server_main

    sys.argv = ["llama_cpp.server", *args]
    server_main()


if __name__ == "__main__":
    main()
