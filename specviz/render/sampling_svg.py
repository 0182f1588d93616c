"""The samplers' pictures as SVG drawn on the server: what the chain and target-only pages show.

The same pictures as ``sampling_charts``' plotly figures (which remain for the chart exports), drawn by
``svgchart`` without a browser-side plotting library; colours and number format from ``sampling_charts``.
Pure functions (no streamlit); text the student reads comes in through ``text=`` dicts, English by default.
"""
from __future__ import annotations

from typing import Sequence

from specviz.render import svgchart
from specviz.render.palette import GREY, ORANGE, state_color
from specviz.render.sampling_charts import NORMALISED_COLOR, P_COLOR, Q_COLOR, RESIDUAL_COLOR, fmt_value


def residual_svg(vocab: Sequence[str], p, q, *, coin_final: float | None = None, chosen: int | None = None,
                 bonus_from_p: bool = False, text: dict | None = None, width: float = svgchart.WIDTH) -> str:
    """``residual_figure`` as SVG: p, q, max(p − q, 0) and its normalised form per token, then the
    normalised residual on a 0..1 strip with the terminal coin landing on one token."""
    t = {"p": "p (target)", "q": "q (draft)", "res": "max(p − q, 0)", "norm": "normalised",
         "coin": "u_final", "cdf": "terminal draw", "title": ""} | (text or {})
    cats = [str(v) for v in vocab]
    p = [float(v) for v in p]
    full = bonus_from_p or q is None
    dist = p[:] if full else [max(a - float(b), 0.0) for a, b in zip(p, q)]
    tot = sum(dist)
    norm = [d / tot if tot > 0 else 0.0 for d in dist]
    series = [svgchart.Bars(t["p"], p, P_COLOR, hovers=[f"{c}: p = {fmt_value(v)}" for c, v in zip(cats, p)])]
    if not full:
        qq = [float(v) for v in q]
        series += [svgchart.Bars(t["q"], qq, Q_COLOR, hovers=[f"{c}: q = {fmt_value(v)}" for c, v in zip(cats, qq)]),
                   svgchart.Bars(t["res"], dist, RESIDUAL_COLOR,
                                 hovers=[f"{c}: max(p − q, 0) = {fmt_value(v)}" for c, v in zip(cats, dist)])]
    series.append(svgchart.Bars(t["norm"], norm, NORMALISED_COLOR, labels=[fmt_value(v) if v > 0 else "" for v in norm],
                                hovers=[f"{c}: {t['norm']} = {fmt_value(v)}" for c, v in zip(cats, norm)]))
    label = "" if coin_final is None else (
        f"{t['coin']} = {fmt_value(coin_final)}" + (f" → {cats[chosen]}" if chosen is not None and 0 <= chosen < len(cats) else ""))
    segs = svgchart.cdf_segments(cats, norm, chosen, hit_fill=state_color("bonus"))
    return svgchart.bars_over_strip(cats, series, segs, coin=coin_final, coin_label=label, caption=t["cdf"],
                                    y_max=max(1.0, max(p + norm) * 1.18), alt=t["title"] or t["cdf"], width=width)


def buffer_svg(vocab: Sequence[str], p_row, buffer_row, *, dist=None, coin_final: float | None = None,
               chosen: int | None = None, text: dict | None = None, width: float = svgchart.WIDTH) -> str:
    """``buffer_figure`` as SVG: the parent's p, the work buffer, relu(p − buffer); with ``dist``
    the terminal draw's strip under them."""
    t = {"p": "p (target row)", "buf": "work buffer draft_probs", "res": "relu(p − buffer)", "coin": "u_final",
         "cdf": "terminal draw", "title": ""} | (text or {})
    cats = [str(v) for v in vocab]
    p = [float(v) for v in p_row]
    buf = [float(v) for v in buffer_row]
    res = [max(a - b, 0.0) for a, b in zip(p, buf)]
    series = [svgchart.Bars(t["p"], p, P_COLOR, hovers=[f"{c}: p = {fmt_value(v)}" for c, v in zip(cats, p)]),
              svgchart.Bars(t["buf"], buf, state_color("rejected"), labels=[fmt_value(v) if v > 0 else "" for v in buf],
                            hovers=[f"{c}: buffer = {fmt_value(v)}" for c, v in zip(cats, buf)]),
              svgchart.Bars(t["res"], res, ORANGE, hovers=[f"{c}: relu(p − buffer) = {fmt_value(v)}" for c, v in zip(cats, res)])]
    if dist is None:
        return svgchart.bar_chart(cats, series, y_max=1.1, height=340, alt=t["title"] or t["res"], width=width)
    label = "" if coin_final is None else (
        f"{t['coin']} = {fmt_value(coin_final)}" + (f" → {cats[chosen]}" if chosen is not None and 0 <= chosen < len(cats) else ""))
    segs = svgchart.cdf_segments(cats, [float(v) for v in dist], chosen, hit_fill=state_color("bonus"))
    return svgchart.bars_over_strip(cats, series, segs, coin=coin_final, coin_label=label, caption=t["cdf"], y_max=1.1,
                                    alt=t["title"] or t["cdf"], width=width)


def decomposition_svg(vocab: Sequence[str], accepted, redistributed, p, *, text: dict | None = None,
                      width: float = svgchart.WIDTH) -> str:
    """``decomposition_figure`` as SVG: min(p, q) stacked under the redistributed rejected mass, p as a tick."""
    t = {"acc": "accepted: min(p, q)", "red": "rejected mass, redistributed", "p": "p (target)", "title": ""} | (text or {})
    cats = [str(v) for v in vocab]
    acc = [float(v) for v in accepted]
    red = [float(v) for v in redistributed]
    pp = [float(v) for v in p]
    series = [svgchart.Bars(t["acc"], acc, state_color("accepted"), labels=[fmt_value(v) if v > 1e-12 else "" for v in acc],
                            hovers=[f"{c}: {t['acc']} = {fmt_value(v)}" for c, v in zip(cats, acc)]),
              svgchart.Bars(t["red"], red, state_color("bonus"), labels=[fmt_value(v) if v > 1e-12 else "" for v in red],
                            hovers=[f"{c}: {t['red']} = {fmt_value(v)}" for c, v in zip(cats, red)])]
    tick = svgchart.Tick(pp, t["p"], labels=[f"p = {fmt_value(v)}" for v in pp])
    top = max(pp + [a + r for a, r in zip(acc, red)] + [0.1]) * 1.3
    return svgchart.bar_chart(cats, series, stack=True, ticks=[tick], y_max=top, height=400, alt=t["title"] or t["p"], width=width)


def monte_carlo_svg(vocab: Sequence[str], empirical, target, *, expected=None, counts=None, text: dict | None = None,
                    width: float = svgchart.WIDTH) -> str:
    """``monte_carlo_figure`` as SVG: empirical first-token frequencies beside p (and the closed form)."""
    t = {"emp": "Monte Carlo", "p": "p (target)", "exp": "exact for this procedure", "trials": "trials", "title": ""} | (text or {})
    cats = [str(v) for v in vocab]
    emp = [float(v) for v in empirical]
    tgt = [float(v) for v in target]
    cd = [int(c) for c in counts] if counts is not None else [0] * len(emp)
    series = [svgchart.Bars(t["p"], tgt, P_COLOR, hovers=[f"{c}: p = {fmt_value(v)}" for c, v in zip(cats, tgt)])]
    if expected is not None:
        ex = [float(v) for v in expected]
        series.append(svgchart.Bars(t["exp"], ex, GREY, hovers=[f"{c}: {t['exp']} = {fmt_value(v)}" for c, v in zip(cats, ex)]))
    series.append(svgchart.Bars(t["emp"], emp, ORANGE, labels=[fmt_value(v) if v > 0 else "" for v in emp],
                                hovers=[f"{c}: {fmt_value(v)} ({n} {t['trials']})" for c, v, n in zip(cats, emp, cd)]))
    return svgchart.bar_chart(cats, series, y_max=1.05, height=380, alt=t["title"] or t["emp"], width=width)
