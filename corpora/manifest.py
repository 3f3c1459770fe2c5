"""A saved folder described by its ``manifest.json`` (a collection's BM25 index, its passage graph), written
whole or not at all."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

MANIFEST = "manifest.json"


def save_with_manifest(folder: Path, manifest: dict, write: Callable[[Path], None]) -> None:
    """Replace ``folder`` with one holding ``manifest`` (as ``manifest.json``) and what ``write`` puts into the
    folder it is given. Everything is written beside ``folder`` first and renamed into place, so a reader never
    finds half a folder: an interrupted save leaves the old folder or none, which readers rebuild."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write(tmp)
    (tmp / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def read_manifest(folder: Path):
    """The manifest saved in ``folder`` (raises OSError when there is none, ValueError when it is not JSON)."""
    return json.loads((folder / MANIFEST).read_text())
