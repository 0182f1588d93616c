"""The numpy reference on the hand-worked cases of SEMANTICS.md §0 (and §5.2, §5.3, §8).

Every expected value is derived by hand in the test's docstring, from the spec, not from the
code. The running example (§0): the previous round emitted R; R has children A and B, A has
children C and D; nodes/rows 0..4 are R, A, B, C, D; bs = 1, topk = 2, S = 2, n = 5, W = 3,
seq_len = 10. Token ids (§0.4): A=0, B=1, C=2, D=3, X=4, R=5.
"""
from __future__ import annotations

import numpy as np
import pytest

from specviz.reference import (build_out_tokens, build_tree, cap_correct_len, chain_rejection_sampling,
                               dspark_accept_greedy, dspark_accept_sampling, dspark_bonus_at, eagle_sample,
                               fill_bonus_tokens, finalize_accept_lens, gather_accept_tokens, inverse_cdf, raw_gather,
                               target_probs_from_logits, top_k_renorm, top_p_renorm, tree_mask_matrix,
                               tree_sampling_target_only, verify_tree_greedy)

A, B, C, D, X, R = range(6)
V6 = 6

# §0.1: the EAGLE rollout of the running example.
PARENT_LIST = [[-1, 0, 1]]  # [bs, topk*(S-1)+1]
SELECTED_INDEX = [[0, 1, 2, 3]]  # [bs, n-1]
SEQ_LENS = [10]  # [bs]
CANDIDATES = [[R, A, B, C, D]]  # [bs, n]

# §0.2: the links every verify test uses.
RETRIEVE_INDEX = [[0, 1, 2, 3, 4]]
NEXT_TOKEN = [[1, 3, -1, -1, -1]]
NEXT_SIBLING = [[-1, 2, -1, 4, -1]]
TREE = (CANDIDATES, RETRIEVE_INDEX, NEXT_TOKEN, NEXT_SIBLING)

# §0.4: target rows p, columns A B C D X R; one row per node R, A, B, C, D.
P_TREE = np.array([
    [.5, .3, 0, 0, .2, 0],   # R
    [0, .1, .6, .2, .1, 0],  # A
    [.1, .1, .1, .1, .5, .1],  # B
    [.1, 0, 0, .1, .7, .1],  # C
    [.1, .1, .1, .1, .5, .1],  # D
], dtype=np.float32)[None]  # [1, 5, 6]

# §0.5: the chain p/q example, its own vocabulary A=0, B=1, C=2 (the root's id is never read).
P_ROOT = [.3, .4, .3]
P_AFTER_A = [.2, .5, .3]
Q_ROOT = [.6, .3, .1]
CHAIN_CANDIDATES = [[2, 0]]  # [R, A]; R's id (here 2) is never read
CHAIN_RETRIEVE = [[0, 1]]
CHAIN_P = [[P_ROOT, P_AFTER_A]]  # [1, 2, 3]
CHAIN_Q = [[Q_ROOT]]  # [1, 1, 3]


def logits_of(probs: np.ndarray) -> np.ndarray:
    """ln p, with zero-probability tokens at -1e4 so that softmax gives exactly 0 there."""
    probs = np.asarray(probs, dtype=np.float64)
    return np.where(probs > 0, np.log(np.where(probs > 0, probs, 1.0)), -1e4).astype(np.float32)


def target_only(u, u_final, *, semantics="0.5.23", threshold_acc=1.0, threshold_single=1.0):
    return tree_sampling_target_only(*TREE, [u], [u_final], P_TREE, num_speculative_tokens=3,
                                     semantics=semantics, threshold_acc=threshold_acc, threshold_single=threshold_single)


def emitted(predicts, accept_index) -> list[int]:
    """Output tokens = predicts over the valid accept_index prefix (request 0)."""
    return [int(predicts[g]) for g in np.asarray(accept_index)[0] if g >= 0]


# ---------------------------------------------------------------------------------------------
# §0.2 tree build
# ---------------------------------------------------------------------------------------------

def build(mode):
    return build_tree(PARENT_LIST, SELECTED_INDEX, SEQ_LENS, topk=2, depth=2, num_draft_tokens=5, tree_mask_mode=mode)


def test_build_tree_links_first_child_is_lowest_index():
    """§0.2, nodes visited from i=4 down to 1.

    D (i=4): slot 3//2 = 1 -> parent_list[1] = 0 -> node 1 (A); A has no child: next_token[1] = 4.
    C (i=3): slot 1 -> A; push front: next_sibling[3] = 4, next_token[1] = 3.
    B (i=2): slot 0 -> root: next_token[0] = 2.   A (i=1): slot 0 -> root: next_sibling[1] = 2, next_token[0] = 1.
    retrieve_index = [0..4], next_token = [1, 3, -1, -1, -1], next_sibling = [-1, 2, -1, 4, -1].
    """
    tb = build("qlen_only")
    assert tb.retrieve_index.tolist() == RETRIEVE_INDEX
    assert tb.retrieve_next_token.tolist() == NEXT_TOKEN
    assert tb.retrieve_next_sibling.tolist() == NEXT_SIBLING


@pytest.mark.parametrize("mode", ["full_mask", "qlen_only", "qlen_only_bitpacking"])
def test_build_tree_positions_are_seq_len_plus_depth(mode):
    """Depths R 0, A 1, B 1, C 2, D 2; seq_len 10 -> positions [10, 11, 11, 12, 12] in every mask mode."""
    assert build(mode).positions.tolist() == [10, 11, 11, 12, 12]


def test_qlen_only_mask_rows_are_ancestor_sets():
    """Row i holds A(i) = root + ancestors + i: R 10000, A 11000, B 10100, C 11010, D 11001 (flat [n*n])."""
    tb = build("qlen_only")
    rows = ["10000", "11000", "10100", "11010", "11001"]
    want = np.array([[c == "1" for c in r] for r in rows])
    assert tb.tree_mask.dtype == bool and tb.tree_mask.shape == (25,)
    assert np.array_equal(tb.tree_mask.reshape(5, 5), want)


def test_bitpacked_mask_is_little_endian_ancestor_bits():
    """n = 5 <= 8 -> uint8; bit j set iff j in A(i): R 1, A 1+2 = 3, B 1+4 = 5, C 1+2+8 = 11, D 1+2+16 = 19."""
    tb = build("qlen_only_bitpacking")
    assert tb.tree_mask.dtype == np.uint8
    assert tb.tree_mask.tolist() == [1, 3, 5, 11, 19]


def test_full_mask_rows_hold_prefix_then_tree_cells():
    """FULL_MASK length n*seq_len + n*n = 50 + 25 = 75; row i starts at i*(10+5) = 15*i and holds
    10 True prefix cells followed by the QLEN_ONLY row of node i."""
    tb = build("full_mask")
    assert tb.tree_mask.dtype == bool and tb.tree_mask.shape == (75,)
    qlen = build("qlen_only").tree_mask.reshape(5, 5)
    for i in range(5):
        row = tb.tree_mask[15 * i:15 * (i + 1)]
        assert row[:10].all()
        assert np.array_equal(row[10:], qlen[i])
    assert np.array_equal(tree_mask_matrix(tb, SEQ_LENS, 5, "full_mask"), qlen)


def test_full_mask_second_request_block_starts_after_first():
    """Two requests, seq_lens [2, 3], each the running example. Request 1's block starts at
    off_1 = n*n*1 + n*seq_lens[0] = 25 + 10 = 35; its row i starts at 35 + i*(3+5) = 35 + 8i and
    holds 3 prefix True then the QLEN_ONLY row. Total length n*(2+3) + 2*n*n = 25 + 50 = 75."""
    tb = build_tree(PARENT_LIST * 2, SELECTED_INDEX * 2, [2, 3], topk=2, depth=2, num_draft_tokens=5)
    qlen = build("qlen_only").tree_mask.reshape(5, 5)
    assert tb.tree_mask.shape == (75,)
    for i in range(5):
        row = tb.tree_mask[35 + 8 * i:35 + 8 * (i + 1)]
        assert row[:3].all() and np.array_equal(row[3:], qlen[i])
    assert tb.positions.tolist() == [2, 3, 3, 4, 4, 3, 4, 4, 5, 5]
    assert tb.retrieve_index.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def test_b_outranking_a_renumbers_rows():
    """§0.1 last sentence: if B (candidate 0) outscored A (candidate 1), step 1's beams are B then A,
    so B's children C', D' get candidates 2, 3 and A's get 4, 5. With A's children C, D the top
    scores then sit at {0, 1, 4, 5}: nodes are R, B, A, C, D; C and D hang under node 2 (A).
    parent_list = [-1, 0, 1]: slot 1 = beam 0 = candidate 0 (= B), slot 2 = beam 1 = candidate 1 (= A).
    Nodes 3, 4 have slot 4//2 = 2 -> candidate 1 -> node 2. Node 2's first child is 3, sibling 4."""
    tb = build_tree([[-1, 0, 1]], [[0, 1, 4, 5]], [10], topk=2, depth=2, num_draft_tokens=5, tree_mask_mode="qlen_only")
    assert tb.retrieve_next_token.tolist() == [[1, -1, 3, -1, -1]]
    assert tb.retrieve_next_sibling.tolist() == [[-1, 2, -1, 4, -1]]
    assert tb.positions.tolist() == [10, 11, 11, 12, 12]


# ---------------------------------------------------------------------------------------------
# §0.3 greedy verify and §5.3 hand-off
# ---------------------------------------------------------------------------------------------

def greedy(target_predict, **kw):
    return verify_tree_greedy(*TREE, [target_predict], num_speculative_tokens=3, **kw)


def test_greedy_running_example_accepts_a_then_c_and_emits_x():
    """target_predict [A, C, X, X, X]. Level 1: target at row 0 is A = first child A -> predicts[0] = A,
    accept_index[1] = 1. Level 2: target at row 1 is C = first child C -> predicts[1] = C,
    accept_index[2] = 3. W-1 = 2 reached; terminal predicts[3] = target_predict[3] = X.
    predicts = [A, C, 0, X, 0] (init 0), accept_index [0, 1, 3], k = 2; outputs A C X."""
    res = greedy([A, C, X, X, X])
    assert res.predicts.tolist() == [A, C, 0, X, 0]
    assert res.accept_index.tolist() == [[0, 1, 3]]
    assert res.accept_token_num.tolist() == [2]
    assert res.predicts.dtype == np.int32 and res.accept_index.dtype == np.int32
    assert emitted(res.predicts, res.accept_index) == [A, C, X]


def test_greedy_sibling_match_after_first_child_misses():
    """A->D variant, target_predict [A, D, X, X, X]: level 2 compares C (miss) then sibling D (hit):
    accept_index [0, 1, 4], predicts[1] = D, terminal predicts[4] = X; outputs A D X."""
    res = greedy([A, D, X, X, X])
    assert res.accept_index.tolist() == [[0, 1, 4]]
    assert res.predicts.tolist() == [A, D, 0, 0, X]
    assert emitted(res.predicts, res.accept_index) == [A, D, X]


def test_greedy_mismatch_at_level_two_stops_with_correction():
    """A->X variant, [A, X, X, X, X]: level 2, C and D both differ from X -> stop. k = 1,
    predicts = [A, X, 0, 0, 0], accept_index [0, 1, -1], accept_lens 2; outputs A X."""
    res = greedy([A, X, X, X, X])
    assert res.predicts.tolist() == [A, X, 0, 0, 0]
    assert res.accept_index.tolist() == [[0, 1, -1]]
    assert res.accept_token_num.tolist() == [1]
    assert emitted(res.predicts, res.accept_index) == [A, X]


def test_root_mismatch_emits_one_token():
    """Root mismatch [X, C, X, X, X]: A and B both differ from X -> k = 0, accept_index [0, -1, -1],
    predicts[0] = X, output [X]."""
    res = greedy([X, C, X, X, X])
    assert res.accept_index.tolist() == [[0, -1, -1]]
    assert res.accept_token_num.tolist() == [0]
    assert res.predicts.tolist() == [X, 0, 0, 0, 0]


def test_unreached_predicts_keep_predicts_init():
    """With predicts_init = -1 (SGLang's kernel tests), rows 2, 3, 4 of the A->X variant are never
    written: predicts = [A, X, -1, -1, -1]."""
    assert greedy([A, X, X, X, X], predicts_init=-1).predicts.tolist() == [A, X, -1, -1, -1]


def test_greedy_target_predict_is_read_at_flat_global_row():
    """Two requests, both the running example. retrieve_index row 1 = [5..9]. Request 1's
    target_predict row [A, D, X, X, X]: its root row is global row 5, so level 1 compares against
    target_predict_flat[5] = A, level 2 against flat[6] = D -> accept_index [5, 6, 9], predicts[9] = X."""
    cand = CANDIDATES * 2
    ri = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    res = verify_tree_greedy(cand, ri, NEXT_TOKEN * 2, NEXT_SIBLING * 2, [[A, C, X, X, X], [A, D, X, X, X]],
                             num_speculative_tokens=3)
    assert res.accept_index.tolist() == [[0, 1, 3], [5, 6, 9]]
    assert res.predicts.tolist() == [A, C, 0, X, 0, A, D, 0, 0, X]


def test_raw_gather_of_minus_one_pad_reads_last_flat_element():
    """§0.3 / §5.3 hazard. Batch: request 0 is the A->X variant (accept_index [0, 1, -1]), request 1
    the A->D variant on rows 5..9 whose target at row 9 is B (accept_index [5, 6, 9], bonus
    predicts[9] = B). The raw gather predicts[accept_index] of request 0 reads predicts[-1] = predicts[9] = request 1's
    bonus B, a token request 0 never emitted. gather_accept_tokens shows -1 there instead; the
    single-request case reads predicts[-1] = predicts[4] = 0 (init)."""
    ri = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    res = verify_tree_greedy(CANDIDATES * 2, ri, NEXT_TOKEN * 2, NEXT_SIBLING * 2, [[A, X, X, X, X], [A, D, X, X, B]],
                             num_speculative_tokens=3)
    assert res.accept_index.tolist() == [[0, 1, -1], [5, 6, 9]]
    assert res.predicts[9] == B
    assert raw_gather(res.predicts, res.accept_index).tolist() == [[A, X, B], [A, D, B]]
    accept_lens = res.accept_token_num + 1
    assert gather_accept_tokens(res.predicts, res.accept_index, accept_lens).tolist() == [[A, X, -1], [A, D, B]]
    single = greedy([A, X, X, X, X])
    assert raw_gather(single.predicts, single.accept_index).tolist() == [[A, X, 0]]


def test_fill_bonus_tokens_uses_stride_w_not_n():
    """accept_tokens [[A, X, -1], [B, C, D]] (W = 3), accept_lens [2, 3]: bonus[b] = flat[b*3 + len-1]
    -> flat[1] = X, flat[3 + 2] = D. With stride n = 5 the flat array (6 entries) is too short for
    2 x 5 slots, and that is an error, not a silent misread."""
    bonus = fill_bonus_tokens([[A, X, -1], [B, C, D]], [2, 3], stride=3)
    assert bonus.tolist() == [X, D] and bonus.dtype == np.int32
    from specviz.base.errors import SpecvizError
    with pytest.raises(SpecvizError, match="accept_tokens"):
        fill_bonus_tokens([[A, X, -1], [B, C, D]], [2, 3], stride=5)


def test_fill_bonus_tokens_after_root_mismatch_reads_slot_zero():
    """accept_lens 1 -> slot 0: accept_tokens [[X, -1, -1]] -> bonus X."""
    assert fill_bonus_tokens([[X, -1, -1]], [1], stride=3).tolist() == [X]


# ---------------------------------------------------------------------------------------------
# §0.4 target-only tree sampling
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_target_only_accepts_a_and_c_then_samples_x(semantics):
    """u = [.4, .55, .3, .8, .2], u_final .5. Level 1, coin u[0] = .4: A, acc = .5, .4 < .5 -> accept.
    Next coin u[1] (node A) = .55: C, acc = .6 -> accept. k = 2 = W-1: terminal from plain row 3 (C)
    [.1 0 0 .1 .7 .1]: cumsum .1 .1 .1 .2 .9 first exceeds .5 at X. Output A C X, accept_index
    [0, 1, 3]; no rejection, so the work buffer stays zero."""
    res = target_only([.4, .55, .3, .8, .2], .5, semantics=semantics)
    assert res.accept_index.tolist() == [[0, 1, 3]]
    assert res.predicts.tolist() == [A, C, 0, X, 0]
    assert emitted(res.predicts, res.accept_index) == [A, C, X]
    assert not res.draft_probs.any()


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_target_only_rejects_both_root_children_and_samples_residual(semantics):
    """u[0] = .9: A (acc .5) rejected -> buffer[0][A] = .5; B (acc .8) rejected -> buffer[0][B] = .3.
    k = 0; terminal relu(p_R - buffer) = [0 0 0 0 .2 0] -> X for any u_final. Output [X]."""
    for u_final in (0.0, .5, .99):
        res = target_only([.9, .55, .3, .8, .2], u_final, semantics=semantics)
        assert res.accept_index.tolist() == [[0, -1, -1]]
        assert emitted(res.predicts, res.accept_index) == [X]
    buf = res.draft_probs[0]
    assert buf[0, A] == np.float32(.5) and buf[0, B] == np.float32(.3)
    assert np.count_nonzero(buf) == 2


@pytest.mark.parametrize("semantics, want_index, want_tokens", [
    ("0.5.23", [0, 2, -1], [B, X]),
    ("earlier", [0, 1, 3], [A, C, X]),
])
def test_target_only_coin_on_bucket_edge(semantics, want_index, want_tokens):
    """u[0] = .5 exactly on A's edge. 0.5.23: .5 < .5 is false -> A rejected; B, acc .8, accepted;
    next coin u[2] = .3 but B has no child -> k = 1; terminal from B's row [.1 .1 .1 .1 .5 .1]
    (its buffer row is zero): cumsum exceeds .5 first at X (.9). Output [B, X], index [0, 2, -1].
    earlier: .5 <= .5 accepts A, then u[1] = .55 < .6 accepts C, row 3 gives X: [A, C, X]."""
    res = target_only([.5, .55, .3, .8, .2], .5, semantics=semantics)
    assert res.accept_index.tolist() == [want_index]
    assert emitted(res.predicts, res.accept_index) == want_tokens


def test_threshold_acc_half_accepts_a_that_exact_sampling_rejects():
    """threshold_acc .5, u[0] = .9: A's bound acc/t_acc = .5/.5 = 1 > .9 -> A accepted (thresholds 1
    reject it); then u[1] = .55 < .6/.5 accepts C; row 3 gives X. Output [A, C, X]."""
    res = target_only([.9, .55, .3, .8, .2], .5, threshold_acc=.5)
    assert res.accept_index.tolist() == [[0, 1, 3]]
    assert emitted(res.predicts, res.accept_index) == [A, C, X]


def test_threshold_acc_zero_is_clamped_and_accepts_every_first_child_with_mass():
    """§6: t_acc = max(0, 1e-9): the bound acc/1e-9 exceeds every coin as soon as acc > 0, so the
    first child with p > 0 is taken at every level: A (p .5), then C (p .6); row C gives X."""
    res = target_only([.9, .99, .3, .8, .2], .5, threshold_acc=0.0)
    assert emitted(res.predicts, res.accept_index) == [A, C, X]


def test_threshold_single_takes_a_likely_child_regardless_of_coin():
    """threshold_single .55, u[0] = .9: A (p .5 < .55) rejected; B (p .3) rejected -> [X]. With
    threshold_single .5: A's p .5 >= .5 fires, A accepted despite the coin; next coin u[1] = .9:
    C (p .6 >= .5) fires too -> [A, C, X]."""
    assert emitted(*_pi(target_only([.9, .9, .3, .8, .2], .5, threshold_single=.55))) == [X]
    assert emitted(*_pi(target_only([.9, .9, .3, .8, .2], .5, threshold_single=.5))) == [A, C, X]


def _pi(res):
    return res.predicts, res.accept_index


def test_inverse_cdf_fallbacks():
    """§6.2: dist [0, .5, .5, 0], coin .5: thr .5, running .5 (not > .5) then 1.0 -> token 2.
    Coin 0 on [.25, .75, 0, 0]: thr 0, the first token with mass and running sum > 0 -> 0.
    All-zero dist: the 0.5.23 last-valid fallback finds no token with mass -> V-1 = 3; without that
    fallback also V-1 = 3. (A sequential float32 sum with a coin < 1 always leaves thr below the
    total, so the "no token qualifies although there is mass" fallback is unreachable here.)"""
    assert inverse_cdf(np.array([0, .5, .5, 0], np.float32), .5, last_valid_fallback=True) == 2
    assert inverse_cdf(np.zeros(4, np.float32), .3, last_valid_fallback=True) == 3
    assert inverse_cdf(np.zeros(4, np.float32), .3, last_valid_fallback=False) == 3
    assert inverse_cdf(np.array([.25, .75, 0, 0], np.float32), 0.0, last_valid_fallback=False) == 0


# ---------------------------------------------------------------------------------------------
# §0.5 chain rejection sampling
# ---------------------------------------------------------------------------------------------

def chain(u0, u_final, semantics="0.5.23"):
    return chain_rejection_sampling(CHAIN_CANDIDATES, CHAIN_RETRIEVE, [[u0, 0.0]], [u_final], CHAIN_P, CHAIN_Q,
                                    num_speculative_tokens=2, semantics=semantics)


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_chain_coin_exactly_on_ratio_is_rejected(semantics):
    """u[0] = .5 = p/q = .3/.6: .5 x .6 = .3 (also in float32), and .3 < .3 is false in every
    release -> A rejected, k = 0. Residual relu(p - q) = (0, .1, .2); u_final .5 -> thr .15 -> C."""
    res = chain(.5, .5, semantics)
    assert res.accept_index.tolist() == [[0, -1]]
    assert res.accept_token_num.tolist() == [0]
    assert emitted(res.predicts, res.accept_index) == [2]  # C


@pytest.mark.parametrize("u_final, token", [(.25, 1), (.5, 2)])
def test_chain_rejection_samples_residual(u_final, token):
    """u[0] = .7: .7 x .6 = .42 >= .3 -> rejected, k = 0. Residual (0, .1, .2) normalises to
    (0, 1/3, 2/3): u_final .25 -> thr .075 < .1 -> B; u_final .5 -> thr .15 >= .1, < .3 -> C."""
    res = chain(.7, u_final)
    assert res.accept_index.tolist() == [[0, -1]]
    assert res.predicts.tolist() == [token, 0]


def test_chain_full_acceptance_takes_bonus_from_plain_target_row():
    """u[0] = .4: .4 x .6 = .24 < .3 -> A accepted, k = 1 = N-1; bonus from p' = (.2, .5, .3):
    u_final .5 -> cumsum .2, .7 -> B. predicts = [A, B], accept_index [0, 1], output A B."""
    res = chain(.4, .5)
    assert res.accept_index.tolist() == [[0, 1]]
    assert res.accept_token_num.tolist() == [1]
    assert res.predicts.tolist() == [0, 1]


# ---------------------------------------------------------------------------------------------
# §0.6 DSpark chain accept
# ---------------------------------------------------------------------------------------------

Y = 6


def test_dspark_greedy_counts_leading_matches_only():
    """Anchor R, drafts A B C against target_predict [A, B, X, Y]: match [T, T, F] -> correct_len 2,
    bonus target_predict[2] = X. commit_lens 3, new_seq_lens 10 + 3 = 13; out_tokens start
    [A, B, C, 0] and become [A, B, X, 0]."""
    correct_len, bonus = dspark_accept_greedy([[R, A, B, C]], [[A, B, X, Y]])
    assert correct_len.tolist() == [2] and correct_len.dtype == np.int32
    assert bonus.tolist() == [X] and bonus.dtype == np.int64
    commit, new_seq = finalize_accept_lens(correct_len, [10])
    assert commit.tolist() == [3] and new_seq.tolist() == [13]
    assert commit.dtype == np.int32 and new_seq.dtype == np.int64
    out = build_out_tokens([[A, B, C]], correct_len, bonus)
    assert out.tolist() == [[A, B, X, 0]] and out.dtype == np.int64
    capped, trim = cap_correct_len(correct_len, [4])
    assert capped.tolist() == [2] and trim.tolist() == [0]
    assert capped.dtype == np.int32 and trim.dtype == np.int32


def test_dspark_greedy_ignores_match_after_first_mismatch():
    """Drafts A B C against [A, X, C, Y]: match [T, F, F]; C == target[2]? no, target[2] = C and
    draft 3 is C -> match[2] = T, but it follows a mismatch -> correct_len 1, bonus X."""
    correct_len, bonus = dspark_accept_greedy([[R, A, B, C]], [[A, X, C, Y]])
    assert correct_len.tolist() == [1] and bonus.tolist() == [X]


def test_dspark_window_cap_trims_and_rereads_bonus():
    """verify_lens 2: capped = min(2, 2-1) = 1, cap_trim_lens 1, greedy bonus target_predict[1] = B,
    commit_lens 2, new_seq_lens 12, out_tokens [A, B, C, 0] (bonus B scattered onto column 1 = B)."""
    capped, trim = cap_correct_len([2], [2])
    assert capped.tolist() == [1] and trim.tolist() == [1]
    bonus = dspark_bonus_at(capped, target_predict=[[A, B, X, Y]])
    assert bonus.tolist() == [B]
    commit, new_seq = finalize_accept_lens(capped, [10])
    assert commit.tolist() == [2] and new_seq.tolist() == [12]
    assert build_out_tokens([[A, B, C]], capped, bonus).tolist() == [[A, B, C, 0]]


@pytest.mark.parametrize("u0, u_final, want_len, want_bonus, want_out", [
    (.7, .25, 0, 1, [1, 0]),  # rejected: residual (0, 1/3, 2/3), thr .075 -> B
    (.4, .5, 1, 1, [0, 1]),  # accepted: bonus from p' at .5 -> B
])
def test_dspark_sampling_two_level_gather(u0, u_final, want_len, want_bonus, want_out):
    """§0.6 with the §0.5 table as a one-draft window (gamma 1, T 2). u .7 / u_final .25: correct_len 0,
    bonus = predicts[accept_index[0][0]] = predicts[0] = B, commit 1, new_seq 11, out [B, 0].
    u .4 / u_final .5: correct_len 1, bonus = predicts[1] = B, commit 2, new_seq 12, out [A, B]."""
    correct_len, bonus = dspark_accept_sampling(CHAIN_CANDIDATES, CHAIN_P, CHAIN_Q, [[u0]], [u_final])
    assert correct_len.tolist() == [want_len] and bonus.tolist() == [want_bonus]
    commit, new_seq = finalize_accept_lens(correct_len, [10])
    assert commit.tolist() == [want_len + 1] and new_seq.tolist() == [11 + want_len]
    assert build_out_tokens([[0]], correct_len, bonus).tolist() == [want_out]


def test_dspark_sampling_cap_yields_next_accepted_draft():
    """Two drafts A, A (vocab A B C), both accepted: row 0 and row 1 have p = q, so u*q < p for any
    u < 1; correct_len 2, predicts = [A, A, bonus]. verify_lens 2 caps at 1: the two-level gather
    predicts[accept_index[1]] = predicts[1] = the second draft A (a valid target sample)."""
    p = [[.5, .25, .25], [.5, .25, .25], [0, 1, 0]]
    q = [[.5, .25, .25], [.5, .25, .25]]
    res = chain_rejection_sampling([[2, 0, 0]], [[0, 1, 2]], [[.9, .9]], [.5], [p], [q], num_speculative_tokens=3)
    assert res.accept_token_num.tolist() == [2]
    assert res.predicts.tolist() == [0, 0, 1]
    capped, trim = cap_correct_len(res.accept_token_num, [2])
    assert capped.tolist() == [1] and trim.tolist() == [1]
    assert dspark_bonus_at(capped, predicts=res.predicts, accept_index=res.accept_index).tolist() == [0]


# ---------------------------------------------------------------------------------------------
# §5.1-5.2 logits -> probs, eagle_sample
# ---------------------------------------------------------------------------------------------

TIE_ROW = np.log(np.array([[.4, .2, .2, .1, .1]], np.float32))
TIE_KEPT = [.5, .25, .25, 0, 0]


@pytest.mark.parametrize("kw", [dict(top_k=2), dict(top_p=.5), dict(top_k=3), dict(top_k=2, top_p=.6)])
def test_top_k_top_p_keep_ties_at_the_pivot(kw):
    """§5.2, p = (.4, .2, .2, .1, .1). top_k 2: pivot = 2nd largest .2, both .2 kept ->
    (.4, .2, .2)/.8 = (.5, .25, .25, 0, 0). top_k 3: pivot .2 too -> same. top_p .5: ascending
    cumsums (.1, .2, .4, .6, 1); first >= 1 - .5 is .6 (value .2) -> keep >= .2 -> same.
    top_k 2 then top_p .6 (top-k first, §5.1): (.5, .25, .25, 0, 0) ascending cumsums
    (0, 0, .25, .5, 1); first >= .4 is .5 (value .25) -> keep >= .25 -> unchanged. (top_p .5 here
    would put 1 - top_p exactly on the cumsum .5, a float32 coin-flip, so the test avoids it.)"""
    got = target_probs_from_logits(TIE_ROW, temperature=1.0, **kw)
    np.testing.assert_allclose(got[0], TIE_KEPT, atol=1e-6)


@pytest.mark.parametrize("kw, want", [
    (dict(top_k=1), [1, 0, 0, 0, 0]),
    (dict(top_k=4), [.4, .2, .2, .1, .1]),  # pivot .1: everything kept
    (dict(top_p=.3), [1, 0, 0, 0, 0]),  # first cumsum >= .7 is 1.0 (value .4)
    (dict(), [.4, .2, .2, .1, .1]),
])
def test_top_k_top_p_cut_points(kw, want):
    """top_k 1 -> pivot .4 -> one-hot A. top_k 4 -> pivot .1 -> unchanged. top_p .3 -> the first
    ascending cumsum >= .7 is 1.0 at the .4 entry -> one-hot. No top-k/top-p -> plain softmax."""
    np.testing.assert_allclose(target_probs_from_logits(TIE_ROW, temperature=1.0, **kw)[0], want, atol=1e-6)


def test_renorm_helpers_match_section_5_2():
    """The row-level helpers give the §5.2 example directly."""
    row = np.array([.4, .2, .2, .1, .1], np.float32)
    np.testing.assert_allclose(top_k_renorm(row, 2), TIE_KEPT, atol=1e-7)
    np.testing.assert_allclose(top_p_renorm(row, .5), TIE_KEPT, atol=1e-7)


def test_temperature_zero_is_top_k_one_and_keeps_tied_maxima():
    """T = 0 -> T 1 with top_k 1. logits [0, 1, 2] -> one-hot on id 2. Tied maximum [1, 3, 3] ->
    pivot = e^3/(e+2e^3), both maxima kept -> (0, .5, .5)."""
    got = target_probs_from_logits([[0., 1., 2.], [1., 3., 3.]], temperature=0.0)
    np.testing.assert_allclose(got, [[0, 0, 1], [0, .5, .5]], atol=1e-7)


def test_temperature_scales_logits():
    """logits [0, 2 ln 3] at T = 2 -> [0, ln 3] -> softmax (1/4, 3/4)."""
    got = target_probs_from_logits([[0., 2 * np.log(3.)]], temperature=2.0)
    np.testing.assert_allclose(got[0], [.25, .75], atol=1e-6)


def test_eagle_sample_all_greedy_runs_greedy_verify_and_hand_off():
    """Temperature 0 everywhere -> greedy path; argmax of the §0.4 rows = A, C, X, X, X -> §0.3:
    accept_index [0, 1, 3], accept_lens 3, accept_tokens [A, C, X], bonus = slot 2 = X."""
    res = eagle_sample(*TREE, logits_of(P_TREE[0]), num_speculative_tokens=3, temperature=0.0)
    assert res.accept_index.tolist() == [[0, 1, 3]]
    assert res.accept_lens.tolist() == [3]
    assert res.accept_tokens.tolist() == [[A, C, X]]
    assert res.bonus.tolist() == [X]
    assert res.predicts.tolist() == [A, C, 0, X, 0]


@pytest.mark.parametrize("u, want_tokens, want_lens", [
    ([.4, .55, .3, .8, .2], [A, C, X], 3),
    ([.9, .55, .3, .8, .2], [X, -1, -1], 1),
])
def test_eagle_sample_target_only_path(u, want_tokens, want_lens):
    """Temperature 1 on logits ln p reproduces the §0.4 rows; coins as in §0.4 (all >= .05 from an
    edge): u[0] .4 -> [A, C, X]; u[0] .9 -> [X] (accept_lens 1, bonus X)."""
    res = eagle_sample(*TREE, logits_of(P_TREE[0]), num_speculative_tokens=3, temperature=1.0,
                       uniform_samples=[u], uniform_samples_for_final_sampling=[.5])
    assert res.accept_tokens.tolist() == [want_tokens]
    assert res.accept_lens.tolist() == [want_lens]
    assert res.bonus.tolist() == [X]


@pytest.mark.parametrize("u0, u_final, want_tokens", [(.4, .5, [0, 1]), (.7, .25, [1, -1]), (.7, .5, [2, -1])])
def test_eagle_sample_rejection_sampling_path(u0, u_final, want_tokens):
    """The §0.5 chain through eagle_sample with use_rejection_sampling: logits ln p, ln p' at T 1.
    u .4 -> A accepted, bonus from p' at .5 -> B: [A, B]. u .7 -> rejected, residual (0, 1/3, 2/3):
    u_final .25 -> B, .5 -> C (.5 x .3 = .15 is .05 from the B/C edge .1 -> safe)."""
    logits = logits_of(np.array([P_ROOT, P_AFTER_A]))
    res = eagle_sample(CHAIN_CANDIDATES, CHAIN_RETRIEVE, [[-1, -1]], [[-1, -1]], logits, num_speculative_tokens=2,
                       temperature=1.0, use_rejection_sampling=True, draft_probs=CHAIN_Q,
                       uniform_samples=[[u0, .3]], uniform_samples_for_final_sampling=[u_final])
    assert res.accept_tokens.tolist() == [want_tokens]
    assert res.bonus.tolist() == [want_tokens[1] if want_tokens[1] >= 0 else want_tokens[0]]


def test_eagle_sample_mixed_batch_greedy_request_ignores_its_coins():
    """bs 2, temperature [0, 1]. Request 0 is greedy inside a sampling batch: T 1 with top_k 1 makes
    its rows one-hot at the argmax (A, D, X, X, X: the A->D variant). With coins .99 the target-only
    sampler still follows it: level 1, A has p 1 -> .99 < 1 accepts A; level 2, C has p 0 (0.5.23
    rejects p = 0), D has acc 1 -> accepted; terminal at the depth limit from D's one-hot row -> X.
    Output [A, D, X], exactly greedy verify. Request 1 samples the §0.4 rows with u[0] .9 -> [X]."""
    greedy_rows = np.full((5, V6), 0.0, np.float32)
    for row, tok in enumerate([A, D, X, X, X]):
        greedy_rows[row, tok] = 5.0
    logits = np.concatenate([greedy_rows, logits_of(P_TREE[0])])
    res = eagle_sample(CANDIDATES * 2, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], NEXT_TOKEN * 2, NEXT_SIBLING * 2, logits,
                       num_speculative_tokens=3, temperature=[0.0, 1.0],
                       uniform_samples=[[.99] * 5, [.9, .55, .3, .8, .2]], uniform_samples_for_final_sampling=[.99, .5])
    assert res.accept_tokens.tolist() == [[A, D, X], [X, -1, -1]]
    assert res.accept_lens.tolist() == [3, 1]
    assert res.accept_index.tolist() == [[0, 1, 4], [5, -1, -1]]
    assert res.bonus.tolist() == [X, X]
    g = verify_tree_greedy(*TREE, [[A, D, X, X, X]], num_speculative_tokens=3)
    assert res.accept_index[0].tolist() == g.accept_index[0].tolist()


# ---------------------------------------------------------------------------------------------
# Trace replay on the §0 cases
# ---------------------------------------------------------------------------------------------

TRACED_CASES = {
    "build_tree full_mask": lambda t: build_tree(PARENT_LIST, SELECTED_INDEX, SEQ_LENS, topk=2, depth=2,
                                                 num_draft_tokens=5, trace=t),
    "build_tree bitpacking": lambda t: build_tree(PARENT_LIST, SELECTED_INDEX, SEQ_LENS, topk=2, depth=2, num_draft_tokens=5,
                                                  tree_mask_mode="qlen_only_bitpacking", trace=t),
    "greedy A->C": lambda t: verify_tree_greedy(*TREE, [[A, C, X, X, X]], num_speculative_tokens=3, trace=t),
    "greedy A->D": lambda t: verify_tree_greedy(*TREE, [[A, D, X, X, X]], num_speculative_tokens=3, trace=t),
    "greedy A->X": lambda t: verify_tree_greedy(*TREE, [[A, X, X, X, X]], num_speculative_tokens=3, trace=t),
    "greedy root mismatch": lambda t: verify_tree_greedy(*TREE, [[X, C, X, X, X]], num_speculative_tokens=3, trace=t),
    "target-only .4": lambda t: tree_sampling_target_only(*TREE, [[.4, .55, .3, .8, .2]], [.5], P_TREE,
                                                          num_speculative_tokens=3, trace=t),
    "target-only .9": lambda t: tree_sampling_target_only(*TREE, [[.9, .55, .3, .8, .2]], [.5], P_TREE,
                                                          num_speculative_tokens=3, trace=t),
    "target-only .5 earlier": lambda t: tree_sampling_target_only(*TREE, [[.5, .55, .3, .8, .2]], [.5], P_TREE,
                                                                  num_speculative_tokens=3, semantics="earlier", trace=t),
    "chain rejected": lambda t: chain_rejection_sampling(CHAIN_CANDIDATES, CHAIN_RETRIEVE, [[.7, 0.]], [.25], CHAIN_P, CHAIN_Q,
                                                         num_speculative_tokens=2, trace=t),
    "chain accepted": lambda t: chain_rejection_sampling(CHAIN_CANDIDATES, CHAIN_RETRIEVE, [[.4, 0.]], [.5], CHAIN_P, CHAIN_Q,
                                                         num_speculative_tokens=2, trace=t),
}


@pytest.mark.parametrize("name", list(TRACED_CASES))
def test_trace_replay_ends_at_the_result(name):
    """Replaying the recorded writes over the initial arrays rebuilds the returned result exactly."""
    from specviz.replay.frames import frames_equal_result, replay
    from specviz.base.trace import Trace

    trace = Trace()
    result = TRACED_CASES[name](trace)
    frames = replay(trace)
    assert len(frames) == len(trace.events) + 1
    assert frames_equal_result(frames, result)
    assert not frames_equal_result(frames[:1], result)  # the events did the work: the initial arrays differ


def test_greedy_trace_tells_the_a_to_d_story():
    """A->D: level 1 compares A with the target A (match, accept); level 2 compares C with D (miss),
    moves to sibling D, compares D with D (match, accept); then the terminal writes X at row 4."""
    from specviz.base.trace import Trace

    trace = Trace()
    verify_tree_greedy(*TREE, [[A, D, X, X, X]], num_speculative_tokens=3, trace=trace)
    compares = [(e.node, e.data["token"], e.data["target"], e.data["match"]) for e in trace.events if e.kind == "compare"]
    assert compares == [(1, A, A, True), (3, C, D, False), (4, D, D, True)]
    terminal = [e for e in trace.events if e.kind == "terminal"]
    assert [(e.data["row"], e.data["token"]) for e in terminal] == [(4, X)]


def test_target_only_trace_records_the_rejected_mass():
    """u[0] = .9: the accept tests see running sums .5 (A) and .8 (B), both rejected; each rejection
    writes p into the work buffer; the residual event carries relu(p_R - buffer) = (0 0 0 0 .2 0)."""
    from specviz.base.trace import Trace

    trace = Trace()
    tree_sampling_target_only(*TREE, [[.9, .55, .3, .8, .2]], [.5], P_TREE, num_speculative_tokens=3, trace=trace)
    tests = [(e.node, round(e.data["prob_acc"], 6), e.data["accepted"]) for e in trace.events if e.kind == "accept_test"]
    assert tests == [(1, .5, False), (2, .8, False)]
    writes = [w for e in trace.events if e.kind == "reject" for w in e.writes]
    assert [(name, flat) for name, flat, _ in writes] == [("draft_probs", A), ("draft_probs", B)]
    residual = next(e for e in trace.events if e.kind == "residual")
    np.testing.assert_allclose(residual.data["dist"], [0, 0, 0, 0, .2, 0], atol=1e-7)
