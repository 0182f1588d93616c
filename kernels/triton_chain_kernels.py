"""Triton kernels of the chain rejection sampler (SEMANTICS.md §6; conventions in ``triton_verify_kernels``):
the row draw in SGLang's float32 order, the draw from precomputed block sums, the accept-length kernel
and the sampler itself (one request, or one request's vocabulary blocks, a program)."""
import triton
import triton.language as tl

from .triton_verify_kernels import terminal_block


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
        x = terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, v < V, CLEAN_SUB)
        total += tl.sum(x, axis=0)
    thr = coin * total
    carry = tl.zeros([], dtype=tl.float32)
    result = tl.full([], -1, dtype=tl.int32)
    for start in range(0, V, BLOCK_V):
        if result < 0:
            v = start + offs
            m = v < V
            x = terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB)
            running = carry + tl.cumsum(x, axis=0)
            first = tl.min(tl.where((running > thr) & m, v, 2147483647), axis=0)
            result = tl.where(first < 2147483647, first, result)
            carry += tl.sum(x, axis=0)
    return tl.where(result >= 0, result, V - 1)


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
            x = terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB)
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
def chain_rejection_sampling_kernel(out_ptr, bonus_ptr, count_ptr,
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
    row relu(p_k - q_k). count_ptr [bs] i32: one counter a request, zero on entry, a cached workspace
    (kernels.triton_common.DeviceCache), no fill per call; work: scratch of any content after the outputs
    in ``out`` (read as f32 [bs, NB] for the block sums, then k [bs] when K_GIVEN), written before it is read. The request's last program to finish (the
    acq_rel counter, zero on entry and reset to zero by that program, so a launch can
    be replayed) writes the outputs and draws the terminal token from the sums
    (``chain_inverse_cdf_row_from_sums``): parallel over the vocabulary, SGLang's float32 order exactly.
    NB == 1: one program per request, no counter. out [bs*N + bs*N + bs (+ bs*NB (+ bs))] i32: the outputs
    predicts [bs*N], accept_index [bs, N], accept_token_num [bs] and the work scratch in one allocation (one
    pointer argument instead of four, and no k_off).

    candidates, retrieve_index [bs, N] i64; coins [bs, >= N-1]; target_probs rows [bs, N, V],
    draft_probs rows [bs, N-1, V] (strided); WRITE_BONUS also stores the terminal token in bonus [bs]
    i64 (DSpark's two-level gather predicts[accept_index[b, k]] is that token). K_GIVEN: k was computed
    by ``chain_accept_len_kernel`` into k_ptr [bs] i32 (large batches: each program then waits on one
    load before its block loads instead of two dependent rounds, measured in benchmarks/README.md).
    """
    NP: tl.constexpr = (NB + BPP - 1) // BPP
    pid = tl.program_id(0).to(tl.int64)
    b = pid // NP
    g = (pid % NP).to(tl.int32)
    bs = tl.num_programs(0).to(tl.int64) // NP
    predicts_ptr = out_ptr
    accept_index_ptr = out_ptr + bs * N
    accept_token_num_ptr = accept_index_ptr + bs * N
    work_ptr = accept_token_num_ptr + bs
    sums_ptr = work_ptr.to(tl.pointer_type(tl.float32), bitcast=True)  # the work scratch, read as float32
    k_ptr = work_ptr + bs * NB
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
            x = terminal_block(p_row_ptr, q_row_ptr, use_sub, v, v < V, NEW_SEMANTICS)
            tl.store(sums_ptr + b * NB + j, tl.sum(x, axis=0))
        else:  # every block's loads are issued before any sum is stored (a store may alias p or q)
            offs_t = tl.arange(0, BPP)
            sv = tl.zeros([BPP], dtype=tl.float32)
            for t in tl.static_range(BPP):
                v = (j + t) * BLOCK_V + tl.arange(0, BLOCK_V)
                x = terminal_block(p_row_ptr, q_row_ptr, use_sub, v, v < V, NEW_SEMANTICS)
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
