"""How each kind of step looks in the picture: each kind's look is declared in the table of step kinds
(``pipeline.steps``, ``StepKind.style``); a kind without one (a trace of a newer version) shows its title in a
plain box (``FALLBACK``). What a step's status and its typed links change in its look is here.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.events import StepEvent
from pipeline.steps import KINDS as STEP_KINDS
from pipeline.steps.look import KindStyle, Paint

# Each drawn kind's look, by kind name.
KINDS: dict[str, KindStyle] = {name: kind.style for name, kind in STEP_KINDS.items() if kind.style is not None}

# A step whose kind the table does not know: its title in a plain box, its kind's name in the legend.
FALLBACK = KindStyle("step")

# Passages drawn beside the step that brought them in.
SATELLITE = Paint("#ffffff", "#cbd5e1", text="#374151", width=1)

# What a step's status changes in its look.
STATUS_PAINT: dict[str, dict] = {
    "running": {"stroke": "#d97706", "width": 2.5},
    "pending": {"stroke": "#d97706", "dash": "2 3"},
    "failed": {"stroke": "#b91c1c", "width": 2.5},
    "interrupted": {"stroke": "#b91c1c", "dash": "4 3", "width": 2},
}

# Typed links (a graph's keyword or similarity edges, a merge of two quotes): a colour per type, in order of
# first appearance; the type is also written on the edge and in the legend.
LINK_COLOURS = ("#0f766e", "#c2410c", "#7c3aed", "#be185d", "#4d7c0f", "#1d4ed8")


def style_of(step: StepEvent) -> KindStyle:
    """The style of ``step``: its kind's entry (or the fallback), refined by the payload's ``state``."""
    kind = step.kind.value
    style = KINDS.get(kind) or replace(FALLBACK, legend=kind.replace("_", " "))
    key = style.variant_of(step) if style.variant_of else str(getattr(step.payload, "state", ""))
    variant = style.variants.get(key)
    if variant is None:
        return style
    return replace(variant, label=variant.label or style.label, details=variant.details or style.details,
                   satellites=variant.satellites or style.satellites, variants={}, variant_of=None)
