"""Tree and chain accept rules in torch (SEMANTICS.md §4, §6, §7), vectorised over the batch.

Glossary: p = target_probs (the target's distribution), q = draft_probs (the draft's proposal).
In the target-only tree sampler ``draft_probs`` is the zero work buffer, not q.

The reference walks one request at a time and scans sibling lists one link at a time. Here the
first-child / next-sibling links are first turned into two tables for the whole batch
(``link_tables``: each node's parent and its rank in its parent's sibling list, by pointer
jumping, log2(n) steps). The walk then loops over *levels* only: at each level every request
looks at all children of its current node at once and picks the first (lowest rank) that
passes the test, which is exactly the node the reference's sibling scan stops at. No
data-dependent Python branching, so the functions also run inside a CUDA graph.
"""
from __future__ import annotations

import math

import torch

from specviz.base.errors import SpecvizError
from specviz.reference.chain_sampling import check_chain_args
from specviz.reference.target_only import check_threshold, check_work_buffer
from specviz.reference.verify import check_predicts_init
from specviz.base.results import TreeSampleResult, VerifyResult
from specviz.base.validate import (check_semantics, check_shape, check_tokens, check_tree_arrays, check_width, coin_array,
                              int_array, prob_array)

from .torch_common import (F32, INT32, INT64, as_tensor, chain_inverse_cdf, check_own_block_rows, pick_device,
                           target_only_inverse_cdf)

BIG = 1 << 30


# ---------------------------------------------------------------------------------------------
# Link tables
# ---------------------------------------------------------------------------------------------

def link_tables(next_token: torch.Tensor, next_sibling: torch.Tensor):
    """(parent, rank) [bs, n] int64 from first-child / next-sibling links.

    parent[b, c] = the node whose sibling list contains c (-1: none, e.g. the root or an
    unlinked node); rank[b, c] = c's position in that list (0 = first child).
    Wyllie's list ranking: each round doubles how far back along the sibling list a node looks.
    """
    bs, n = next_token.shape
    dev = next_token.device
    src = torch.arange(n, dtype=INT64, device=dev)[None, :].expand(bs, n)
    trash = torch.full((), n, dtype=INT64, device=dev)
    prev = torch.full((bs, n + 1), -1, dtype=INT64, device=dev)  # node whose next_sibling is c
    prev.scatter_(1, torch.where(next_sibling >= 0, next_sibling, trash), src)
    first_of = torch.full((bs, n + 1), -1, dtype=INT64, device=dev)  # node whose first child is c
    first_of.scatter_(1, torch.where(next_token >= 0, next_token, trash), src)
    prev, first_of = prev[:, :n], first_of[:, :n]
    jump = prev.clone()
    head = torch.where(prev >= 0, prev, src)  # furthest node reached backwards so far
    rank = (prev >= 0).to(INT64)
    for _ in range(max(1, math.ceil(math.log2(max(n, 2)))) + 1):
        live = jump >= 0
        j = jump.clamp(min=0)
        rank = torch.where(live, rank + rank.gather(1, j), rank)
        head = torch.where(live, head.gather(1, j), head)
        jump = torch.where(live, jump.gather(1, j), jump)
    parent = first_of.gather(1, head)
    return parent, rank


def _pick_first(mask: torch.Tensor, rank: torch.Tensor):
    """Among ``mask``ed nodes, the one of lowest rank: (found [bs] bool, node [bs], its rank or BIG)."""
    r = torch.where(mask, rank, torch.full_like(rank, BIG))
    rmin, node = r.min(dim=1)
    return rmin < BIG, node, rmin


# ---------------------------------------------------------------------------------------------
# Validation (the reference's checks, plus the kernel-backend row rule)
# ---------------------------------------------------------------------------------------------

def check_tree_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling):
    cand, ri, nt, ns = check_tree_arrays(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    check_own_block_rows(ri)
    return cand, ri, nt, ns


def _tree_tensors(device, candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling):
    return (as_tensor("candidates", candidates, INT64, device), as_tensor("retrieve_index", retrieve_index, INT64, device),
            as_tensor("retrieve_next_token", retrieve_next_token, INT64, device),
            as_tensor("retrieve_next_sibling", retrieve_next_sibling, INT64, device))


def check_greedy_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict,
                        num_speculative_tokens, predicts_init):
    """The reference's checks for verify_tree_greedy (same messages), plus the row rule."""
    cand_np, *_ = check_tree_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    tp_np = int_array("target_predict", target_predict, 2)
    check_shape("target_predict", tp_np, cand_np.shape, "(like candidates)")
    check_tokens("target_predict", tp_np, None)
    check_width("num_speculative_tokens", num_speculative_tokens, cand_np.shape[1])
    check_predicts_init(predicts_init)


# ---------------------------------------------------------------------------------------------
# Greedy tree verification (§4)
# ---------------------------------------------------------------------------------------------

def verify_tree_greedy(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict, *,
                       num_speculative_tokens, predicts_init=0, validate=True) -> VerifyResult:
    """Greedy tree walk for every request at once (SEMANTICS.md §4).

    candidates [bs, n], retrieve_* [bs, n] int64, target_predict [bs, n] int64 (read at flat rows).
    Returns predicts [bs*n] int32, accept_index [bs, W] int32 (-1 padded), accept_token_num [bs] int32.
    ``validate=False`` skips the numpy-side checks (benchmarks).
    """
    device = pick_device(candidates, retrieve_index, target_predict)
    if validate:
        check_greedy_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict,
                            num_speculative_tokens, predicts_init)
    W = int(num_speculative_tokens)
    cand, ri, nt, ns = _tree_tensors(device, candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    tp_flat = as_tensor("target_predict", target_predict, INT64, device).reshape(-1)
    bs, n = cand.shape
    parent, rank = link_tables(nt, ns)
    rows = torch.arange(bs, device=device)

    predicts = torch.full((bs * n + 1,), int(predicts_init), dtype=INT32, device=device)  # + a trash slot
    accept_index = torch.full((bs, W + 1), -1, dtype=INT32, device=device)  # + a trash column
    node = torch.zeros(bs, dtype=INT64, device=device)
    last = ri[:, 0].clone()
    k = torch.zeros(bs, dtype=INT64, device=device)
    active = torch.ones(bs, dtype=torch.bool, device=device)
    accept_index[:, 0] = last.to(INT32)
    for _level in range(1, W):
        target = tp_flat[last]
        is_child = (parent == node[:, None]) & active[:, None]
        hit, child, _ = _pick_first(is_child & (cand == target[:, None]), rank)
        hit &= active
        tok = cand[rows, child]
        predicts.scatter_(0, torch.where(hit, last, bs * n), tok.to(INT32))
        k = k + hit.to(INT64)
        last = torch.where(hit, ri[rows, child], last)
        accept_index.scatter_(1, torch.where(hit, k, W)[:, None], last.to(INT32)[:, None])
        node = torch.where(hit, child, node)
        active = hit
    predicts[last] = tp_flat[last].to(INT32)
    return VerifyResult(predicts=predicts[: bs * n].clone(), accept_index=accept_index[:, :W].contiguous(),
                        accept_token_num=k.to(INT32))


# ---------------------------------------------------------------------------------------------
# Terminal sampling (§6.2, §7)
# ---------------------------------------------------------------------------------------------

def inverse_cdf(dist: torch.Tensor, coin: torch.Tensor, *, last_valid_fallback, sampler: str = "chain") -> torch.Tensor:
    """Row-wise inverse-CDF draw in SGLang's float32 order (``torch_common.chain_inverse_cdf`` /
    ``target_only_inverse_cdf``; the reference's ``cdf.py`` explains the order). dist [bs, V],
    coin [bs] -> int64 [bs]. No host synchronisation (the torch backend runs inside CUDA graphs)."""
    if sampler == "chain":
        return chain_inverse_cdf(dist, coin)
    return target_only_inverse_cdf(dist, coin, last_valid_fallback=last_valid_fallback)


# ---------------------------------------------------------------------------------------------
# Target-only tree sampling (§6)
# ---------------------------------------------------------------------------------------------

def check_tree_sampling_args(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, uniform_samples,
                             uniform_samples_for_final_sampling, target_probs, num_speculative_tokens,
                             threshold_single, threshold_acc, semantics):
    """The reference's checks for tree_sampling_target_only (same messages), plus the row rule."""
    cand, *_ = check_tree_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    bs, n = cand.shape
    check_semantics(semantics)
    check_width("num_speculative_tokens", num_speculative_tokens, n)
    p = prob_array("target_probs", target_probs, 3, "target probabilities")
    check_shape("target_probs", p, (bs, n, None), "([bs, n, V])")
    check_tokens("candidates", cand[:, 1:], p.shape[2], offset=(0, 1))
    u = coin_array("uniform_samples", uniform_samples, 2)
    check_shape("uniform_samples", u, (bs, n), "([bs, n]: one coin per node)")
    uf = coin_array("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, 1)
    check_shape("uniform_samples_for_final_sampling", uf, (bs,), "([bs])")
    check_threshold("threshold_single", threshold_single)
    check_threshold("threshold_acc", threshold_acc)


def tree_sampling_target_only(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, uniform_samples,
                              uniform_samples_for_final_sampling, target_probs, *, num_speculative_tokens,
                              threshold_single=1.0, threshold_acc=1.0, semantics="0.5.23", draft_probs=None,
                              validate=True) -> TreeSampleResult:
    """SGLang's TreeSpeculativeSamplingTargetOnly for the whole batch (SEMANTICS.md §6).

    uniform_samples [bs, n] (coin of a level = the coin of the last accepted node),
    uniform_samples_for_final_sampling [bs], target_probs [bs, n, V] float32.
    draft_probs [bs, n, V]: the work buffer on entry (None = zeros, as SGLang passes it; a
    nonzero buffer is the "q as buffer" mistake, which this kernel then makes).
    Returns predicts, accept_index, accept_token_num and the work buffer draft_probs [bs, n, V].
    The running sum over siblings is added in sibling order in float32, as SGLang adds it.
    """
    device = pick_device(candidates, target_probs, uniform_samples)
    if validate:
        check_tree_sampling_args(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, uniform_samples,
                                 uniform_samples_for_final_sampling, target_probs, num_speculative_tokens,
                                 threshold_single, threshold_acc, semantics)
    W = int(num_speculative_tokens)
    cand, ri, nt, ns = _tree_tensors(device, candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    p = as_tensor("target_probs", target_probs, F32, device)
    u = as_tensor("uniform_samples", uniform_samples, F32, device)
    uf = as_tensor("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, F32, device)
    init = None
    if draft_probs is not None:
        if validate:
            check_work_buffer(draft_probs, tuple(p.shape))
        init = as_tensor("draft_probs", draft_probs, F32, device)
    predicts, accept_index, k, buf = tree_sampling_core(
        cand, ri, nt, ns, u, uf, p, W=W, threshold_single=threshold_single, threshold_acc=threshold_acc,
        new=semantics == "0.5.23", want_buffer=True, buffer_init=init)
    return TreeSampleResult(predicts=predicts, accept_index=accept_index, accept_token_num=k.to(INT32), draft_probs=buf)


def tree_sampling_core(cand, ri, nt, ns, u, uf, p, *, W, threshold_single, threshold_acc, new, want_buffer, buffer_init=None):
    """The vectorised target-only rule on tensors (no validation); p may be an expanded view.
    ``buffer_init`` [bs, n, V]: the work buffer on entry (None = zeros).

    Returns (predicts [bs*n] int32, accept_index [bs, W] int32, k [bs] int64, buffer [bs, n, V] or None).
    """
    device = cand.device
    bs, n = cand.shape
    V = p.shape[2]
    t_single = float(threshold_single)  # Python scalars: a float32 tensor op casts them to float32
    t_acc = max(float(threshold_acc), 1e-9)
    parent, rank = link_tables(nt, ns)
    rows = torch.arange(bs, device=device)

    # pt[b, c] = p[b, parent(c), token(c)]; acc[b, c] = running sum of pt over c's earlier siblings and c.
    par0 = parent.clamp(min=0)
    tok_c = cand.clamp(0, V - 1)
    pt = p[rows[:, None], par0, tok_c]  # [bs, n]
    # Sequential float32 sum in sibling order, as SGLang's scan adds (prob_acc += p): rank by rank,
    # each node adds its p to its parent's running total (one node per parent per rank).
    par_idx = torch.where(parent >= 0, parent, n)
    running = torch.zeros(bs, n + 1, dtype=F32, device=device)
    acc = torch.zeros(bs, n, dtype=F32, device=device)
    for r in range(n):
        at = rank == r
        val = running.gather(1, par_idx) + pt
        acc = torch.where(at, val, acc)
        running.scatter_(1, torch.where(at, par_idx, n), val)
    bound = acc / torch.full((), t_acc, dtype=F32, device=device)  # a true float32 division (no reciprocal)

    predicts = torch.zeros(bs * n + 1, dtype=INT32, device=device)
    accept_index = torch.full((bs, W + 1), -1, dtype=INT32, device=device)
    rejected = torch.zeros((bs, n), dtype=torch.bool, device=device)
    node = torch.zeros(bs, dtype=INT64, device=device)
    last = ri[:, 0].clone()
    k = torch.zeros(bs, dtype=INT64, device=device)
    active = torch.ones(bs, dtype=torch.bool, device=device)
    accept_index[:, 0] = last.to(INT32)
    for _level in range(1, W):
        coin = u[rows, node][:, None]
        is_child = (parent == node[:, None]) & active[:, None]
        if new:
            ok = (pt > 0) & ((coin < bound) | (pt >= t_single))
        else:
            ok = (coin <= bound) | (pt >= t_single)
        hit, child, r_hit = _pick_first(is_child & ok, rank)
        hit &= active
        rejected |= is_child & (rank < r_hit[:, None])  # siblings scanned before the accepted one (all if none)
        predicts.scatter_(0, torch.where(hit, last, bs * n), cand[rows, child].to(INT32))
        k = k + hit.to(INT64)
        last = torch.where(hit, ri[rows, child], last)
        accept_index.scatter_(1, torch.where(hit, k, W)[:, None], last.to(INT32)[:, None])
        node = torch.where(hit, child, node)
        active = hit

    # Terminal row: relu(p[node] - buffer[node]); the buffer row of the final node holds exactly its
    # rejected children's mass (every child, when the walk stopped there below the depth limit).
    p_node = p[rows, node]  # [bs, V]
    node_row = torch.zeros(bs, V + 1, dtype=F32, device=device)
    if buffer_init is not None:  # the buffer's own row at the final node, then the rejected children overwrite it
        node_row[:, :V] = buffer_init[rows, node]
    node_row.scatter_(1, torch.where(rejected & (parent == node[:, None]), tok_c, V), pt)
    plain = (k == W - 1)[:, None]
    dist = torch.where(plain, p_node, torch.clamp(p_node - node_row[:, :V], min=0.0))
    tok = inverse_cdf(dist, uf, last_valid_fallback=new, sampler="target_only")
    predicts[last] = tok.to(INT32)
    buf = None
    if want_buffer:  # every rejected sibling's target mass at (its parent's row, its token)
        buf = torch.zeros(bs, n * V + 1, dtype=F32, device=device)
        if buffer_init is not None:
            buf[:, : n * V] = buffer_init.reshape(bs, n * V)
        buf.scatter_(1, torch.where(rejected, par0 * V + tok_c, n * V), pt)
        buf = buf[:, : n * V].reshape(bs, n, V).contiguous()
    return predicts[: bs * n].clone(), accept_index[:, :W].contiguous(), k, buf


# ---------------------------------------------------------------------------------------------
# Classic chain rejection sampling (§7)
# ---------------------------------------------------------------------------------------------

def check_chain_inputs(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling, target_probs,
                       draft_probs, num_speculative_tokens, semantics):
    check_semantics(semantics)
    cand, ri, *_ = check_chain_args(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                                    target_probs, draft_probs)
    check_own_block_rows(ri)
    N = cand.shape[1]
    W = check_width("num_speculative_tokens", num_speculative_tokens, N)
    if W != N:
        raise SpecvizError("num_speculative_tokens", f"is {W} but the chain has N = {N} slots: for a chain they are equal (accept_index is [bs, N])")


def chain_core(cand, ri, u, uf, p, q, *, new: bool):
    """The vectorised chain rule on tensors (no validation). p/q may be expanded views (stride 0).

    cand/ri [bs, N] int64, u [bs, >= N-1], uf [bs], p [bs, N, V], q [bs, N-1, V].
    Returns (predicts [bs*N] int32, accept_index [bs, N] int32, k [bs] int64).
    """
    bs, N = cand.shape
    V = p.shape[2]
    device = cand.device
    rows = torch.arange(bs, device=device)
    if N > 1:
        tok = cand[:, 1:].clamp(0, V - 1)  # [bs, N-1]
        slot = torch.arange(N - 1, device=device)[None, :]
        pt = p[rows[:, None], slot, tok]
        qt = q[rows[:, None], slot, tok]
        prod = u[:, : N - 1] * qt
        ok = prod < pt
        if new:
            ok &= (qt > 0) & (qt <= 1)
        k = torch.cumprod(ok.to(INT64), dim=1).sum(dim=1)
    else:
        k = torch.zeros(bs, dtype=INT64, device=device)
    j = torch.arange(N, device=device)[None, :]
    accepted_slot = j <= k[:, None]
    accept_index = torch.where(accepted_slot, ri, torch.full_like(ri, -1)).to(INT32)
    predicts = torch.zeros(bs * N + 1, dtype=INT32, device=device)
    if N > 1:
        # predicts[ri[b, s-1]] = cand[b, s] for every accepted slot s (1..k).
        write = j[:, 1:] <= k[:, None]
        predicts.scatter_(0, torch.where(write, ri[:, :-1], bs * N).reshape(-1), cand[:, 1:].to(INT32).reshape(-1))
    last = ri[rows, k]
    p_row = p[rows, k]  # [bs, V]
    if N > 1:
        q_row = q[rows, k.clamp(max=N - 2)]
        if new:
            q_row = torch.where((q_row >= 0) & (q_row <= 1), q_row, torch.zeros((), dtype=F32, device=device))
        dist = torch.where((k == N - 1)[:, None], p_row, torch.clamp(p_row - q_row, min=0.0))
    else:
        dist = p_row
    predicts[last] = inverse_cdf(dist, uf, last_valid_fallback=False).to(INT32)
    return predicts[: bs * N], accept_index, k


def chain_rejection_sampling(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                             target_probs, draft_probs, *, num_speculative_tokens, semantics="0.5.23",
                             validate=True) -> VerifyResult:
    """Leviathan-style chain rejection sampling for the whole batch (SEMANTICS.md §7).

    candidates [bs, N] (slot 0 = root), target_probs [bs, N, V], draft_probs [bs, N-1, V] (row s-1
    proposed slot s), uniform_samples [bs, >= N-1], uniform_samples_for_final_sampling [bs].
    Accept slot s iff u*q < p (0.5.23 also needs 0 < q <= 1); stop at the first rejection.
    """
    device = pick_device(candidates, target_probs, draft_probs)
    if validate:
        check_chain_inputs(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                           target_probs, draft_probs, num_speculative_tokens, semantics)
    cand = as_tensor("candidates", candidates, INT64, device)
    ri = as_tensor("retrieve_index", retrieve_index, INT64, device)
    u = as_tensor("uniform_samples", uniform_samples, F32, device)
    uf = as_tensor("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, F32, device)
    p = as_tensor("target_probs", target_probs, F32, device)
    q = as_tensor("draft_probs", draft_probs, F32, device)
    predicts, accept_index, k = chain_core(cand, ri, u, uf, p, q, new=semantics == "0.5.23")
    return VerifyResult(predicts=predicts.clone(), accept_index=accept_index, accept_token_num=k.to(INT32))
