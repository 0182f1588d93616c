"""The tree attention mask as a plotly heatmap (pure: returns a figure, no streamlit)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from specviz.base.safety import plotly_safe

from specviz.render.palette import FONT_FAMILY, MASK_SCALE, PALETTE, PLOT_FONT_SIZE


@plotly_safe
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


def mask_storage_text(matrix, mode: str, seq_len: int, selected=None, stored=None) -> str:
    """How ``mode`` stores one request's mask, one line per row (the selected row marked ">").

    full_mask: the prefix columns (all True) then the n tree columns; qlen_only: the n tree
    columns; qlen_only_bitpacking: one integer per row, bit j = column j (``stored``, the
    TreeBuild's tree_mask, gives the integers build_tree wrote; else they are read off the matrix).
    """
    m = np.asarray(matrix, dtype=bool)
    n = m.shape[0]
    out = []
    for i in range(n):
        bits = "".join("1" if v else "0" for v in m[i])
        mark = ">" if i == selected else " "
        if mode == "qlen_only_bitpacking":
            value = int(stored[i]) if stored is not None else int(sum(1 << j for j in range(n) if m[i, j]))
            out.append(f"{mark} row {i:>2}: {value:>6} = 0b{bits[::-1]}")
        elif mode == "qlen_only":
            out.append(f"{mark} row {i:>2}: {bits}")
        else:
            prefix = "1" * min(seq_len, 6) + ("…" if seq_len > 6 else "")
            out.append(f"{mark} row {i:>2}: [{prefix} ×{seq_len}] {bits}")
    return "\n".join(out)


def mask_svg(matrix, labels, *, selected=None, words=("attends to", "masked", "row", "col"), max_px: int = 620) -> str:
    """The tree mask as an SVG grid, drawn by the server (no chart library in the browser).

    Same content as ``mask_heatmap``: a filled cell (with ✓ up to 24 nodes) where row i may
    attend to column j, tick labels ``i·token`` on the top and left, the selected node's row
    outlined solid and its column dotted, and each cell's exact value on hover (``<title>``;
    for more than 24 nodes, one hover per row keeps the document small)."""
    from xml.sax.saxutils import escape, quoteattr

    m = np.asarray(matrix, dtype=bool)
    n = m.shape[0]
    attends, masked, row_w, col_w = words
    ticks = [f"{i}·{labels[i]}" for i in range(n)]
    cell = max(9, min(44, (max_px - 120) // max(n, 1)))
    fs = PLOT_FONT_SIZE if n <= 16 else 11
    pad = int(min(140, 12 + 0.62 * fs * max(len(t) for t in ticks))) if n else 20
    size = pad + cell * n + 6
    width = size + int(0.5 * pad)  # the last column's slanted label runs right of the grid
    on, off = MASK_SCALE[-1][1], MASK_SCALE[0][1]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}pt" height="{size}pt" viewBox="0 0 {width} {size}">',
           f'<g font-family={quoteattr(FONT_FAMILY)} font-size="{fs}">']
    for i, t in enumerate(ticks):
        c = pad + cell * i + cell / 2
        out.append(f'<text x="{pad - 6}" y="{c + fs * 0.35:.1f}" text-anchor="end">{escape(t)}</text>')
        out.append(f'<text x="{c:.1f}" y="{pad - 6}" transform="rotate(-45 {c:.1f} {pad - 6})">{escape(t)}</text>')
    per_cell = n <= 24
    for i in range(n):
        out.append("<g>")
        if not per_cell:
            row_hits = ", ".join(str(j) for j in range(n) if m[i, j])
            hover = f"{row_w} {i} ({labels[i]}) {attends}: {col_w} {row_hits}"
            out.append(f"<title>{escape(hover)}</title>")
        for j in range(n):
            x, y = pad + cell * j + 1, pad + cell * i + 1
            word = attends if m[i, j] else masked
            hover = f"{row_w} {i} ({labels[i]}) → {col_w} {j} ({labels[j]}): {word} ({bool(m[i, j])})"
            tip = f"<title>{escape(hover)}</title>" if per_cell else ""
            out.append(f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{on if m[i, j] else off}">{tip}</rect>')
            if m[i, j] and per_cell:
                out.append(f'<text x="{x + (cell - 2) / 2:.1f}" y="{y + (cell - 2) / 2 + fs * 0.35:.1f}" text-anchor="middle" '
                           f'fill="white">✓</text>')
        out.append("</g>")
    if selected is not None and 0 <= selected < n:
        c = PALETTE["selected"]
        out.append(f'<rect x="{pad - 1}" y="{pad + cell * selected - 1}" width="{cell * n + 2}" height="{cell + 2}" '
                   f'fill="none" stroke="{c}" stroke-width="4"/>')
        out.append(f'<rect x="{pad + cell * selected - 1}" y="{pad - 1}" width="{cell + 2}" height="{cell * n + 2}" '
                   f'fill="none" stroke="{c}" stroke-width="2" stroke-dasharray="4,3"/>')
    out.append("</g></svg>")
    return "".join(out)
