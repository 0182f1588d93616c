"""Bad inputs and degenerate-but-legal inputs of the numpy reference.

Bad input raises SpecvizError whose ``.field`` names the argument at fault (the app and the CLI
show that field). Degenerate but legal input (q = 0 for a proposed token, a residual with no
mass) runs, returns SGLang's result, and emits a SpecvizWarning explaining what SGLang does.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from specviz.base.errors import SpecvizError, SpecvizWarning
from specviz.reference import (build_out_tokens, build_tree, cap_correct_len, chain_rejection_sampling,
                               dspark_accept_greedy, dspark_accept_sampling, eagle_sample, finalize_accept_lens,
                               sample_many, target_probs_from_logits, tree_sampling_target_only, verify_tree_greedy)
from specviz.base.trace import Trace

A, B, C, D, X, R = range(6)

# The running example (SEMANTICS.md §0): nodes R, A, B, C, D.
CAND = [[R, A, B, C, D]]
RI = [[0, 1, 2, 3, 4]]
NT = [[1, 3, -1, -1, -1]]
NS = [[-1, 2, -1, 4, -1]]
TP = [[A, C, X, X, X]]
P = np.array([[
    [.5, .3, 0, 0, .2, 0],
    [0, .1, .6, .2, .1, 0],
    [.1, .1, .1, .1, .5, .1],
    [.1, 0, 0, .1, .7, .1],
    [.1, .1, .1, .1, .5, .1],
]], dtype=np.float32)  # [1, 5, 6]
U = [[.4, .55, .3, .8, .2]]
UF = [.5]

# The §0.5 chain: vocabulary A, B, C.
CH_CAND = [[2, 0]]
CH_RI = [[0, 1]]
CH_P = np.array([[[.3, .4, .3], [.2, .5, .3]]], np.float32)
CH_Q = np.array([[[.6, .3, .1]]], np.float32)


def greedy(**kw):
    args = dict(candidates=CAND, retrieve_index=RI, retrieve_next_token=NT, retrieve_next_sibling=NS,
                target_predict=TP, num_speculative_tokens=3)
    args.update(kw)
    return verify_tree_greedy(**args)


def target_only(**kw):
    args = dict(candidates=CAND, retrieve_index=RI, retrieve_next_token=NT, retrieve_next_sibling=NS,
                uniform_samples=U, uniform_samples_for_final_sampling=UF, target_probs=P, num_speculative_tokens=3)
    args.update(kw)
    return tree_sampling_target_only(**args)


def chain(**kw):
    args = dict(candidates=CH_CAND, retrieve_index=CH_RI, uniform_samples=[[.4, .0]],
                uniform_samples_for_final_sampling=[.5], target_probs=CH_P, draft_probs=CH_Q, num_speculative_tokens=2)
    args.update(kw)
    return chain_rejection_sampling(**args)


def build(**kw):
    args = dict(parent_list=[[-1, 0, 1]], selected_index=[[0, 1, 2, 3]], verified_seq_len=[10], topk=2, depth=2,
                num_draft_tokens=5)
    args.update(kw)
    return build_tree(**args)


def with_p(row, col, value):
    p = P.copy()
    p[0, row, col] = value
    return p


def eagle(**kw):
    args = dict(candidates=CAND, retrieve_index=RI, retrieve_next_token=NT, retrieve_next_sibling=NS,
                logits=np.zeros((5, 6), np.float32), num_speculative_tokens=3, temperature=1.0,
                uniform_samples=U, uniform_samples_for_final_sampling=UF)
    args.update(kw)
    return eagle_sample(**args)


# (id, call, field, message fragment)
CATALOGUE = [
    # --- tree links -------------------------------------------------------------------------
    ("cycle in the links", lambda: greedy(retrieve_next_token=[[1, -1, -1, 4, 3]], retrieve_next_sibling=[[-1, 2, -1, -1, -1]]),
     "retrieve_next_token", "cycle"),
    ("first-child link to the root", lambda: greedy(retrieve_next_token=[[1, 0, -1, -1, -1]]), "retrieve_next_token", "root"),
    ("sibling link to the root", lambda: greedy(retrieve_next_sibling=[[-1, 2, 0, 4, -1]]), "retrieve_next_sibling", "root"),
    ("node linked twice", lambda: greedy(retrieve_next_sibling=[[-1, 2, -1, 1, -1]]), "retrieve_next_token", "linked to 2 times"),
    ("link past the last node", lambda: greedy(retrieve_next_token=[[1, 5, -1, -1, -1]]), "retrieve_next_token", "nodes are 1..4"),
    ("retrieve_index row out of range", lambda: greedy(retrieve_index=[[0, 1, 2, 3, 5]]), "retrieve_index", r"\[0, bs\*n\)"),
    ("target-only sees a cycle too", lambda: target_only(retrieve_next_token=[[1, -1, -1, 4, 3]], retrieve_next_sibling=[[-1, 2, -1, -1, -1]]),
     "retrieve_next_token", "cycle"),
    # --- tree build -------------------------------------------------------------------------
    ("cycle in the parent list", lambda: build(parent_list=[[-1, 2, 1]]), "parent_list", "cycle"),
    ("parent_list entry below -1", lambda: build(parent_list=[[-1, -3, 1]]), "parent_list", "-3"),
    ("selected_index out of range", lambda: build(selected_index=[[0, 1, 2, 6]]), "selected_index", r"\[0, 6\)"),
    ("selected_index negative", lambda: build(selected_index=[[-1, 1, 2, 3]]), "selected_index", r"\[0, 6\)"),
    ("selected_index repeats a candidate", lambda: build(selected_index=[[0, 1, 1, 3]]), "selected_index", "twice"),
    ("selected_index shape", lambda: build(selected_index=[[0, 1, 2]]), "selected_index", r"\[1, 4\]"),
    ("parent_list shape", lambda: build(parent_list=[[-1, 0]]), "parent_list", r"\[1, 3\]"),
    ("bitpacking with n > 32", lambda: build_tree(np.zeros((1, 0), int), [list(range(32))], [3], topk=33, depth=1,
                                                   num_draft_tokens=33, tree_mask_mode="qlen_only_bitpacking"),
     "tree_mask_mode", "at most 32"),
    ("unknown mask mode", lambda: build(tree_mask_mode="causal"), "tree_mask_mode", "choose one of"),
    ("more drafts than candidates", lambda: build(selected_index=[[0, 1, 2, 3, 4, 5, 0]], num_draft_tokens=8),
     "num_draft_tokens", "topk"),
    ("negative prefix length", lambda: build(verified_seq_len=[-1]), "verified_seq_len", "negative"),
    ("empty batch (build)", lambda: build(parent_list=np.zeros((0, 3), int), selected_index=np.zeros((0, 4), int),
                                          verified_seq_len=np.zeros(0, int)), "verified_seq_len", "empty"),
    ("topk 0", lambda: build(topk=0), "topk", "at least 1"),
    # --- tokens -----------------------------------------------------------------------------
    ("draft token outside the vocabulary", lambda: target_only(candidates=[[R, A, B, C, 6]]), "candidates[0][4]", "outside the vocabulary"),
    ("chain token outside the vocabulary", lambda: chain(candidates=[[2, 3]]), "candidates[0][1]", "outside the vocabulary"),
    ("negative token", lambda: greedy(candidates=[[R, A, -1, C, D]]), "candidates", "negative"),
    ("negative target prediction", lambda: greedy(target_predict=[[A, -2, X, X, X]]), "target_predict", "negative"),
    ("fractional token id", lambda: greedy(target_predict=[[A, 2.5, X, X, X]]), "target_predict", "whole numbers"),
    # --- probabilities ----------------------------------------------------------------------
    ("p row not summing to 1", lambda: target_only(target_probs=with_p(2, 0, .2)), "target_probs", "sums to 1.1"),
    ("q row not summing to 1", lambda: chain(draft_probs=[[[.6, .3, .2]]]), "draft_probs", "sums to 1.1"),
    ("NaN in p", lambda: target_only(target_probs=with_p(1, 1, np.nan)), "target_probs", "finite"),
    ("inf in q", lambda: chain(draft_probs=[[[np.inf, .3, .1]]]), "draft_probs", "finite"),
    ("NaN in logits", lambda: target_probs_from_logits([[0., np.nan]], temperature=1.0), "logits", "finite"),
    ("negative probability", lambda: chain(target_probs=[[[.5, .6, -.1], [.2, .5, .3]]]), "target_probs", "negative"),
    # --- shapes -----------------------------------------------------------------------------
    ("target_predict shape", lambda: greedy(target_predict=[[A, C, X, X]]), "target_predict", r"\[1, 5\]"),
    ("retrieve_next_sibling shape", lambda: greedy(retrieve_next_sibling=[[-1, 2, -1, 4]]), "retrieve_next_sibling", "shape"),
    ("target_probs rows", lambda: target_only(target_probs=P[:, :4]), "target_probs", r"\[1, 5, \*\]"),
    ("uniform_samples one coin short", lambda: target_only(uniform_samples=[[.4, .55, .3, .8]]), "uniform_samples", r"\[1, 5\]"),
    ("final coins per request", lambda: target_only(uniform_samples_for_final_sampling=[.5, .5]),
     "uniform_samples_for_final_sampling", r"\[1\]"),
    ("draft_probs rows", lambda: chain(draft_probs=np.concatenate([CH_Q, CH_Q], axis=1)), "draft_probs", "N-1"),
    ("chain coins too few", lambda: chain(uniform_samples=np.zeros((1, 0), np.float32)), "uniform_samples", ">= 1"),
    ("logits rows", lambda: eagle(logits=np.zeros((4, 6), np.float32)), "logits", "bs\\*n"),
    ("per-request temperature count", lambda: eagle(temperature=[1.0, 1.0]), "temperature", "shape"),
    ("dspark target_predict shape", lambda: dspark_accept_greedy([[R, A, B]], [[A, B]]), "target_predict", r"\[1, 3\]"),
    ("dspark lengths per request", lambda: finalize_accept_lens([1, 2], [10]), "prefix_lens", "one per request"),
    # --- coins ------------------------------------------------------------------------------
    ("coin equal to 1", lambda: target_only(uniform_samples=[[1.0, .55, .3, .8, .2]]), "uniform_samples", r"\[0, 1\)"),
    ("negative coin", lambda: chain(uniform_samples=[[-.1, 0.]]), "uniform_samples", r"\[0, 1\)"),
    ("final coin equal to 1", lambda: chain(uniform_samples_for_final_sampling=[1.0]), "uniform_samples_for_final_sampling", r"\[0, 1\)"),
    ("NaN coin", lambda: target_only(uniform_samples=[[np.nan, .55, .3, .8, .2]]), "uniform_samples", "finite"),
    ("missing coins on a sampling path", lambda: eagle(uniform_samples=None), "uniform_samples", "missing"),
    # --- sizes and switches -----------------------------------------------------------------
    ("empty batch (verify)", lambda: greedy(candidates=np.zeros((0, 5), int), retrieve_index=np.zeros((0, 5), int),
                                            retrieve_next_token=np.zeros((0, 5), int), retrieve_next_sibling=np.zeros((0, 5), int),
                                            target_predict=np.zeros((0, 5), int)), "candidates", "batch size 0"),
    ("empty batch (chain)", lambda: chain(candidates=np.zeros((0, 2), int)), "candidates", "at least one request"),
    ("num_speculative_tokens 0 (greedy)", lambda: greedy(num_speculative_tokens=0), "num_speculative_tokens", "at least 1"),
    ("num_speculative_tokens -1 (target-only)", lambda: target_only(num_speculative_tokens=-1), "num_speculative_tokens", "at least 1"),
    ("num_speculative_tokens 0 (chain)", lambda: chain(num_speculative_tokens=0), "num_speculative_tokens", "at least 1"),
    ("num_speculative_tokens not N (chain)", lambda: chain(num_speculative_tokens=3), "num_speculative_tokens", "N = 2"),
    ("num_speculative_tokens a float", lambda: greedy(num_speculative_tokens=3.0), "num_speculative_tokens", "whole number"),
    ("threshold_acc above 1", lambda: target_only(threshold_acc=1.5), "threshold_acc", r"\[0, 1\]"),
    ("threshold_single negative", lambda: target_only(threshold_single=-.1), "threshold_single", r"\[0, 1\]"),
    ("unknown semantics", lambda: chain(semantics="0.5.22"), "semantics", "earlier"),
    ("negative temperature", lambda: target_probs_from_logits([[0., 1.]], temperature=-1.0), "temperature", "negative"),
    ("top_k 0", lambda: target_probs_from_logits([[0., 1.]], temperature=1.0, top_k=0), "top_k", ">= 1"),
    ("top_p 0", lambda: target_probs_from_logits([[0., 1.]], temperature=1.0, top_p=0.0), "top_p", r"\(0, 1\]"),
    ("predicts_init not an integer", lambda: greedy(predicts_init=0.5), "predicts_init", "whole number"),
    ("verify window of length 0", lambda: cap_correct_len([1], [0]), "verify_lens", ">= 1"),
    ("correct_len beyond gamma", lambda: build_out_tokens([[A, B]], [3], [X]), "correct_len", "gamma = 2"),
    # --- q ----------------------------------------------------------------------------------
    ("missing draft_probs (chain)", lambda: chain(draft_probs=None), "draft_probs", "missing"),
    ("missing draft_probs (eagle_sample)", lambda: eagle(candidates=[[2, 0]], retrieve_index=[[0, 1]], retrieve_next_token=[[1, -1]],
                                                        retrieve_next_sibling=[[-1, -1]], logits=np.zeros((2, 3), np.float32),
                                                        num_speculative_tokens=2, uniform_samples=[[.4, 0.]],
                                                        use_rejection_sampling=True), "draft_probs", "missing"),
    ("vocab mismatch between p and q", lambda: chain(draft_probs=[[[.5, .3, .1, .1]]]), "draft_probs", "vocabulary size 4"),
    ("vocab mismatch (eagle_sample)", lambda: eagle(candidates=[[2, 0]], retrieve_index=[[0, 1]], retrieve_next_token=[[1, -1]],
                                                   retrieve_next_sibling=[[-1, -1]], logits=np.zeros((2, 3), np.float32),
                                                   num_speculative_tokens=2, uniform_samples=[[.4, 0.]], use_rejection_sampling=True,
                                                   draft_probs=[[[.5, .5]]]), "draft_probs", "vocabulary size 2"),
    ("vocab mismatch (dspark)", lambda: dspark_accept_sampling(CH_CAND, CH_P, [[[.5, .5]]], [[.4]], [.5]), "draft_probs", "vocabulary"),
    # --- Monte Carlo ------------------------------------------------------------------------
    ("sample_many: unknown algorithm", lambda: sample_many("greedy", {}, num_trials=10, seed=0), "algorithm", "choose one of"),
    ("sample_many: zero trials", lambda: sample_many("chain_rejection_sampling", {}, num_trials=0, seed=0), "num_trials", "whole number"),
    ("sample_many: coins given", lambda: sample_many("chain_rejection_sampling", {"uniform_samples": [[.5]]}, num_trials=2, seed=0),
     "uniform_samples", "fresh coins"),
]


@pytest.mark.parametrize("call, field, fragment", [c[1:] for c in CATALOGUE], ids=[c[0] for c in CATALOGUE])
def test_bad_input_names_the_field(call, field, fragment):
    with pytest.raises(SpecvizError, match=fragment) as info:
        call()
    # A bad entry of an array is named down to the entry (issue 10): "candidates[0][4]".
    assert info.value.field == field or info.value.field.startswith(f"{field}[")
    assert str(info.value).startswith(f"{info.value.field}: ")


def test_specviz_error_is_a_value_error():
    """Callers that catch ValueError (as SGLang's callers do) also catch SpecvizError."""
    with pytest.raises(ValueError):
        greedy(num_speculative_tokens=0)


# ---------------------------------------------------------------------------------------------
# Degenerate but legal (§6.2, §7, §10)
# ---------------------------------------------------------------------------------------------

# A chain whose draft proposed token A although q(A) = 0; p(A) = .5.
Q0_P = [[[.5, .5, 0], [0, 0, 1]]]
Q0_Q = [[[0, .5, .5]]]


def q_zero_chain(semantics, trace=None):
    return chain_rejection_sampling([[2, 0]], [[0, 1]], [[.3, 0.]], [.5], Q0_P, Q0_Q, num_speculative_tokens=2,
                                    semantics=semantics, trace=trace)


def test_q_zero_is_rejected_in_0523_and_warns():
    """0.5.23 needs 0 < q <= 1: q(A) = 0 -> rejected, k = 0, residual relu(p - q) = (.5, 0, 0) -> the
    correction is A itself. predicts [A, 0], accept_index [0, -1]."""
    trace = Trace()
    with pytest.warns(SpecvizWarning, match="q = 0.*0.5.23 rejects"):
        res = q_zero_chain("0.5.23", trace)
    assert res.accept_index.tolist() == [[0, -1]]
    assert res.predicts.tolist() == [0, 0]
    assert any("q = 0" in m for m in trace.warnings())


def test_q_zero_with_target_mass_is_accepted_in_earlier_releases():
    """earlier: u*q = .3 x 0 = 0 < p = .5 -> A accepted, k = 1 = N-1; bonus from the plain row
    (0, 0, 1) -> C. predicts [A, C], accept_index [0, 1]."""
    with pytest.warns(SpecvizWarning, match="q = 0.*earlier releases accept"):
        res = q_zero_chain("earlier")
    assert res.accept_index.tolist() == [[0, 1]]
    assert res.predicts.tolist() == [0, 2]


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_chain_zero_mass_residual_emits_last_vocab_id(semantics):
    """p = (.5, .4999), q = (.5001, .4999) (both within the 1e-4 sum tolerance). The draft proposed A:
    u .9999 -> u*q = .50005 >= .5 -> rejected. relu(p - q) = (0, 0): no mass -> V-1 = 1 (B), in
    every release (the chain sampler has no last-valid fallback), with a warning."""
    with pytest.warns(SpecvizWarning, match="no mass.*V-1 = 1"):
        res = chain_rejection_sampling([[1, 0]], [[0, 1]], [[.9999, 0.]], [.5], [[[.5, .4999], [1, 0]]],
                                       [[[.5001, .4999]]], num_speculative_tokens=2, semantics=semantics)
    assert res.accept_index.tolist() == [[0, -1]]
    assert res.predicts.tolist() == [1, 0]


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_target_only_zero_mass_residual_emits_last_vocab_id(semantics):
    """Root row p = (.49996, .49996, 0) (sums to .99992, legal), children A, B. Coin .99995:
    A acc .49996 -> rejected; B acc .99992 -> rejected (.99995 is above it). buffer = p, so
    relu(p - buffer) = 0: no token has mass. 0.5.23 looks for the last token with mass (none) and
    falls back to V-1; earlier releases go to V-1 directly. Both emit token 2, a token p gives 0."""
    p = np.array([[[.49996, .49996, 0], [1, 0, 0], [1, 0, 0]]], np.float32)
    with pytest.warns(SpecvizWarning, match="no mass"):
        res = tree_sampling_target_only([[2, 0, 1]], [[0, 1, 2]], [[1, -1, -1]], [[-1, 2, -1]], [[.99995, 0, 0]], [.5], p,
                                        num_speculative_tokens=2, semantics=semantics)
    assert res.accept_index.tolist() == [[0, -1]]
    assert res.predicts.tolist() == [2, 0, 0]


def test_regular_runs_do_not_warn():
    """The §0 examples are not degenerate: no SpecvizWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecvizWarning)
        target_only()
        chain()
        target_only(uniform_samples=[[.9, .55, .3, .8, .2]])


@pytest.mark.parametrize("semantics, want", [("0.5.23", [[0, -1]]), ("earlier", [[0, 1]])])
def test_zero_probability_child_with_threshold_single_zero(semantics, want):
    """§6.1: root row p = (0, 1, 0), one child A with p(A) = 0, threshold_single 0, coin 0.
    0.5.23's pt > 0 guard rejects A; earlier releases accept the first child unconditionally
    (pt >= 0 always fires)."""
    p = np.array([[[0, 1, 0], [0, 1, 0]]], np.float32)
    res = tree_sampling_target_only([[2, 0]], [[0, 1]], [[1, -1]], [[-1, -1]], [[0., 0.]], [.5], p,
                                    num_speculative_tokens=2, threshold_single=0.0, semantics=semantics)
    assert res.accept_index.tolist() == want


def test_missing_parent_leaves_the_node_unlinked():
    """§3.4: selected_index [0, 1, 2, 4] with topk 2: node 4 is candidate 4, slot 4//2 = 2 ->
    parent_list[2] = 1 = candidate 1 (B) -> node 2. Fine. Now drop candidate 1:
    selected_index [0, 2, 3, 4]: node 4 (candidate 4, slot 2 -> candidate 1) has no selected
    parent. The node keeps retrieve_index 4 but no link reaches it: root's child A (node 1) has
    children 2, 3 (candidates 2, 3, slot 1 -> candidate 0 = node 1). Not an error, but a
    SpecvizWarning (SGLang's CUDA builder prints 'invalid eagle tree')."""
    with pytest.warns(SpecvizWarning, match="node 4: its parent candidate is not selected"):
        tb = build(selected_index=[[0, 2, 3, 4]], tree_mask_mode="qlen_only")
    assert tb.retrieve_index.tolist() == [[0, 1, 2, 3, 4]]
    assert tb.retrieve_next_token.tolist() == [[1, 2, -1, -1, -1]]
    assert tb.retrieve_next_sibling.tolist() == [[-1, -1, 3, -1, -1]]
    assert 4 not in tb.retrieve_next_token.tolist()[0] + tb.retrieve_next_sibling.tolist()[0]
