"""specviz.app.ui.worker.warm_up: what a server computes before it answers, so no first visit waits for it."""
from __future__ import annotations

from specviz.app.ui import worker
from specviz.app.ui.scenarios import ROOT, SCENARIO_DIR, SLOTS


def test_page_modules_are_what_the_pages_import():
    names = worker.page_modules(ROOT / "pages")
    assert {"specviz.app.ui.common", "specviz.render.tables", "pandas", "streamlit"} <= set(names)
    assert "specviz.render.tables.shift_records" in names  # `from x import y`: y may be a submodule, tried too


def test_warm_up_fills_the_caches_a_first_visit_reads():
    from specviz.replay.engine import scenario_key
    from specviz.inputs.scenario import load_scenario
    from specviz.app.ui import backend_cache as bc

    seconds = worker.warm_up()
    assert seconds > 0 and bc.backends_loaded()
    names = tuple(bc.usable_backends())
    assert "numpy" in names
    tree = scenario_key(load_scenario(SCENARIO_DIR / f"{SLOTS['tree']}.json"))
    assert bc._run.contains(tree, "numpy") and bc._compare.contains(tree, names)
    assert bc._compare.contains(tree, tuple(b for b in names if not bc.on_request(b)))  # the badge's default
    assert bc._greedy_frames.contains(tree, "numpy", "en", 0) and bc._greedy_frames.contains(tree, "numpy", "zh", 0)
    for preset in SLOTS.values():
        key = scenario_key(load_scenario(SCENARIO_DIR / f"{preset}.json"))
        assert bc._run.contains(key, "numpy"), preset


def test_warm_up_lays_out_every_step_players_default_figures():
    """Where the server lays out figures (Graphviz's dot there), each slot's default walk is laid out before
    the first visit: the page's player then finds every figure in the SVG cache."""
    import pytest

    from specviz.replay.engine import scenario_key
    from specviz.render import svg
    from specviz.inputs.scenario import load_scenario, scenario_from_json
    from specviz.app.ui import backend_cache as bc
    from specviz.replay import playframes
    from specviz.app.ui import player

    if player.layout_mode() != "server":
        pytest.skip("no Graphviz dot here: the browser lays the figures out (nothing to warm)")
    svg._CACHE.clear()
    worker.warm_up()
    for slot, frames_of in (("chain", playframes.chain_frames), ("target_only", playframes.target_only_frames),
                            ("dspark", playframes.dspark_frames)):
        key = scenario_key(load_scenario(SCENARIO_DIR / f"{SLOTS[slot]}.json"))
        run = bc._run(key, "numpy")
        frames = frames_of(scenario_from_json(key), run, "en")
        assert all(f.dot in svg._CACHE for f in frames), slot
    tree = scenario_key(load_scenario(SCENARIO_DIR / f"{SLOTS['tree']}.json"))
    assert all(f.dot in svg._CACHE for f in bc._greedy_frames(tree, "numpy", "zh", 0))


def test_warm_up_does_the_first_script_runs_one_time_work():
    """The tab icon is drawn before the first visit, not during it."""
    from specviz.app.ui import theme

    theme.favicon_url.cache_clear()
    worker.warm_up()
    assert theme.favicon_url.cache_info().currsize == 1
