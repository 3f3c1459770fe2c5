"""The table of step kinds: every kind of step a method may make, each declared once (``StepKind``) with its
payload model, how the fold files it, its passages, its plain-text lines, its card and its picture look.

The payload union, ``pipeline.events.EventKind`` and the note kinds are derived from this table; the fold, the
reasoning view, the picture, the Markdown report and the CLI read it. A new kind of step is one ``StepKind``
in one of the family modules below (or a new module added to ``_FAMILIES``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field

from pipeline.steps import auto, browse, chain, common, edit, graph, tree
from pipeline.steps.kind import StepKind

if TYPE_CHECKING:
    from pipeline.events import StepEvent

_FAMILIES = (common, tree, chain, graph, browse, auto, edit)

KINDS: dict[str, StepKind] = {kind.name: kind for family in _FAMILIES for kind in family.KINDS}

Payload = Annotated[Union[tuple(kind.payload for kind in KINDS.values())], Field(discriminator="kind")]

NOTE_KINDS = frozenset(name for name, kind in KINDS.items() if kind.role == "note")


def kind_of(step: "StepEvent") -> StepKind:
    """The table entry of ``step``'s kind."""
    return KINDS[step.kind.value]


__all__ = ["KINDS", "NOTE_KINDS", "Payload", "StepKind", "kind_of"]
