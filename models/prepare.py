"""Assemble and verify the bundled models: ``python -m models.prepare default fast``.

The same as ``python -m pipeline prepare-models``, without the rest of the command line's imports (Chroma,
LangChain, the methods: about 4 s on 2 cores), so that ``make run`` and ``make test`` check the models in well
under a second once they are in place.
"""

from __future__ import annotations

import argparse
import sys

from models.errors import ModelError
from models.registry import BUNDLED, prepare_bundled


def prepare(keys: list[str]) -> int:
    """Assemble and verify each bundled model of ``keys`` (a progress bar while parts are copied, none when the
    model is in place already), then print where it is."""
    for key in keys:
        bars = []

        def progress(done: int, total: int, key: str = key) -> None:
            if not bars:
                from tqdm import tqdm

                bars.append(tqdm(total=total, desc=f"Assembling the {key} model", unit="B", unit_scale=True,
                                 file=sys.stderr, leave=False))
            bars[0].update(done - bars[0].n)

        path = prepare_bundled(key, progress=progress)
        for bar in bars:
            bar.close()
        print(f"{key}: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.prepare", description="assemble and verify bundled "
                                     "models")
    parser.add_argument("models", nargs="+", choices=sorted(BUNDLED))
    args = parser.parse_args(argv)
    try:
        return prepare(args.models)
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
