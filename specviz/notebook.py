"""Rich display in Jupyter: a scenario, a run and an animation frame show themselves.

``Scenario``, ``engine.Run`` and ``frames.Frame`` define ``_repr_html_`` (and ``Scenario`` /
``Run`` also ``_repr_svg_``) by calling these functions. Everything a user typed (title,
description, vocabulary labels) is data: it is HTML-escaped here, and the tree figure is an SVG
drawn by graphviz's ``dot`` from ``specviz.render.tree.tree_dot`` (graphviz escapes label text).
Without a ``dot`` binary the figure is left out and a note says why; the tables still show.

Pure functions: no streamlit, no IPython import (Jupyter finds the ``_repr_*_`` methods itself).
"""
from __future__ import annotations

import html
import shutil
import subprocess

import numpy as np

_MAX_TABLE_COLUMNS = 24  # a 64-node request is summarised, not printed in full
_SVG_TIMEOUT_S = 20


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def dot_to_svg(dot_source: str) -> str | None:
    """The SVG that ``dot -Tsvg`` draws for ``dot_source``; None when no ``dot`` binary is installed
    or the result is not plain SVG (nothing that could run script is passed on)."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot_source.encode("utf-8"), capture_output=True,
                              timeout=_SVG_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    svg = proc.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    if start < 0:
        return None
    svg = svg[start:]
    lowered = svg.lower()
    if "<script" in lowered or "javascript:" in lowered or "<foreignobject" in lowered:
        return None
    return svg


def _cells(values, limit: int = _MAX_TABLE_COLUMNS) -> str:
    values = list(values)
    cells = "".join(f"<td>{_e(v)}</td>" for v in values[:limit])
    if len(values) > limit:
        cells += f"<td>… ({len(values) - limit} more)</td>"
    return cells


def _table(rows: list[tuple[str, list]]) -> str:
    body = "".join(f"<tr><th style='text-align:left'>{_e(name)}</th>{_cells(vals)}</tr>" for name, vals in rows)
    return f"<table>{body}</table>"


def _scenario_tree_svg(s, b: int, states: dict | None = None, bonus=None) -> str | None:
    from .render.tree import tree_dot

    t = s.tree(b)
    labels = [s.label(int(x)) for x in t.tokens]
    rows = [b * s.n + i for i in range(t.n)]
    return dot_to_svg(tree_dot(list(t.parents), labels, rows=rows, states=states, bonus=bonus))


def _figure(svg: str | None) -> str:
    if svg is None:
        return "<p><i>(tree figure: install graphviz's <code>dot</code> to draw it here)</i></p>"
    return f"<div>{svg}</div>"


def scenario_html(s) -> str:
    """A scenario as HTML: title, algorithm, description, and per request its tree and inputs."""
    parts = [f"<div class='specviz-scenario'><h4>{_e(s.title or s.name)}</h4>",
             f"<p><b>{_e(s.algorithm)}</b> · scenario <code>{_e(s.name)}</code> · W = {s.width}, n = {s.n}, "
             f"V = {s.vocab_size} · semantics {_e(s.semantics)}</p>"]
    if s.description:
        parts.append(f"<p>{_e(s.description)}</p>")
    for b, r in enumerate(s.requests):
        t = s.tree(b)
        if len(s.requests) > 1:
            parts.append(f"<p><b>request {b}</b></p>")
        rows = [("node", list(range(t.n))), ("token", [s.label(int(x)) for x in t.tokens]), ("parent", list(t.parents))]
        if r.target_predict is not None:
            rows.append(("target_predict", list(r.target_predict)))
        if r.coins is not None:
            rows.append(("coins", list(r.coins)))
        parts.append(_table(rows))
        parts.append(f"<p>prefix in KV: seq_len = {r.seq_len}</p>")
        parts.append(_figure(_scenario_tree_svg(s, b)))
    parts.append("</div>")
    return "".join(parts)


def scenario_svg(s, b: int = 0) -> str | None:
    """Request ``b``'s tree as SVG (None without ``dot``)."""
    return _scenario_tree_svg(s, b)


def _run_states(run, b: int) -> tuple[dict, tuple | None]:
    c = run.commits[b]
    s = run.scenario
    states = {i: "discarded" for i in c.discarded_nodes}
    states.update({i: "accepted" for i in c.accept_nodes})
    bonus = (c.accept_nodes[-1], s.label(c.next_root)) if c.accept_nodes else None
    return states, bonus


def run_html(run) -> str:
    """A run as HTML: per request the accepted path, outputs, committed rows and the drawn tree."""
    s = run.scenario
    parts = [f"<div class='specviz-run'><h4>{_e(s.title or s.name)}</h4>",
             f"<p><b>{_e(s.algorithm)}</b> on backend <b>{_e(run.backend)}</b> · semantics {_e(s.semantics)}</p>"]
    r = run.result
    if "accept_index" in r:
        parts.append(_table([("accept_index", np.asarray(r["accept_index"]).tolist())]))
    for c in run.commits:
        if len(run.commits) > 1:
            parts.append(f"<p><b>request {c.request}</b></p>")
        parts.append(_table([
            ("committed rows (KV kept)", [s.label(t) for t in c.committed_tokens]),
            ("outputs", [s.label(t) for t in c.output_tokens]),
            ("accept rows", list(c.accept_rows)),
            ("positions", list(c.committed_positions)),
        ]))
        parts.append(f"<p>accepted drafts k = {c.num_correct_drafts}, accept_len = {c.accept_len}, next root "
                     f"<b>{_e(s.label(c.next_root))}</b> (no KV yet), new_seq_len = {c.new_seq_len}</p>")
        states, bonus = _run_states(run, c.request)
        parts.append(_figure(_scenario_tree_svg(s, c.request, states=states, bonus=bonus)))
    for w in run.warnings:
        parts.append(f"<p>warning: {_e(w)}</p>")
    parts.append("</div>")
    return "".join(parts)


def run_svg(run, b: int = 0) -> str | None:
    """Request ``b``'s tree with the accepted path and the bonus, as SVG (None without ``dot``)."""
    states, bonus = _run_states(run, b)
    return _scenario_tree_svg(run.scenario, b, states=states, bonus=bonus)


def frame_html(frame) -> str:
    """An animation frame as HTML: the step, the event that led there, and the arrays after it."""
    parts = [f"<div class='specviz-frame'><p><b>step {frame.step}</b>"]
    ev = frame.event
    if ev is None:
        parts.append(" · before any event</p>")
    else:
        where = f"request {ev.request}" + (f", node {ev.node}" if ev.node is not None else "")
        detail = ", ".join(f"{k} = {v}" for k, v in ev.data.items())
        parts.append(f" · <code>{_e(ev.kind)}</code> ({_e(where)}){': ' + _e(detail) if detail else ''}</p>")
    rows = [(name, np.asarray(arr).reshape(-1).tolist()) for name, arr in frame.arrays.items()
            if np.asarray(arr).ndim <= 2]
    parts.append(_table(rows))
    parts.append("</div>")
    return "".join(parts)
