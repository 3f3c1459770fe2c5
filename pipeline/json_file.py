"""A small JSON file of settings (accounts, collection owners), read whole and replaced whole."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_json(path: Path, error: type[Exception]) -> dict:
    """The object in ``path``, or ``{}`` when there is no file (or it holds no object); raises ``error`` with the
    path and the reason when it cannot be read or is not JSON."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise error(f"Cannot read {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` (a reader finds the old file or the new one, never half of one); ``mode``
    0o600 keeps it from other users of the machine."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
