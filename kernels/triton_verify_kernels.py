"""Triton kernels for the accept rules (SEMANTICS.md §4, §6, §7): one program per request. This file
holds the greedy tree verify and the row helper the samplers share; the chain sampler's kernels are in
``triton_chain_kernels.py``, the target-only tree sampler's in ``triton_target_only_kernels.py``.

Glossary: p = target_probs, q = draft_probs (the draft's proposal); in the target-only tree
sampler the ``buf`` pointer is SGLang's zero work buffer (its ``draft_probs``), not q.

Layout conventions (all three files): tree tensors are contiguous ``[bs, n]`` int64, ``predicts`` is the
flat ``[bs*n]`` int32 and ``accept_index`` ``[bs, W]`` int32; probability rows are addressed with a
batch stride and a row stride (a batch stride of 0 lets ``sample_many`` expand one request to
10^6 trials without a copy); the vocabulary axis is contiguous.

Every kernel first writes its own outputs' initial values (predicts_init, -1 padding), so the
launcher allocates with ``torch.empty`` and a call is a single launch. A CTA barrier separates
those writes from the walk's scattered writes to the same request block.

No ``break``: the compiler rejects it (the interpreter does not); walks are ``while`` loops with
a data-dependent condition, and levels are guarded by a ``go`` flag.
"""
import triton
import triton.language as tl


@triton.jit
def terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB: tl.constexpr):
    """One block of the terminal distribution: relu(p - sub) (sub only if use_sub), 0 past V."""
    x = tl.load(p_row_ptr + v, mask=m, other=0.0)
    s = tl.load(sub_row_ptr + v, mask=m & use_sub, other=0.0)
    if CLEAN_SUB:
        s = tl.where((s >= 0.0) & (s <= 1.0), s, 0.0)
    return tl.maximum(x - s, 0.0)


@triton.jit
def verify_tree_greedy_kernel(out_ptr,
                              candidates_ptr, retrieve_index_ptr, next_token_ptr, next_sibling_ptr, target_predict_ptr,
                              N: tl.constexpr, W: tl.constexpr, PREDICTS_INIT: tl.constexpr,
                              BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """Greedy tree walk (SEMANTICS.md §4) of request b = program_id(0), entirely in registers.

    out [bs*N + bs*W + bs] i32: the outputs predicts [bs*N], accept_index [bs, W], accept_token_num [bs] in one
    allocation (bs = the grid; one pointer argument instead of three: each costs host time in the launch);
    candidates, retrieve_index, next_token, next_sibling, target_predict [bs, N] i64.
    The request's rows are loaded in one round (retrieve_index stays inside the request's block,
    so target_predict at a node's row is a register permutation), the walk follows the links by
    one-hot gathers of packed node records, and every output is stored once at the end: no
    dependent global loads, no barrier. Token ids must fit in 31 bits (predicts is int32 anyway).
    """
    b = tl.program_id(0).to(tl.int64)
    bs = tl.num_programs(0).to(tl.int64)
    predicts_ptr = out_ptr
    accept_index_ptr = out_ptr + bs * N
    accept_token_num_ptr = accept_index_ptr + bs * W
    base = b * N
    i = tl.arange(0, BLOCK_N)
    w = tl.arange(0, BLOCK_W)
    valid = i < N
    cand = tl.load(candidates_ptr + base + i, mask=valid, other=0)
    nxt_tok = tl.load(next_token_ptr + base + i, mask=valid, other=-1)
    nxt_sib = tl.load(next_sibling_ptr + base + i, mask=valid, other=-1)
    row = tl.load(retrieve_index_ptr + base + i, mask=valid, other=0) - base  # local row of node i
    tp_rows = tl.load(target_predict_ptr + base + i, mask=valid, other=0)  # by local row
    if tl.min(tl.where(valid, row == i, True).to(tl.int32), axis=0) == 1:
        tp_node = tp_rows  # the usual layout (row of node i = b*N + i): no permutation
    else:
        tp_node = tl.sum(tl.where((row[:, None] == i[None, :]) & valid[None, :], tp_rows[None, :], 0), axis=1)
    # Packed node records: A = token | next sibling + 1 << 32 | row << 48; B = target at the node's row | first child + 1 << 32
    rec_a = cand | ((nxt_sib + 1) << 32) | (row << 48)
    rec_b = tp_node | ((nxt_tok + 1) << 32)
    mask32 = 0xFFFFFFFF

    root = tl.sum(tl.where(i == 0, rec_b, 0), axis=0)
    target = root & mask32
    child = (root >> 32) - 1
    last = tl.sum(tl.where(i == 0, row, 0), axis=0)  # local row of the last accepted node
    acc_rows = tl.where(w == 0, base + last, -1)
    preds = tl.full([BLOCK_N], PREDICTS_INIT, tl.int64)
    k = tl.zeros([], dtype=tl.int32)
    go = k == 0
    for _level in tl.static_range(1, W):
        # Both records of the candidate child are gathered together (independent reductions overlap),
        # so accepting it needs no further gather.
        a = tl.sum(tl.where(i == child, rec_a, 0), axis=0)
        rb = tl.sum(tl.where(i == child, rec_b, 0), axis=0)
        tok = a & mask32
        while go & (child != -1) & (tok != target):  # scan the siblings until one matches the target
            child = ((a >> 32) & 0xFFFF) - 1
            a = tl.sum(tl.where(i == child, rec_a, 0), axis=0)
            rb = tl.sum(tl.where(i == child, rec_b, 0), axis=0)
            tok = a & mask32
        hit = go & (child != -1)
        preds = tl.where(hit & (i == last), tok, preds)  # predicts[last] = accepted draft
        k += hit.to(tl.int32)
        child_row = a >> 48
        acc_rows = tl.where(hit & (w == k), base + child_row, acc_rows)
        last = tl.where(hit, child_row, last)
        target = tl.where(hit, rb & mask32, target)  # the accepted node's target and first child
        child = tl.where(hit, (rb >> 32) - 1, -1)
        go = hit
    preds = tl.where(i == last, target, preds)  # bonus / correction at the last accepted row
    tl.store(predicts_ptr + base + i, preds.to(tl.int32), mask=valid)
    tl.store(accept_index_ptr + b * W + w, acc_rows.to(tl.int32), mask=w < W)
    tl.store(accept_token_num_ptr + b, k)
