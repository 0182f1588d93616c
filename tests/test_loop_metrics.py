"""Acceptance metrics: hand-counted examples and the closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.rooms.loop import metrics as M


def test_measure_by_hand():
    """accept lens [1, 3, 2, 4] with S = 3, n = 7 (6 drafts per round).

    tau = 10/4 = 2.5. Accepted drafts k = [0, 2, 1, 3]: reached depth 1 in 3 rounds, depth 2 in 2,
    depth 3 in 1 -> alpha = [3/4, 2/3, 1/2], per-position = [3/4, 2/4, 1/4]. Token rate = 6 / 24;
    system efficiency = 10 / (4 * 4).
    """
    m = M.measure([1, 3, 2, 4], depth=3, drafted_per_round=6)
    assert m.tau == 2.5
    assert m.alpha_per_depth == pytest.approx([3 / 4, 2 / 3, 1 / 2])
    assert m.position_rate == pytest.approx([3 / 4, 2 / 4, 1 / 4])
    assert m.token_acceptance_rate == pytest.approx(6 / 24)
    assert m.system_efficiency == pytest.approx(10 / 16) == pytest.approx(m.tau / 4)


@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(0, 0.999), k=st.integers(0, 8))
def test_chain_closed_form_equals_the_tree_formula_on_a_chain(alpha, k):
    parents = [-1] + list(range(k))
    assert M.tree_expected_accept_length(parents, [1.0] + [alpha] * k) == pytest.approx(M.chain_tau(alpha, k))


def test_chain_closed_form_limits():
    assert M.chain_tau(0.0, 5) == 1.0
    assert M.chain_tau(1.0, 5) == 6.0
    assert M.chain_tau(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)


def test_tree_formula_siblings_add():
    """Root with children A (.5) and B (.3); A has child C (.6): 1 + .5 + .3 + .5*.6 = 2.1."""
    assert M.tree_expected_accept_length([-1, 0, 0, 1], [1, .5, .3, .6]) == pytest.approx(2.1)


def test_measured_tau_tracks_the_tree_expectation():
    """Greedy: each round's expectation is its actual accept length; target-only: the mean is close over rounds."""
    from specviz.rooms.loop.decode import LoopSettings, run_loop

    run = run_loop("The target model verifies the draft tree. ", LoopSettings(topk=2, depth=4, num_draft_tokens=8, rounds=8))
    assert M.expected_tau(run) == pytest.approx(M.run_metrics(run).tau)
    run = run_loop("The target model verifies the draft tree. ",
                   LoopSettings(algorithm="target_only", topk=2, depth=3, num_draft_tokens=6, rounds=48, temperature=0.8))
    assert abs(M.expected_tau(run) - M.run_metrics(run).tau) < 0.5


def test_speedup():
    assert M.speedup(3.0, 4, 0.0) == 3.0
    assert M.speedup(3.0, 4, 0.25) == pytest.approx(1.5)
    assert math.isnan(M.measure([], depth=2, drafted_per_round=2).tau)
    assert np.isnan(M.measure([], depth=2, drafted_per_round=2).alpha_per_depth).all()
