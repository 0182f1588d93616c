"""The one replay (specviz.replay.steps), typed events (specviz.replay.events) and the one caption function."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specviz.inputs import edits
from specviz.replay import engine
from specviz.replay.captions import caption
from specviz.replay.events import AcceptTest, Compare, Terminal, typed_events
from specviz.inputs.scenario import load_scenario
from specviz.replay.steps import replay_steps, scan_view

ROOT = Path(__file__).resolve().parents[1]
PRESETS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.json"))


@pytest.mark.parametrize("name", PRESETS)
def test_replay_ends_at_the_result_and_names_the_live_walk(name):
    s = load_scenario(ROOT / "scenarios" / f"{name}.json")
    run = engine.run_scenario(s)
    steps = replay_steps(s, run)
    assert len(steps) == len(run.trace.events) + 1 and steps[0].event is None
    last = steps[-1]
    for key, arr in last.arrays.items():
        if key in run.result:
            assert np.array_equal(np.asarray(arr).reshape(np.asarray(run.result[key]).shape), run.result[key]), key
    for b, c in enumerate(run.commits):
        w = last.walks[b]
        assert w.done
        assert sorted(i for i, st in w.states.items() if st == "accepted") == sorted(c.accept_nodes)
        assert w.bonus is not None and w.bonus[1] == c.next_root
    for st in steps:
        assert st.caption["en"] and st.caption["zh"]
    json.dumps([st.to_json() for st in steps], ensure_ascii=False)  # plain data for a client-side player


def test_typed_events_say_which_test_ran():
    chain = load_scenario(ROOT / "scenarios/pq_example.json")
    tree = load_scenario(ROOT / "scenarios/target_only_sampling.json")
    chain_tests = [e for e in typed_events(engine.run_scenario(chain).trace.events) if isinstance(e, AcceptTest)]
    tree_tests = [e for e in typed_events(engine.run_scenario(tree).trace.events) if isinstance(e, AcceptTest)]
    assert chain_tests and all(e.q is not None for e in chain_tests)
    assert tree_tests and all(e.q is None and e.prob_acc is not None for e in tree_tests)


def test_captions_follow_an_edited_tree():
    """After an edit, every compare/terminal caption names the edited walk's tokens."""
    s = load_scenario(ROOT / "scenarios/running_example.json")
    s = edits.set_target_predict(s, edits.agree_along(s, "last"))  # R -> B, bonus X
    steps = replay_steps(s, engine.run_scenario(s, "numpy"))
    compares = [st for st in steps if isinstance(st.event, Compare)]
    assert any("Compare B with target_predict at row 0 = B: they match." == st.caption["en"] for st in compares)
    term = next(st for st in steps if isinstance(st.event, Terminal))
    assert term.caption["en"] == "Bonus: predicts[2] = target_predict[2] = X. It is the next root; it has no KV yet."


def test_chain_scan_view_discards_after_a_reject():
    s = load_scenario(ROOT / "scenarios/pq_example.json")
    ev = typed_events(engine.run_scenario(s).trace.events)
    v = scan_view(ev, s.n, chain=True, cut_after_reject=True, finish=False)
    assert v.states[0] == "accepted" and "rejected" in v.states
    k = v.states.index("rejected")
    assert all(x == "discarded" for x in v.states[k + 1:])


def test_caption_before_the_walk_depends_on_the_algorithm():
    g = load_scenario(ROOT / "scenarios/running_example.json")
    d = load_scenario(ROOT / "scenarios/dspark_chain.json")
    assert caption(None, g) != caption(None, d)
