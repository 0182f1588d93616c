"""The colour-blind-safe palette every view uses (Okabe & Ito, 2008).

The four teaching states keep one colour each on every page, in every chart:

=============  ===========  ==========================================================
state          colour       meaning
=============  ===========  ==========================================================
``accepted``   bluish green a draft the target agreed with (or the root): its KV is kept
``rejected``   vermillion   a draft the target disagreed with / a coin that failed
``pending``    light grey   not looked at yet
``bonus``      orange       the target's own token after the last accepted row (next root)
=============  ===========  ==========================================================

Extra roles: ``current`` (blue, the node the walk is at), ``compared`` (sky blue, the child
being compared), ``discarded`` (pale grey, state thrown away), ``selected`` (reddish purple
outline, the node a person picked: linked across views), ``root``.
Colours differ in lightness as well as hue, so they also survive a greyscale projector;
every coloured cell also carries text (a mark or a value), never colour alone.
"""
from __future__ import annotations

# Okabe-Ito
BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
REDDISH_PURPLE = "#CC79A7"
GREY = "#BBBBBB"
PALE_GREY = "#E8E8E8"
WHITE = "#FFFFFF"

PALETTE = {
    "accepted": BLUISH_GREEN,
    "rejected": VERMILLION,
    "pending": GREY,
    "bonus": ORANGE,
    "current": BLUE,
    "compared": SKY_BLUE,
    "discarded": PALE_GREY,
    "selected": REDDISH_PURPLE,
    "root": BLUISH_GREEN,
    "highlight": YELLOW,
    "plain": WHITE,
    "text": BLACK,
    "muted_text": "#777777",
    "edge": "#444444",
    "sibling_edge": "#888888",
}

STATES = ("accepted", "rejected", "pending", "bonus", "current", "compared", "discarded", "selected")
STATE_COLORS = {k: PALETTE[k] for k in STATES}

# Text colour that reads on each fill (WCAG contrast >= 4.5 on the dark fills).
TEXT_ON = {
    BLUISH_GREEN: WHITE, VERMILLION: WHITE, BLUE: WHITE, REDDISH_PURPLE: BLACK, ORANGE: BLACK,
    SKY_BLUE: BLACK, GREY: BLACK, PALE_GREY: "#777777", YELLOW: BLACK, WHITE: BLACK,
}

# Sequential colour scale for heatmaps (mask cells, probabilities): white -> blue, readable in greyscale.
HEATMAP_SCALE = [[0.0, "#F7F7F7"], [1.0, BLUE]]
# Two-value scale for boolean masks: False light, True blue.
MASK_SCALE = [[0.0, "#F2F2F2"], [0.5, "#F2F2F2"], [0.5, BLUE], [1.0, BLUE]]

# Font sizes large enough for a projector (points in graphviz, px in plotly).
FONT_FAMILY = "Helvetica, Arial, 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif"
GRAPH_FONT_SIZE = 18
PLOT_FONT_SIZE = 18


def state_color(state: str) -> str:
    """Fill colour of a teaching state (``accepted``, ``rejected``, ``pending``, ``bonus``, ...)."""
    return PALETTE.get(state, GREY)


def text_on(fill: str) -> str:
    """A text colour that reads on ``fill``."""
    return TEXT_ON.get(fill.upper() if fill.startswith("#") else fill, BLACK)
