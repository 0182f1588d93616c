"""Triton kernels for the accept rules (SEMANTICS.md §4, §6, §7): one program per request.

Glossary: p = target_probs, q = draft_probs (the draft's proposal); in the target-only tree
sampler the ``buf`` pointer is SGLang's zero work buffer (its ``draft_probs``), not q.

Layout conventions: tree tensors are contiguous ``[bs, n]`` int64, ``predicts`` is the flat
``[bs*n]`` int32 and ``accept_index`` ``[bs, W]`` int32; probability rows are addressed with a
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
def _terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB: tl.constexpr):
    """One block of the terminal distribution: relu(p - sub) (sub only if use_sub), 0 past V."""
    x = tl.load(p_row_ptr + v, mask=m, other=0.0)
    s = tl.load(sub_row_ptr + v, mask=m & use_sub, other=0.0)
    if CLEAN_SUB:
        s = tl.where((s >= 0.0) & (s <= 1.0), s, 0.0)
    return tl.maximum(x - s, 0.0)


@triton.jit
def chain_inverse_cdf_row(p_row_ptr, sub_row_ptr, use_sub, coin, V: tl.constexpr,
                          CLEAN_SUB: tl.constexpr, BLOCK_V: tl.constexpr):
    """SGLang's chain-sampler draw, in its float32 order (specviz/reference/cdf.py): blocks of
    BLOCK_V = 4096; total = the blocks' tl.sum added in order; thr = coin * total; the first index
    with carry + tl.cumsum(block) > thr (no mass test), the carry growing by each block's tl.sum;
    none: V-1. CLEAN_SUB zeroes sub values outside [0, 1] (0.5.23)."""
    offs = tl.arange(0, BLOCK_V)
    total = tl.zeros([], dtype=tl.float32)
    for start in range(0, V, BLOCK_V):
        v = start + offs
        x = _terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, v < V, CLEAN_SUB)
        total += tl.sum(x, axis=0)
    thr = coin * total
    carry = tl.zeros([], dtype=tl.float32)
    result = tl.full([], -1, dtype=tl.int32)
    for start in range(0, V, BLOCK_V):
        if result < 0:
            v = start + offs
            m = v < V
            x = _terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB)
            running = carry + tl.cumsum(x, axis=0)
            first = tl.min(tl.where((running > thr) & m, v, 2147483647), axis=0)
            result = tl.where(first < 2147483647, first, result)
            carry += tl.sum(x, axis=0)
    return tl.where(result >= 0, result, V - 1)


@triton.jit
def target_only_inverse_cdf_row(p_row_ptr, sub_row_ptr, use_sub, coin, V: tl.constexpr,
                                LAST_VALID_FALLBACK: tl.constexpr, CHUNK: tl.constexpr,
                                rejected=None, offs_n=None, n_drop=0, ZERO_BUF: tl.constexpr = False):
    """The target-only sampler's terminal draw (FlashInfer's chunked scan, specviz/reference/cdf.py):
    chunks of CHUNK = 1024 * gcd(4, V); a chunk is scanned when agg + its sum passes thr = coin *
    total; the first token with mass and agg + cumsum > thr; stop once agg > thr; none: the last
    token with mass seen (LAST_VALID_FALLBACK, 0.5.23), else V-1. ZERO_BUF: the work buffer was zero on
    entry, so the row relu(p - buf) is p with the n_drop tokens of ``rejected`` zeroed (sub_row_ptr unread)."""
    offs = tl.arange(0, CHUNK)
    total = tl.zeros([], dtype=tl.float32)
    for start in range(0, V, CHUNK):
        v = start + offs
        if ZERO_BUF:
            x = _zero_buffer_terminal_chunk(p_row_ptr, v, v < V, rejected, offs_n, n_drop)
        else:
            x = _terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, v < V, False)
        total += tl.sum(x, axis=0)
    thr = coin * total
    agg = tl.zeros([], dtype=tl.float32)
    sampled = tl.full([], -1, dtype=tl.int32)
    last_valid = tl.full([], -1, dtype=tl.int32)
    done = tl.zeros([], dtype=tl.int32)
    for start in range(0, V, CHUNK):
        if done == 0:
            v = start + offs
            m = v < V
            if ZERO_BUF:
                x = _zero_buffer_terminal_chunk(p_row_ptr, v, m, rejected, offs_n, n_drop)
            else:
                x = _terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, False)
            local = tl.sum(x, axis=0)
            if agg + local > thr:
                hit = ((tl.cumsum(x, axis=0) + agg) > thr) & (x > 0.0) & m
                first = tl.min(tl.where(hit, v, 2147483647), axis=0)
                sampled = tl.where(first < 2147483647, first, sampled)
            last_valid = tl.maximum(last_valid, tl.max(tl.where((x > 0.0) & m, v, -1), axis=0))
            agg = agg + local
            done = (agg > thr).to(tl.int32)
    if LAST_VALID_FALLBACK:
        fallback = tl.where(last_valid >= 0, last_valid, V - 1)
    else:
        fallback = V - 1
    return tl.where(sampled >= 0, sampled, fallback)


@triton.jit
def verify_tree_greedy_kernel(predicts_ptr, accept_index_ptr, accept_token_num_ptr,
                              candidates_ptr, retrieve_index_ptr, next_token_ptr, next_sibling_ptr, target_predict_ptr,
                              N: tl.constexpr, W: tl.constexpr, PREDICTS_INIT: tl.constexpr,
                              BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """Greedy tree walk (SEMANTICS.md §4) of request b = program_id(0), entirely in registers.

    predicts [bs*N] i32, accept_index [bs, W] i32, accept_token_num [bs] i32 (outputs);
    candidates, retrieve_index, next_token, next_sibling, target_predict [bs, N] i64.
    The request's rows are loaded in one round (retrieve_index stays inside the request's block,
    so target_predict at a node's row is a register permutation), the walk follows the links by
    one-hot gathers of packed node records, and every output is stored once at the end: no
    dependent global loads, no barrier. Token ids must fit in 31 bits (predicts is int32 anyway).
    """
    b = tl.program_id(0).to(tl.int64)
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


@triton.jit
def tree_sampling_target_only_kernel(predicts_ptr, accept_index_ptr, accept_token_num_ptr, buf_ptr,
                                     candidates_ptr, retrieve_index_ptr, next_token_ptr, next_sibling_ptr,
                                     coins_ptr, final_coins_ptr, target_probs_ptr,
                                     n: tl.constexpr, W: tl.constexpr, V: tl.constexpr, stride_p_b, stride_p_row,
                                     threshold_single, threshold_acc,
                                     NEW_SEMANTICS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr,
                                     BLOCK_V: tl.constexpr, ZERO_BUF: tl.constexpr):
    """Target-only tree sampling (SEMANTICS.md §6) of request b = program_id(0).

    buf [bs, n, V] f32: the work buffer as the caller handed it (the "q as buffer" mistake hands it q),
    read and written. ZERO_BUF: the work buffer is zero on entry (SGLang's call) and is not allocated:
    buf_ptr is then the int32 record [bs, 2, n] of what the kernel would write into it (``_record_rejection``),
    and the terminal row is p with the last level's rejected tokens zeroed. coins [bs, n], final_coins [bs] f32;
    target_probs rows at b*stride_p_b + node*stride_p_row. threshold_acc is already clamped >= 1e-9.
    """
    b = tl.program_id(0).to(tl.int64)
    base = b * n
    offs_n = tl.arange(0, BLOCK_N)
    offs_w = tl.arange(0, BLOCK_W)
    tl.store(predicts_ptr + base + offs_n, tl.full([BLOCK_N], 0, tl.int32), mask=offs_n < n)
    tl.store(accept_index_ptr + b * W + offs_w, tl.full([BLOCK_W], -1, tl.int32), mask=offs_w < W)
    if ZERO_BUF:
        tl.store(buf_ptr + b * 2 * n + offs_n, tl.full([BLOCK_N], -1, tl.int32), mask=offs_n < n)
    tl.debug_barrier()

    p_req = target_probs_ptr + b * stride_p_b
    buf_req = buf_ptr + b * n * V
    rejected = tl.full([BLOCK_N], -1, dtype=tl.int64)  # ZERO_BUF: the current level's rejected children's tokens
    n_rejected = tl.zeros([], dtype=tl.int32)
    last = tl.load(retrieve_index_ptr + base)
    tl.store(accept_index_ptr + b * W, last.to(tl.int32))
    node = tl.zeros([], dtype=tl.int64)
    k = tl.zeros([], dtype=tl.int32)
    go = tl.full([], 1, dtype=tl.int32)
    coin = tl.load(coins_ptr + base)
    for _level in range(1, W):
        if go != 0:
            child = tl.load(next_token_ptr + base + node)
            acc = tl.zeros([], dtype=tl.float32)
            accepted = tl.zeros([], dtype=tl.int32)
            tok = tl.zeros([], dtype=tl.int64)
            n_rejected = tl.zeros([], dtype=tl.int32)
            while (child != -1) & (accepted == 0):  # one coin per level, a running sum over siblings
                tok = tl.load(candidates_ptr + base + child)
                pt = tl.load(p_req + node * stride_p_row + tok)
                acc = acc + pt
                bound = tl.math.div_rn(acc, threshold_acc)
                if NEW_SEMANTICS:
                    ok = (pt > 0.0) & ((coin < bound) | (pt >= threshold_single))
                else:
                    ok = (coin <= bound) | (pt >= threshold_single)
                # A rejected sibling leaves its target mass in the work buffer, then the scan moves on.
                if ZERO_BUF:
                    miss = ok.to(tl.int32) == 0
                    _record_rejection(buf_ptr + b * 2 * n, n, child, node, pt, miss)
                    rejected = tl.where((offs_n == n_rejected) & miss, tok, rejected)
                    n_rejected += miss.to(tl.int32)
                else:
                    tl.store(buf_req + node * V + tok, pt, mask=~ok)
                nxt = tl.load(next_sibling_ptr + base + child, mask=~ok, other=0)
                child = tl.where(ok, child, nxt)
                accepted = ok.to(tl.int32)
            if accepted != 0:
                tl.store(predicts_ptr + last, tok.to(tl.int32))
                k += 1
                last = tl.load(retrieve_index_ptr + base + child)
                tl.store(accept_index_ptr + b * W + k, last.to(tl.int32))
                node = child
                coin = tl.load(coins_ptr + base + child)  # the next level's coin is the accepted node's
            else:
                go = 0
    tl.store(accept_token_num_ptr + b, k)
    tl.debug_barrier()  # the buffer row written above is read below by other threads
    use_sub = k < W - 1  # at the depth limit the terminal distribution is the plain target row
    if ZERO_BUF:
        tok = target_only_inverse_cdf_row(p_req + node * stride_p_row, buf_req, use_sub, tl.load(final_coins_ptr + b), V,
                                          LAST_VALID_FALLBACK=NEW_SEMANTICS, CHUNK=BLOCK_V, rejected=rejected,
                                          offs_n=offs_n, n_drop=tl.where(use_sub, n_rejected, 0), ZERO_BUF=True)
    else:
        tok = target_only_inverse_cdf_row(p_req + node * stride_p_row, buf_req + node * V, use_sub,
                                          tl.load(final_coins_ptr + b), V, LAST_VALID_FALLBACK=NEW_SEMANTICS, CHUNK=BLOCK_V)
    tl.store(predicts_ptr + last, tok)


@triton.jit
def chain_inverse_cdf_row_from_sums(p_row_ptr, sub_row_ptr, use_sub, coin, sums_row_ptr, V: tl.constexpr,
                                   CLEAN_SUB: tl.constexpr, BLOCK_V: tl.constexpr, NB: tl.constexpr,
                                   NB_P2: tl.constexpr):
    """``chain_inverse_cdf_row`` given the row's block sums (sums_row_ptr[j] = tl.sum of block j, computed
    by other programs with the same block shape): the same token, bit for bit, reading one block.

    The NB sums arrive in one vector load (one round trip, not NB dependent ones); each is taken out
    exactly (a one-hot sum adds only zeros to it). total = the sums folded in block order (SGLang's
    ``norm_sum += tl.sum(val)``, the same additions in the same order, so the same float32). thr = coin *
    total. SGLang's scan adds carry + tl.cumsum(block) block by block and stops at the first running sum
    > thr; a block j cannot hold it when carry_j + s_j * (1 + 2**-9) + 1e-37 <= thr: every running sum of a
    block is at most s_j * (1 + 4.9e-4) (4096 non-negative float32 terms, any order of additions, relative
    error <= 4095 * 2**-24 each way) and carry + x is monotone in x. The scan starts at the first block that
    can, with carry_j folded from the sums: the earlier blocks' comparisons are all false in SGLang's kernel too."""
    offs_b = tl.arange(0, NB_P2)
    sums = tl.load(sums_row_ptr + offs_b, mask=offs_b < NB, other=0.0, volatile=True)
    total = tl.zeros([], dtype=tl.float32)
    for j in range(0, NB):
        total += tl.sum(tl.where(offs_b == j, sums, 0.0), axis=0)
    thr = coin * total
    carry = tl.zeros([], dtype=tl.float32)
    first_blk = tl.full([], NB, dtype=tl.int32)
    carry_at = tl.zeros([], dtype=tl.float32)
    for j in range(0, NB):
        s = tl.sum(tl.where(offs_b == j, sums, 0.0), axis=0)
        can = (first_blk == NB) & (carry + (s * 1.001953125 + 1e-37) > thr)
        carry_at = tl.where(can, carry, carry_at)
        first_blk = tl.where(can, j, first_blk)
        carry += s
    offs = tl.arange(0, BLOCK_V)
    carry = carry_at
    result = tl.full([], -1, dtype=tl.int32)
    for j in range(0, NB):
        if (result < 0) & (j >= first_blk):
            v = j * BLOCK_V + offs
            m = v < V
            x = _terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB)
            running = carry + tl.cumsum(x, axis=0)
            first = tl.min(tl.where((running > thr) & m, v, 2147483647), axis=0)
            result = tl.where(first < 2147483647, first, result)
            carry += tl.sum(tl.where(offs_b == j, sums, 0.0), axis=0)
    return tl.where(result >= 0, result, V - 1)


@triton.jit
def _chain_accept_len(tok, m, offs, p_rows, q_rows, coin_ptrs, N: tl.constexpr, NEW_SEMANTICS: tl.constexpr, AXIS: tl.constexpr):
    """k = the accepted drafts of a chain: slot s = offs + 1 (token tok, proposed by draft row offs) passes
    when coin * q < p (0.5.23: and 0 < q <= 1); k is the leading run of passes (stop at the first
    rejection). p_rows / q_rows / coin_ptrs point at each slot's row / coin; AXIS: the slot axis."""
    pt = tl.load(p_rows + tok, mask=m, other=0.0)
    qt = tl.load(q_rows + tok, mask=m, other=0.0)
    coin = tl.load(coin_ptrs, mask=m, other=0.0)
    ok = coin * qt < pt
    if NEW_SEMANTICS:
        ok = ok & (qt > 0.0) & (qt <= 1.0)
    return tl.min(tl.where(m & ~ok, offs, N - 1), axis=AXIS)


@triton.jit
def chain_accept_len_kernel(k_ptr, candidates_ptr, coins_ptr, target_probs_ptr, draft_probs_ptr, bs,
                            N: tl.constexpr, stride_coin_b, stride_p_b, stride_p_row, stride_q_b, stride_q_row,
                            NEW_SEMANTICS: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    """k [bs] i32 for BLOCK_R requests a program (the accept tests of chain_rejection_sampling_kernel)."""
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs = tl.arange(0, BLOCK_S)
    live = r < bs
    m = live[:, None] & (offs < N - 1)[None, :]
    tok = tl.load(candidates_ptr + r[:, None] * N + offs[None, :] + 1, mask=m, other=0)
    k = _chain_accept_len(tok, m, offs[None, :],
                          target_probs_ptr + r[:, None] * stride_p_b + offs[None, :] * stride_p_row,
                          draft_probs_ptr + r[:, None] * stride_q_b + offs[None, :] * stride_q_row,
                          coins_ptr + r[:, None] * stride_coin_b + offs[None, :], N, NEW_SEMANTICS, 1)
    tl.store(k_ptr + r, k, mask=live)


@triton.jit
def chain_rejection_sampling_kernel(predicts_ptr, accept_index_ptr, accept_token_num_ptr, bonus_ptr,
                                    count_ptr, work_ptr, k_off,
                                    candidates_ptr, retrieve_index_ptr, coins_ptr, final_coins_ptr,
                                    target_probs_ptr, draft_probs_ptr,
                                    N: tl.constexpr, V: tl.constexpr, stride_coin_b, stride_p_b, stride_p_row, stride_q_b,
                                    stride_q_row,
                                    NEW_SEMANTICS: tl.constexpr, WRITE_BONUS: tl.constexpr, BLOCK_S: tl.constexpr,
                                    BLOCK_V: tl.constexpr, NB: tl.constexpr, NB_P2: tl.constexpr, BPP: tl.constexpr,
                                    K_GIVEN: tl.constexpr):
    """Chain rejection sampling (SEMANTICS.md §7), grid (bs * NP,): program pid serves request
    b = pid // NP and blocks (pid % NP) * BPP + t, t < BPP (NB = cdiv(V, BLOCK_V) blocks, NP = cdiv(NB, BPP)
    programs a request, BPP a power of 2). A request's programs are neighbours in launch order, so they run
    together and the block the last one re-reads is still in L2.

    Every program evaluates the N-1 accept tests (they are
    independent and cheap; k = the leading run of passes) and the tl.sum of each of its blocks of the terminal
    row relu(p_k - q_k). count_ptr [bs] i32: one counter a request, zero on entry; work_ptr: scratch of
    any content (read as f32 [bs, NB] for the block sums; k_ptr = work_ptr + k_off); both are cached
    workspaces (kernels.triton_common.DeviceCache), no fill per call. The request's last program to finish (the
    acq_rel counter, zero on entry and reset to zero by that program, so a launch can
    be replayed) writes the outputs and draws the terminal token from the sums
    (``chain_inverse_cdf_row_from_sums``): parallel over the vocabulary, SGLang's float32 order exactly.
    NB == 1: one program per request, no counter.

    candidates, retrieve_index [bs, N] i64; coins [bs, >= N-1]; target_probs rows [bs, N, V],
    draft_probs rows [bs, N-1, V] (strided); WRITE_BONUS also stores the terminal token in bonus [bs]
    i64 (DSpark's two-level gather predicts[accept_index[b, k]] is that token). K_GIVEN: k was computed
    by ``chain_accept_len_kernel`` into k_ptr [bs] i32, count_ptr + k_off (large batches: each program then waits on one
    load before its block loads instead of two dependent rounds, measured in benchmarks/README.md).
    """
    NP: tl.constexpr = (NB + BPP - 1) // BPP
    sums_ptr = work_ptr.to(tl.pointer_type(tl.float32), bitcast=True)  # the work scratch, read as float32
    k_ptr = work_ptr + k_off
    pid = tl.program_id(0).to(tl.int64)
    b = pid // NP
    g = (pid % NP).to(tl.int32)
    base = b * N
    offs = tl.arange(0, BLOCK_S)
    m = offs < N - 1  # slot s = offs + 1 was proposed by draft row offs
    p_req = target_probs_ptr + b * stride_p_b
    q_req = draft_probs_ptr + b * stride_q_b
    if K_GIVEN:
        k = tl.load(k_ptr + b)
    else:
        tok = tl.load(candidates_ptr + base + offs + 1, mask=m, other=0)
        k = _chain_accept_len(tok, m, offs, p_req + offs * stride_p_row, q_req + offs * stride_q_row,
                              coins_ptr + b * stride_coin_b + offs, N, NEW_SEMANTICS, 0)
    use_sub = k < N - 1
    q_row = tl.minimum(k, tl.maximum(N - 2, 0))
    p_row_ptr = p_req + k * stride_p_row
    q_row_ptr = q_req + q_row * stride_q_row
    is_last = g == 0
    if NB > 1:
        j = g * BPP
        if BPP == 1:
            v = j * BLOCK_V + tl.arange(0, BLOCK_V)
            x = _terminal_block(p_row_ptr, q_row_ptr, use_sub, v, v < V, NEW_SEMANTICS)
            tl.store(sums_ptr + b * NB + j, tl.sum(x, axis=0))
        else:  # every block's loads are issued before any sum is stored (a store may alias p or q)
            offs_t = tl.arange(0, BPP)
            sv = tl.zeros([BPP], dtype=tl.float32)
            for t in tl.static_range(BPP):
                v = (j + t) * BLOCK_V + tl.arange(0, BLOCK_V)
                x = _terminal_block(p_row_ptr, q_row_ptr, use_sub, v, v < V, NEW_SEMANTICS)
                sv = tl.where(offs_t == t, tl.sum(x, axis=0), sv)
            tl.store(sums_ptr + b * NB + j + offs_t, sv, mask=j + offs_t < NB)
        tl.debug_barrier()  # the block sums are stored before the counter says so
        is_last = tl.atomic_add(count_ptr + b, 1, sem="acq_rel", scope="gpu") == NP - 1
    if is_last:  # the draw's loads go out first; the bookkeeping stores wait on none of them
        coin_final = tl.load(final_coins_ptr + b)
        rows = tl.load(retrieve_index_ptr + base + offs, mask=offs < N, other=-1)
        last = tl.load(retrieve_index_ptr + base + k)
        if K_GIVEN:
            tok = tl.load(candidates_ptr + base + offs + 1, mask=m, other=0)
        if NB > 1:
            final = chain_inverse_cdf_row_from_sums(p_row_ptr, q_row_ptr, use_sub, coin_final, sums_ptr + b * NB, V,
                                                    CLEAN_SUB=NEW_SEMANTICS, BLOCK_V=BLOCK_V, NB=NB, NB_P2=NB_P2)
            tl.store(count_ptr + b, 0)  # zero again for the next launch
        else:
            final = chain_inverse_cdf_row(p_row_ptr, q_row_ptr, use_sub, coin_final, V, CLEAN_SUB=NEW_SEMANTICS,
                                          BLOCK_V=BLOCK_V)
        tl.store(predicts_ptr + base + offs, tl.full([BLOCK_S], 0, tl.int32), mask=offs < N)
        tl.store(accept_index_ptr + base + offs, tl.where(offs <= k, rows, -1).to(tl.int32), mask=offs < N)
        tl.store(accept_token_num_ptr + b, k.to(tl.int32))
        tl.debug_barrier()  # predicts' zero fill above vs the scattered writes below
        tl.store(predicts_ptr + rows, tok.to(tl.int32), mask=offs < k)  # predicts[ri[s-1]] = cand[s], s = 1..k
        tl.debug_barrier()  # the terminal token is written last (it wins where retrieve_index repeats a row)
        tl.store(predicts_ptr + last, final)
        if WRITE_BONUS:
            tl.store(bonus_ptr + b, final.to(tl.int64))


@triton.jit
def _pick(vec, offs, idx):
    """vec[idx] of a register vector (a one-hot sum; 0 when idx is not an offset)."""
    return tl.sum(tl.where(offs == idx, vec, 0), axis=0)


@triton.jit
def _node(vec, row_ptr, offs, idx, IN_REGISTERS: tl.constexpr):
    """A node's entry of one tree row: from the row held in registers (a one-hot sum; small trees), or
    a load (wide trees, where the one-hot sums over 64 lanes cost more than cached loads)."""
    if IN_REGISTERS:
        return _pick(vec, offs, idx)
    else:
        return tl.load(row_ptr + idx)


@triton.jit
def _record_rejection(rec_row_ptr, n: tl.constexpr, child, node, pt, miss):
    """What a rejected child writes into a work buffer that was zero on entry (buf[node, token] = pt), kept
    as a record instead: rec_row [2, n] int32 of the request, rec[0, child] = node (-1: not rejected, the
    kernel's initial value), rec[1, child] = pt's bits. A child is rejected at most once, and two rejected
    siblings with one token write the same pt, so the record rebuilds the buffer exactly
    (``kernels.triton_verify.work_buffer``)."""
    tl.store(rec_row_ptr + child, node.to(tl.int32), mask=miss)
    tl.store(rec_row_ptr + n + child, pt.to(tl.int32, bitcast=True), mask=miss)


@triton.jit
def _zero_buffer_terminal_chunk(p_row_ptr, v, m, rejected, offs_n, n_rejected):
    """One chunk of relu(p - buf) when the work buffer was zero on entry: the rejected children's
    entries hold p itself (buf[tok] = p[tok], so p - buf = +0.0 there), every other entry is 0.
    Computed without reading buf: p with those tokens set to 0, then relu, bit for bit the same."""
    x = tl.load(p_row_ptr + v, mask=m, other=0.0)
    for c in range(0, n_rejected):
        x = tl.where(v == _pick(rejected, offs_n, c), 0.0, x)
    return tl.maximum(x, 0.0)


@triton.jit
def tree_sampling_target_only_split_kernel(predicts_ptr, accept_index_ptr, accept_token_num_ptr, rec_ptr,
                                           count_ptr, ints_ptr,
                                           candidates_ptr, retrieve_index_ptr, next_token_ptr, next_sibling_ptr,
                                           coins_ptr, final_coins_ptr, target_probs_ptr,
                                           n: tl.constexpr, W: tl.constexpr, V: tl.constexpr, stride_p_b,
                                           stride_p_row, threshold_single, threshold_acc,
                                           NEW_SEMANTICS: tl.constexpr, BLOCK_N: tl.constexpr,
                                           BLOCK_W: tl.constexpr, CHUNK: tl.constexpr, NC: tl.constexpr,
                                           NC_P2: tl.constexpr, WALK_IN_REGISTERS: tl.constexpr,
                                           walk_ptr, WALK: tl.constexpr):
    """``tree_sampling_target_only_kernel`` for a work buffer that is zero on entry (SGLang's call),
    parallel over the vocabulary: grid (bs * NC,), program pid serves request b = pid // NC and
    chunk g = pid % NC of the NC = cdiv(V, CHUNK) chunks (FlashInfer's chunk, target_only_chunk(V)).

    Every program walks the request's tree (WALK_IN_REGISTERS, for small trees: the tree's rows are
    loaded once into registers and the only dependent global loads are the target probabilities of
    the visited children; else the links are loaded as the walk goes, cached after the request's first
    program), then
    takes the tl.sum and the last token with mass of its chunk of the terminal row relu(p - buf),
    with the single-program kernel's block shape, so each chunk sum has its bits. ints_ptr (i32, read
    as f32 for the sums) is a scratch [bs, 2 * NC] of any content (NC chunk sums, NC last-valid indices)
    and count_ptr [bs] i32 one counter a request, zero on entry: both cached workspaces, no fill per
    call. Program 0 writes the record of the work buffer (rec [bs, 2, n], ``_record_rejection``); the
    request's last program (acq_rel counter, reset to 0 for a replay) folds the chunk sums in
    chunk order, exactly the single program's ``agg = agg + local``, finds the chunk where agg
    passes thr, re-reads that chunk alone for the scan, and writes every output.

    WALK = 0: every program walks its request's tree (above). Large batches split the launch in two:
    WALK = 1 (grid (bs,)) walks each tree once, writes the record and stores the walk's outcome in
    walk_ptr [bs, 3 + BLOCK_N + 2 * BLOCK_W] i32 (node, k, rejected count, rejected tokens, accepted
    rows, accepted tokens); WALK = 2 (grid (bs * NC,)) loads that outcome instead of walking, so each
    program's chunk loads wait on one load round, not on the walk's dependent loads.
    """
    pid = tl.program_id(0).to(tl.int64)
    if WALK == 1:
        b = pid
        g = tl.zeros([], dtype=tl.int32)
    else:
        b = pid // NC
        g = (pid % NC).to(tl.int32)
    WS: tl.constexpr = 3 + BLOCK_N + 2 * BLOCK_W
    walk_req = walk_ptr + b * WS
    base = b * n
    offs_n = tl.arange(0, BLOCK_N)
    offs_w = tl.arange(0, BLOCK_W)
    valid = offs_n < n
    p_req = target_probs_ptr + b * stride_p_b
    sums_ptr = ints_ptr.to(tl.pointer_type(tl.float32), bitcast=True)
    if WALK == 2:  # the walk's outcome, from the first launch
        node = tl.load(walk_req).to(tl.int64)
        k = tl.load(walk_req + 1)
        n_rejected = tl.load(walk_req + 2)
        rejected = tl.load(walk_req + 3 + offs_n).to(tl.int64)
    else:
        cand = tl.load(candidates_ptr + base + offs_n, mask=valid, other=0)
        first_child = tl.load(next_token_ptr + base + offs_n, mask=valid, other=-1)
        next_sib = tl.load(next_sibling_ptr + base + offs_n, mask=valid, other=-1)
        rows = tl.load(retrieve_index_ptr + base + offs_n, mask=valid, other=0)
        coins = tl.load(coins_ptr + base + offs_n, mask=valid, other=0.0)
        rec_req = rec_ptr + b * 2 * n
        write_buf = g == 0
        if write_buf:
            tl.store(rec_req + offs_n, tl.full([BLOCK_N], -1, tl.int32), mask=valid)
            tl.debug_barrier()  # the record's initial values before the walk's scattered writes

        acc_rows = tl.where(offs_w == 0, _node(rows, retrieve_index_ptr + base, offs_n, 0, WALK_IN_REGISTERS), -1)  # accept_index of the request
        acc_toks = tl.zeros([BLOCK_W], dtype=tl.int64)  # acc_toks[i]: the draft token accepted at level i + 1
        rejected = tl.full([BLOCK_N], -1, dtype=tl.int64)  # the current level's rejected children's tokens
        n_rejected = tl.zeros([], dtype=tl.int32)
        node = tl.zeros([], dtype=tl.int64)
        k = tl.zeros([], dtype=tl.int32)
        go = tl.full([], 1, dtype=tl.int32)
        coin = _node(coins, coins_ptr + base, offs_n, 0, WALK_IN_REGISTERS)
        for _level in range(1, W):
            if go != 0:
                child = _node(first_child, next_token_ptr + base, offs_n, node, WALK_IN_REGISTERS)
                acc = tl.zeros([], dtype=tl.float32)
                accepted = tl.zeros([], dtype=tl.int32)
                tok = tl.zeros([], dtype=tl.int64)
                n_rejected = tl.zeros([], dtype=tl.int32)
                while (child != -1) & (accepted == 0):
                    tok = _node(cand, candidates_ptr + base, offs_n, child, WALK_IN_REGISTERS)
                    pt = tl.load(p_req + node * stride_p_row + tok)
                    acc = acc + pt
                    bound = tl.math.div_rn(acc, threshold_acc)
                    if NEW_SEMANTICS:
                        ok = (pt > 0.0) & ((coin < bound) | (pt >= threshold_single))
                    else:
                        ok = (coin <= bound) | (pt >= threshold_single)
                    miss = ok.to(tl.int32) == 0
                    _record_rejection(rec_req, n, child, node, pt, miss & write_buf)
                    rejected = tl.where((offs_n == n_rejected) & miss, tok, rejected)
                    n_rejected += miss.to(tl.int32)
                    child = tl.where(ok, child, _node(next_sib, next_sibling_ptr + base, offs_n, child, WALK_IN_REGISTERS))
                    accepted = ok.to(tl.int32)
                if accepted != 0:
                    acc_toks = tl.where(offs_w == k, tok, acc_toks)
                    k += 1
                    acc_rows = tl.where(offs_w == k, _node(rows, retrieve_index_ptr + base, offs_n, child, WALK_IN_REGISTERS), acc_rows)
                    node = child
                    coin = _node(coins, coins_ptr + base, offs_n, child, WALK_IN_REGISTERS)  # the next level's coin is the accepted node's
                else:
                    go = 0
    if WALK == 1:
        tl.store(walk_req, node.to(tl.int32))
        tl.store(walk_req + 1, k)
        tl.store(walk_req + 2, n_rejected)
        tl.store(walk_req + 3 + offs_n, rejected.to(tl.int32))
        tl.store(walk_req + 3 + BLOCK_N + offs_w, acc_rows.to(tl.int32))
        tl.store(walk_req + 3 + BLOCK_N + BLOCK_W + offs_w, acc_toks.to(tl.int32))
        return
    use_sub = k < W - 1  # at the depth limit the terminal distribution is the plain target row
    n_drop = tl.where(use_sub, n_rejected, 0)
    p_row = p_req + node * stride_p_row
    offs_v = tl.arange(0, CHUNK)
    v = g * CHUNK + offs_v
    m = v < V
    x = _zero_buffer_terminal_chunk(p_row, v, m, rejected, offs_n, n_drop)
    scratch = b * (2 * NC)
    tl.store(sums_ptr + scratch + g, tl.sum(x, axis=0))
    tl.store(ints_ptr + scratch + NC + g, tl.max(tl.where((x > 0.0) & m, v, -1), axis=0))
    tl.debug_barrier()  # the chunk's sum is stored before the counter says so
    if NC > 1:
        is_last = tl.atomic_add(count_ptr + b, 1, sem="acq_rel", scope="gpu") == NC - 1
    else:
        is_last = g == 0
    if is_last:
        if WALK == 2:
            acc_rows = tl.load(walk_req + 3 + BLOCK_N + offs_w).to(tl.int64)
            acc_toks = tl.load(walk_req + 3 + BLOCK_N + BLOCK_W + offs_w).to(tl.int64)
        if NC > 1:
            tl.store(count_ptr + b, 0)  # zero again for the next launch
        offs_c = tl.arange(0, NC_P2)  # every chunk's sum and last-valid index in one round trip each
        sums = tl.load(sums_ptr + scratch + offs_c, mask=offs_c < NC, other=0.0, volatile=True)
        lvs = tl.load(ints_ptr + scratch + NC + offs_c, mask=offs_c < NC, other=-1, volatile=True)
        total = tl.zeros([], dtype=tl.float32)
        for c in range(0, NC):
            total += tl.sum(tl.where(offs_c == c, sums, 0.0), axis=0)  # exact: a one-hot sum
        thr = tl.load(final_coins_ptr + b) * total
        # The single program's scan: agg = agg + local chunk by chunk; the chunk where agg passes thr
        # is scanned, and the scan stops after it; last_valid covers the chunks up to that one.
        agg = tl.zeros([], dtype=tl.float32)
        agg_at = tl.zeros([], dtype=tl.float32)
        hit_chunk = tl.full([], NC, dtype=tl.int32)
        last_valid = tl.full([], -1, dtype=tl.int32)
        for c in range(0, NC):
            s = tl.sum(tl.where(offs_c == c, sums, 0.0), axis=0)
            lv = tl.max(tl.where(offs_c == c, lvs, -1), axis=0)
            open_ = hit_chunk == NC
            last_valid = tl.where(open_, tl.maximum(last_valid, lv), last_valid)
            passes = open_ & (agg + s > thr)
            agg_at = tl.where(passes, agg, agg_at)
            hit_chunk = tl.where(passes, c, hit_chunk)
            agg = agg + s
        sampled = tl.full([], -1, dtype=tl.int32)
        if hit_chunk < NC:
            vj = hit_chunk * CHUNK + offs_v
            mj = vj < V
            xj = _zero_buffer_terminal_chunk(p_row, vj, mj, rejected, offs_n, n_drop)
            hit = ((tl.cumsum(xj, axis=0) + agg_at) > thr) & (xj > 0.0) & mj
            first = tl.min(tl.where(hit, vj, 2147483647), axis=0)
            sampled = tl.where(first < 2147483647, first, sampled)
        if NEW_SEMANTICS:  # 0.5.23: no token passed thr -> the last token with mass seen
            fallback = tl.where(last_valid >= 0, last_valid, V - 1)
        else:
            fallback = tl.full([], V - 1, dtype=tl.int32)
        final = tl.where(sampled >= 0, sampled, fallback)
        tl.store(predicts_ptr + base + offs_n, tl.full([BLOCK_N], 0, tl.int32), mask=valid)
        tl.store(accept_index_ptr + b * W + offs_w, acc_rows.to(tl.int32), mask=offs_w < W)
        tl.store(accept_token_num_ptr + b, k)
        tl.debug_barrier()  # predicts' zero fill above vs the scattered writes below
        tl.store(predicts_ptr + acc_rows, acc_toks.to(tl.int32), mask=offs_w < k)  # predicts[row of level i] = token i+1
        tl.debug_barrier()
        tl.store(predicts_ptr + _pick(acc_rows, offs_w, k), final)
