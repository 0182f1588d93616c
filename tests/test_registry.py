"""The algorithm registry (specviz.algorithms) is the one list: everything reads from it, and an
unknown algorithm is a SpecvizError naming the field, never a fallback to another algorithm."""
from __future__ import annotations

import typing
from pathlib import Path

import pytest

from specviz import algorithms
from specviz.replay import engine
from specviz.base.errors import SpecvizError
from specviz.inputs.scenario import Scenario, load_scenario

ROOT = Path(__file__).resolve().parents[1]


def test_scenario_accepts_exactly_the_registered_algorithms():
    literal = typing.get_args(Scenario.model_fields["algorithm"].annotation)
    assert set(literal) == set(algorithms.KEYS)


@pytest.mark.parametrize("key", algorithms.KEYS)
def test_every_entry_has_its_reference_preset_and_page(key):
    from specviz import reference

    a = algorithms.get(key)
    assert callable(getattr(reference, a.reference))
    s = load_scenario(ROOT / "scenarios" / f"{a.preset}.json")
    assert s.algorithm == key
    assert (ROOT / "pages" / f"{a.page}.py").exists()
    inputs = engine.scenario_inputs(s)
    assert set(a.inputs) <= set(inputs)
    assert engine.run_scenario(s, with_trace=False).result  # runs through the entry's call


def _unknown():
    s = load_scenario(ROOT / "scenarios/running_example.json")
    return s.model_copy(update={"algorithm": "typical_acceptance"})  # bypasses validation, as a stale file would


def test_unknown_algorithm_is_a_clear_error_everywhere():
    s = _unknown()
    with pytest.raises(SpecvizError) as exc:
        algorithms.get("typical_acceptance")
    assert exc.value.field == "algorithm" and "greedy" in str(exc.value)
    with pytest.raises(SpecvizError):
        engine.scenario_inputs(s)
    from specviz.rooms.export import pytest_file

    good = engine.run_scenario(load_scenario(ROOT / "scenarios/running_example.json"), with_trace=False)
    with pytest.raises(SpecvizError):
        pytest_file(s, run=good)


def test_monte_carlo_refuses_an_unknown_sampler():
    from specviz.reference.montecarlo import check_sample_many_args

    with pytest.raises(SpecvizError):
        check_sample_many_args("greedy", {}, 10)
    with pytest.raises(SpecvizError):
        algorithms.by_montecarlo("nope")
    assert algorithms.by_montecarlo("chain_rejection_sampling").key == "chain_rejection"
