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
against. A GPU reduces a block as a warp tree instead; tokens then differ only where a running
sum lands within a few float32 ulps of the threshold (measured and reported in
docs/sampling_numerics.md). The FlashInfer kernel (CUB block reduce/scan) cannot run on a CPU;
the same two primitives stand in for its block reduction and block scan, while its structure
(chunk size, mass test, early stop, last-valid fallback) is modelled exactly.
"""
from __future__ import annotations

import math

import numpy as np

F32 = np.float32
BLOCK = 4096  # SGLang's chain kernel: BLOCK_V = 4096 for every V
_PW_LEAF = 128  # numpy's pairwise-summation leaf size (PW_BLOCKSIZE)


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


def _blocks(dist: np.ndarray, size: int) -> np.ndarray:
    """[rows, V] -> [rows, nblocks, width], zero padded. A row shorter than one block is padded to
    max(128, next power of two) only: the rest of the block's pairwise tree adds exact zeros."""
    rows, V = dist.shape
    if V < size:
        size = min(size, max(_PW_LEAF, 1 << (V - 1).bit_length()))
    nb = max(1, -(-V // size))
    out = np.zeros((rows, nb * size), F32)
    out[:, :V] = dist
    return out.reshape(rows, nb, size)


def chain_inverse_cdf(dist, coins) -> np.ndarray:
    """SGLang's chain-sampler draw for every row. dist [rows, V] f32 (>= 0), coins [rows] f32 -> int64 [rows]."""
    dist = np.asarray(dist, F32)
    coins = np.asarray(coins, F32).reshape(-1)
    rows, V = dist.shape
    blocks = _blocks(dist, BLOCK)
    nb = blocks.shape[1]
    bsum = pairwise_sum_f32(blocks)  # [rows, nb]
    total = np.zeros(rows, F32)
    for j in range(nb):
        total = (total + bsum[:, j]).astype(F32)
    thr = (coins * total).astype(F32)
    out = np.full(rows, V - 1, np.int64)
    found = np.zeros(rows, bool)
    carry = np.zeros(rows, F32)
    width = min(BLOCK, V)  # the zero padding does not move a running sum
    for j in range(nb):
        running = (carry[:, None] + sequential_cumsum_f32(blocks[:, j, :width])).astype(F32)
        hit = running > thr[:, None]
        new = hit.any(axis=1) & ~found
        out[new] = j * BLOCK + hit[new].argmax(axis=1)
        found |= new
        if found.all():
            break
        carry = (carry + bsum[:, j]).astype(F32)
    return out


def target_only_inverse_cdf(dist, coins, *, last_valid_fallback: bool) -> np.ndarray:
    """The target-only sampler's terminal draw for every row (FlashInfer's chunked scan).
    dist [rows, V] f32 (>= 0), coins [rows] -> int64 [rows]. ``last_valid_fallback``: 0.5.23."""
    dist = np.asarray(dist, F32)
    coins = np.asarray(coins, F32).reshape(-1)
    rows, V = dist.shape
    size = target_only_chunk(V)
    blocks = _blocks(dist, size)
    size = blocks.shape[2]
    nb = blocks.shape[1]
    bsum = pairwise_sum_f32(blocks)
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
            hit = ((sequential_cumsum_f32(x) + agg[:, None]).astype(F32) > thr[:, None]) & (x > 0)
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
