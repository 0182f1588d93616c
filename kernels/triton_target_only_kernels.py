"""Triton kernels of the target-only tree sampler (SEMANTICS.md §7; conventions in ``triton_verify_kernels``):
the single-program kernel (one request a program) and the split kernel (a request's vocabulary in
chunks across programs), with their row draw and the helpers that stand in for SGLang's zero work
buffer (the rejection record)."""
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from .triton_verify_kernels import terminal_block


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
            x = _zero_buffer_terminal_chunk(p_row_ptr, v, v < V, rejected, offs_n, n_drop, start, CHUNK)
        else:
            x = terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, v < V, False)
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
                x = _zero_buffer_terminal_chunk(p_row_ptr, v, m, rejected, offs_n, n_drop, start, CHUNK)
            else:
                x = terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, False)
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
def tree_sampling_target_only_kernel(out_ptr, buf_ptr,
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
    out [bs*n + bs*W + bs] i32: the outputs predicts [bs*n], accept_index [bs, W], accept_token_num [bs] in one
    allocation (bs = the grid; one pointer argument instead of three).
    """
    b = tl.program_id(0).to(tl.int64)
    bs = tl.num_programs(0).to(tl.int64)
    predicts_ptr = out_ptr
    accept_index_ptr = out_ptr + bs * n
    accept_token_num_ptr = accept_index_ptr + bs * W
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
                pt, acc, ok = _sibling_test(p_req + node * stride_p_row, tok, acc, coin, threshold_acc,
                                            threshold_single, NEW_SEMANTICS)
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
def _sibling_test(p_row_ptr, tok, acc, coin, threshold_acc, threshold_single, NEW_SEMANTICS: tl.constexpr):
    """One sibling's test at a level, shared by both kernels (specviz/reference/target_only.py): its target
    mass pt joins the level's running sum acc; it is accepted when the level's coin is below acc /
    threshold_acc (at or below before 0.5.23) or pt alone reaches threshold_single; 0.5.23 also asks pt > 0.
    Returns (pt, acc, ok)."""
    pt = tl.load(p_row_ptr + tok)
    acc, ok = _sibling_verdict(pt, acc, coin, threshold_acc, threshold_single, NEW_SEMANTICS)
    return pt, acc, ok


@triton.jit
def _sibling_verdict(pt, acc, coin, threshold_acc, threshold_single, NEW_SEMANTICS: tl.constexpr):
    """``_sibling_test`` on a target mass already at hand: (acc, ok)."""
    acc = acc + pt
    bound = tl.math.div_rn(acc, threshold_acc)
    if NEW_SEMANTICS:
        ok = (pt > 0.0) & ((coin < bound) | (pt >= threshold_single))
    else:
        ok = (coin <= bound) | (pt >= threshold_single)
    return acc, ok


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
def _pick_bits(vec, offs, idx):
    """vec[idx] of a float32 register vector, every bit kept (``_pick`` on the bits: a float one-hot sum
    turns -0.0 into +0.0, and the record stores a mass's bits)."""
    return _pick(vec.to(tl.int32, bitcast=True), offs, idx).to(tl.float32, bitcast=True)


@triton.jit
def _parents(first_child, next_sib, offs, valid, BLOCK_N: tl.constexpr):
    """Each node's parent in a tree held as register vectors of links (-1: none or not a child): a first
    child's parent is the node that names it (next_token), a later sibling's is its chain head's, found
    by pointer jumping along the reversed sibling links (log2 BLOCK_N rounds of two register gathers). On a
    malformed tree (a node named twice, a cycle) the result may be wrong; its one user checks it.
    Who names each node is one pass over the [BLOCK_N, BLOCK_N] pairs in int32 (links outside 0..BLOCK_N-1 can
    name no node and become -1 first): node i's namer j counts as j + BLOCK_N through next_token and as j
    through next_sibling, so the largest is the largest first-child namer where one exists (the parent), else
    the largest previous sibling, as two passes (one a link) gave."""
    fc = tl.where((first_child >= 0) & (first_child < BLOCK_N) & valid, first_child, -1).to(tl.int32)
    ns = tl.where((next_sib >= 0) & (next_sib < BLOCK_N) & valid, next_sib, -1).to(tl.int32)
    namer = tl.max(tl.where(fc[None, :] == offs[:, None], offs[None, :] + BLOCK_N,
                            tl.where(ns[None, :] == offs[:, None], offs[None, :], -1)), axis=1)
    par = tl.where(namer >= BLOCK_N, namer - BLOCK_N, -1)
    link = tl.where(namer >= BLOCK_N, -1, namer)  # a node whose parent is its previous sibling's (-1: known)
    span = 1
    while span < BLOCK_N:  # after r rounds each link spans 2**r siblings
        has = link >= 0
        at = tl.where(has, link, 0)
        par, link = tl.where(has, tl.gather(par, at, 0), par), tl.where(has, tl.gather(link, at, 0), link)
        span *= 2
    return par


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
def _zero_buffer_terminal_chunk(p_row_ptr, v, m, rejected, offs_n, n_rejected, lo, CHUNK: tl.constexpr):
    """One chunk of relu(p - buf), tokens lo .. lo + CHUNK - 1 (v), when the work buffer was zero on entry: the
    rejected children's entries hold p itself (buf[tok] = p[tok], so p - buf = +0.0 there), every other entry
    is 0. Computed without reading buf: p with those tokens set to 0, then relu, bit for bit the same. Only
    the rejected tokens inside the chunk are visited, one reduction each (smallest first) and one to find
    none left: the chunk programs of a wide tree otherwise spent a cross-warp pick and a pass over their
    registers on every rejected child of the level."""
    x = tl.load(p_row_ptr + v, mask=m, other=0.0)
    hi = lo + CHUNK
    if n_rejected > 0:
        inside = (offs_n < n_rejected) & (rejected >= lo) & (rejected < hi)
        tok = tl.min(tl.where(inside, rejected, hi), axis=0)
        while tok < hi:
            x = tl.where(v == tok, 0.0, x)
            inside = inside & (rejected != tok)
            tok = tl.min(tl.where(inside, rejected, hi), axis=0)
    return tl.maximum(x, 0.0)



@triton.jit
def tree_sampling_target_only_split_kernel(out_ptr, count_ptr,
                                           candidates_ptr, retrieve_index_ptr, next_token_ptr, next_sibling_ptr,
                                           coins_ptr, final_coins_ptr, target_probs_ptr,
                                           n: tl.constexpr, W: tl.constexpr, V: tl.constexpr, stride_p_b,
                                           stride_p_row, threshold_single, threshold_acc,
                                           NEW_SEMANTICS: tl.constexpr, BLOCK_N: tl.constexpr,
                                           BLOCK_W: tl.constexpr, CHUNK: tl.constexpr, NC: tl.constexpr,
                                           NC_P2: tl.constexpr, WALK_IN_REGISTERS: tl.constexpr,
                                           WALK: tl.constexpr, BPP: tl.constexpr, GDC: tl.constexpr):
    """``tree_sampling_target_only_kernel`` for a work buffer that is zero on entry (SGLang's call),
    parallel over the vocabulary: grid (bs * NC,), program pid serves request b = pid // NC and
    chunk g = pid % NC of the NC = cdiv(V, CHUNK) chunks (FlashInfer's chunk, target_only_chunk(V)).

    Every program walks the request's tree (WALK_IN_REGISTERS, for small trees: the tree's rows are
    loaded once into registers and the only dependent global loads are the target probabilities of
    the visited children; else the links are loaded as the walk goes, cached after the request's first
    program), then
    takes the tl.sum and the last token with mass of its chunk of the terminal row relu(p - buf),
    with the single-program kernel's block shape, so each chunk sum has its bits. ints_ptr (i32, read
    as f32 for the sums) is a scratch [bs, 2 * NC] of any content (NC chunk sums, NC last-valid indices),
    in ``out``, and count_ptr [bs] i32 one counter a request, zero on entry: a cached workspace, no fill per
    call. Program 0 writes the record of the work buffer (rec [bs, 2, n], ``_record_rejection``); the
    request's last program (acq_rel counter, reset to 0 for a replay) folds the chunk sums in
    chunk order, exactly the single program's ``agg = agg + local``, finds the chunk where agg
    passes thr, re-reads that chunk alone for the scan, and writes every output.

    WALK = 0: every program walks its request's tree (above). Large batches split the launch in two:
    WALK = 1 (grid (bs,)) walks each tree once, writes the record and stores the walk's outcome in
    walk_ptr [bs, 3 + BLOCK_N + 2 * BLOCK_W] i32 (node, k, rejected count, rejected tokens, accepted
    rows, accepted tokens); WALK = 2 (grid (bs * cdiv(NC, BPP),)) loads that outcome instead of walking, so
    each program's chunk loads wait on one load round, not on the walk's dependent loads, and sums BPP
    chunks (g * BPP + t), each with the one-chunk block shape and so its bits; BPP = 1 with WALK < 2.
    GDC (sm_90+, compiled; False under the interpreter): the two launches as a programmatic dependent launch.
    The walker lets the draw grid start at once (griddepcontrol.launch_dependents) and waits first for the
    launch before it, in case it was itself launched so; each draw program waits (griddepcontrol.wait: the
    walker grid complete, its writes visible) before its first memory access, so the draw's launch and its
    programs' start overlap the walk. Without such a launch both instructions are no-ops.

    out [bs*n + bs*W + bs + bs*2*n + bs*2*NC (+ bs*WS)] i32, one allocation, one pointer argument instead of six:
    the outputs predicts [bs*n], accept_index [bs, W], accept_token_num [bs], the record rec [bs, 2, n], then
    the scratch ints (every cell written before it is read, so it needs no fill) and, WALK > 0, walk.
    """
    NP: tl.constexpr = (NC + BPP - 1) // BPP  # programs a request
    pid = tl.program_id(0).to(tl.int64)
    if WALK == 1:
        b = pid
        g = tl.zeros([], dtype=tl.int32)
        bs = tl.num_programs(0).to(tl.int64)
    else:
        b = pid // NP
        g = (pid % NP).to(tl.int32)
        bs = tl.num_programs(0).to(tl.int64) // NP
    predicts_ptr = out_ptr
    accept_index_ptr = out_ptr + bs * n
    accept_token_num_ptr = accept_index_ptr + bs * W
    rec_ptr = accept_token_num_ptr + bs
    ints_ptr = rec_ptr + bs * 2 * n
    walk_ptr = ints_ptr + bs * 2 * NC
    WS: tl.constexpr = 3 + BLOCK_N + 2 * BLOCK_W
    walk_req = walk_ptr + b * WS
    base = b * n
    offs_n = tl.arange(0, BLOCK_N)
    offs_w = tl.arange(0, BLOCK_W)
    valid = offs_n < n
    p_req = target_probs_ptr + b * stride_p_b
    sums_ptr = ints_ptr.to(tl.pointer_type(tl.float32), bitcast=True)
    if GDC:
        # walker: whatever ran before this launch is done (an earlier call's draw reads walk); draw: the walker
        # grid has completed, its outcome and record visible
        gdc_wait()
        if WALK == 1:
            gdc_launch_dependents()
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
        if WALK == 1:  # every child's target mass p[parent, token] in one round of loads, before the walk
            par = _parents(first_child, next_sib, offs_n, valid, BLOCK_N)
            ok_tok = valid & (par >= 0) & (cand >= 0) & (cand < V)
            masses = tl.load(p_req + tl.where(ok_tok, par, 0) * stride_p_row + tl.where(ok_tok, cand, 0), mask=ok_tok,
                             other=0.0)
        for _level in range(1, W):
            if go != 0:
                child = _node(first_child, next_token_ptr + base, offs_n, node, WALK_IN_REGISTERS)
                acc = tl.zeros([], dtype=tl.float32)
                accepted = tl.zeros([], dtype=tl.int32)
                tok = tl.zeros([], dtype=tl.int64)
                n_rejected = tl.zeros([], dtype=tl.int32)
                while (child != -1) & (accepted == 0):
                    tok = _node(cand, candidates_ptr + base, offs_n, child, WALK_IN_REGISTERS)
                    if WALK == 1:  # the gathered mass, or a load where the parents above were wrong
                        known = _pick(par, offs_n, child) == node
                        pt = tl.load(p_req + node * stride_p_row + tok, mask=~known, other=0.0)
                        pt = tl.where(known, _pick_bits(masses, offs_n, child), pt)
                        acc, ok = _sibling_verdict(pt, acc, coin, threshold_acc, threshold_single, NEW_SEMANTICS)
                    else:
                        pt, acc, ok = _sibling_test(p_req + node * stride_p_row, tok, acc, coin, threshold_acc,
                                                    threshold_single, NEW_SEMANTICS)
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
    scratch = b * (2 * NC)
    if BPP == 1:
        v = g * CHUNK + offs_v
        m = v < V
        x = _zero_buffer_terminal_chunk(p_row, v, m, rejected, offs_n, n_drop, g * CHUNK, CHUNK)
        tl.store(sums_ptr + scratch + g, tl.sum(x, axis=0))
        tl.store(ints_ptr + scratch + NC + g, tl.max(tl.where((x > 0.0) & m, v, -1), axis=0))
    else:  # chunks g * BPP + t: every chunk's loads go out before any of its sums is stored
        offs_t = tl.arange(0, BPP)
        sv = tl.zeros([BPP], dtype=tl.float32)
        lasts = tl.full([BPP], -1, dtype=tl.int32)
        for t in tl.static_range(BPP):
            c = g * BPP + t
            v = c * CHUNK + offs_v
            m = v < V
            x = _zero_buffer_terminal_chunk(p_row, v, m, rejected, offs_n, n_drop, c * CHUNK, CHUNK)
            sv = tl.where(offs_t == t, tl.sum(x, axis=0), sv)
            lasts = tl.where(offs_t == t, tl.max(tl.where((x > 0.0) & m, v, -1), axis=0), lasts)
        cs = g * BPP + offs_t
        tl.store(sums_ptr + scratch + cs, sv, mask=cs < NC)
        tl.store(ints_ptr + scratch + NC + cs, lasts, mask=cs < NC)
    tl.debug_barrier()  # the chunk's sum is stored before the counter says so
    if NP > 1:
        is_last = tl.atomic_add(count_ptr + b, 1, sem="acq_rel", scope="gpu") == NP - 1
    else:
        is_last = g == 0
    if is_last:
        if WALK == 2:
            acc_rows = tl.load(walk_req + 3 + BLOCK_N + offs_w).to(tl.int64)
            acc_toks = tl.load(walk_req + 3 + BLOCK_N + BLOCK_W + offs_w).to(tl.int64)
        if NP > 1:
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
            xj = _zero_buffer_terminal_chunk(p_row, vj, mj, rejected, offs_n, n_drop, hit_chunk * CHUNK, CHUNK)
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
