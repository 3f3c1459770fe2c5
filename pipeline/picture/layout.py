"""Where each step goes in the picture: two layouts over the run's steps and their parent links.

- **tree** (trees, graphs and single answers): a tidy tree from left to right. Each step has a column (its
  depth) and its own band of rows; a parent is centred on its children. Depth grows to the right, breadth
  downwards, so a wide tree scrolls down instead of overflowing the page's width. An ``inline`` step (a model
  call that proposes children) is a dot in the gap before its children's column and takes no column itself.
- **flow** (chains and timelines): steps one below the other; a step's single child continues the same line,
  several children are indented under it (an outline), and the passages a step brought in are listed beside
  it (``satellites``).

Both give every step a vertical band of its own within its column, so labels cannot overlap whatever the
tree: no box is placed where an earlier band ended. The layout is computed from scratch for each event
(well under a millisecond for 60 steps) and is stable as a run grows: steps are placed in the order they first
appeared, so a new step moves only what lies below it.

Why no layout library: a tidy tree with variable-height rows, a dot for inline steps and chains that continue
downwards is about sixty lines; python-igraph's Reingold-Tilford layout is GPL-licensed, Graphviz needs a
system binary, and grandalf's pure-Python Sugiyama layout reorders nodes between events (crossing reduction)
and costs more than this whole drawing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipeline.events import StepEvent
from pipeline.fold import Edge, RunState
from pipeline.payloads import PassageRef
from pipeline.picture.styles import KindStyle, style_of
from pipeline.picture.text import shorten, wrap

Mode = Literal["tree", "flow"]

FONT = 12  # px, labels in boxes
SAT_FONT = 11  # px, passages beside a step
LINE = 15  # px per line of a label
PAD_X, PAD_Y = 11, 6  # inside a box
MAX_LINES = 3
DOT = 14  # diameter of an inline step
GAP_Y = 10  # between bands

TREE_BOX_W, TREE_GAP_X = 164, 40
FLOW_BOX_W, FLOW_INDENT = 300, 28
SAT_GAP, SAT_W, SAT_H, SAT_PITCH, MAX_SATS = 28, 200, 20, 24, 8

# Which layout a method's declared structure gets (``MethodSpec.structure``, carried by the route event).
MODES: dict[str, Mode] = {"tree": "tree", "graph": "tree", "answer": "tree", "chain": "flow", "timeline": "flow"}


@dataclass
class Satellite:
    passage: PassageRef | None  # None: the "n more" line
    text: str
    x: float = 0.0
    y: float = 0.0


@dataclass
class Box:
    """A step as drawn: its style, status, label lines and place (top-left corner, size)."""

    step: StepEvent
    style: KindStyle
    status: str
    lines: list[str]
    w: float
    h: float
    inline: bool
    x: float = 0.0
    y: float = 0.0
    col: int = 0
    satellites: list[Satellite] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.step.id

    @property
    def bottom(self) -> float:
        return self.y + self.h


@dataclass
class Layout:
    mode: Mode
    boxes: dict[str, Box]  # in the order the steps first appeared
    parents: list[Edge]  # the parent link of every drawn step that has one ("parent", or the link's type)
    links: list[Edge]  # other typed links between drawn steps
    width: float
    height: float


def mode_of(state: RunState) -> Mode:
    """The layout for ``state``: from the method's declared structure; without a route event (an old trace), a
    run whose steps each have at most one child and which has at least three steps draws as a chain."""
    if state.route is not None:
        return MODES.get(state.route.structure, "tree")
    single = all(len(kids) <= 1 for parent, kids in state.children.items() if parent is not None)
    return "flow" if single and len(state.steps) >= 3 and len(state.children.get(None, [])) == 1 else "tree"


def label_lines(style: KindStyle, step: StepEvent, state: RunState, width: float) -> list[str]:
    """The box text of ``step``: its style's paragraphs (or its title), the first wrapped over the lines the
    others leave, each further one on one line, the icon in front."""
    paragraphs = [p for p in (style.label(step, state) if style.label else [step.title]) if p] or [step.kind.value]
    if style.icon:
        paragraphs[0] = f"{style.icon} {paragraphs[0]}"
    rest = paragraphs[1:MAX_LINES]
    lines = wrap(paragraphs[0], width, FONT, MAX_LINES - len(rest))
    return lines + [shorten(" ".join(p.split()), width, FONT) for p in rest]


def _box(state: RunState, step: StepEvent, width: float, mode: Mode) -> Box:
    style = style_of(step)
    inline = style.inline and mode == "tree"
    if inline or (style.shape == "dot" and mode == "tree"):
        return Box(step, style, state.status_of(step), [], DOT, DOT, inline=True)
    lines = label_lines(style, step, state, width - 2 * PAD_X)
    box = Box(step, style, state.status_of(step), lines, width, 2 * PAD_Y + LINE * len(lines), inline=False)
    if mode == "flow" and style.satellites:
        passages = list(getattr(step.payload, "passages", []) or [])
        shown = passages[: MAX_SATS - 1] if len(passages) > MAX_SATS else passages
        box.satellites = [Satellite(p, shorten(f"[{p.number}] {p.title or 'Untitled'}" if p.number else
                                               (p.title or "Untitled"), SAT_W - 2 * 8, SAT_FONT)) for p in shown]
        if len(passages) > len(shown):
            box.satellites.append(Satellite(None, f"and {len(passages) - len(shown)} more"))
    return box


def layout(state: RunState) -> Layout:
    """Places every step of ``state`` (see the module docstring)."""
    mode = mode_of(state)
    width = TREE_BOX_W if mode == "tree" else FLOW_BOX_W
    boxes = {step_id: _box(state, step, width, mode) for step_id, step in state.steps.items()}
    roots = [i for i in state.children.get(None, []) if i in boxes]
    if mode == "tree":
        _TreePlacer(state, boxes).place_all(roots)
    else:
        _FlowPlacer(state, boxes).place_all(roots)
    edges = [e for e in state.edges() if e.source in boxes and e.target in boxes]
    parents = [e for e in edges if state.steps[e.target].parent_id == e.source]
    links = [e for e in edges if state.steps[e.target].parent_id != e.source]
    right = max([b.x + b.w for b in boxes.values()]
                + [s.x + SAT_W for b in boxes.values() for s in b.satellites] + [0])
    bottom = max([b.bottom for b in boxes.values()]
                 + [s.y + SAT_H for b in boxes.values() for s in b.satellites] + [0])
    if links:
        right += 60  # room for links that bulge out to the right
    return Layout(mode, boxes, parents, links, right, bottom)


class _Placer:
    """Places every root's band below the last one; ``place`` places one subtree and returns where it ends."""

    def __init__(self, state: RunState, boxes: dict[str, Box]) -> None:
        self.kids = {i: [k for k in state.children.get(i, []) if k in boxes] for i in boxes}
        self.boxes = boxes

    def place_all(self, roots: list[str]) -> None:
        top = 0.0
        for root in roots:
            top = self.place(root, 0, top)

    def place(self, step_id: str, level: int, top: float) -> float:
        raise NotImplementedError


class _TreePlacer(_Placer):
    def place_all(self, roots: list[str]) -> None:
        super().place_all(roots)
        for box in self.boxes.values():
            left = box.col * (TREE_BOX_W + TREE_GAP_X)
            # an inline step sits in the gap before its column (its children's column)
            box.x = left - TREE_GAP_X / 2 - DOT / 2 if box.inline and box.col > 0 else left

    def place(self, step_id: str, col: int, top: float) -> float:
        """Places the subtree of ``step_id`` with its band starting at ``top``; returns where the band ends."""
        box, kids = self.boxes[step_id], self.kids[step_id]
        box.col = col
        if not kids:
            box.y = top
            return top + box.h + GAP_Y
        bottom = top
        for kid in kids:  # an inline step's children share its column (two dots in a row do not)
            same = box.inline and not self.boxes[kid].inline
            bottom = self.place(kid, col if same else col + 1, bottom)
        first, last = self.boxes[kids[0]], self.boxes[kids[-1]]
        box.y = (first.y + first.h / 2 + last.y + last.h / 2) / 2 - box.h / 2
        if box.y < top:  # taller than its children's band: move them down to centre it
            shift = top - box.y
            for kid in kids:
                self.shift(kid, shift)
            box.y, bottom = top, bottom + shift
        return max(bottom, box.bottom + GAP_Y)

    def shift(self, step_id: str, dy: float) -> None:
        stack = [step_id]
        while stack:
            current = stack.pop()
            self.boxes[current].y += dy
            stack.extend(self.kids[current])


class _FlowPlacer(_Placer):
    def place(self, step_id: str, level: int, top: float) -> float:
        """Places ``step_id`` at ``top``, then its chain (single children) below it at the same level, and
        any branches indented; returns where the last band ends."""
        while True:
            box, kids = self.boxes[step_id], self.kids[step_id]
            box.col, box.x, box.y = level, level * FLOW_INDENT, top
            for index, satellite in enumerate(box.satellites):
                satellite.x, satellite.y = box.x + box.w + SAT_GAP, top + index * SAT_PITCH
            used = max(box.h, len(box.satellites) * SAT_PITCH - (SAT_PITCH - SAT_H))
            top += used + GAP_Y
            if len(kids) != 1:
                break
            step_id = kids[0]  # a chain continues on the next line
        for kid in kids:
            top = self.place(kid, level + 1, top)
        return top
