"""What a kind of step declares, once, for every consumer: its payload model, how the fold files it, which
passages it carries, its plain-text lines (the CLI and the Markdown report), its card (the reasoning view) and
its look (the picture). ``pipeline.steps`` holds the table of every kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

from pydantic import BaseModel

from pipeline.escaping import esc
from pipeline.payloads import PassageRef
from pipeline.steps.look import KindStyle

if TYPE_CHECKING:
    from pipeline.events import StepEvent
    from pipeline.fold import RunState

# How the fold files an event of the kind: a step of its own (drawn, listed); a note on its parent step (a
# verdict, a pruning, a warning); a piece of the streamed answer; the run's route (which method runs and why).
Role = Literal["step", "note", "stream", "route"]

Lines = Callable[["StepEvent", "RunState"], list[str]]
Card = Callable[["StepEvent", "RunState"], str]


@dataclass(frozen=True)
class StepKind:
    """One kind of step. Every field but the flags is required, so a kind cannot be added without saying how
    each consumer shows it.

    - ``title``: the step's name for people (the view's and the CLI's headline, the report's bullet).
    - ``lines``: further plain-text lines (the CLI prints them under the headline, the report as sub-bullets;
      for a note, the note itself, also the picture's tooltip line).
    - ``card``: the HTML of the step's card body in the view, everything in it escaped (for a note: the note).
    - ``style``: its look in the picture; ``None`` only for kinds that are never a box (notes, the streamed
      answer and the route), which ``drawn_as`` says how they appear instead.
    - ``passages``: the passages the step gave the model or read (support recall counts them, the report lists
      them).
    """

    name: str
    payload: type[BaseModel]
    role: Role
    title: Callable[["StepEvent"], str]
    lines: Lines
    card: Card
    style: KindStyle | None
    passages: Callable[[BaseModel], list[PassageRef]]
    drawn_as: str = ""  # for a kind with no style: how the picture shows it
    reads_sources: bool = False  # a run with such a step read sources (its support recall is scored)
    sequential: bool = False  # a single child continues the sequence at the same level (chains, timelines)
    alert: bool = False  # a note people must see beside the answer and on stderr (a warning or an error)


def titled(step: "StepEvent") -> str:
    """The step's own title (most kinds)."""
    return step.title


def no_lines(step: "StepEvent", state: "RunState") -> list[str]:
    """No further lines: the headline says it all."""
    return []


def no_passages(payload: BaseModel) -> list[PassageRef]:
    """The kind carries no passages."""
    return []


def listed_passages(payload: BaseModel) -> list[PassageRef]:
    """The payload's ``passages`` field."""
    return list(getattr(payload, "passages"))


def one_line(text) -> str:
    """``text`` on one line, runs of white space folded."""
    return " ".join(str(text or "").split())


SNIPPET = 400  # characters of a passage shown in a card; the rest behind "more"


def passages_html(passages: list[PassageRef], noun: str, verb: str = "") -> str:
    """The passages as a folded list, summarised as "3 passages read", "1 table"."""
    items = []
    for passage in passages:
        text = passage.text
        more = (f'<details class="rv-full"><summary>more</summary>{esc(text[SNIPPET:])}</details>'
                if len(text) > SNIPPET else "")
        items.append(f'<li><span class="rv-passage-title">[{esc(passage.number or "·")}]</span> '
                     f'{esc(passage.label())}<div class="rv-passage">{esc(text[:SNIPPET])}{more}</div></li>')
    summary = f"{len(passages)} {noun}{'' if len(passages) == 1 else 's'}" + (f" {verb}" if verb else "")
    return (f'<details class="rv-more rv-passages"><summary>{esc(summary)}</summary>'
            f'<ol>{"".join(items)}</ol></details>')


def passages_card(noun: str = "passage", verb: str = "") -> Card:
    """A card that lists the step's passages (none when it has none)."""
    def card(step: "StepEvent", state: "RunState") -> str:
        passages = getattr(step.payload, "passages", None)
        return passages_html(passages, noun, verb) if passages else ""
    return card


def passage_lines(passages: list[PassageRef]) -> list[str]:
    """One plain-text line per passage: its number and where it comes from."""
    return [f"[{p.number or '·'}] {one_line(p.label())}" for p in passages]
