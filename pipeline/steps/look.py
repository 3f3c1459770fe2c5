"""The picture's vocabulary for a kind of step: a shape, colours and the text of its box. Every kind of step
declares its look with these (``pipeline.steps``); the picture (``pipeline.picture``) draws them.

A look gives the legend's name, a shape, colours, an optional leading icon and the text of the box (its
paragraphs; the first one may wrap). ``variants`` picks another look by the payload's ``state`` (a ToC node is
kept, pruned or restored) or by ``variant_of``; ``inline`` draws a step as a small dot on the way to its children
(a model call that proposes them); ``satellites`` draws the passages a step brought in beside it (in chains and
timelines). Colours are written into the SVG, so an exported picture needs no stylesheet and every look differs
in shape or dash as well as colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal, Mapping

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState

Shape = Literal["box", "pill", "notched", "hexagon", "doc", "dot"]


@dataclass(frozen=True)
class Paint:
    fill: str
    stroke: str
    text: str = "#1f2937"
    dash: str = ""  # stroke-dasharray, "" for a solid line
    width: float = 1.5


@dataclass(frozen=True)
class KindStyle:
    legend: str
    shape: Shape = "box"
    paint: Paint = Paint("#f8fafc", "#94a3b8")
    icon: str = ""
    label: Callable[["StepEvent", "RunState"], list[str]] | None = None  # None: the step's title
    details: Callable[["StepEvent", "RunState"], list[str]] | None = None  # extra tooltip lines
    inline: bool = False
    satellites: bool = False
    variants: Mapping[str, "KindStyle"] = field(default_factory=dict)
    variant_of: Callable[["StepEvent"], str] | None = None  # None: the payload's ``state``


# A question (ToC's root, a walk, a browsing start): the look others borrow.
QUESTION = Paint("#eef0f4", "#374151", width=2.5)


def count(n: int, noun: str) -> str:
    """``n`` with ``noun``, plural unless one: "1 passage", "3 passages"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def passages_line(passages, limit: int = 6) -> list[str]:
    """The passages' numbers and titles on one tooltip line (none when there are none)."""
    if not passages:
        return []
    titles = [f"[{p.number}] {p.title or 'Untitled'}" if p.number else (p.title or "Untitled")
              for p in passages[:limit]]
    more = f" and {len(passages) - limit} more" if len(passages) > limit else ""
    return [f"{count(len(passages), 'passage')}: {'; '.join(titles)}{more}"]


def fields(step: "StepEvent", *names: str) -> list[str]:
    """``name: value`` for each of the payload's fields ``names`` that is set."""
    out = []
    for name in names:
        value = getattr(step.payload, name, None)
        if value not in (None, "", [], 0, False):
            out.append(f"{name.replace('_', ' ')}: {value:.2f}" if isinstance(value, float) else
                       f"{name.replace('_', ' ')}: {value}")
    return out
