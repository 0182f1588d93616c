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


def shift_table(n: int, labels, rows, predicts, accept_nodes, positions, words: dict, label_of=str) -> pd.DataFrame:
    """The one-position shift, one line per verify row of a request.

    labels [n] input tokens; rows [n] global rows; predicts [bs*n] (global); accept_nodes: nodes
    on the accepted path (root first); positions [n]. ``words`` names the columns and states.
    A row on the path emits predicts[row] and keeps its KV; every other row is discarded.
    """
    on_path = {node: k for k, node in enumerate(accept_nodes)}
    recs = []
    for i in range(n):
        r = int(rows[i])
        kept = i in on_path
        recs.append({
            words["row"]: r,
            words["input"]: labels[i],
            words["output"]: (label_of(int(predicts[r])) + (" ★" if kept and on_path[i] == len(accept_nodes) - 1 else "")) if kept else "—",
            words["kv"]: (f"✓ {words['pos']} {int(positions[i])}") if kept else f"✗ {words['discarded']}",
        })
    return pd.DataFrame(recs)


def path_states(n: int, accept_nodes) -> dict:
    """{row position: state} for ``highlight_rows``: the path accepted, the rest discarded."""
    return {i: ("accepted" if i in set(accept_nodes) else "discarded") for i in range(n)}
