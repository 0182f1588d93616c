"""Every preset scenario (scenarios/*.json) gives the same results on the torch and Triton backends
as on the numpy reference, through the engine the app uses (``specviz.replay.engine.compare_backends``:
exact integers, floats within 1e-6)."""
from pathlib import Path

import pytest

from specviz.replay.engine import compare_backends
from specviz.inputs.scenario import load_scenario

PRESETS = sorted((Path(__file__).resolve().parents[1] / "scenarios").glob("*.json"))


@pytest.mark.filterwarnings("ignore::specviz.base.errors.SpecvizWarning")
@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_preset_matches_reference_on_every_backend(path):
    verdict = compare_backends(load_scenario(path), ["torch", "triton"])
    assert verdict == {"torch": None, "triton": None}, verdict


def test_presets_exist():
    assert len(PRESETS) >= 5
