"""Renderers: pure functions from specviz values to graphviz DOT / SVG charts / tables (and the
plotly figures that the chart exports use).

No streamlit here (pages show DOT through ``ui.graph``, which has ``dot`` lay it out on the
server, and SVG through ``ui.chart``), so every renderer can be tested and benchmarked without a
browser. May import specviz.base only (values come in as plain arguments).
"""
from specviz.render.palette import PALETTE, STATE_COLORS, STATES, state_color

__all__ = ["PALETTE", "STATE_COLORS", "STATES", "state_color"]
