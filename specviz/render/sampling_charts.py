"""Renderers for the two samplers: chain rejection sampling and target-only tree sampling.

Pure functions (no streamlit): values in, a plotly figure (the chart exports) or a graphviz DOT string out;
the same pictures as SVG drawn on the server, which the pages show, are in ``sampling_svg``. Text the
student reads is passed in through ``text=`` dicts so the pages can translate it; the defaults
are English. Every bar carries its exact value in the hover.

Colours follow ``palette``: accepted (bluish green), rejected (vermillion), pending (grey),
bonus (orange), current (blue).
"""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from specviz.base.safety import plotly_safe
from plotly.subplots import make_subplots

from specviz.base.safety import dot_quote
from specviz.render.palette import BLUE, FONT_FAMILY, GREY, ORANGE, PALE_GREY, PALETTE, PLOT_FONT_SIZE, SKY_BLUE, state_color, text_on

P_COLOR = BLUE  # the target's p
Q_COLOR = SKY_BLUE  # the draft's q
RESIDUAL_COLOR = PALETTE["rejected"]
NORMALISED_COLOR = ORANGE


def _layout(fig: go.Figure, *, height: int, title: str | None = None, legend: bool = True) -> go.Figure:
    fig.update_layout(
        height=height, margin=dict(l=10, r=10, t=60 if title else 20, b=10),
        font=dict(family=FONT_FAMILY, size=PLOT_FONT_SIZE), title=dict(text=title, x=0.0, font=dict(size=PLOT_FONT_SIZE + 2)) if title else None,
        plot_bgcolor="white", paper_bgcolor="white", showlegend=legend,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0),
        hoverlabel=dict(font_size=PLOT_FONT_SIZE),
    )
    return fig


def fmt_value(v: float) -> str:
    """A value as the charts print it (4 significant digits)."""
    return f"{v:.4g}"


# ---------------------------------------------------------------------------------------------
# Chain rejection sampling
# ---------------------------------------------------------------------------------------------

def chain_dot(tokens: Sequence[str], states: Sequence[str], *, bonus: str | None = None,
              hovers: Sequence[str] | None = None, slot_names: Sequence[str] | None = None,
              bonus_caption: str = "bonus") -> str:
    """The verify chain root -> draft 1 -> ... as a left-to-right graph; one state per slot.

    states: "accepted" / "rejected" / "pending" / "current" / "discarded" per slot. bonus: the
    token written at the last accepted row (an orange node hanging off it), or None.
    """
    lines = ["digraph chain {", '  rankdir=LR; bgcolor="transparent"; nodesep=0.3; ranksep=0.45;',
             f'  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=20, penwidth=2, margin="0.2,0.1"];',
             '  edge [color="#444444", penwidth=2, arrowsize=0.9];']
    last_accepted = 0
    for i, (tok, st) in enumerate(zip(tokens, states)):
        fill = state_color(st)
        name = slot_names[i] if slot_names else ("root" if i == 0 else f"slot {i}")
        tip = hovers[i] if hovers else f"{name}: {tok}"
        lines.append(f"  s{i} [label={dot_quote(f'{tok}' + chr(10) + f'{name}')}, fillcolor={dot_quote(fill)}, "
                     f"fontcolor={dot_quote(text_on(fill))}, tooltip={dot_quote(tip)}];")
        if i > 0:
            lines.append(f"  s{i - 1} -> s{i};")
        if st == "accepted":
            last_accepted = i
    if bonus is not None:
        fill = state_color("bonus")
        lines.append(f"  bonus [label={dot_quote(f'{bonus}' + chr(10) + f'{bonus_caption}')}, fillcolor={dot_quote(fill)}, "
                     f"fontcolor={dot_quote(text_on(fill))}, shape=box, style=\"rounded,filled,bold\", "
                     f"tooltip={dot_quote(f'{bonus_caption}: {bonus}')}];")
        lines.append(f'  s{last_accepted} -> bonus [style=dashed, color="{fill}", penwidth=3];')
    lines.append("}")
    return "\n".join(lines)


@plotly_safe
def accept_test_figure(p_tok: float, q_tok: float, coin: float, *, token: str, accepted: bool | None,
                       text: dict | None = None) -> go.Figure:
    """The test u*q < p on a 0..1 bar of coins: [0, min(1, p/q)) accepts, the rest rejects; the coin is a marker.

    accepted: the verdict (✔ / ✘ beside the coin), or None before the test is shown.
    """
    t = {"accept": "accept: u < p/q", "reject": "reject", "coin": "coin u", "title": "",
         "x": "coin u (0..1)"} | (text or {})
    a = min(1.0, p_tok / q_tok) if q_tok > 0 else (1.0 if p_tok > 0 else 0.0)
    fig = go.Figure()
    fig.add_bar(y=[0], x=[max(a, 0.002)], base=[0], orientation="h", width=0.8, name=t["accept"], marker_color=state_color("accepted"),
                hovertemplate=f"{t['accept']}<br>[0, {fmt_value(a)})<br>min(1, p/q) = min(1, {fmt_value(p_tok)}/{fmt_value(q_tok)}) = {fmt_value(a)}<extra></extra>")
    if a > 0.12:
        fig.add_annotation(x=a / 2, y=0, text=f"<b>{t['accept']}</b>", showarrow=False, font=dict(color="white", size=PLOT_FONT_SIZE))
    if a < 1:
        fig.add_bar(y=[0], x=[1 - a], base=[a], orientation="h", width=0.8, name=t["reject"], marker_color=state_color("rejected"),
                    hovertemplate=f"{t['reject']}<br>[{fmt_value(a)}, 1)<extra></extra>")
        if 1 - a > 0.12:
            fig.add_annotation(x=(1 + a) / 2, y=0, text=f"<b>{t['reject']}</b>", showarrow=False, font=dict(color="white", size=PLOT_FONT_SIZE))
    fig.add_annotation(x=a, y=-0.62, text=f"p/q = {fmt_value(p_tok)}/{fmt_value(q_tok)} = {fmt_value(p_tok / q_tok) if q_tok > 0 else '∞'}",
                       showarrow=False, xanchor="right" if a > 0.85 else ("left" if a < 0.15 else "center"),
                       font=dict(size=PLOT_FONT_SIZE - 2, color="#444444"))
    verdict = "" if accepted is None else ("✔" if accepted else "✘")
    fig.add_scatter(x=[coin], y=[0.62], mode="markers", name=t["coin"], showlegend=False,
                    marker=dict(symbol="triangle-down", size=28, color="black", line=dict(color="white", width=2)),
                    hovertemplate=(f"u = {fmt_value(coin)}<br>u·q = {fmt_value(coin)} × {fmt_value(q_tok)} = {fmt_value(coin * q_tok)}"
                                   f"<br>p = {fmt_value(p_tok)}" + ("" if accepted is None else f"<br>u·q &lt; p ? {accepted}") + "<extra></extra>"))
    fig.add_annotation(x=coin, y=0.98, text=f"<b>u = {fmt_value(coin)}  {verdict}</b>", showarrow=False, font=dict(size=PLOT_FONT_SIZE + 1))
    fig.update_xaxes(range=[-0.01, 1.01], title_text=t["x"], showgrid=False, dtick=0.1)
    fig.update_yaxes(range=[-0.85, 1.15], showticklabels=False, showgrid=False, zeroline=False)
    fig.update_layout(barmode="overlay")
    return _layout(fig, height=250, title=t["title"] or None, legend=False)


@plotly_safe
def residual_figure(vocab: Sequence[str], p, q, *, coin_final: float | None = None, chosen: int | None = None,
                    bonus_from_p: bool = False, text: dict | None = None) -> go.Figure:
    """Top: p, q, max(p - q, 0) and its normalised form per token. Bottom: the normalised residual
    laid out on a 0..1 bar (inverse CDF) with the terminal coin landing on one token.

    bonus_from_p: every draft was accepted, so the terminal draw uses plain p (q is not drawn).
    """
    t = {"p": "p (target)", "q": "q (draft)", "res": "max(p − q, 0)", "norm": "normalised",
         "coin": "u_final", "cdf": "terminal draw", "title": ""} | (text or {})
    p = [float(v) for v in p]
    V = len(vocab)
    if bonus_from_p or q is None:
        dist = p[:]
    else:
        dist = [max(a - float(b), 0.0) for a, b in zip(p, q)]
    tot = sum(dist)
    norm = [d / tot if tot > 0 else 0.0 for d in dist]
    fig = make_subplots(rows=2, cols=1, row_heights=[0.72, 0.28], vertical_spacing=0.14)
    fig.add_bar(x=list(vocab), y=p, name=t["p"], marker_color=P_COLOR, row=1, col=1,
                hovertemplate="%{x}: p = %{y:.4g}<extra></extra>")
    if not bonus_from_p and q is not None:
        fig.add_bar(x=list(vocab), y=[float(v) for v in q], name=t["q"], marker_color=Q_COLOR, row=1, col=1,
                    hovertemplate="%{x}: q = %{y:.4g}<extra></extra>")
        fig.add_bar(x=list(vocab), y=dist, name=t["res"], marker_color=RESIDUAL_COLOR, row=1, col=1,
                    hovertemplate="%{x}: max(p − q, 0) = %{y:.4g}<extra></extra>")
    fig.add_bar(x=list(vocab), y=norm, name=t["norm"], marker_color=NORMALISED_COLOR, row=1, col=1,
                text=[fmt_value(v) if v > 0 else "" for v in norm], textposition="outside",
                hovertemplate="%{x}: " + t["norm"] + " = %{y:.4g}<extra></extra>")
    # Inverse-CDF strip.
    lo = 0.0
    for i in range(V):
        if norm[i] <= 0:
            continue
        hit = chosen == i
        fill = state_color("bonus") if hit else PALE_GREY
        fig.add_bar(y=[t["cdf"]], x=[norm[i]], base=[lo], orientation="h", marker_color=fill,
                    marker_line=dict(color="#444444", width=1.5), showlegend=False, row=2, col=1,
                    text=[vocab[i]], textposition="inside", insidetextanchor="middle",
                    textfont=dict(size=PLOT_FONT_SIZE + 2, color=text_on(fill)),
                    hovertemplate=f"{vocab[i]}: [{fmt_value(lo)}, {fmt_value(lo + norm[i])})<extra></extra>")
        lo += norm[i]
    if coin_final is not None:
        label = f"{t['coin']} = {fmt_value(coin_final)}" + (f" → {vocab[chosen]}" if chosen is not None and 0 <= chosen < V else "")
        fig.add_scatter(x=[coin_final], y=[t["cdf"]], mode="markers", row=2, col=1, showlegend=False,
                        marker=dict(symbol="triangle-down", size=26, color="black", line=dict(color="white", width=2)),
                        hovertemplate=label + "<extra></extra>")
        fig.update_xaxes(title_text=f"<b>{label}</b>", row=2, col=1)
    fig.update_xaxes(range=[0, 1], row=2, col=1, dtick=0.1)
    fig.update_yaxes(range=[0, max(1.0, max(p + norm) * 1.18)], row=1, col=1, gridcolor="#eeeeee")
    fig.update_layout(barmode="group")
    # The strip is overlaid bars; group mode would offset them, so place each by base on its own axis.
    for tr in fig.data:
        if getattr(tr, "orientation", None) == "h":
            tr.update(offsetgroup="strip")
    return _layout(fig, height=470, title=t["title"] or None)


@plotly_safe
def decomposition_figure(vocab: Sequence[str], accepted, redistributed, p, *, text: dict | None = None) -> go.Figure:
    """The article's mass check as a stacked bar per token: min(p, q) + redistributed rejected mass = p."""
    t = {"acc": "accepted: min(p, q)", "red": "rejected mass, redistributed", "p": "p (target)", "title": ""} | (text or {})
    acc = [float(v) for v in accepted]
    red = [float(v) for v in redistributed]
    pp = [float(v) for v in p]
    fig = go.Figure()
    fig.add_bar(x=list(vocab), y=acc, name=t["acc"], marker_color=state_color("accepted"),
                text=[fmt_value(v) if v > 1e-12 else "" for v in acc], textposition="inside",
                textfont=dict(color="white", size=PLOT_FONT_SIZE), hovertemplate="%{x}: " + t["acc"] + " = %{y:.4g}<extra></extra>")
    fig.add_bar(x=list(vocab), y=red, name=t["red"], marker_color=state_color("bonus"),
                text=[fmt_value(v) if v > 1e-12 else "" for v in red], textposition="inside",
                textfont=dict(color="black", size=PLOT_FONT_SIZE), hovertemplate="%{x}: " + t["red"] + " = %{y:.4g}<extra></extra>")
    fig.add_scatter(x=list(vocab), y=pp, mode="markers+text", name=t["p"],
                    marker=dict(symbol="line-ew", size=46, line=dict(color="black", width=4)),
                    text=[f"p = {fmt_value(v)}" for v in pp], textposition="top center", textfont=dict(size=PLOT_FONT_SIZE),
                    hovertemplate="%{x}: p = %{y:.4g}<extra></extra>")
    fig.update_layout(barmode="stack")
    fig.update_yaxes(range=[0, max(pp + [a + r for a, r in zip(acc, red)] + [0.1]) * 1.3], gridcolor="#eeeeee")
    return _layout(fig, height=400, title=t["title"] or None)


@plotly_safe
def monte_carlo_figure(vocab: Sequence[str], empirical, target, *, expected=None, counts=None,
                       text: dict | None = None) -> go.Figure:
    """Empirical first-token frequencies beside p (and beside the closed form when it differs from p)."""
    t = {"emp": "Monte Carlo", "p": "p (target)", "exp": "exact for this procedure", "title": ""} | (text or {})
    emp = [float(v) for v in empirical]
    fig = go.Figure()
    fig.add_bar(x=list(vocab), y=[float(v) for v in target], name=t["p"], marker_color=P_COLOR,
                hovertemplate="%{x}: p = %{y:.4g}<extra></extra>")
    if expected is not None:
        fig.add_bar(x=list(vocab), y=[float(v) for v in expected], name=t["exp"], marker_color=GREY,
                    hovertemplate="%{x}: " + t["exp"] + " = %{y:.4g}<extra></extra>")
    cd = [int(c) for c in counts] if counts is not None else [0] * len(emp)
    fig.add_bar(x=list(vocab), y=emp, name=t["emp"], marker_color=ORANGE, customdata=cd,
                text=[fmt_value(v) if v > 0 else "" for v in emp], textposition="outside",
                hovertemplate="%{x}: %{y:.4g} (%{customdata} trials)<extra></extra>")
    fig.update_layout(barmode="group")
    fig.update_yaxes(range=[0, 1.05], gridcolor="#eeeeee")
    return _layout(fig, height=380, title=t["title"] or None)


@plotly_safe
def probability_heatmap(row_labels: Sequence[str], vocab: Sequence[str], table, *, highlight=None,
                        title: str | None = None) -> go.Figure:
    """A [rows, V] probability table as a heatmap with values in the cells; highlight = [(row, col)] outlined."""
    z = [[float(v) for v in row] for row in table]
    fig = go.Figure(go.Heatmap(z=z, x=list(vocab), y=list(row_labels), zmin=0, zmax=1, colorscale=[[0, "#F7F7F7"], [1, BLUE]],
                               text=[[fmt_value(v) for v in row] for row in z], texttemplate="%{text}", showscale=False,
                               hovertemplate="%{y}, %{x}: %{z:.4g}<extra></extra>"))
    for r, c in highlight or []:
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, line=dict(color="black", width=4))
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, height=90 + 46 * len(z), title=title, legend=False)


# ---------------------------------------------------------------------------------------------
# Target-only tree sampling
# ---------------------------------------------------------------------------------------------

@plotly_safe
def buckets_figure(buckets, labels: Sequence[str], coin: float | None, *, current: int | None = None,
                   verdicts: dict | None = None, threshold_acc: float = 1.0, text: dict | None = None) -> go.Figure:
    """The sibling scan as buckets on a 0..1 coin bar (``distributions.Bucket``: [lo, hi) per sibling).

    labels: one per bucket. verdicts: bucket index -> "accepted" / "rejected" for siblings already
    tested (others pending). current: the sibling under test (thick outline). The coin marker shows u;
    the running-sum bound prob_acc / threshold_acc of each sibling is in its hover.
    """
    t = {"coin": "coin u", "rest": "every sibling rejected: relu(p − buffer)", "x": "coin u (0..1)", "title": ""} | (text or {})
    verdicts = verdicts or {}
    fig = go.Figure()
    hi_max = 0.0
    for j, bk in enumerate(buckets):
        width = bk.hi - bk.lo
        hi_max = max(hi_max, bk.hi)
        state = verdicts.get(j, "current" if j == current else "pending")
        fill = state_color(state)
        hover = (f"{labels[j]}: p = {fmt_value(bk.p)}<br>prob_acc = {fmt_value(bk.prob_acc)}<br>"
                 f"prob_acc / threshold_acc = {fmt_value(bk.prob_acc)} / {fmt_value(threshold_acc)} = {fmt_value(bk.bound)}"
                 f"<br>bucket [{fmt_value(bk.lo)}, {fmt_value(bk.hi)})" + ("<br>p ≥ threshold_single" if bk.single else ""))
        fig.add_bar(y=[0], x=[max(width, 0.004)], base=[bk.lo], orientation="h", width=0.8, marker_color=fill, showlegend=False,
                    marker_line=dict(color="black" if j == current else "white", width=5 if j == current else 2),
                    hovertemplate=hover + "<extra></extra>")
        if width > 0.03:
            fig.add_annotation(x=(bk.lo + bk.hi) / 2, y=0, text=f"<b>{labels[j]}</b>", showarrow=False,
                               font=dict(size=PLOT_FONT_SIZE + 2, color=text_on(fill)))
            fig.add_annotation(x=(bk.lo + bk.hi) / 2, y=-0.62, text=f"[{fmt_value(bk.lo)}, {fmt_value(bk.hi)})", showarrow=False,
                               font=dict(size=PLOT_FONT_SIZE - 3, color="#444444"))
    if hi_max < 1.0:
        fig.add_bar(y=[0], x=[1.0 - hi_max], base=[hi_max], orientation="h", width=0.8, marker_color=PALE_GREY, showlegend=False,
                    marker_line=dict(color="white", width=2), hovertemplate=f"[{fmt_value(hi_max)}, 1): {t['rest']}<extra></extra>")
        fig.add_annotation(x=(hi_max + 1) / 2, y=-0.62, text=f"[{fmt_value(hi_max)}, 1)", showarrow=False,
                           font=dict(size=PLOT_FONT_SIZE - 3, color="#444444"))
        if 1 - hi_max > 0.12:
            fig.add_annotation(x=(hi_max + 1) / 2, y=0, text=t["rest"] if 1 - hi_max > 0.4 else "relu(p − buf)", showarrow=False,
                               font=dict(size=PLOT_FONT_SIZE - 4, color="#555555"))
    if coin is not None:
        fig.add_scatter(x=[coin], y=[0.62], mode="markers", showlegend=False,
                        marker=dict(symbol="triangle-down", size=26, color="black", line=dict(color="white", width=2)),
                        hovertemplate=f"{t['coin']} = {fmt_value(coin)}<extra></extra>")
        fig.add_annotation(x=coin, y=0.95, text=f"<b>u = {fmt_value(coin)}</b>", showarrow=False, font=dict(size=PLOT_FONT_SIZE + 1))
    fig.update_xaxes(range=[-0.01, 1.01], title_text=t["x"], dtick=0.1, showgrid=False)
    fig.update_yaxes(range=[-0.85, 1.1], showticklabels=False, showgrid=False, zeroline=False)
    fig.update_layout(barmode="overlay")
    return _layout(fig, height=250, title=t["title"] or None, legend=False)


@plotly_safe
def buffer_figure(vocab: Sequence[str], p_row, buffer_row, *, dist=None, coin_final: float | None = None,
                  chosen: int | None = None, text: dict | None = None) -> go.Figure:
    """The parent's target row p, the work buffer (rejected siblings' target mass), and relu(p − buffer).

    With ``dist`` (the terminal distribution) and ``coin_final``, a bottom strip shows the draw.
    """
    t = {"p": "p (target row)", "buf": "work buffer draft_probs", "res": "relu(p − buffer)", "coin": "u_final",
         "cdf": "terminal draw", "title": ""} | (text or {})
    p = [float(v) for v in p_row]
    buf = [float(v) for v in buffer_row]
    res = [max(a - b, 0.0) for a, b in zip(p, buf)]
    rows = 2 if dist is not None else 1
    fig = make_subplots(rows=rows, cols=1, row_heights=[0.72, 0.28] if rows == 2 else [1.0], vertical_spacing=0.14)
    fig.add_bar(x=list(vocab), y=p, name=t["p"], marker_color=P_COLOR, row=1, col=1, hovertemplate="%{x}: p = %{y:.4g}<extra></extra>")
    fig.add_bar(x=list(vocab), y=buf, name=t["buf"], marker_color=state_color("rejected"), row=1, col=1,
                text=[fmt_value(v) if v > 0 else "" for v in buf], textposition="outside",
                hovertemplate="%{x}: buffer = %{y:.4g}<extra></extra>")
    fig.add_bar(x=list(vocab), y=res, name=t["res"], marker_color=ORANGE, row=1, col=1,
                hovertemplate="%{x}: relu(p − buffer) = %{y:.4g}<extra></extra>")
    if dist is not None:
        d = [float(v) for v in dist]
        tot = sum(d)
        norm = [v / tot if tot > 0 else 0.0 for v in d]
        lo = 0.0
        for i, w in enumerate(norm):
            if w <= 0:
                continue
            fill = state_color("bonus") if chosen == i else PALE_GREY
            fig.add_bar(y=[t["cdf"]], x=[w], base=[lo], orientation="h", marker_color=fill, showlegend=False,
                        marker_line=dict(color="#444444", width=1.5), row=2, col=1, offsetgroup="strip",
                        text=[vocab[i]], textposition="inside", insidetextanchor="middle",
                        textfont=dict(size=PLOT_FONT_SIZE + 2, color=text_on(fill)),
                        hovertemplate=f"{vocab[i]}: [{fmt_value(lo)}, {fmt_value(lo + w)})<extra></extra>")
            lo += w
        if coin_final is not None:
            label = f"{t['coin']} = {fmt_value(coin_final)}" + (f" → {vocab[chosen]}" if chosen is not None and 0 <= chosen < len(vocab) else "")
            fig.add_scatter(x=[coin_final], y=[t["cdf"]], mode="markers", row=2, col=1, showlegend=False,
                            marker=dict(symbol="triangle-down", size=26, color="black", line=dict(color="white", width=2)),
                            hovertemplate=label + "<extra></extra>")
            fig.update_xaxes(title_text=f"<b>{label}</b>", row=2, col=1)
        fig.update_xaxes(range=[0, 1], row=2, col=1, dtick=0.1)
    fig.update_yaxes(range=[0, 1.1], row=1, col=1, gridcolor="#eeeeee")
    fig.update_layout(barmode="group")
    return _layout(fig, height=470 if rows == 2 else 340, title=t["title"] or None)


def sampling_tree_dot(parents: Sequence[int], labels: Sequence[str], states: Sequence[str], *,
                      hovers: Sequence[str] | None = None, captions: Sequence[str] | None = None,
                      bonus: tuple | None = None, bonus_caption: str = "bonus", show=None,
                      more_caption: str = "more") -> str:
    """A verify tree top-down, one state colour per node; first child -> next sibling order left to right.

    captions: a second line per node (e.g. "p=.5"). bonus: (node, token label) for the terminal token.
    show: the nodes to draw (a big tree: the walk's path and the siblings it scanned); every other
    node is folded into one "+k more" box under its nearest drawn parent. None draws every node.
    """
    lines = ["digraph tree {", '  rankdir=TB; bgcolor="transparent"; nodesep=0.35; ranksep=0.45; ordering=out;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=20, penwidth=2, margin="0.18,0.08"];',
             '  edge [color="#444444", penwidth=2, arrowsize=0.9];']
    shown = set(range(len(parents))) if show is None else set(show) | {0}
    for i, (lab, st) in enumerate(zip(labels, states)):
        if i not in shown:
            continue
        fill = state_color(st)
        cap = f"\n{captions[i]}" if captions and captions[i] else ""
        tip = hovers[i] if hovers else f"node {i}: {lab}"
        extra = ', fontcolor="#777777", color="#BBBBBB"' if st == "discarded" else f", fontcolor={dot_quote(text_on(fill))}"
        lines.append(f"  n{i} [label={dot_quote(f'{i}: {lab}{cap}')}, fillcolor={dot_quote(fill)}, tooltip={dot_quote(tip)}{extra}];")
    folded: dict = {}
    for i, par in enumerate(parents):
        if par < 0:
            continue
        if i in shown:
            lines.append(f"  n{par} -> n{i};")
        elif par in shown:
            folded[par] = folded.get(par, 0) + 1 + _descendants(parents, i)
    for par, k in folded.items():
        lines.append(f'  more{par} [label={dot_quote(f"+{k} {more_caption}")}, shape=plaintext, style="", fontsize=16, fontcolor="#777777"];')
        lines.append(f'  n{par} -> more{par} [style=dotted, color="#BBBBBB"];')
    if bonus is not None:
        node, tok = bonus
        fill = state_color("bonus")
        lines.append(f"  bonus [label={dot_quote(f'{tok}' + chr(10) + f'{bonus_caption}')}, fillcolor={dot_quote(fill)}, "
                     f"fontcolor={dot_quote(text_on(fill))}, style=\"rounded,filled,bold\", "
                     f"tooltip={dot_quote(f'{bonus_caption}: {tok}')}];")
        lines.append(f'  n{node} -> bonus [style=dashed, color="{fill}", penwidth=3];')
    lines.append("}")
    return "\n".join(lines)


def _descendants(parents: Sequence[int], node: int) -> int:
    """How many nodes lie below ``node`` (parents[i] < i in rollout order)."""
    below = {node}
    count = 0
    for i in range(node + 1, len(parents)):
        if parents[i] in below:
            below.add(i)
            count += 1
    return count
