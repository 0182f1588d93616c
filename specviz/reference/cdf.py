"""Inverse-CDF draws in SGLang's float32 order of operations (SEMANTICS.md §6.2, §6.4, §7).

Why not ``np.cumsum(dist)``: a draw picks the first token whose running sum exceeds
``coin * total``. At V = 50,000 one token's slice of a real row is ~2e-5 wide, while two float32
summation orders of the same row drift apart by a few 1e-6. A sequential float32 cumsum drew a
different token than SGLang in 24 of 512 random draws. So the reference does the arithmetic in
SGLang's order, step by step (docs/sampling_numerics.md has the full story):

**Chain sampler** (``chain_speculative_sampling_triton``: EAGLE chains, DSpark), blocks of
``BLOCK = 4096`` tokens, the last one padded with zeros:

1. ``total = 0``; for each block in order: ``total += block_sum(block)`` (float32).
2. ``thr = coin * total`` (float32).
3. ``carry = 0``; for each block in order: ``running = carry + cumsum(block)`` (float32,
   elementwise); the answer is the first index with ``running > thr`` (strict), if any;
   otherwise ``carry += block_sum(block)`` and go on.
4. No index anywhere: token ``V - 1``.

There is no "token has mass" test: when ``block_sum`` rounds above the block's last running sum,
the first token of the next block can be picked although its mass is 0; and a coin just below 1
can leave ``thr`` at or above every running sum, which falls back to ``V - 1`` (§7).

**Target-only sampler** (CUDA JIT kernel built on FlashInfer's ``DeviceSamplingFromProb``),
chunks of ``1024 * gcd(4, V)`` tokens:

1. ``total`` as above (per-chunk block reductions, added in chunk order); ``thr = coin * total``.
2. ``agg = 0``; for each chunk: ``local = block_sum(chunk)``; if ``agg + local > thr``, the
   candidate is the first index with ``agg + cumsum(chunk) > thr`` **and** ``dist > 0``;
   ``last_valid`` = the last index with ``dist > 0`` seen so far; ``agg += local``; stop after
   this chunk if ``agg > thr``.
3. No candidate: ``last_valid`` (0.5.23; ``V - 1`` if there is none), or ``V - 1`` (earlier).

``block_sum`` and ``cumsum`` are the two primitives whose rounding order matters. Here they are
the orders Triton's CPU interpreter uses for ``tl.sum`` and ``tl.cumsum`` (numpy's pairwise sum
over the whole zero-padded block, and a sequential float32 scan), which is what SGLang's own
Triton kernel computes under ``TRITON_INTERPRET=1`` and what specviz's oracle tests compare
against. A compiled kernel on a GPU reduces a block as a warp tree instead; ``summation_order("gpu")``
switches the reference to that order (measured bitwise on an H200; docs/sampling_numerics.md). The FlashInfer kernel (CUB block reduce/scan) cannot run on a CPU;
the same two primitives stand in for its block reduction and block scan, while its structure
(chunk size, mass test, early stop, last-valid fallback) is modelled exactly.
"""
from __future__ import annotations

import contextlib
import contextvars
import math

import numpy as np

F32 = np.float32
BLOCK = 4096  # SGLang's chain kernel: BLOCK_V = 4096 for every V
_PW_LEAF = 128  # numpy's pairwise-summation leaf size (PW_BLOCKSIZE)

# -- which order of operations -----------------------------------------------------------------
# "interpreter": Triton's CPU interpreter (TRITON_INTERPRET=1), the default and the order every CPU
# backend follows. "gpu": a compiled Triton kernel on an NVIDIA GPU with num_warps = 4 (SGLang's
# launch), whose tl.sum / tl.cumsum reduce a block as a warp tree (``gpu_block_sum_f32``).
ORDERS = ("interpreter", "gpu")
_ORDER = contextvars.ContextVar("specviz_cdf_order", default="interpreter")
GPU_THREADS = 128  # num_warps 4 x 32 lanes


def current_order() -> str:
    return _ORDER.get()


@contextlib.contextmanager
def summation_order(order: str):
    """Within the block, the reference draws in ``order`` ("interpreter" or "gpu")::

        with cdf.summation_order("gpu"):
            ref = reference.chain_rejection_sampling(...)   # the tokens a compiled kernel draws
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    token = _ORDER.set(order)
    try:
        yield
    finally:
        _ORDER.reset(token)


def gpu_vector_width(V: int) -> int:
    """Floats per thread (``sizePerThread``) of a block load from rows of length V: 4 when V is a
    multiple of 16 (Triton then knows every row start is 16-byte aligned and loads 4 floats at once),
    else 1. Measured on an H200 for V = 7, 1000, 4096, 50000, 50257, 50258, 50260, 151936
    (docs/sampling_numerics.md)."""
    return 4 if int(V) % 16 == 0 else 1


def _warp_tree(x: np.ndarray, offsets) -> np.ndarray:
    """Butterfly reduction over the last axis (x[i] + x[i ^ o] for each offset), lane 0's value."""
    idx = np.arange(x.shape[-1])
    for o in offsets:
        x = (x + x[..., idx ^ o]).astype(F32)
    return x[..., 0]


def _gpu_layout(blocks: np.ndarray, spt: int) -> np.ndarray:
    """[..., size] -> [..., reps, warps 4, lanes 32, spt]: element rep*128*spt + (warp*32 + lane)*spt + j."""
    size = blocks.shape[-1]
    reps = size // (spt * GPU_THREADS)
    return blocks.reshape(*blocks.shape[:-1], reps, 4, 32, spt)


def gpu_block_sum_f32(blocks: np.ndarray, spt: int) -> np.ndarray:
    """``tl.sum`` of a block on the GPU: each thread adds its own elements in order (rep by rep,
    then within its vector), then a butterfly across the 32 lanes (xor 16, 8, 4, 2, 1), then
    across the 4 warps (xor 2, 1). Measured bitwise on an H200 (docs/sampling_numerics.md).
    [..., size] -> [...]."""
    a = _gpu_layout(np.asarray(blocks, F32), spt)
    a = np.moveaxis(a, -4, -2)  # [..., warps, lanes, reps, spt]
    a = a.reshape(*a.shape[:-2], -1)  # each thread's elements, in its order
    acc = a[..., 0].copy()
    for k in range(1, a.shape[-1]):
        acc = (acc + a[..., k]).astype(F32)
    per_warp = _warp_tree(acc, (16, 8, 4, 2, 1))  # [..., warps]
    return _warp_tree(per_warp, (2, 1))


def _lane_scan(w: np.ndarray) -> np.ndarray:
    """Inclusive Hillis-Steele scan over the last axis (offsets 1, 2, 4, 8, 16)."""
    L = w.shape[-1]
    o = 1
    while o < L:
        shifted = np.zeros_like(w)
        shifted[..., o:] = w[..., :-o]
        w = np.where(np.arange(L) >= o, (w + shifted).astype(F32), w)
        o *= 2
    return w


def gpu_block_cumsum_f32(blocks: np.ndarray, spt: int) -> np.ndarray:
    """``tl.cumsum`` of a block on the GPU: each thread scans its vector; the threads' totals are
    scanned across the lanes of a warp; a running offset carries over warps, then reps. Element j
    of a vector is (offset + lanes before) + own prefix, its last element offset + lanes up to it.
    [..., size] -> [..., size]."""
    blocks = np.asarray(blocks, F32)
    a = _gpu_layout(blocks, spt)
    t = np.cumsum(a, axis=-1, dtype=F32)
    W = _lane_scan(t[..., spt - 1])  # [..., reps, warps, lanes]
    out = np.empty_like(a)
    acc = np.zeros(blocks.shape[:-1], F32)
    first = True
    for r in range(a.shape[-4]):
        for w in range(4):
            Wrw = W[..., r, w, :]
            before = np.concatenate([np.zeros(Wrw.shape[:-1] + (1,), F32), Wrw[..., :-1]], axis=-1)
            if first:  # nothing carried yet
                prev = before
                out[..., r, w, :, spt - 1] = Wrw
            else:
                prev = (acc[..., None] + before).astype(F32)
                out[..., r, w, :, spt - 1] = (acc[..., None] + Wrw).astype(F32)
            if spt > 1:
                out[..., r, w, :, :spt - 1] = (prev[..., None] + t[..., r, w, :, :spt - 1]).astype(F32)  # 0 + x is exact
            acc = Wrw[..., 31].copy() if first else (acc + Wrw[..., 31]).astype(F32)
            first = False
    return out.reshape(blocks.shape)


def pairwise_sum_f32(x: np.ndarray) -> np.ndarray:
    """Float32 sum over the last axis in numpy's pairwise order (what ``np.sum`` and so Triton's
    interpreter ``tl.sum`` do): below 8 items a plain loop; up to 128 items eight strided
    accumulators combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) plus the tail; above, split at
    n/2 rounded down to a multiple of 8 and add the halves. [..., n] -> [...]."""
    n = x.shape[-1]
    if n < 8:
        acc = np.zeros(x.shape[:-1], F32)
        for i in range(n):
            acc = (acc + x[..., i]).astype(F32)
        return acc
    if n <= _PW_LEAF:
        m = n - n % 8
        r = x[..., 0:8].astype(F32)
        for i in range(8, m, 8):
            r = (r + x[..., i:i + 8]).astype(F32)
        res = ((r[..., 0] + r[..., 1]) + (r[..., 2] + r[..., 3])) + ((r[..., 4] + r[..., 5]) + (r[..., 6] + r[..., 7]))
        res = res.astype(F32)
        for i in range(m, n):
            res = (res + x[..., i]).astype(F32)
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return (pairwise_sum_f32(x[..., :n2]) + pairwise_sum_f32(x[..., n2:])).astype(F32)


def sequential_cumsum_f32(x: np.ndarray) -> np.ndarray:
    """Inclusive float32 running sum over the last axis, one addition after another (``tl.cumsum``
    under the interpreter). np.cumsum on float32 input accumulates in float32, in order."""
    return np.cumsum(x, axis=-1, dtype=F32)


def target_only_chunk(V: int) -> int:
    """The target-only kernel's chunk: 1024 threads x VEC_SIZE = gcd(4, V) floats each."""
    return 1024 * math.gcd(4, int(V))


def _blocks(dist: np.ndarray, size: int, full: bool = False) -> np.ndarray:
    """[rows, V] -> [rows, nblocks, width], zero padded. A row shorter than one block is padded to
    max(128, next power of two) only (the rest of the block's pairwise tree adds exact zeros), unless
    ``full``: the GPU layout places each element by its index in the whole block."""
    rows, V = dist.shape
    if V < size and not full:
        size = min(size, max(_PW_LEAF, 1 << (V - 1).bit_length()))
    nb = max(1, -(-V // size))
    out = np.zeros((rows, nb * size), F32)
    out[:, :V] = dist
    return out.reshape(rows, nb, size)


def _primitives(order: str, V: int):
    """(block_sum, block_cumsum, pad_to_full_block) for an order; the GPU layout needs the whole block."""
    if order == "gpu":
        spt = gpu_vector_width(V)
        return (lambda b: gpu_block_sum_f32(b, spt)), (lambda b: gpu_block_cumsum_f32(b, spt)), True
    return pairwise_sum_f32, sequential_cumsum_f32, False


def chain_inverse_cdf(dist, coins, order: str | None = None) -> np.ndarray:
    """SGLang's chain-sampler draw for every row. dist [rows, V] f32 (>= 0), coins [rows] f32 -> int64 [rows].
    ``order``: "interpreter" / "gpu" (default: ``summation_order``'s, else "interpreter")."""
    dist = np.asarray(dist, F32)
    coins = np.asarray(coins, F32).reshape(-1)
    rows, V = dist.shape
    block_sum, block_cumsum, full = _primitives(order or current_order(), V)
    blocks = _blocks(dist, BLOCK, full)
    nb = blocks.shape[1]
    bsum = block_sum(blocks)  # [rows, nb]
    total = np.zeros(rows, F32)
    for j in range(nb):
        total = (total + bsum[:, j]).astype(F32)
    thr = (coins * total).astype(F32)
    out = np.full(rows, V - 1, np.int64)
    found = np.zeros(rows, bool)
    carry = np.zeros(rows, F32)
    width = blocks.shape[2] if full else min(BLOCK, V)  # the zero padding does not move a running sum
    for j in range(nb):
        running = (carry[:, None] + block_cumsum(blocks[:, j, :width])).astype(F32)
        hit = running > thr[:, None]
        new = hit.any(axis=1) & ~found
        out[new] = j * BLOCK + hit[new].argmax(axis=1)
        found |= new
        if found.all():
            break
        carry = (carry + bsum[:, j]).astype(F32)
    return out


def target_only_inverse_cdf(dist, coins, *, last_valid_fallback: bool, order: str | None = None) -> np.ndarray:
    """The target-only sampler's terminal draw for every row (FlashInfer's chunked scan).
    dist [rows, V] f32 (>= 0), coins [rows] -> int64 [rows]. ``last_valid_fallback``: 0.5.23.
    ``order`` "gpu" is specviz's Triton kernel compiled for a GPU (FlashInfer's CUB order is not modelled)."""
    dist = np.asarray(dist, F32)
    coins = np.asarray(coins, F32).reshape(-1)
    rows, V = dist.shape
    size = target_only_chunk(V)
    block_sum, block_cumsum, full = _primitives(order or current_order(), V)
    blocks = _blocks(dist, size, full)
    size = blocks.shape[2]
    nb = blocks.shape[1]
    bsum = block_sum(blocks)
    total = np.zeros(rows, F32)
    for j in range(nb):
        total = (total + bsum[:, j]).astype(F32)
    thr = (coins * total).astype(F32)
    sampled = np.full(rows, -1, np.int64)
    last_valid = np.full(rows, -1, np.int64)
    agg = np.zeros(rows, F32)
    done = np.zeros(rows, bool)
    for j in range(nb):
        active = ~done
        x = blocks[:, j]
        local = bsum[:, j]
        enter = active & ((agg + local).astype(F32) > thr)
        if enter.any():
            hit = ((block_cumsum(x) + agg[:, None]).astype(F32) > thr[:, None]) & (x > 0)
            got = enter & hit.any(axis=1)
            sampled[got] = j * size + hit[got].argmax(axis=1)
        pos = x > 0  # padding is 0, so never "valid"
        has = active & pos.any(axis=1)
        last_valid[has] = j * size + (size - 1 - pos[has][:, ::-1].argmax(axis=1))
        agg = np.where(active, (agg + local).astype(F32), agg)
        done |= active & (agg > thr)
        if done.all():
            break
    fallback = np.where(last_valid >= 0, last_valid, V - 1) if last_valid_fallback else np.full(rows, V - 1)
    return np.where(sampled >= 0, sampled, fallback).astype(np.int64)
