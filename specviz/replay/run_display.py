"""A run in Jupyter, for a run already computed: the static view (``Run._repr_html_`` /
``_repr_svg_``: tables plus the tree drawn as SVG) and the step player widget (``Run._repr_mimebundle_``).

Below the engine: ``specviz.replay.engine``'s ``Run`` shows itself through this module, and nothing here runs
a scenario (``specviz.rooms.notebook.show`` takes a scenario or a preset name and runs it first). Pure
functions, no streamlit, no IPython import; the widget needs the optional extra
``pip install specviz[notebook]`` (anywidget). The tree is drawn by ``dot``; without it a note says
why and the tables still show. Everything a user typed is HTML-escaped.
"""
from __future__ import annotations

import functools

import numpy as np

from specviz.base.display import esc, table, tree_outline
from specviz.render.svg import dots_to_svgs
from specviz.render.tree import tree_dot


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
    try:  # Graphviz escapes label text; our DOT builders put every label through specviz.base.safety.dot_quote
        return dots_to_svgs([tree_dot(list(t.parents), labels, rows=[b * s.n + i for i in range(t.n)], states=states, bonus=bonus)])[0]
    except RuntimeError:  # no dot here, or it failed
        return None


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


NOTEBOOK_EXTRA = "the step player in Jupyter needs anywidget: pip install 'specviz[notebook]'"


@functools.cache  # an ImportError is not cached: installing anywidget later works
def _widget_class():
    """The anywidget class (ImportError naming the extra when anywidget is missing)."""
    try:
        import anywidget
        import traitlets
    except ImportError as exc:
        raise ImportError(NOTEBOOK_EXTRA) from exc
    from specviz.replay.player import asset

    class Player(anywidget.AnyWidget):
        """The step player: ``data`` (frames, figures, words) and ``step`` (the step shown, both ways)."""
        _esm = asset("player.js") + asset("player_jupyter.js")
        _css = asset("player.css")
        data = traitlets.Dict().tag(sync=True)
        step = traitlets.Int(0).tag(sync=True)
        _graphviz = traitlets.Unicode("").tag(sync=True)

    return Player


def player_widget(run, lang: str = "en", step: int | None = None):
    """The step player for ``run`` (a Run with the numpy reference's trace) as a Jupyter widget, opened
    at ``step`` (default: the last, the outcome). ImportError naming the extra without anywidget."""
    from specviz.replay.player import GRAPHVIZ_JS, asset, labels, laid_out, tr_for
    from specviz.replay.playframes import frames_for

    if run.trace is None:
        raise ValueError("player_widget needs a run with the reference's trace (run_scenario(s, 'numpy'))")
    frames = frames_for(run.scenario, run, lang)
    data = laid_out(frames, labels=labels(tr_for(lang)))
    last = len(frames) - 1
    return _widget_class()(data=data, step=last if step is None else max(0, min(last, int(step))),
                           _graphviz=asset(GRAPHVIZ_JS) if data["dots"] is not None else "")


def run_mimebundle(run, traced=None, include=None, exclude=None) -> dict | None:
    """The run as the step player widget (of ``traced``: the same scenario's numpy run, when ``run``
    itself has no trace) plus its static HTML (for a viewer without widgets); None without anywidget
    (Jupyter then uses ``_repr_html_``)."""
    try:
        widget = player_widget(traced if traced is not None else run)
    except ImportError:
        return None
    bundle = widget._repr_mimebundle_(include=include, exclude=exclude)
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    data = dict(data or {})
    data.setdefault("text/html", run_html(run))
    return data
