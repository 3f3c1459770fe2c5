"""The models the operator offers: the bundled ones, GGUF files in a models folder, and model servers named on
the command line or in a config file. A person picks one by its key; nobody can type a path or a URL into the
browser, so a browser user can neither load an arbitrary file nor make the server call an arbitrary address.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from models.errors import ModelError
from models.loading import LANGCHAIN_PREFIX, OPENAI_PREFIX
from models.registry import BUNDLED, default_cache_dir


@dataclass(frozen=True)
class ModelOption:
    """One model on offer: ``key`` is what a person picks, ``spec`` how it loads (``default``, a GGUF path,
    ``openai:URL[#MODEL]`` or ``langchain:PROVIDER:MODEL[@URL]``)."""

    key: str
    label: str
    spec: str

    def identity(self) -> str:
        """What makes two options the same loaded model (one file under two names loads once)."""
        if self.spec in BUNDLED:
            return f"gguf:{(default_cache_dir() / BUNDLED[self.spec].filename).resolve()}"
        if self.spec.startswith(OPENAI_PREFIX):
            url, _, model = self.spec[len(OPENAI_PREFIX):].partition("#")
            return f"openai:{url.rstrip('/')}#{model}"
        if self.spec.startswith(LANGCHAIN_PREFIX):
            return self.spec
        return f"gguf:{Path(self.spec).expanduser().resolve()}"


def default_models_dir(data_dir: Path) -> Path:
    """Where the operator drops extra GGUF files: ``$RQA_MODELS_DIR``, else ``models/`` in the data directory."""
    return Path(os.environ.get("RQA_MODELS_DIR") or Path(data_dir) / "models")


def _label_of(spec: str) -> str:
    if spec in BUNDLED:
        return f"{spec.capitalize()} ({BUNDLED[spec].description})"
    if spec.startswith(OPENAI_PREFIX):
        return f"Server {spec[len(OPENAI_PREFIX):]}"
    if spec.startswith(LANGCHAIN_PREFIX):
        return spec
    return Path(spec).name


def public_key(spec: str) -> str:
    """A name for a model given on the command line that says nothing of where it lives: the file's name, not
    its folder; "server (MODEL)", not the server's address. The page's config shows every key to every browser."""
    if spec in BUNDLED:
        return spec
    if spec.startswith(OPENAI_PREFIX):
        model = spec.partition("#")[2].strip()
        return f"server ({model})" if model else "server"
    if spec.startswith(LANGCHAIN_PREFIX):
        return spec.split("@", 1)[0]
    return Path(spec).name


class ModelCatalog:
    """The operator's models, by key, in the order they are offered."""

    def __init__(self, options: Iterable[ModelOption] = ()) -> None:
        self._options: dict[str, ModelOption] = {}
        self._aliases: dict[str, str] = {}  # the operator's start spec -> the key it is offered under
        for option in options:
            self._options.setdefault(option.key, option)

    @classmethod
    def configured(cls, default: str, *, models_dir: Path | None = None, endpoints: Sequence[str] = (),
                   config: Path | None = None) -> "ModelCatalog":
        """The bundled models, ``*.gguf`` in ``models_dir``, ``endpoints`` (``NAME=SPEC``), the ``[models]``
        table of the TOML file ``config`` (``NAME = "SPEC"``), and ``default`` (the operator's start choice)."""
        catalog = cls(ModelOption(key, _label_of(key), key) for key in BUNDLED)
        if models_dir is not None and Path(models_dir).is_dir():
            for path in sorted(Path(models_dir).glob("*.gguf")):
                catalog.add(str(path), key=path.name)
        for entry in endpoints:
            name, sep, spec = entry.partition("=")
            if not sep or not name.strip() or not spec.strip():
                raise ModelError(f"'{entry}' is not NAME=SPEC (for example local=openai:http://127.0.0.1:8000/v1).")
            catalog.add(spec.strip(), key=name.strip())
        if config is not None:
            for name, spec in _read_config(Path(config)).items():
                catalog.add(spec, key=name)
        if default not in catalog:
            key = public_key(default)
            if key in catalog and catalog.get(key).spec != default:
                key = f"{key} (start)"
            catalog.add(default, key=key)
            catalog._aliases[default] = key
        return catalog

    def key_of(self, choice: str) -> str:
        """The key ``choice`` is offered under (the start model's spec is offered under its public key)."""
        return self._aliases.get(choice, choice)

    def add(self, spec: str, key: str | None = None, label: str | None = None) -> ModelOption:
        """Offer ``spec`` under ``key`` (default: the spec itself); an existing key is kept as it is."""
        key = key or spec
        if key not in self._options:
            self._options[key] = ModelOption(key, label or (key if key != spec else _label_of(spec)), spec)
        return self._options[key]

    def __contains__(self, key: str) -> bool:
        return key in self._options

    def get(self, key: str) -> ModelOption:
        """The option a person picked; ``ModelError`` names the choices when it is not on offer."""
        try:
            return self._options[self.key_of(key)]
        except KeyError:
            shown = key if len(key) <= 40 else key[:37] + "..."
            raise ModelError(f"'{shown}' is not one of the models this app offers ({', '.join(self._options)}). "
                             "The operator adds models with --models-dir or --endpoint.") from None

    def choices(self) -> list[tuple[str, str]]:
        """(label, key) pairs for a dropdown."""
        return [(option.label, option.key) for option in self._options.values()]


def _read_config(path: Path) -> dict[str, str]:
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("models", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"Cannot read the models config '{path}': {exc}.") from exc
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ModelError(f"'{path}' needs a [models] table of NAME = \"SPEC\" lines.")
    return table
