"""Command-line flags for every setting, generated from the settings models: the shared ones (``--top-k``) and
each method's (``--toc-max-depth``), with their types, bounds, choices and descriptions in ``--help``; plus
``--set KEY=VALUE`` (``--set toc.max_depth=2``) for scripts."""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from pipeline.settings import Settings, setting_fields

_TYPES = {"int": int, "float": float, "choice": str}


def _flag(prefix: str, name: str) -> str:
    return "--" + "-".join(filter(None, [prefix, name.replace("_", "-")]))


def add_settings_arguments(parser: argparse.ArgumentParser, methods: dict[str, type[BaseModel]],
                           skip: frozenset[str] = frozenset()) -> None:
    """Add a flag per setting (groups: shared, then one per method) and ``--set``; ``skip`` names shared
    settings the command sets itself."""
    groups = [("", "settings shared by the methods", Settings)]
    groups += [(name, f"{name} settings", model) for name, model in methods.items()]
    for prefix, title, model in groups:
        fields = [f for f in setting_fields(model) if f"{prefix}.{f.name}".lstrip(".") not in skip]
        if not fields:
            continue
        group = parser.add_argument_group(title)
        for field in fields:
            key = f"{prefix}.{field.name}".lstrip(".")
            bounds = ""
            if field.minimum is not None or field.maximum is not None:
                bounds = f"; {field.minimum if field.minimum is not None else ''}..{field.maximum if field.maximum is not None else ''}"
            help_text = f"{field.description} (default: {field.default}{bounds})".replace("%", "%%")
            if field.kind == "bool":
                group.add_argument(_flag(prefix, field.name), dest=f"setting:{key}", default=None,
                                   action=argparse.BooleanOptionalAction, help=help_text)
            else:
                group.add_argument(_flag(prefix, field.name), dest=f"setting:{key}", default=None,
                                   type=_TYPES[field.kind], choices=field.choices or None,
                                   metavar=field.kind.upper() if not field.choices else None, help=help_text)
    parser.add_argument("--set", dest="setting_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="change any setting by its dotted name, e.g. --set toc.max_depth=2 (repeatable)")


def settings_from_args(args: argparse.Namespace, methods: dict[str, type[BaseModel]],
                       base: Settings | None = None) -> Settings:
    """``base`` (default settings when None) with the flags and ``--set`` values given; ``ValueError``
    naming a bad key or value."""
    overrides = {key.split(":", 1)[1]: value for key, value in vars(args).items()
                 if key.startswith("setting:") and value is not None}
    for item in getattr(args, "setting_overrides", []) or []:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--set takes KEY=VALUE, not '{item}'.")
        overrides[key.strip()] = value.strip()
    return (base or Settings()).changed(overrides, methods)
