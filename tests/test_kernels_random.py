"""Random differential tests: torch and Triton backends == the numpy reference.

Irregular sizes (vocab 1, 7, 1000, 4097; batch 1, 3, 17; trees up to 64 nodes, depth up to 8,
topk up to 8). Trees come from an EAGLE rollout (what SGLang builds) or from a random parent
array (sometimes with shuffled sibling order). Coins are kept >= 1e-4 away from every decision
boundary (SEMANTICS.md §6.4): each level coin away from its node's running-sum edges, each chain
coin away from p/q, the final coin in the middle of a bucket of the actual terminal distribution.
Integers must match exactly; floats within the tolerances in test_kernels_helpers.
Examples are derandomized so CI is reproducible; sizes are kept small for the interpreter.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.support.random_cases import (centred_final_coin, coins_away_from, corrupt_selection, eagle_rollout, greedy_targets,
                                  plausible_candidates, random_probs, random_tree_batch, tree_level_edges)
from test_kernels_helpers import REF, check_all

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2**32 - 1)
vocabs = st.sampled_from([1, 7, 1000, 4097])
batches = st.sampled_from([1, 3, 17])

pytestmark = pytest.mark.filterwarnings("ignore::specviz.base.errors.SpecvizWarning")


@st.composite
def tree_shapes(draw, max_n=64):
    """(topk, depth, n) with 1 <= n - 1 <= topk + (depth-1)*topk^2 and n <= max_n."""
    topk = draw(st.integers(1, 8))
    depth = draw(st.integers(1, 8))
    ncand = topk + (depth - 1) * topk * topk
    n = draw(st.integers(1, min(max_n, ncand + 1)))
    return topk, depth, n


@st.composite
def tree_cases(draw, max_n=64):
    """A batch of verify trees: (candidates placeholder shape, retrieve_*, W)."""
    seed, bs = draw(seeds), draw(batches)
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):
        topk, depth, n = draw(tree_shapes(max_n))
        pl, si = eagle_rollout(rng, bs, topk, depth, n)
        tree = REF.build_tree(pl, si, np.zeros(bs, np.int64), topk=topk, depth=depth, num_draft_tokens=n,
                              tree_mask_mode="qlen_only")
        ri, nt, ns = (t.numpy() for t in (tree.retrieve_index, tree.retrieve_next_token, tree.retrieve_next_sibling))
        W = depth + 1
    else:
        n = draw(st.integers(1, max_n))
        max_depth = draw(st.integers(1, 8))
        ri, nt, ns, _ = random_tree_batch(rng, bs, n, max_depth=max_depth, shuffle_siblings=draw(st.booleans()))
        W = draw(st.integers(1, max_depth + 1))
    return rng, ri, nt, ns, W


@settings(max_examples=15, **SETTINGS)
@given(seed=seeds, bs=batches, shape=tree_shapes(), mode=st.sampled_from(["full_mask", "qlen_only", "qlen_only_bitpacking"]),
       corrupt=st.booleans())
def test_build_tree_random(seed, bs, shape, mode, corrupt):
    topk, depth, n = shape
    assume(mode != "qlen_only_bitpacking" or n <= 32)
    rng = np.random.default_rng(seed)
    pl, si = eagle_rollout(rng, bs, topk, depth, n)
    if corrupt:  # invalid trees (§3.4): orphaned nodes stay unlinked
        si = corrupt_selection(rng, pl, si, topk, depth)
    seq_lens = rng.integers(0, 20, size=bs)
    check_all("build_tree", pl, si, seq_lens, topk=topk, depth=depth, num_draft_tokens=n, tree_mask_mode=mode)


@settings(max_examples=15, **SETTINGS)
@given(case=tree_cases(), V=vocabs, init=st.sampled_from([0, -1]))
def test_verify_tree_greedy_random(case, V, init):
    rng, ri, nt, ns, W = case
    bs, n = ri.shape
    cand = rng.integers(0, V, size=(bs, n))
    tp = greedy_targets(rng, cand, nt, ns, V)
    check_all("verify_tree_greedy", cand, ri, nt, ns, tp, num_speculative_tokens=W, predicts_init=init)


def _tree_coins(rng, cand, nt, ns, p, t_acc):
    """Level coins [bs, n]: coin of node x is >= 1e-4 away from its children's edges acc_i / t_acc."""
    bs, n = cand.shape
    u = np.zeros((bs, n), np.float32)
    for b in range(bs):
        edges = [tree_level_edges(None, cand[b], nt[b], ns[b], p[b], x, t_acc) for x in range(n)]
        u[b] = coins_away_from(rng, edges)
    return u


def _tree_final_coins(rng, res, p, W):
    """Final coins centred in a bucket of each request's actual terminal distribution."""
    bs, n, _ = p.shape
    uf = np.zeros(bs, np.float32)
    buf = res.draft_probs.numpy()
    for b in range(bs):
        k = int(res.accept_token_num[b])
        node = int(res.accept_index[b, k]) - b * n
        dist = p[b, node] if k == W - 1 else np.maximum(p[b, node] - buf[b, node], 0)
        uf[b] = centred_final_coin(rng, dist)
    return uf


@settings(max_examples=10, **SETTINGS)
@given(case=tree_cases(), V=vocabs, semantics=st.sampled_from(["0.5.23", "earlier"]),
       thresholds=st.sampled_from([(1.0, 1.0), (1.0, 0.6), (0.3, 1.0), (0.5, 0.25)]))
def test_tree_sampling_target_only_random(case, V, semantics, thresholds):
    rng, ri, nt, ns, W = case
    bs, n = ri.shape
    t_single, t_acc = thresholds
    p = random_probs(rng, (bs, n), V)
    cand = plausible_candidates(rng, nt, ns, p, V)
    u = _tree_coins(rng, cand, nt, ns, p, t_acc)
    kw = dict(num_speculative_tokens=W, threshold_single=t_single, threshold_acc=t_acc, semantics=semantics)
    first = REF.tree_sampling_target_only(cand, ri, nt, ns, u, np.zeros(bs, np.float32), p, **kw)
    uf = _tree_final_coins(rng, first, p, W)
    check_all("tree_sampling_target_only", cand, ri, nt, ns, u, uf, p, **kw)


@settings(max_examples=6, **SETTINGS)
@given(case=tree_cases(), V=st.sampled_from([4097, 8192]), semantics=st.sampled_from(["0.5.23", "earlier"]),
       thresholds=st.sampled_from([(1.0, 1.0), (0.5, 0.25)]))
def test_target_only_split_kernel_on_every_tree(case, V, semantics, thresholds):
    """The block-parallel target-only kernel forced on for every tree size (by default wide trees on short
    rows run the single-program kernel): both of its walks (links in registers for n <= 16, loaded
    for wider trees) give the reference's results."""
    from kernels import triton_verify

    saved = triton_verify.TARGET_ONLY_SPLIT
    triton_verify.TARGET_ONLY_SPLIT = True
    try:
        test_tree_sampling_target_only_random.hypothesis.inner_test(case, V, semantics, thresholds)
    finally:
        triton_verify.TARGET_ONLY_SPLIT = saved


@settings(max_examples=6, **SETTINGS)
@given(case=tree_cases(), V=st.sampled_from([4097, 8192]), semantics=st.sampled_from(["0.5.23", "earlier"]),
       thresholds=st.sampled_from([(1.0, 1.0), (0.5, 0.25)]))
def test_target_only_walk_first_on_every_tree(case, V, semantics, thresholds):
    """The block-parallel target-only kernel with its walk in a first launch, forced on for every tree and
    batch (by default from 4096 chunk programs on): the walker gathers every child's mass by the parents it
    infers from the links, in one warp, and gives the reference's results on every tree."""
    from kernels import triton_verify

    saved = triton_verify.TARGET_ONLY_SPLIT, triton_verify.TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS
    triton_verify.TARGET_ONLY_SPLIT, triton_verify.TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS = True, 0
    try:
        test_tree_sampling_target_only_random.hypothesis.inner_test(case, V, semantics, thresholds)
    finally:
        triton_verify.TARGET_ONLY_SPLIT, triton_verify.TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS = saved


def _chain_case(rng, bs, N, V, zero_q=False):
    cand = rng.integers(0, V, size=(bs, N))
    p = random_probs(rng, (bs, N), V)
    q = random_probs(rng, (bs, max(N - 1, 0)), V) if N > 1 else np.zeros((bs, 0, V), np.float32)
    # Let the draft usually propose a token it gave mass to (a real draft always does).
    for b in range(bs):
        for s in range(1, N):
            if rng.random() < 0.8 and q[b, s - 1].max() > 0:
                cand[b, s] = rng.choice(V, p=q[b, s - 1].astype(np.float64) / q[b, s - 1].sum(dtype=np.float64))
    edges = [[float(p[b, s - 1, cand[b, s]] / q[b, s - 1, cand[b, s]])] if q[b, s - 1, cand[b, s]] > 0 else []
             for b in range(bs) for s in range(1, N)]
    u = np.zeros((bs, max(N - 1, 1)), np.float32)
    if N > 1:
        u[:, : N - 1] = coins_away_from(rng, edges).reshape(bs, N - 1)
    return cand, p, q, u


def _chain_final_coins(rng, res, p, q, semantics):
    bs, N, _ = p.shape
    uf = np.zeros(bs, np.float32)
    for b in range(bs):
        k = int(res.accept_token_num[b])
        if k == N - 1:
            dist = p[b, k]
        else:
            qrow = q[b, k] if semantics == "earlier" else np.where((q[b, k] >= 0) & (q[b, k] <= 1), q[b, k], 0)
            dist = np.maximum(p[b, k] - qrow, 0)
        uf[b] = centred_final_coin(rng, dist)
    return uf


@settings(max_examples=10, **SETTINGS)
@given(seed=seeds, bs=batches, N=st.integers(1, 9), V=vocabs, semantics=st.sampled_from(["0.5.23", "earlier"]))
def test_chain_rejection_sampling_random(seed, bs, N, V, semantics):
    rng = np.random.default_rng(seed)
    cand, p, q, u = _chain_case(rng, bs, N, V)
    ri = np.arange(bs * N).reshape(bs, N)
    kw = dict(num_speculative_tokens=N, semantics=semantics)
    first = REF.chain_rejection_sampling(cand, ri, u, np.zeros(bs, np.float32), p, q, **kw)
    uf = _chain_final_coins(rng, first, p, q, semantics)
    check_all("chain_rejection_sampling", cand, ri, u, uf, p, q, **kw)


@settings(max_examples=8, **SETTINGS)
@given(seed=seeds, bs=batches, N=st.integers(2, 9), V=st.sampled_from([4097, 8193]),
       semantics=st.sampled_from(["0.5.23", "earlier"]))
def test_chain_sampler_with_its_accept_tests_in_a_first_launch(seed, bs, N, V, semantics):
    """Large batches on a GPU run the accept tests in chain_accept_len_kernel first (CHAIN_SPLIT_MIN_PROGRAMS);
    forced here on small batches with several 4096-blocks a row: the same results as the reference."""
    from kernels import triton_verify

    saved = triton_verify.CHAIN_SPLIT_MIN_PROGRAMS
    triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = 0
    try:
        test_chain_rejection_sampling_random.hypothesis.inner_test(seed, bs, N, V, semantics)
    finally:
        triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = saved


@pytest.mark.parametrize("bpp", [2, 4, 8])
@pytest.mark.parametrize("split", [False, True])
@settings(max_examples=3, **SETTINGS)
@given(seed=seeds, bs=st.sampled_from([3, 5]), N=st.integers(1, 9), semantics=st.sampled_from(["0.5.23", "earlier"]))
def test_chain_sampler_with_several_blocks_a_program(bpp, split, seed, bs, N, semantics):
    """A program may sum 2, 4 or 8 blocks of 4096 (CHAIN_BLOCKS_PER_PROGRAM), the last group of a row
    only partly inside it (V = 16385: 5 blocks, the last with one token), with and without the first
    launch: the reference's results."""
    from kernels import triton_verify

    saved = triton_verify.CHAIN_BLOCKS_PER_PROGRAM, triton_verify.CHAIN_SPLIT_MIN_PROGRAMS
    triton_verify.CHAIN_BLOCKS_PER_PROGRAM, triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = bpp, 0 if split else None
    try:
        test_chain_rejection_sampling_random.hypothesis.inner_test(seed, bs, N, 16385, semantics)
    finally:
        triton_verify.CHAIN_BLOCKS_PER_PROGRAM, triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = saved


def _logits_args(draw, rng, rows):
    """temperature / top_k / top_p as None, one scalar, or one value per row."""
    def per_row(kind):
        choice = draw(st.sampled_from(["none", "scalar", "rows"]))
        if choice == "none":
            return None
        if kind == "temperature":
            vals = rng.choice([0.0, 0.5, 1.0, 1.7], size=rows)
        elif kind == "top_k":
            vals = rng.integers(1, 12, size=rows).astype(np.float64)
        else:
            vals = rng.choice([0.3, 0.8, 0.95, 1.0], size=rows)
        return float(vals[0]) if choice == "scalar" else vals
    temp = per_row("temperature")
    return (1.0 if temp is None else temp), per_row("top_k"), per_row("top_p")


def _top_p_is_clear(probs_before_p, top_p, rows):
    """No ascending cumulative sum within 1e-5 of 1 - top_p (otherwise float rounding may move the cut)."""
    if top_p is None:
        return True
    tp = np.broadcast_to(np.asarray(top_p, dtype=np.float64), (rows,))
    for r in range(rows):
        if tp[r] < 1:
            cums = np.cumsum(np.sort(probs_before_p[r].astype(np.float64)))
            if np.min(np.abs(cums - (1 - tp[r]))) < 1e-5:
                return False
    return True


@settings(max_examples=6, **SETTINGS)
@given(data=st.data(), seed=seeds, rows=st.sampled_from([1, 3, 5]), V=vocabs)
def test_target_probs_from_logits_random(data, seed, rows, V):
    rng = np.random.default_rng(seed)
    logits = (rng.normal(size=(rows, V)) * rng.uniform(0.5, 5.0)).astype(np.float32)
    temp, top_k, top_p = _logits_args(data.draw, rng, rows)
    before_p = REF.target_probs_from_logits(logits, temperature=temp, top_k=top_k).numpy()
    assume(_top_p_is_clear(before_p, top_p, rows))
    check_all("target_probs_from_logits", logits, temperature=temp, top_k=top_k, top_p=top_p)


@settings(max_examples=5, **SETTINGS)
@given(data=st.data(), case=tree_cases(max_n=24), V=st.sampled_from([1, 7, 1000]),
       path=st.sampled_from(["greedy", "tree", "chain"]))
def test_eagle_sample_random(data, case, V, path):
    rng, ri, nt, ns, W = case
    bs, n = ri.shape
    if path == "chain":  # the chain sampler needs a chain: N slots, accept_index [bs, N]
        ri, nt, ns, _ = random_tree_batch(rng, bs, n, max_depth=n)
        nt[:] = np.where(np.arange(n) < n - 1, np.arange(1, n + 1), -1)
        ns[:] = -1
        W = n
    logits = (rng.normal(size=(bs * n, V)) * 3).astype(np.float32)
    temperature = 0.0 if path == "greedy" else rng.choice([0.0, 0.7, 1.0], size=bs)
    if path != "greedy" and np.all(temperature == 0):
        temperature[0] = 1.0
    top_k = None if data.draw(st.booleans()) else rng.integers(1, 9, size=bs).astype(np.float64)
    kw = dict(num_speculative_tokens=W, temperature=temperature, top_k=top_k)
    probs = REF.target_probs_from_logits(
        logits, temperature=np.repeat(temperature, n) if path != "greedy" else 0.0,
        top_k=None if top_k is None or path == "greedy" else np.repeat(top_k, n)).numpy().reshape(bs, n, V)
    cand = plausible_candidates(rng, nt, ns, probs, V)
    if path == "greedy":
        check_all("eagle_sample", cand, ri, nt, ns, logits, **kw)
        return
    if path == "tree":
        u = _tree_coins(rng, cand, nt, ns, probs, 1.0)
        first = REF.tree_sampling_target_only(cand, ri, nt, ns, u, np.zeros(bs, np.float32), probs, num_speculative_tokens=W)
        uf = _tree_final_coins(rng, first, probs, W)
        check_all("eagle_sample", cand, ri, nt, ns, logits, uniform_samples=u, uniform_samples_for_final_sampling=uf, **kw)
    else:
        q = random_probs(rng, (bs, n - 1), V) if n > 1 else np.zeros((bs, 0, V), np.float32)
        edges = [[float(probs[b, s - 1, cand[b, s]] / q[b, s - 1, cand[b, s]])] if q[b, s - 1, cand[b, s]] > 0 else []
                 for b in range(bs) for s in range(1, n)]
        u = np.zeros((bs, n), np.float32)
        if n > 1:
            u[:, : n - 1] = coins_away_from(rng, edges).reshape(bs, n - 1)
        first = REF.chain_rejection_sampling(cand, ri, u, np.zeros(bs, np.float32), probs, q, num_speculative_tokens=n)
        uf = _chain_final_coins(rng, first, probs, q, "0.5.23")
        check_all("eagle_sample", cand, ri, nt, ns, logits, use_rejection_sampling=True, draft_probs=q, uniform_samples=u,
                  uniform_samples_for_final_sampling=uf, **kw)


@settings(max_examples=8, **SETTINGS)
@given(seed=seeds, bs=batches, T=st.integers(1, 9), V=vocabs)
def test_dspark_random(seed, bs, T, V):
    rng = np.random.default_rng(seed)
    cand = rng.integers(0, V, size=(bs, T))
    tp = np.where(rng.random((bs, T)) < 0.7, np.roll(cand, -1, axis=1), rng.integers(0, V, size=(bs, T)))
    cl, bonus = check_all("dspark_accept_greedy", cand, tp)
    verify_lens = rng.integers(1, T + 1, size=bs)
    check_all("cap_correct_len", cl.numpy(), verify_lens)
    check_all("finalize_accept_lens", cl.numpy(), rng.integers(0, 100, size=bs))
    check_all("build_out_tokens", cand[:, 1:], cl.numpy(), bonus.numpy())
    cand_s, p, q, u = _chain_case(rng, bs, T, V)
    ri = np.arange(bs * T).reshape(bs, T)
    first = REF.chain_rejection_sampling(cand_s, ri, u, np.zeros(bs, np.float32), p, q, num_speculative_tokens=T)
    uf = _chain_final_coins(rng, first, p, q, "0.5.23")
    check_all("dspark_accept_sampling", cand_s, p, q, u, uf)


@settings(max_examples=15, **SETTINGS)
@given(seed=seeds, bs=batches, W=st.integers(1, 9))
def test_fill_bonus_tokens_random(seed, bs, W):
    rng = np.random.default_rng(seed)
    lens = rng.integers(1, W + 1, size=bs)
    tokens = np.where(np.arange(W)[None, :] < lens[:, None], rng.integers(0, 50, size=(bs, W)), -1)
    check_all("fill_bonus_tokens", tokens, lens, stride=W)
