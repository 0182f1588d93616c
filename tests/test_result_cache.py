"""The process-wide result cache behind every page (issue 11 / issue 8: a class editing the same
scenario computes it once): one computation per canonical scenario, a different scenario gets its
own result, and no caller can change what the next caller reads."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from specviz.inputs import edits
from specviz.replay import engine  # noqa: E402
from specviz.inputs.scenario import load_scenario, scenario_from_json  # noqa: E402
from specviz.app.ui import backend_cache as ui  # noqa: E402  (the cache's own module: its internals)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def counted(monkeypatch):
    """engine.run_scenario / compare_backends wrapped with call counters; the caches start empty."""
    calls = {"run": 0, "compare": 0}
    real_run, real_compare = engine.run_scenario, engine.compare_backends

    def run(*a, **kw):
        calls["run"] += 1
        return real_run(*a, **kw)

    def compare(*a, **kw):
        calls["compare"] += 1
        return real_compare(*a, **kw)

    monkeypatch.setattr(engine, "run_scenario", run)
    monkeypatch.setattr(engine, "compare_backends", compare)
    ui._run.clear()
    ui._compare.clear()
    yield calls
    ui._run.clear()
    ui._compare.clear()


def _running():
    return load_scenario(ROOT / "scenarios/running_example.json")


def test_same_scenario_is_computed_once_even_with_another_title(counted):
    s = _running()
    other = s.replace(title="a student's copy", description="renamed")
    a = ui._run(engine.scenario_key(s), "numpy")
    b = ui._run(engine.scenario_key(other), "numpy")
    assert counted["run"] == 1
    assert a.result["accept_index"].tolist() == b.result["accept_index"].tolist() == [[0, 1, 3]]
    ui._compare(engine.scenario_key(s), ("numpy", "torch"))
    ui._compare(engine.scenario_key(other), ("numpy", "torch"))
    assert counted["compare"] == 1


def test_a_different_scenario_gets_its_own_result(counted):
    s = _running()
    tp = list(s.requests[0].target_predict)
    tp[1] = "D"  # Target(A) = D: the walk takes D (row 4) instead of C
    d = edits.set_target_predict(s, tp)
    assert engine.scenario_key(d) != engine.scenario_key(s)
    a = ui._run(engine.scenario_key(s), "numpy")
    b = ui._run(engine.scenario_key(d), "numpy")
    assert counted["run"] == 2
    assert a.result["accept_index"].tolist() == [[0, 1, 3]]
    assert b.result["accept_index"].tolist() == [[0, 1, 4]]


def test_mutating_a_returned_result_does_not_reach_the_next_caller(counted):
    key = engine.scenario_key(_running())
    first = ui._run(key, "numpy")
    first.result["accept_index"][0, 2] = 99
    first.commits[0].output_tokens.append(-5)
    first.trace.events.clear()
    second = ui._run(key, "numpy")
    assert counted["run"] == 1
    assert second.result["accept_index"].tolist() == [[0, 1, 3]]
    assert -5 not in second.commits[0].output_tokens
    assert second.trace.events
    diffs = ui._compare(key, ("numpy", "torch"))
    diffs["torch"] = "tampered"
    assert ui._compare(key, ("numpy", "torch")) == {"numpy": None, "torch": None}


def test_key_is_canonical_and_readable_and_can_leave_out_the_coins():
    s = load_scenario(ROOT / "scenarios/pq_example.json")
    key = engine.scenario_key(s)
    assert scenario_from_json(key).compact_json != s.compact_json  # no title / description
    assert engine.scenario_key(scenario_from_json(key)) == key
    moved = edits.set_coin(s, 0, 0.123)
    assert engine.scenario_key(moved) != key
    assert engine.scenario_key(moved, zero_coins=True) == engine.scenario_key(s, zero_coins=True)
    assert scenario_from_json(engine.scenario_key(s, zero_coins=True)).requests[0].coins[0] == 0.0


def test_badge_says_it_is_still_comparing_while_the_backends_load(monkeypatch):
    """The first visit shows the numpy result at once; the badge never says "agree" before comparing."""
    import threading

    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(ui, "_LOADED", threading.Event())  # as if torch / Triton were still importing
    monkeypatch.setattr(ui, "BADGE_WAIT_S", 0.0)
    monkeypatch.setattr(ui, "start_loading_backends", lambda *_a, **_k: None)
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    assert not any("backends agree" in str(x.value) for x in at.success)
    assert any("loading them" in str(i.value) for i in at.info), [i.value for i in at.info]
    assert any("num_correct_drafts = 2" in str(m.value) for m in at.markdown)  # the reference result is there
