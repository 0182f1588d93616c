"""HTML for Jupyter's rich display of values from the lower layers (a scenario, a frame).

Stdlib and numpy only, so that ``Scenario`` (model layer) and ``Frame`` (frames) can display
themselves without importing anything above them. Everything a user typed (title, description,
vocabulary labels) is data: it is HTML-escaped here. The tree is an indented outline (nested
lists: node, token, verify row), which needs no graphviz; ``specviz.rooms.notebook`` draws a run's tree
as an SVG figure.
"""
from __future__ import annotations

import html

import numpy as np

MAX_TABLE_COLUMNS = 24  # a 64-node request is summarised, not printed in full


def esc(value) -> str:
    """``value`` as text that HTML shows literally (quotes escaped too)."""
    return html.escape(str(value), quote=True)


def cells(values, limit: int = MAX_TABLE_COLUMNS) -> str:
    values = list(values)
    out = "".join(f"<td>{esc(v)}</td>" for v in values[:limit])
    if len(values) > limit:
        out += f"<td>… ({len(values) - limit} more)</td>"
    return out


def table(rows) -> str:
    """``[(name, values), ...]`` as an HTML table, one row per name."""
    body = "".join(f"<tr><th style='text-align:left'>{esc(name)}</th>{cells(vals)}</tr>" for name, vals in rows)
    return f"<table>{body}</table>"


def tree_outline(parents, labels, rows=None, marks=None) -> str:
    """The tree as nested lists: each node shows its token, its verify row and an optional mark."""
    n = len(parents)
    rows = list(range(n)) if rows is None else list(rows)
    marks = marks or {}
    kids = {i: [c for c in range(1, n) if parents[c] == i] for i in range(n)}

    def item(i: int) -> str:
        mark = f" <b>{esc(marks[i])}</b>" if i in marks else ""
        sub = "".join(item(c) for c in kids[i])
        return f"<li>{esc(labels[i])} <small>(node {i}, row {rows[i]})</small>{mark}" + (f"<ul>{sub}</ul>" if sub else "") + "</li>"

    return f"<ul class='specviz-tree'>{item(0)}</ul>"


def scenario_html(s) -> str:
    """A scenario as HTML: title, algorithm, description, and per request its tree and inputs."""
    parts = [f"<div class='specviz-scenario'><h4>{esc(s.title or s.name)}</h4>",
             f"<p><b>{esc(s.algorithm)}</b> · scenario <code>{esc(s.name)}</code> · W = {s.width}, n = {s.n}, "
             f"V = {s.vocab_size} · semantics {esc(s.semantics)}</p>"]
    if s.description:
        parts.append(f"<p>{esc(s.description)}</p>")
    for b, r in enumerate(s.requests):
        t = s.tree(b)
        labels = [s.label(int(x)) for x in t.tokens]
        if len(s.requests) > 1:
            parts.append(f"<p><b>request {b}</b></p>")
        rows = [("node", list(range(t.n))), ("token", labels), ("parent", list(t.parents))]
        if r.target_predict is not None:
            rows.append(("target_predict", list(r.target_predict)))
        if r.coins is not None:
            rows.append(("coins", list(r.coins)))
        parts.append(table(rows))
        parts.append(f"<p>prefix in KV: seq_len = {r.seq_len}</p>")
        parts.append(tree_outline(list(t.parents), labels, rows=[b * s.n + i for i in range(t.n)]))
    parts.append("</div>")
    return "".join(parts)


def frame_html(frame) -> str:
    """An animation frame as HTML: the step, the event that led there, and the arrays after it."""
    parts = [f"<div class='specviz-frame'><p><b>step {frame.step}</b>"]
    ev = frame.event
    if ev is None:
        parts.append(" · before any event</p>")
    else:
        where = f"request {ev.request}" + (f", node {ev.node}" if ev.node is not None else "")
        detail = ", ".join(f"{k} = {v}" for k, v in ev.data.items())
        parts.append(f" · <code>{esc(ev.kind)}</code> ({esc(where)}){': ' + esc(detail) if detail else ''}</p>")
    rows = [(name, np.asarray(arr).reshape(-1).tolist()) for name, arr in frame.arrays.items() if np.asarray(arr).ndim <= 2]
    parts.append(table(rows))
    parts.append("</div>")
    return "".join(parts)
