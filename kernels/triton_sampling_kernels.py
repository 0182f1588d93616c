"""Triton kernel for target probabilities: softmax(logits / T), top-k renorm, top-p renorm (SEMANTICS.md §5.2).

One program per row. Sorting is avoided: both pivots are found by bisection over the bit
pattern of a non-negative float32 (monotone in its value), the way FlashInfer's renorm kernels
search for a pivot. Each probe is one pass over the row:

* top-k pivot = the largest x with count(probs >= x) >= k, i.e. the k-th largest probability;
* top-p pivot = the smallest x with sum(probs <= x) >= 1 - top_p, i.e. the first ascending
  probability whose cumulative sum reaches 1 - top_p (ties kept either way).

Two kernels, the same element-wise arithmetic:

* ``target_probs_row_kernel`` (rows up to 32768 tokens): the row is loaded once and held in registers;
  max, exponentials (one float64 exp a token), sum, every bisection probe and the renorm sums run on
  registers, and the row is written once: one read and one write of the row whatever top-k / top-p
  ask for (each probe costs arithmetic, not memory).
* ``target_probs_split_kernel`` (longer rows, temperature only): a row in CHUNK-token chunks across
  programs, each chunk held in registers: a chunk's max and its sum of exp(x - chunk max) (float32
  exp) go to a scratch; the last of the row's programs to finish (an atomic counter, as the chain
  sampler's split) folds them into the row's max and sum (float64) and writes the row: one read of
  the row from memory by the chunk programs, a second by the last program just after (most of it
  still in L2), one write; one float64 exp a token. The tokens' exp terms are the reference's (the
  row's max, rounded once); only the sum they are divided by is folded differently (from the
  chunks' float32 sums, rescaled in float64, not the float32 sum of the rounded terms).
* ``target_probs_kernel`` (longer rows with top-k / top-p, or per-row values): one pass over the
  row for the max, one for the sum (a float64 exp a token), one that writes the softmax probabilities
  to the output row (the exp again); then every bisection probe and renorm sum reads those float32
  probabilities back from the output (a row of 128256 tokens is 513 KB: mostly L2), and a last pass
  rewrites the row renormed. Two float64 exps a token in all (was one a pass); the same float32
  values in every pass, so the same result. With top-k and top-p: 3 passes over the logits, then 31 top-k
  probes + its sum + the top-p total + 31 top-p probes + its sum + the write = 66 over the stored row
  (a pass: 4 bytes a token read from L2 or HBM, no exp). A 16-threshold-a-pass top-k search (8 passes)
  ran 1.7x slower on an H200 ([BLOCK, 16] compares a block; benchmarks/README "Issue 36, fourth stop").

Both take the per-row values as tensors, or (SCALARS, the call's values are Python numbers) as
scalar arguments, which saves the launcher the small tensor ops that build the per-row tensors.
"""
import triton
import triton.language as tl


@triton.jit
def _probs_block(logits_row_ptr, v, m, inv_temp_ok, temperature, row_max, row_sum, pivot_k, sum_k, pivot_p, sum_p):
    """Probabilities of one block after softmax and the renorms that are switched on (pivot < 0: off)."""
    x = tl.load(logits_row_ptr + v, mask=m, other=float("-inf"))
    e = tl.exp((x / temperature - row_max).to(tl.float64)).to(tl.float32)  # rounded once, as the reference
    prob = tl.where(m, e / row_sum, 0.0)
    prob = tl.where(pivot_k >= 0.0, tl.where(prob >= pivot_k, prob, 0.0) / sum_k, prob)
    prob = tl.where(pivot_p >= 0.0, tl.where(prob >= pivot_p, prob, 0.0) / sum_p, prob)
    return prob


@triton.jit
def _row_values(r, temperature_ptr, top_k_ptr, top_p_ptr, temp_s, k_s, p_s, SCALARS: tl.constexpr):
    """(temperature, top_k, top_p) of row r: from the per-row tensors, or the scalars for every row."""
    if SCALARS:
        zero = tl.zeros([], tl.float32)  # float32 values (the interpreter hands Python floats)
        return temp_s + zero, k_s + zero, p_s + zero
    else:
        return tl.load(temperature_ptr + r), tl.load(top_k_ptr + r), tl.load(top_p_ptr + r)


@triton.jit
def target_probs_row_kernel(logits_ptr, temperature_ptr, top_k_ptr, top_p_ptr, probs_ptr, V, temp_s, k_s, p_s,
                            HAS_TOP_K: tl.constexpr, HAS_TOP_P: tl.constexpr, SCALARS: tl.constexpr,
                            BLOCK_V: tl.constexpr):
    """``target_probs_kernel`` for a row of at most BLOCK_V tokens, held in registers: read once, written
    once. The same element-wise arithmetic (so the same probabilities, up to the order of the sums)."""
    r = tl.program_id(0).to(tl.int64)
    temperature, k_f, top_p = _row_values(r, temperature_ptr, top_k_ptr, top_p_ptr, temp_s, k_s, p_s, SCALARS)
    v = tl.arange(0, BLOCK_V)
    m = v < V
    x = tl.load(logits_ptr + r * V + v, mask=m, other=float("-inf")) / temperature
    row_max = tl.max(x, axis=0)
    e = tl.where(m, tl.exp((x - row_max).to(tl.float64)).to(tl.float32), 0.0)  # rounded once, as the reference
    prob = e / tl.sum(e, axis=0)
    if HAS_TOP_K:
        k = k_f.to(tl.int32)
        if (k >= 1) & (k < V):
            bits = prob.to(tl.int32, bitcast=True)
            lo = tl.zeros([], tl.int32)  # count(probs >= 0.0) = V >= k
            hi = tl.full([], 0x7F800000, tl.int32)  # +inf: count = 0 < k
            while hi - lo > 1:
                mid = lo + (hi - lo) // 2
                take = tl.sum((m & (bits >= mid)).to(tl.int32), axis=0) >= k
                lo = tl.where(take, mid, lo)
                hi = tl.where(take, hi, mid)
            pivot_k = lo.to(tl.float32, bitcast=True)
            kept = tl.where(prob >= pivot_k, prob, 0.0)
            prob = kept / tl.sum(kept, axis=0)
    if HAS_TOP_P:
        if top_p < 1.0:
            need = 1.0 - top_p
            if tl.sum(prob, axis=0) >= need:
                bits = prob.to(tl.int32, bitcast=True)
                lo = tl.full([], -1, tl.int32)  # sum(probs <= "below 0") = 0 < need
                hi = tl.full([], 0x7F800000, tl.int32)
                while hi - lo > 1:
                    mid = lo + (hi - lo) // 2
                    reach = tl.sum(tl.where(m & (bits <= mid), prob, 0.0), axis=0) >= need
                    hi = tl.where(reach, mid, hi)
                    lo = tl.where(reach, lo, mid)
                pivot_p = hi.to(tl.float32, bitcast=True)
            else:  # rounding left the total short of 1 - top_p: keep the largest only (the reference's fallback)
                pivot_p = tl.max(prob, axis=0)
            kept = tl.where(prob >= pivot_p, prob, 0.0)
            prob = kept / tl.sum(kept, axis=0)
    tl.store(probs_ptr + r * V + v, prob, mask=m)


@triton.jit
def _renormed(prob, pivot_k, sum_k, pivot_p, sum_p):
    """A block of softmax probabilities after the renorms that are switched on (pivot < 0: off)."""
    prob = tl.where(pivot_k >= 0.0, tl.where(prob >= pivot_k, prob, 0.0) / sum_k, prob)
    prob = tl.where(pivot_p >= 0.0, tl.where(prob >= pivot_p, prob, 0.0) / sum_p, prob)
    return prob


@triton.jit
def target_probs_kernel(logits_ptr, temperature_ptr, top_k_ptr, top_p_ptr, probs_ptr, V, temp_s, k_s, p_s,
                        HAS_TOP_K: tl.constexpr, HAS_TOP_P: tl.constexpr, SCALARS: tl.constexpr,
                        BLOCK_V: tl.constexpr):
    """Row r = program_id(0). temperature [rows] f32 (greedy rows already at 1 with top_k 1);
    top_k [rows] f32 (0 = off); top_p [rows] f32 (1 = off); logits / probs [rows, V] f32.
    SCALARS: temp_s, k_s, p_s (the same encoding) hold every row's values and the tensors are unread.

    The softmax probabilities are written to the output row once (third pass) and every later pass (the
    bisection probes, the renorm sums, the renormed write) reads them back from there, mostly from L2:
    float32 loads instead of a float64 exp a token a pass. The values are the same: each pass used to
    recompute exactly the stored float32."""
    r = tl.program_id(0).to(tl.int64)
    row = logits_ptr + r * V
    out = probs_ptr + r * V
    offs = tl.arange(0, BLOCK_V)
    temperature, k_f, top_p = _row_values(r, temperature_ptr, top_k_ptr, top_p_ptr, temp_s, k_s, p_s, SCALARS)
    nblocks = tl.cdiv(V, BLOCK_V)
    row_max = tl.full([], float("-inf"), tl.float32)
    for j in range(0, nblocks):
        v = j * BLOCK_V + offs
        x = tl.load(row + v, mask=v < V, other=float("-inf"))
        row_max = tl.maximum(row_max, tl.max(x / temperature, axis=0))
    row_sum = tl.zeros([], tl.float32)
    for j in range(0, nblocks):
        v = j * BLOCK_V + offs
        m = v < V
        x = tl.load(row + v, mask=m, other=float("-inf"))
        row_sum += tl.sum(tl.where(m, tl.exp((x / temperature - row_max).to(tl.float64)).to(tl.float32), 0.0), axis=0)
    off = tl.full([], -1.0, tl.float32)
    one = tl.full([], 1.0, tl.float32)
    for j in range(0, nblocks):
        v = j * BLOCK_V + offs
        m = v < V
        tl.store(out + v, _probs_block(row, v, m, 1, temperature, row_max, row_sum, off, one, off, one), mask=m)
    tl.debug_barrier()  # the stored probabilities are read back by every thread of the program below
    pivot_k = off
    sum_k = one
    pivot_p = off
    sum_p = one
    if HAS_TOP_K:
        k = k_f.to(tl.int32)
        if (k >= 1) & (k < V):
            lo = tl.zeros([], tl.int32)  # count(probs >= 0.0) = V >= k
            hi = tl.full([], 0x7F800000, tl.int32)  # +inf: count = 0 < k
            while hi - lo > 1:
                mid = lo + (hi - lo) // 2
                cnt = tl.zeros([], tl.int32)
                for j in range(0, nblocks):
                    v = j * BLOCK_V + offs
                    m = v < V
                    prob = tl.load(out + v, mask=m, other=0.0)
                    cnt += tl.sum((m & (prob.to(tl.int32, bitcast=True) >= mid)).to(tl.int32), axis=0)
                take = cnt >= k
                lo = tl.where(take, mid, lo)
                hi = tl.where(take, hi, mid)
            pivot_k = lo.to(tl.float32, bitcast=True)
            sum_k = tl.zeros([], tl.float32)
            for j in range(0, nblocks):
                v = j * BLOCK_V + offs
                m = v < V
                prob = tl.load(out + v, mask=m, other=0.0)
                sum_k += tl.sum(tl.where(prob >= pivot_k, prob, 0.0), axis=0)
    if HAS_TOP_P:
        if top_p < 1.0:
            need = 1.0 - top_p
            lo = tl.full([], -1, tl.int32)  # sum(probs <= "below 0") = 0 < need
            hi = tl.full([], 0x7F800000, tl.int32)
            total = tl.zeros([], tl.float32)
            pmax = tl.zeros([], tl.float32)
            for j in range(0, nblocks):
                v = j * BLOCK_V + offs
                m = v < V
                prob = _renormed(tl.load(out + v, mask=m, other=0.0), pivot_k, sum_k, off, one)
                total += tl.sum(prob, axis=0)
                pmax = tl.maximum(pmax, tl.max(prob, axis=0))
            if total >= need:
                while hi - lo > 1:
                    mid = lo + (hi - lo) // 2
                    below = tl.zeros([], tl.float32)
                    for j in range(0, nblocks):
                        v = j * BLOCK_V + offs
                        m = v < V
                        prob = _renormed(tl.load(out + v, mask=m, other=0.0), pivot_k, sum_k, off, one)
                        below += tl.sum(tl.where(m & (prob.to(tl.int32, bitcast=True) <= mid), prob, 0.0), axis=0)
                    reach = below >= need
                    hi = tl.where(reach, mid, hi)
                    lo = tl.where(reach, lo, mid)
                pivot_p = hi.to(tl.float32, bitcast=True)
            else:  # rounding left the total short of 1 - top_p: keep the largest only (the reference's fallback)
                pivot_p = pmax
            sum_p = tl.zeros([], tl.float32)
            for j in range(0, nblocks):
                v = j * BLOCK_V + offs
                m = v < V
                prob = _renormed(tl.load(out + v, mask=m, other=0.0), pivot_k, sum_k, off, one)
                sum_p += tl.sum(tl.where(prob >= pivot_p, prob, 0.0), axis=0)
    if HAS_TOP_K or HAS_TOP_P:  # the renormed row over the stored one (unchanged where no renorm is on)
        for j in range(0, nblocks):
            v = j * BLOCK_V + offs
            m = v < V
            tl.store(out + v, _renormed(tl.load(out + v, mask=m, other=0.0), pivot_k, sum_k, pivot_p, sum_p), mask=m)


@triton.jit
def target_probs_split_kernel(logits_ptr, probs_ptr, part_ptr, count_ptr, V, temperature, CHUNK: tl.constexpr,
                              NC: tl.constexpr, NC_P2: tl.constexpr, BLOCK_V: tl.constexpr):
    """softmax(logits / temperature) of row r = program_id(0); program_id(1) = the chunk c (NC chunks of
    CHUNK tokens). part [rows, 2, NC_P2] int32 (float32 bits): each chunk's max and sum of exp(x - max);
    count [rows] int32, zero on entry and left zero: the row's finished chunks."""
    r = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1)
    row = logits_ptr + r * V
    v = c * CHUNK + tl.arange(0, CHUNK)
    m = v < V
    x = tl.load(row + v, mask=m, other=float("-inf")) / temperature
    cmax = tl.max(x, axis=0)
    csum = tl.sum(tl.where(m, tl.exp(x - cmax), 0.0), axis=0)
    part = part_ptr + r * (2 * NC_P2)
    tl.store(part + c, cmax.to(tl.int32, bitcast=True))
    tl.store(part + NC_P2 + c, csum.to(tl.int32, bitcast=True))
    if tl.atomic_add(count_ptr + r, 1, sem="acq_rel", scope="gpu") == NC - 1:  # the row's last chunk
        tl.store(count_ptr + r, 0)
        j = tl.arange(0, NC_P2)
        maxes = tl.load(part + j, mask=j < NC, other=0, volatile=True).to(tl.float32, bitcast=True)
        maxes = tl.where(j < NC, maxes, float("-inf"))
        sums = tl.load(part + NC_P2 + j, mask=j < NC, other=0, volatile=True).to(tl.float32, bitcast=True)
        row_max = tl.max(maxes, axis=0)
        scaled = tl.where(j < NC, sums.to(tl.float64) * tl.exp((maxes - row_max).to(tl.float64)), 0.0)
        row_sum = tl.sum(scaled, axis=0).to(tl.float32)
        offs = tl.arange(0, BLOCK_V)
        for b in range(0, tl.cdiv(V, BLOCK_V)):
            w = b * BLOCK_V + offs
            mw = w < V
            y = tl.load(row + w, mask=mw, other=float("-inf"))
            e = tl.exp((y / temperature - row_max).to(tl.float64)).to(tl.float32)  # rounded once, as the reference
            tl.store(probs_ptr + r * V + w, e / row_sum, mask=mw)
