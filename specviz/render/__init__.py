"""Renderers: pure functions from specviz values to graphviz DOT / plotly figures / tables.

No streamlit here (pages call ``st.graphviz_chart`` / ``st.plotly_chart`` on what these return),
so every renderer can be tested and benchmarked without a browser.
"""
from .palette import PALETTE, STATE_COLORS, STATES, state_color

__all__ = ["PALETTE", "STATE_COLORS", "STATES", "state_color"]
