"""The tree attention mask as a plotly heatmap (pure: returns a figure, no streamlit)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .palette import FONT_FAMILY, MASK_SCALE, PALETTE, PLOT_FONT_SIZE


def mask_heatmap(matrix, labels, *, selected=None, title: str = "", words=("attends to", "masked", "row", "col"),
                 prefix_len: int | None = None) -> go.Figure:
    """``matrix`` [n, n] bool: row i may attend to column j. ``labels`` [n] node texts.

    Hover shows the exact cell (row, column, tokens, True/False); the selected node's row and
    column are outlined (the selection linked across views). ``prefix_len`` adds a note that
    every row also attends to the prefix (full_mask mode stores those cells too).
    """
    m = np.asarray(matrix, dtype=bool)
    n = m.shape[0]
    attends, masked, row_w, col_w = words
    ticks = [f"{i}·{labels[i]}" for i in range(n)]
    hover = [[f"{row_w} {i} ({labels[i]}) → {col_w} {j} ({labels[j]}): {attends if m[i, j] else masked} ({bool(m[i, j])})"
              for j in range(n)] for i in range(n)]
    text = [["✓" if m[i, j] else "" for j in range(n)] for i in range(n)]
    fig = go.Figure(go.Heatmap(
        z=m.astype(int), x=ticks, y=ticks, colorscale=MASK_SCALE, zmin=0, zmax=1, showscale=False,
        text=text, texttemplate="%{text}" if n <= 24 else None, textfont={"size": PLOT_FONT_SIZE, "color": "white"},
        hovertext=hover, hoverinfo="text", xgap=2, ygap=2))
    if selected is not None and 0 <= selected < n:
        c = PALETTE["selected"]
        fig.add_shape(type="rect", x0=-0.5, x1=n - 0.5, y0=selected - 0.5, y1=selected + 0.5, line={"color": c, "width": 4})
        fig.add_shape(type="rect", x0=selected - 0.5, x1=selected + 0.5, y0=-0.5, y1=n - 0.5, line={"color": c, "width": 2, "dash": "dot"})
    size = max(360, min(760, 60 + 44 * n))
    fig.update_layout(
        title={"text": title, "font": {"size": PLOT_FONT_SIZE + 2}} if title else None,
        font={"family": FONT_FAMILY, "size": PLOT_FONT_SIZE}, height=size, margin={"l": 10, "r": 10, "t": 50 if title else 10, "b": 10},
        xaxis={"side": "top", "tickfont": {"size": PLOT_FONT_SIZE if n <= 16 else 11}, "constrain": "domain"},
        yaxis={"autorange": "reversed", "tickfont": {"size": PLOT_FONT_SIZE if n <= 16 else 11}, "scaleanchor": "x"},
        plot_bgcolor="white", hoverlabel={"font": {"size": PLOT_FONT_SIZE}})
    return fig
