"""Unit tests for the sampling library (specviz.algorithms.distributions) and the pure renderers
(specviz.render.sampling_charts, specviz.render.dspark_charts).

Hand-worked values (SEMANTICS.md §0.5, the article's p/q table, tokens A B C):
q = (.6 .3 .1), p = (.3 .4 .3). Accept A with min(1, .3/.6) = .5. The accept branch over x ~ q
gives min(p, q) = (.3 .3 .1); the rejected mass 1 - .7 = .3 is re-drawn from max(p - q, 0) =
(0 .1 .2), normalised (0 1/3 2/3), i.e. (0 .1 .2); the sum is p. With the draft token fixed to A:
A with .5, else the residual: (.5, .5/3, 1/3).

Running tree (§0.4): the root's children A, B with p_R = (A .5, B .3, X .2): buckets A [0, .5),
B [.5, .8); the rest [.8, 1) goes to relu(p - buffer) = X only.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.algorithms import distributions as dist
from specviz.replay.engine import scenario_inputs
from specviz.base.errors import SpecvizError
from specviz.reference import sample_many, tree_sampling_target_only
from specviz.render import dspark_charts as dc
from specviz.render import sampling_charts as sc
from specviz.render.palette import state_color
from specviz.inputs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
P = np.array([.3, .4, .3])
Q = np.array([.6, .3, .1])
A, B, C, D, X, R = range(6)
P_R = np.array([.5, .3, 0, 0, .2, 0])


# ---------------------------------------------------------------------------------------------
# distributions: closed forms
# ---------------------------------------------------------------------------------------------

def test_decomposition_of_the_article_example():
    accepted, redistributed, total = dist.decomposition(P, Q)
    np.testing.assert_allclose(accepted, [.3, .3, .1])
    np.testing.assert_allclose(redistributed, [0, .1, .2], atol=1e-12)
    np.testing.assert_allclose(total, P)


def test_accept_probability_and_q_zero_semantics():
    assert dist.accept_probability(.3, .6) == pytest.approx(.5)
    assert dist.accept_probability(.4, .3) == 1.0
    assert dist.accept_probability(.4, 0.0, "0.5.23") == 0.0  # 0.5.23 needs 0 < q
    assert dist.accept_probability(.4, 0.0, "earlier") == 1.0  # earlier: u*0 < p always


def test_chain_first_token_with_a_fixed_draft_is_not_p():
    got = dist.chain_first_token(P, Q, draft_token=A)
    np.testing.assert_allclose(got, [.5, .5 / 3, 1 / 3])
    assert dist.total_variation(got, P) == pytest.approx(7 / 30)  # (.2 + .2333 + .0333) / 2


def _prob_vectors(V):
    return st.lists(st.floats(0.01, 1.0), min_size=V, max_size=V).map(lambda xs: np.array(xs) / sum(xs))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6).flatmap(lambda V: st.tuples(_prob_vectors(V), _prob_vectors(V))))
def test_chain_marginal_over_q_is_p(pq):
    p, q = pq
    np.testing.assert_allclose(dist.chain_first_token_marginal(p, q), p, atol=1e-12)
    acc, red, tot = dist.decomposition(p, q)
    np.testing.assert_allclose(tot, p, atol=1e-12)
    assert np.all(acc <= np.minimum(p, q) + 1e-15)


def test_sibling_buckets_of_the_running_tree():
    a, b = dist.sibling_buckets(P_R, [A, B], [1, 2])
    assert (a.node, a.lo, a.hi) == (1, 0.0, pytest.approx(.5))
    assert (b.node, b.lo, b.hi) == (2, pytest.approx(.5), pytest.approx(.8))
    assert b.prob_acc == pytest.approx(.8) and not b.single
    # threshold_acc = .5 doubles the bounds: A takes every coin.
    a, b = dist.sibling_buckets(P_R, [A, B], threshold_acc=.5)
    assert (a.lo, a.hi, b.lo, b.hi) == (0.0, 1.0, 1.0, 1.0)
    # threshold_single = .3: B's p >= .3 fires, so B takes every coin A left.
    a, b = dist.sibling_buckets(P_R, [A, B], threshold_single=.3)
    assert a.single and (a.lo, a.hi) == (0.0, 1.0)  # A's p = .5 >= .3 fires first


def test_target_only_first_token_exact_at_thresholds_one_biased_below():
    np.testing.assert_allclose(dist.target_only_first_token(P_R, [A, B]), P_R)
    np.testing.assert_allclose(dist.target_only_first_token(P_R, [A, B], threshold_acc=.5), [1, 0, 0, 0, 0, 0])
    got = dist.target_only_first_token(P_R, [A, B], threshold_acc=.9)
    np.testing.assert_allclose(got, [.5 / .9, .8 / .9 - .5 / .9, 0, 0, 1 - .8 / .9, 0])


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7).flatmap(lambda V: st.tuples(_prob_vectors(V), st.permutations(list(range(V))),
                                                     st.integers(1, V))))
def test_target_only_first_token_is_p_for_any_sibling_set(case):
    p, order, k = case
    np.testing.assert_allclose(dist.target_only_first_token(p, order[:k]), p, atol=1e-12)


def test_target_only_closed_form_agrees_with_the_reference_over_a_coin_grid():
    """Integrate the numpy reference over a midpoint grid of (u[0], u_final): the first-token
    frequencies equal the closed form up to the grid resolution, at t_acc = 1 and at t_acc = .7."""
    s = load_scenario(ROOT / "scenarios" / "target_only_sampling.json")
    inp = scenario_inputs(s)
    g0, gf = 400, 25
    u0 = (np.arange(g0) + .5) / g0
    uf = (np.arange(gf) + .5) / gf
    U0, UF = np.meshgrid(u0, uf, indexing="ij")
    trials = U0.size
    n = inp["candidates"].shape[1]
    coins = np.tile(np.array(s.requests[0].coins, dtype=np.float32), (trials, 1))
    coins[:, 0] = U0.ravel()
    for t_acc in (1.0, 0.7):
        res = tree_sampling_target_only(np.repeat(inp["candidates"], trials, 0),
                                        np.arange(trials * n).reshape(trials, n),
                                        np.repeat(inp["retrieve_next_token"], trials, 0),
                                        np.repeat(inp["retrieve_next_sibling"], trials, 0), coins,
                                        UF.ravel().astype(np.float32), np.repeat(inp["target_probs"], trials, 0),
                                        num_speculative_tokens=s.width, threshold_acc=t_acc)
        first = res.predicts[res.accept_index[:, 0]]
        freq = np.bincount(first, minlength=6) / trials
        want = dist.target_only_first_token(inp["target_probs"][0, 0], [A, B], threshold_acc=t_acc)
        np.testing.assert_allclose(freq, want, atol=2 / g0)


def test_total_variation():
    assert dist.total_variation([1, 0], [0, 1]) == 1.0
    assert dist.total_variation([2, 2], [.5, .5]) == 0.0  # counts are normalised first
    with pytest.raises(SpecvizError, match="one vocabulary"):
        dist.total_variation([1, 0], [1, 0, 0])


# ---------------------------------------------------------------------------------------------
# distributions: Monte Carlo through a backend's sample_many
# ---------------------------------------------------------------------------------------------

def _inputs(name: str):
    s = load_scenario(ROOT / "scenarios" / f"{name}.json")
    inp = {k: v for k, v in scenario_inputs(s).items() if not k.startswith("uniform_samples")}
    inp["num_speculative_tokens"] = s.width
    return inp


def test_chain_monte_carlo_draft_from_q_matches_p():
    mc = dist.chain_monte_carlo(sample_many, _inputs("pq_example"), num_trials=20000, seed=3)
    assert mc.num_trials == 20000 and mc.counts.sum() == 20000
    np.testing.assert_allclose(mc.expected[:3], P, atol=1e-6)
    assert mc.tv_to_target < 0.02


def test_chain_monte_carlo_fixed_draft_matches_the_conditional():
    mc = dist.chain_monte_carlo(sample_many, _inputs("pq_example"), num_trials=20000, seed=3, draft_from_q=False)
    np.testing.assert_allclose(mc.expected[:3], [.5, .5 / 3, 1 / 3], atol=1e-6)
    assert mc.tv_to_expected < 0.02 and mc.tv_to_target > 0.15


def test_target_only_monte_carlo_exact_and_biased():
    inp = _inputs("target_only_sampling")
    mc = dist.target_only_monte_carlo(sample_many, inp, num_trials=20000, seed=5, root_children_tokens=[A, B])
    assert mc.tv_to_target < 0.02
    mc = dist.target_only_monte_carlo(sample_many, inp, num_trials=5000, seed=5, root_children_tokens=[A, B],
                                      threshold_acc=.5)
    assert mc.counts[A] == 5000 and mc.tv_to_target == pytest.approx(.5)


# ---------------------------------------------------------------------------------------------
# distributions: helpers for the pages
# ---------------------------------------------------------------------------------------------

def test_rows_text_round_trip_and_errors_name_the_row():
    rows = [[.3, .4, .3], [.2, .5, .3]]
    assert dist.rows_from_text("t", dist.rows_to_text(rows), 3) == rows
    with pytest.raises(SpecvizError) as exc:
        dist.rows_from_text("requests[0].target_probs", ".3 .4 .3\n.2 .5", 3)
    assert exc.value.field == "requests[0].target_probs[1]" and "has 2 values" in exc.value.detail
    with pytest.raises(SpecvizError, match="not a number") as exc:
        dist.rows_from_text("requests[0].draft_probs", "a .4 .6", 3)
    assert exc.value.field == "requests[0].draft_probs[0]"


def test_normalise_rows_and_random_coins():
    assert dist.normalise_rows([[1, 1, 2], [0, 0, 0]]) == [[.25, .25, .5], [0, 0, 0]]
    a = dist.random_coins(42, 5)
    assert a == dist.random_coins(42, 5) and a != dist.random_coins(43, 5)
    coins, final = a
    assert len(coins) == 5 and all(0 <= c < 1 for c in coins + [final])


# ---------------------------------------------------------------------------------------------
# Renderers
# ---------------------------------------------------------------------------------------------

def test_renderer_modules_do_not_import_streamlit():
    for mod in (sc, dc, dist):
        tree = ast.parse(Path(mod.__file__).read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "streamlit" not in names and not any(m.startswith("streamlit") for m in mods)


def test_chain_dot_states_and_bonus():
    dot = sc.chain_dot(["R", "A", "B"], ["accepted", "accepted", "rejected"], bonus="C")
    assert dot.startswith("digraph") and dot.count("{") == dot.count("}")
    assert f'fillcolor="{state_color("rejected")}"' in dot and "s0 -> s1;" in dot and "s1 -> s2;" in dot
    assert "s1 -> bonus" in dot  # the bonus hangs off the last accepted slot


def test_accept_test_figure_bar_is_min_one_p_over_q():
    fig = sc.accept_test_figure(.3, .6, .7, token="A", accepted=False)
    bars = [t for t in fig.data if t.type == "bar"]
    assert bars[0].x[0] == pytest.approx(.5) and bars[1].base[0] == pytest.approx(.5)
    coin = next(t for t in fig.data if t.type == "scatter")
    assert coin.x[0] == .7 and "0.42" in coin.hovertemplate  # u·q shown exactly
    full = sc.accept_test_figure(.4, .3, .9, token="B", accepted=True)
    assert len([t for t in full.data if t.type == "bar"]) == 1  # p >= q: the whole bar accepts


def test_residual_figure_normalises_and_marks_the_landing_token():
    fig = sc.residual_figure(["A", "B", "C"], P, Q, coin_final=.25, chosen=B)
    norm = next(t for t in fig.data if t.type == "bar" and t.name == "normalised")
    np.testing.assert_allclose(norm.y, [0, 1 / 3, 2 / 3])
    strip = [t for t in fig.data if t.type == "bar" and t.orientation == "h"]
    assert [t.text[0] for t in strip] == ["B", "C"]
    assert strip[0].marker.color == state_color("bonus") and strip[1].marker.color != state_color("bonus")
    bonus = sc.residual_figure(["A", "B", "C"], [.2, .5, .3], None, coin_final=.5, chosen=B, bonus_from_p=True)
    assert not any(t.name == "q (draft)" for t in bonus.data)


def test_decomposition_and_monte_carlo_figures():
    acc, red, tot = dist.decomposition(P, Q)
    fig = sc.decomposition_figure(["A", "B", "C"], acc, red, P)
    assert fig.layout.barmode == "stack"
    np.testing.assert_allclose(np.add(fig.data[0].y, fig.data[1].y), P)
    mc = sc.monte_carlo_figure(["A", "B", "C"], [.31, .39, .3], P, counts=[31, 39, 30])
    assert len(mc.data) == 2 and list(mc.data[1].customdata) == [31, 39, 30]
    assert len(sc.monte_carlo_figure(["A", "B", "C"], [.5, .2, .3], P, expected=[.5, .17, .33]).data) == 3


def test_buckets_figure_places_each_sibling():
    buckets = dist.sibling_buckets(P_R, [A, B], [1, 2])
    fig = sc.buckets_figure(buckets, ["1: A", "2: B"], .6, current=1, verdicts={0: "rejected"})
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.base[0] for b in bars] == pytest.approx([0, .5, .8])
    assert bars[0].marker.color == state_color("rejected") and bars[1].marker.color == state_color("current")
    assert bars[1].marker.line.width > bars[0].marker.line.width  # the sibling under test is outlined
    assert "prob_acc = 0.8" in bars[1].hovertemplate


def test_buffer_figure_shows_relu_p_minus_buffer():
    fig = sc.buffer_figure(list("ABCDXR"), P_R, [.5, .3, 0, 0, 0, 0], dist=[0, 0, 0, 0, .2, 0], coin_final=.5, chosen=X)
    res = next(t for t in fig.data if t.name == "relu(p − buffer)")
    np.testing.assert_allclose(res.y, [0, 0, 0, 0, .2, 0], atol=1e-12)
    strip = [t for t in fig.data if t.type == "bar" and t.orientation == "h"]
    assert len(strip) == 1 and strip[0].text[0] == "X"


def test_sampling_tree_dot():
    dot = sc.sampling_tree_dot([-1, 0, 0, 1, 1], list("RABCD"), ["accepted", "accepted", "discarded", "accepted", "rejected"],
                               captions=["", "p=.5", "p=.3", "p=.6", "p=.2"], bonus=(3, "X"))
    for edge in ("n0 -> n1;", "n0 -> n2;", "n1 -> n3;", "n1 -> n4;", "n3 -> bonus"):
        assert edge in dot
    assert "p=.6" in dot and dot.count("{") == dot.count("}")


def _cells(fig):
    return [a.text for a in fig.layout.annotations]


def test_dspark_match_figure_marks_the_run_and_an_ignored_match():
    # drafts A X C against target A B C: A matches, X != B stops the run, C == C comes later -> ignored.
    fig = dc.match_figure(["R", "A", "X", "C"], ["A", "B", "C", "Y"], [True, False, True], 1)
    texts = _cells(fig)
    assert "<b>✔</b>" in texts and "<b>✘</b>" in texts and "(✔)" in texts  # the ignored match is greyed
    assert any("commit_lens = 2" in t for t in texts)
    hidden = dc.match_figure(["R", "A", "X", "C"], ["A", "B", "C", "Y"], [True, False, True], 1, compared=1, show_result=False)
    assert "<b>?</b>" in _cells(hidden) and not any("commit_lens" in t for t in _cells(hidden))


def test_dspark_match_figure_window_cap():
    fig = dc.match_figure(["R", "A", "B", "C"], ["A", "B", "X", "Y"], [True, True, False], 1, raw_correct_len=2, verify_len=2)
    texts = _cells(fig)
    assert any("commit_lens = 2" in t and "verify_len = 2" in t for t in texts)  # one line, one merged label


def test_out_tokens_and_kv_figures():
    fig = dc.out_tokens_figure(["A", "B", "C"], ["A", "B", "X", "0"], 2)
    fills = [s.fillcolor for s in fig.layout.shapes if s.type == "rect"]
    assert fills[-4:-2] == [state_color("accepted")] * 2 and fills[-2] == state_color("bonus")
    assert fills[-1] == state_color("discarded")  # column 3 >= commit_lens is stale
    kv = dc.kv_columns_figure(["R", "A", "B", "C"], [10, 11, 12, -1])
    assert "-1" in _cells(kv) and "<b>12</b>" in _cells(kv)


def test_expected_tv_noise_shrinks_like_one_over_sqrt_n():
    # p = (.3 .4 .3), N = 4000: 0.5 * sum sqrt(2 p (1-p) / (pi N)) = 0.5 * 1.4058 * 0.012616 = 0.00887
    assert dist.expected_tv_noise(P, 4000) == pytest.approx(0.00887, abs=2e-5)
    assert dist.expected_tv_noise(P, 16000) == pytest.approx(dist.expected_tv_noise(P, 4000) / 2)
    assert dist.expected_tv_noise([1, 0, 0], 10) == 0.0  # a certain outcome has no noise


def test_dspark_match_figure_animation_colours_rows_as_they_are_decided():
    fig = dc.match_figure(["R", "A", "B", "C"], ["A", "B", "X", "Y"], [True, True, False], 2, compared=2, show_result=False)
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    verify_row = [r.fillcolor for r in rects[:4]]  # row 0 of the grid: R A B C
    assert verify_row[:3] == [state_color("accepted")] * 3 and verify_row[3] == state_color("pending")
    assert state_color("compared") in [r.fillcolor for r in rects]  # the compare just revealed is highlighted


def test_sampling_tree_dot_folds_nodes_off_the_walk():
    # R -> A, B; A -> C, D; B -> E -> F. Show the walk R, A and A's children: B's subtree (3 nodes) folds.
    parents = [-1, 0, 0, 1, 1, 2, 5]
    dot = sc.sampling_tree_dot(parents, list("RABCDEF"), ["accepted"] * 7, show={0, 1, 3, 4})
    assert "n5" not in dot and "n6" not in dot and "n0 -> n2;" not in dot
    assert 'more0 [label="+3 more"' in dot and "n0 -> more0" in dot
