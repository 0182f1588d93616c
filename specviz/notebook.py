"""Rich display of a run in Jupyter: tables plus the tree drawn as SVG.

``engine.Run`` defines ``_repr_html_`` / ``_repr_svg_`` by calling these functions (``Scenario`` and
``Frame`` use ``specviz.display``, which needs nothing above their layer). The figure is drawn by
graphviz's ``dot`` from ``specviz.render.tree.tree_dot`` (graphviz escapes label text); without a
``dot`` binary it is left out and a note says why, and the tables still show. Everything a user
typed is HTML-escaped.

Pure functions: no streamlit, no IPython import (Jupyter finds the ``_repr_*_`` methods itself).
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np

from .display import esc, table, tree_outline
from .render.tree import tree_dot

_SVG_TIMEOUT_S = 20


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


def _states(run, b: int) -> tuple[dict, tuple | None]:
    c = run.commits[b]
    states = {i: "discarded" for i in c.discarded_nodes}
    states.update({i: "accepted" for i in c.accept_nodes})
    bonus = (c.accept_nodes[-1], run.scenario.label(c.next_root)) if c.accept_nodes else None
    return states, bonus


def run_svg(run, b: int = 0) -> str | None:
    """Request ``b``'s tree with the accepted path and the bonus, as SVG (None without ``dot``)."""
    s = run.scenario
    t = s.tree(b)
    states, bonus = _states(run, b)
    labels = [s.label(int(x)) for x in t.tokens]
    return dot_to_svg(tree_dot(list(t.parents), labels, rows=[b * s.n + i for i in range(t.n)], states=states, bonus=bonus))


def run_html(run) -> str:
    """A run as HTML: per request the accepted path, outputs, committed rows and the drawn tree."""
    s = run.scenario
    parts = [f"<div class='specviz-run'><h4>{esc(s.title or s.name)}</h4>",
             f"<p><b>{esc(s.algorithm)}</b> on backend <b>{esc(run.backend)}</b> · semantics {esc(s.semantics)}</p>"]
    r = run.result
    if "accept_index" in r:
        parts.append(table([("accept_index", np.asarray(r["accept_index"]).tolist())]))
    for c in run.commits:
        if len(run.commits) > 1:
            parts.append(f"<p><b>request {c.request}</b></p>")
        parts.append(table([
            ("committed rows (KV kept)", [s.label(t) for t in c.committed_tokens]),
            ("outputs", [s.label(t) for t in c.output_tokens]),
            ("accept rows", list(c.accept_rows)),
            ("positions", list(c.committed_positions)),
        ]))
        parts.append(f"<p>accepted drafts k = {c.num_correct_drafts}, accept_len = {c.accept_len}, next root "
                     f"<b>{esc(s.label(c.next_root))}</b> (no KV yet), new_seq_len = {c.new_seq_len}</p>")
        svg = run_svg(run, c.request)
        if svg is not None:
            parts.append(f"<div>{svg}</div>")
        else:
            t = s.tree(c.request)
            marks = {i: "accepted" for i in c.accept_nodes}
            parts.append(tree_outline(list(t.parents), [s.label(int(x)) for x in t.tokens],
                                      rows=[c.request * s.n + i for i in range(t.n)], marks=marks))
            parts.append("<p><i>(install graphviz's <code>dot</code> to see the tree drawn here)</i></p>")
    for w in run.warnings:
        parts.append(f"<p>warning: {esc(w)}</p>")
    parts.append("</div>")
    return "".join(parts)
