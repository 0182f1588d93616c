"""The step player in Jupyter for anything a person holds: ``show(x)`` (a scenario, a preset name or a
run) is the app's step player (``static/player.js``) as an anywidget, with the frames of the scenario's
page. It needs the optional extra ``pip install specviz[notebook]``. Figures are laid out by ``dot``
when installed, else by Graphviz in WebAssembly shipped in the package.

A run shows itself (``Run._repr_*_``: the static view and this widget) through ``specviz.replay.run_display``,
below the engine; this module runs the scenario first, so it sits above the engine.
"""
from __future__ import annotations

from specviz.replay.run_display import player_widget


def show(x, lang: str = "en", step: int | None = None):
    """The step player for ``x`` (a Scenario, a preset name, or an engine Run) as a Jupyter widget,
    opened at ``step`` (default: the last, the outcome). ``widget.step`` is the step it shows."""
    from specviz.replay.engine import Run, run_scenario

    if isinstance(x, str):
        from specviz.rooms.pitfalls import preset

        x = preset(x)
    run = x if isinstance(x, Run) else run_scenario(x, "numpy")
    if run.trace is None:
        run = run_scenario(run.scenario, "numpy")
    return player_widget(run, lang, step)
