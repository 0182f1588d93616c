"""Tables the tree pages show (pandas DataFrames and Stylers; no streamlit).

Every table is a pure function of the tree and the arrays, so the same rows appear in the app,
the tests and the benchmark.
"""
from __future__ import annotations

import pandas as pd

from .palette import PALETTE, state_color, text_on


def retrieve_table(tree, labels, retrieve_index, retrieve_next_token, retrieve_next_sibling, positions, cols=None) -> pd.DataFrame:
    """One row per node: token, parent, depth, and SGLang's retrieve_* links and position.

    ``labels`` [n] node texts; the arrays are one request's ([n] each).
    """
    cols = cols or {}
    depths = tree.depths()
    df = pd.DataFrame({
        cols.get("node", "node"): list(range(tree.n)),
        cols.get("token", "token"): list(labels),
        cols.get("parent", "parent"): list(tree.parents),
        cols.get("depth", "depth"): depths,
        "retrieve_index": [int(x) for x in retrieve_index],
        "retrieve_next_token": [int(x) for x in retrieve_next_token],
        "retrieve_next_sibling": [int(x) for x in retrieve_next_sibling],
        "positions": [int(x) for x in positions],
    })
    return df


def highlight_rows(df: pd.DataFrame, rows: dict):
    """A Styler colouring whole rows: ``rows`` = {row position: state} (palette states)."""
    def style(row):
        st = rows.get(row.name)
        if st is None:
            return [""] * len(row)
        fill = state_color(st)
        return [f"background-color: {fill}; color: {text_on(fill)}; font-weight: 600"] * len(row)
    return df.style.apply(style, axis=1)


def selected_style(df: pd.DataFrame, selected):
    """A Styler outlining the selected node's row in the selection colour."""
    c = PALETTE["selected"]

    def style(row):
        if row.name == selected:
            return [f"background-color: {c}; color: black; font-weight: 700"] * len(row)
        return [""] * len(row)
    return df.style.apply(style, axis=1)
