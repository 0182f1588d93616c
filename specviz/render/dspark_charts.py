"""Renderers for the DSpark chain accept (SEMANTICS.md §8): pure functions, SVG (shown) and plotly (exported) figures.

A DSpark verify window holds T = gamma + 1 rows: the anchor (the previous bonus) and gamma drafts.
The pictures: the match grid (draft at t+1 against the target's prediction at row t, the
leading run that makes correct_len, a later match ignored, the verify-window cap), the
fixed-width BuildOutTokens buffer (valid prefix, stale slots greyed) and the KV-inject columns.
"""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from specviz.base.safety import plotly_safe

from specviz.render import svgchart
from specviz.render.palette import FONT_FAMILY, PALE_GREY, PLOT_FONT_SIZE, WHITE, state_color, text_on


def cell_grid_figure(row_names: Sequence[str], cells: Sequence[Sequence[str]], states: Sequence[Sequence[str]],
                     hovers: Sequence[Sequence[str]] | None = None, *, col_names: Sequence[str] | None = None,
                     marks: Sequence[tuple] = (), title: str | None = None, cell_height: int = 62) -> go.Figure:
    """A grid of labelled cells, one state colour each ("accepted", "rejected", "pending", "bonus",
    "discarded", "current", "blank"); hover shows ``hovers[r][c]``. marks: vertical lines
    (x_between_columns, label) such as the commit_lens boundary.
    """
    nrows = len(row_names)
    ncols = max((len(r) for r in cells), default=0)
    # Shapes and annotations are collected as plain dicts and set once: adding them one by one
    # re-validates the whole layout each time, which is slow for a grid.
    shapes, notes = [], []
    xs, ys, tips = [], [], []
    for r in range(nrows):
        for c in range(len(cells[r])):
            st = states[r][c]
            if st == "blank":
                continue
            fill = WHITE if st == "plain" else state_color(st)
            line = "#BBBBBB" if st in ("discarded", "plain") else "#444444"
            shapes.append(dict(type="rect", x0=c + 0.04, x1=c + 0.96, y0=r + 0.08, y1=r + 0.92, fillcolor=fill, layer="below",
                               line=dict(color=line, width=2, dash="dot" if st == "discarded" else "solid")))
            xs.append(c + 0.5)
            ys.append(r + 0.5)
            tips.append(hovers[r][c] if hovers else cells[r][c])
            text = f"<b>{cells[r][c]}</b>" if st != "discarded" else str(cells[r][c])  # greyed, not struck through
            notes.append(dict(x=c + 0.5, y=r + 0.5, text=text, showarrow=False,
                              font=dict(size=PLOT_FONT_SIZE + 2, color="#777777" if st == "discarded" else text_on(fill))))
    merged: dict = {}
    for x, label in marks:  # two boundaries on one column line share one label
        merged[x] = f"{merged[x]}, {label}" if x in merged else label
    for x, label in merged.items():
        shapes.append(dict(type="line", x0=x, x1=x, y0=-0.1, y1=nrows + 0.1, line=dict(color="black", width=4, dash="dash")))
        edge = "right" if x >= ncols - 0.01 else ("left" if x <= 0.01 else "center")  # keep the label inside the plot
        notes.append(dict(x=x, y=-0.12, text=f"<b>{label}</b>", showarrow=False, yanchor="bottom", xanchor=edge,
                          font=dict(size=PLOT_FONT_SIZE, color="black")))
    # Invisible markers carry the hovers.
    fig = go.Figure(data=[dict(type="scatter", x=xs, y=ys, mode="markers", marker=dict(size=38, opacity=0), hovertext=tips,
                               hoverinfo="text", showlegend=False)],
                    layout=dict(shapes=shapes, annotations=notes))
    fig.update_xaxes(range=[-0.05, ncols + 0.05], showgrid=False, zeroline=False,
                     tickvals=[c + 0.5 for c in range(ncols)], ticktext=list(col_names) if col_names else [str(c) for c in range(ncols)],
                     side="top", tickfont=dict(size=PLOT_FONT_SIZE - 2, color="#444444"))
    fig.update_yaxes(range=[nrows + 0.05, -0.45 if marks else -0.05], showgrid=False, zeroline=False,
                     tickvals=[r + 0.5 for r in range(nrows)], ticktext=list(row_names),
                     tickfont=dict(size=PLOT_FONT_SIZE, color="black"))
    fig.update_layout(height=90 + cell_height * nrows + (30 if marks else 0), margin=dict(l=10, r=10, t=70 if title else 40, b=10),
                      font=dict(family=FONT_FAMILY, size=PLOT_FONT_SIZE), plot_bgcolor="white", paper_bgcolor="white",
                      title=dict(text=title, x=0.0) if title else None, hoverlabel=dict(font_size=PLOT_FONT_SIZE))
    return fig


def cell_grid_svg(row_names: Sequence[str], cells: Sequence[Sequence[str]], states: Sequence[Sequence[str]],
                  hovers: Sequence[Sequence[str]] | None = None, *, col_names: Sequence[str] | None = None,
                  marks: Sequence[tuple] = (), alt: str = "") -> str:
    """``cell_grid_figure`` as SVG: the same state colours ("plain" white with a light outline,
    "discarded" pale grey, dotted, grey text; "blank" no cell), hovers and marks."""
    fills = [[None if st == "blank" else (WHITE if st == "plain" else state_color(st)) for st in row] for row in states]
    dashed = [[st == "discarded" for st in row] for row in states]
    light = [[st == "plain" for st in row] for row in states]
    return svgchart.cell_grid(row_names, [[str(x) for x in row] for row in cells], fills, hovers, col_names=col_names,
                              marks=[(float(x), str(label)) for x, label in marks], dashed=dashed, faded=dashed, light=light,
                              alt=alt)


@plotly_safe
def match_figure(window: Sequence[str], target: Sequence[str], matches: Sequence[bool], correct_len: int, *,
                 raw_correct_len: int | None = None, verify_len: int | None = None, compared: int | None = None,
                 show_result: bool = True, text: dict | None = None) -> go.Figure:
    """The DSpark greedy compare as a plotly figure (the sidebar's chart export); ``match_svg`` is what the page shows."""
    rows, cells, states, hovers, cols, marks = _match_cells(window, target, matches, correct_len, raw_correct_len=raw_correct_len,
                                                            verify_len=verify_len, compared=compared,
                                                            show_result=show_result, text=text)
    return cell_grid_figure(rows, cells, states, hovers, col_names=cols, marks=marks)


def match_svg(window: Sequence[str], target: Sequence[str], matches: Sequence[bool], correct_len: int, *,
              raw_correct_len: int | None = None, verify_len: int | None = None, compared: int | None = None,
              show_result: bool = True, text: dict | None = None) -> str:
    """``match_figure`` as SVG drawn on the server: the same cells, words, colours, hovers and marks."""
    rows, cells, states, hovers, cols, marks = _match_cells(window, target, matches, correct_len, raw_correct_len=raw_correct_len,
                                                            verify_len=verify_len, compared=compared,
                                                            show_result=show_result, text=text)
    return cell_grid_svg(rows, cells, states, hovers, col_names=cols, marks=marks, alt=(text or {}).get("title", ""))


def _match_cells(window: Sequence[str], target: Sequence[str], matches: Sequence[bool], correct_len: int, *,
                 raw_correct_len: int | None = None, verify_len: int | None = None, compared: int | None = None,
                 show_result: bool = True, text: dict | None = None):
    """The DSpark greedy compare: column t holds verify row t (anchor, drafts), the target's
    prediction after row t, and whether draft t+1 equals it.

    window [T] tokens (anchor first); target [T] predictions; matches [T-1]: window[t+1] == target[t].
    correct_len: after the window cap; raw_correct_len: the leading run before it. verify_len caps the
    window (rows >= verify_len are greyed). compared: how many compares to reveal (animation; None =
    all). show_result: mark the bonus and the commit_lens boundary.
    """
    t = {"row": "verify row (input)", "target": "target predicts after it", "draft": "next draft",
         "match": "match?", "ignored": "ignored: after a mismatch", "capped": "beyond verify_len",
         "commit": "commit_lens", "bonus": "bonus", "h_row": "row", "h_anchor": "anchor", "h_draft": "draft",
         "h_draft_at": "draft at row", "h_true": "True", "h_false": "False"} | (text or {})
    T = len(window)
    vl = T if verify_len is None else verify_len
    shown = T - 1 if compared is None else max(0, min(compared, T - 1))
    first_miss = next((i for i, m in enumerate(matches) if not m), None)
    rows = [t["row"], t["target"], t["draft"], t["match"]]
    cells, states, hovers = [[], [], [], []], [[], [], [], []], [[], [], [], []]
    for c in range(T):
        outside = c >= vl
        cells[0].append(window[c])
        if show_result:
            row_state = "accepted" if c <= correct_len else "discarded"
        elif c == 0:
            row_state = "accepted"  # the anchor row is always kept
        elif c - 1 < shown:  # its compare has been revealed
            counted = matches[c - 1] and (first_miss is None or c - 1 < first_miss)
            row_state = "accepted" if counted else ("rejected" if c - 1 == first_miss else "discarded")
        else:
            row_state = "discarded" if outside else "pending"
        states[0].append(row_state)
        hovers[0].append(f"{t['h_row']} {c} ({t['h_anchor'] if c == 0 else t['h_draft'] + f' {c}'}): {window[c]}" + (f" ({t['capped']})" if outside else ""))
        is_bonus = show_result and c == correct_len
        cells[1].append(target[c])
        live = not show_result and compared is not None and c == shown - 1  # the compare just revealed
        states[1].append("bonus" if is_bonus else ("compared" if live else ("discarded" if outside else "plain")))
        hovers[1].append(f"target_predict[{c}] = {target[c]}" + (f" ({t['bonus']})" if is_bonus else ""))
        if c == T - 1:
            for r in (2, 3):
                cells[r].append("")
                states[r].append("blank")
                hovers[r].append("")
            continue
        m = bool(matches[c])
        cells[2].append(window[c + 1])
        states[2].append("compared" if live else "plain")
        hovers[2].append(f"{t['h_draft_at']} {c + 1}: {window[c + 1]}")
        if c < shown:
            counted = m and (first_miss is None or c < first_miss)
            ignored = first_miss is not None and c > first_miss  # after the first mismatch nothing counts, match or not
            cells[3].append(("(✔)" if m else "(✘)") if ignored else ("✔" if counted else "✘"))
            states[3].append("discarded" if ignored else ("accepted" if counted else "rejected"))
            hovers[3].append(f"{window[c + 1]} == {target[c]} ? {t['h_true'] if m else t['h_false']}" + (f": {t['ignored']}" if ignored else ""))
        else:
            cells[3].append("?")
            states[3].append("pending")
            hovers[3].append(f"{window[c + 1]} == {target[c]} ?")
    marks = []
    if show_result:
        marks.append((correct_len + 1, f"{t['commit']} = {correct_len + 1}"))
    if vl < T:
        marks.append((vl, f"verify_len = {vl}"))
    return rows, cells, states, hovers, [f"t={c}" for c in range(T)], marks


@plotly_safe
def out_tokens_figure(drafts: Sequence[str], out_tokens: Sequence[str], correct_len: int, *, zero_label: str = "0",
                      text: dict | None = None) -> go.Figure:
    """BuildOutTokens as a plotly figure; ``out_tokens_svg`` is what the page shows."""
    rows, cells, states, hovers, cols, marks = _out_tokens_cells(drafts, out_tokens, correct_len, zero_label=zero_label, text=text)
    return cell_grid_figure(rows, cells, states, hovers, col_names=cols, marks=marks)


def out_tokens_svg(drafts: Sequence[str], out_tokens: Sequence[str], correct_len: int, *, zero_label: str = "0",
                   text: dict | None = None) -> str:
    """``out_tokens_figure`` as SVG drawn on the server."""
    rows, cells, states, hovers, cols, marks = _out_tokens_cells(drafts, out_tokens, correct_len, zero_label=zero_label, text=text)
    return cell_grid_svg(rows, cells, states, hovers, col_names=cols, marks=marks, alt=(text or {}).get("title", ""))


def _out_tokens_cells(drafts: Sequence[str], out_tokens: Sequence[str], correct_len: int, *, zero_label: str = "0",
                      text: dict | None = None):
    """BuildOutTokens: [drafts..., 0] then the bonus scattered at column correct_len.

    Columns < commit_lens = correct_len + 1 are the output; the rest are stale (greyed).
    """
    t = {"before": "drafts, then 0", "after": "after bonus scatter", "valid": "output", "stale": "stale",
         "h_initial": "initial", "h_scattered": "bonus scattered at correct_len", "h_accepted": "accepted draft", "h_column": "column",
         "commit": "commit_lens"} | (text or {})
    T = len(out_tokens)
    before = list(drafts) + [zero_label]
    cells = [before[:T], list(out_tokens)]
    states = [["plain"] * T, []]
    hovers = [[f"out[{c}] = {before[c]} ({t['h_initial']})" for c in range(T)], []]
    for c in range(T):
        if c == correct_len:
            states[1].append("bonus")
            hovers[1].append(f"out[{c}] = {out_tokens[c]}: {t['h_scattered']} = {correct_len}")
        elif c < correct_len:
            states[1].append("accepted")
            hovers[1].append(f"out[{c}] = {out_tokens[c]}: {t['h_accepted']} ({t['valid']})")
        else:
            states[1].append("discarded")
            hovers[1].append(f"out[{c}] = {out_tokens[c]}: {t['stale']} ({t['h_column']} >= commit_lens = {correct_len + 1})")
    return ([t["before"], t["after"]], cells, states, hovers, [f"out[{c}]" if T <= 6 else str(c) for c in range(T)],
            [(correct_len + 1, f"{t['commit']} = {correct_len + 1}")])


@plotly_safe
def kv_columns_figure(window: Sequence[str], kv_columns: Sequence[int], *, text: dict | None = None) -> go.Figure:
    """KV inject as a plotly figure; ``kv_columns_svg`` is what the page shows."""
    rows, cells, states, hovers, cols = _kv_cells(window, kv_columns, text=text)
    return cell_grid_figure(rows, cells, states, hovers, col_names=cols)


def kv_columns_svg(window: Sequence[str], kv_columns: Sequence[int], *, text: dict | None = None) -> str:
    """``kv_columns_figure`` as SVG drawn on the server."""
    rows, cells, states, hovers, cols = _kv_cells(window, kv_columns, text=text)
    return cell_grid_svg(rows, cells, states, hovers, col_names=cols, alt=(text or {}).get("title", ""))


def _kv_cells(window: Sequence[str], kv_columns: Sequence[int], *, text: dict | None = None):
    """KV inject: column c (verify row c) gets cache location prefix + c when c < commit_lens, else -1."""
    t = {"row": "verify row", "loc": "KV location", "h_row": "row", "h_column": "column", "h_kept": "kept at position",
         "h_dropped": "location -1: not committed"} | (text or {})
    T = len(window)
    states = [["accepted" if kv_columns[c] >= 0 else "discarded" for c in range(T)] for _ in range(2)]
    cells = [list(window), [str(int(v)) for v in kv_columns]]
    hovers = [[f"{t['h_row']} {c}: {window[c]}" for c in range(T)],
              [f"{t['h_column']} {c}: {t['h_kept'] + ' ' + str(int(kv_columns[c])) if kv_columns[c] >= 0 else t['h_dropped']}"
               for c in range(T)]]
    return [t["row"], t["loc"]], cells, states, hovers, [f"c={c}" for c in range(T)]


__all__ = ["cell_grid_figure", "cell_grid_svg", "match_figure", "match_svg", "out_tokens_figure", "out_tokens_svg",
           "kv_columns_figure", "kv_columns_svg", "PALE_GREY"]
