"""The run as a node-link picture, drawn from its folded state (``pipeline.fold.RunState``) alone.

Trees of interpretations draw as trees, reasoning chains as chains with the passages each step brought in,
graphs with their typed links labelled, timelines as timelines; a method the picture has never seen still
draws (each step shows its title), and a kind's look is part of its entry in the table of step kinds
(``pipeline.steps``). The same
SVG is shown live in the browser, saved next to a run's trace and linked from its Markdown report.

    draw(state)                     # an <svg> element for a page
    draw(state, standalone=True)    # an SVG document (the exported file)
"""

from pipeline.picture.layout import Layout, layout, mode_of
from pipeline.picture.styles import FALLBACK, KINDS, KindStyle, Paint, style_of
from pipeline.picture.svg import draw

__all__ = ["FALLBACK", "KINDS", "KindStyle", "Layout", "Paint", "draw", "layout", "mode_of", "style_of"]
