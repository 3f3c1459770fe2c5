"""The registry of methods. Adding a method: its module (with a ``METHOD`` spec), its prompt files, and one
entry in ``REGISTERED``; the UI, the CLI, the evaluation and Auto pick it up from here."""

from __future__ import annotations

from pydantic import BaseModel

from pipeline.methods import ircot, kgp, nor, oner, toc, webagent
from pipeline.methods.base import MethodSpec, run_method

REGISTERED: tuple[MethodSpec, ...] = (nor.METHOD, oner.METHOD, toc.METHOD, ircot.METHOD, webagent.METHOD,
                                       kgp.METHOD)

METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in REGISTERED}


def get_method(name: str) -> MethodSpec:
    """The method called ``name``; ``ValueError`` listing the choices otherwise."""
    if name not in METHODS:
        raise ValueError(f"Unknown method '{name}'. Choose one of: {', '.join(METHODS)}.")
    return METHODS[name]


def settings_models() -> dict[str, type[BaseModel]]:
    """Each method's settings model, by name."""
    return {name: spec.settings for name, spec in METHODS.items()}


__all__ = ["METHODS", "MethodSpec", "REGISTERED", "get_method", "run_method", "settings_models"]
