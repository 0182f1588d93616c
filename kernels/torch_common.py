"""Shared plumbing of the torch and Triton backends: tensor conversion and input validation.

Both backends accept torch tensors (CPU or CUDA), numpy arrays or nested lists and return torch
tensors with SGLang's dtypes (int64 tree tensors, int32 predicts / accept_index /
accept_token_num, float32 probabilities). Validation reuses ``specviz.base.validate`` and the
reference's argument checks, so every bad input raises the same ``SpecvizError`` naming the field
as the numpy backend does. Those checks convert to numpy (a device-to-host copy and a sync on a
GPU); every public function therefore takes ``validate=True`` and benchmarks pass
``validate=False`` to time the kernels alone.

One rule is stricter than the reference: the kernel backends run requests in parallel, as
SGLang does, so ``retrieve_index[b]`` must hold distinct rows inside request b's own block
``[b*n, (b+1)*n)`` (SGLang always builds ``b*n + i``). The sequential reference would accept rows
shared between requests; a parallel kernel (SGLang's too) would race on them.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from specviz.base.errors import SpecvizError
from specviz.base.validate import to_numpy

INT64 = torch.int64
INT32 = torch.int32
F32 = torch.float32
_TENSOR = torch.Tensor


def pick_device(*values, default: str | torch.device = "cpu") -> torch.device:
    """The device of the first torch tensor among ``values``; ``default`` when none is a tensor."""
    for v in values:
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device(default)


def as_tensor(name: str, x, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``x`` as a contiguous tensor of ``dtype`` on ``device`` (no copy when it already is one)."""
    if type(x) is _TENSOR and x.dtype is dtype and x.device == device and x.is_contiguous():
        return x  # the common case, kept cheap (a plain tensor; dtypes are singletons): benchmarks time the call
    if isinstance(x, torch.Tensor) and x.dtype == dtype and x.device == device and x.is_contiguous():
        return x  # a tensor subclass
    if x is None:
        raise SpecvizError(name, "is missing: pass an array")
    if isinstance(x, torch.Tensor):
        t = x.to(device=device, dtype=dtype)
    else:
        arr = to_numpy(name, x)
        t = torch.as_tensor(np.ascontiguousarray(arr)).to(device=device, dtype=dtype)
    return t if t.is_contiguous() else t.contiguous()


def check_own_block_rows(ri: np.ndarray, name: str = "retrieve_index") -> None:
    """Kernel-backend rule: request b's rows are distinct and lie in [b*n, (b+1)*n)."""
    bs, n = ri.shape
    lo = (np.arange(bs, dtype=np.int64) * n)[:, None]
    outside = (ri < lo) | (ri >= lo + n)
    if np.any(outside):
        b, i = (int(v) for v in np.argwhere(outside)[0])
        raise SpecvizError(
            name,
            f"request {b} node {i} holds row {ri[b, i]}, outside its own block [{b * n}, {(b + 1) * n}): the torch and "
            "Triton backends run requests in parallel (as SGLang does), so each request's rows must be its own; "
            "SGLang builds retrieve_index[b, i] = b*n + i",
        )
    srt = np.sort(ri, axis=1)
    dup = srt[:, 1:] == srt[:, :-1]
    if np.any(dup):
        b, j = (int(v) for v in np.argwhere(dup)[0])
        raise SpecvizError(name, f"request {b} lists row {srt[b, j]} twice: each node has its own verify row (b*n + i)")


def flat_rows(x: torch.Tensor) -> torch.Tensor:
    """A [bs, n] tensor as its flat [bs*n] view (the global-row addressing SGLang uses)."""
    return x.reshape(-1)


def to_numpy_result(t):
    """Helper for tests and the app: a tensor (any device) as a numpy array."""
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def check_parent_steps(parent_list: np.ndarray, selected_index: np.ndarray, topk: int) -> None:
    """Kernel-backend rule for the tree build: a parent slot that a selected candidate uses holds -1 (an
    invalid tree, SEMANTICS.md §3.4) or a candidate of the step before (slot 1 + topk*(s-1) + k is beam k
    of step s-1, so its candidate index lies in that step's range). SGLang's draft always does this; it
    bounds every chain to ``depth`` steps, which the Triton builder's closure relies on."""
    slot = selected_index // topk
    bs = selected_index.shape[0]
    used = slot > 0
    if not np.any(used):
        return
    step = (slot - 1) // topk  # the parent beam's draft step
    lo = np.where(step == 0, 0, topk + topk * topk * (step - 1))
    hi = np.where(step == 0, topk, topk + topk * topk * step)
    rows = np.arange(bs)[:, None].repeat(selected_index.shape[1], 1)
    value = parent_list[rows[used], slot[used]]
    bad = (value != -1) & ((value < lo[used]) | (value >= hi[used]))
    if np.any(bad):
        j = int(np.argmax(bad))
        b, s_ = int(rows[used][j]), int(slot[used][j])
        raise SpecvizError(
            "parent_list",
            f"request {b} slot {s_} holds candidate {int(value[j])}, but slot {s_} is a beam of draft step "
            f"{int(step[used][j])} whose candidates are {int(lo[used][j])}..{int(hi[used][j]) - 1}: each parent "
            "slot names a candidate of the step before (or -1), as SGLang's draft builds it",
        )


# ---------------------------------------------------------------------------------------------
# Inverse-CDF draws in SGLang's float32 order (specviz/reference/cdf.py has the derivation)
# ---------------------------------------------------------------------------------------------

CDF_BLOCK = 4096  # SGLang's chain kernel block (BLOCK_V) for every V
_PW_LEAF = 128


def pairwise_sum_f32(x: torch.Tensor) -> torch.Tensor:
    """Float32 sum over the last axis in numpy's pairwise order (Triton interpreter's ``tl.sum``),
    the same tree as ``specviz.reference.cdf.pairwise_sum_f32``. [..., n] -> [...]. Every step is
    an elementwise float32 add, so the result is bit-identical on any device."""
    n = x.shape[-1]
    if n < 8:
        acc = torch.zeros(x.shape[:-1], dtype=F32, device=x.device)
        for i in range(n):
            acc = acc + x[..., i]
        return acc
    if n <= _PW_LEAF:
        m = n - n % 8
        r = x[..., 0:8]
        for i in range(8, m, 8):
            r = r + x[..., i:i + 8]
        res = ((r[..., 0] + r[..., 1]) + (r[..., 2] + r[..., 3])) + ((r[..., 4] + r[..., 5]) + (r[..., 6] + r[..., 7]))
        for i in range(m, n):
            res = res + x[..., i]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum_f32(x[..., :n2]) + pairwise_sum_f32(x[..., n2:])


def sequential_cumsum_f32(x: torch.Tensor) -> torch.Tensor:
    """Inclusive running sum over the last axis, one float32 addition after another.

    Not ``torch.cumsum``: on the CPU it accumulates in float64, on CUDA in a parallel scan; both
    round differently from SGLang's block scan. On the CPU numpy's float32 cumsum (sequential)
    does it on the same memory; elsewhere a column loop of float32 adds."""
    if x.device.type == "cpu":
        return torch.from_numpy(np.cumsum(x.detach().numpy(), axis=-1, dtype=np.float32))
    out = torch.empty_like(x)
    if x.shape[-1]:
        out[..., 0] = x[..., 0]
    for i in range(1, x.shape[-1]):  # one launch per column; no host sync, so it can be graph-captured
        torch.add(out[..., i - 1], x[..., i], out=out[..., i])
    return out


def pairwise_sum_logical(x: torch.Tensor, n: int) -> torch.Tensor:
    """``pairwise_sum_f32`` of x zero-padded to ``n`` items, without building the padding: the
    zeros only add exact +0, so each half of the tree that holds no data is skipped. [..., m<=n] -> [...]."""
    m = x.shape[-1]
    if m == n:
        return pairwise_sum_f32(x)
    if m == 0 or n < 8:
        return pairwise_sum_f32(x)  # a plain loop: trailing zeros change nothing
    if n <= _PW_LEAF:
        main = n - n % 8  # the eight strided accumulators run over x[0:main]
        body = x[..., :min(m, main)]
        pad = (-body.shape[-1]) % 8
        if pad:
            body = torch.cat([body, torch.zeros(*body.shape[:-1], pad, dtype=F32, device=x.device)], dim=-1)
        groups = body.reshape(*body.shape[:-1], -1, 8)
        r = groups[..., 0, :]
        for g in range(1, groups.shape[-2]):
            r = r + groups[..., g, :]
        res = ((r[..., 0] + r[..., 1]) + (r[..., 2] + r[..., 3])) + ((r[..., 4] + r[..., 5]) + (r[..., 6] + r[..., 7]))
        for i in range(main, m):
            res = res + x[..., i]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    left = pairwise_sum_logical(x[..., :min(m, n2)], n2)
    if m <= n2:
        return left  # the right half is all zeros: + 0 changes nothing
    return left + pairwise_sum_logical(x[..., n2:], n - n2)


def _cdf_blocks(dist: torch.Tensor, size: int) -> torch.Tensor:
    """[rows, V] -> [rows, nblocks, width]: whole blocks of ``size``, the last one zero padded; a row
    shorter than one block stays unpadded (width V; ``pairwise_sum_logical`` sums it as a full block,
    so sample_many's many short rows cost no padding)."""
    rows, V = dist.shape
    if V <= size:
        return dist.reshape(rows, 1, V)
    nb = -(-V // size)
    if nb * size == V:
        return dist.reshape(rows, nb, size)
    out = torch.zeros(rows, nb * size, dtype=F32, device=dist.device)
    out[:, :V] = dist
    return out.reshape(rows, nb, size)


def chain_running_table(dist: torch.Tensor):
    """The values SGLang's chain kernel compares with its threshold, for every row: (running [rows, V]
    = carry of the earlier blocks' tl.sum + this block's sequential cumsum, total [rows] = the
    blocks' tl.sum added in order). Not monotone across a block edge (the carry is tl.sum, not the
    last running sum)."""
    dist = dist.to(F32)
    rows, V = dist.shape
    blocks = _cdf_blocks(dist, CDF_BLOCK)
    nb, width = blocks.shape[1], blocks.shape[2]
    bsum = pairwise_sum_logical(blocks, CDF_BLOCK)  # [rows, nb]
    total = torch.zeros(rows, dtype=F32, device=dist.device)
    carries = []
    for j in range(nb):
        carries.append(total)  # the carry into block j is the same sequence of adds as the total so far
        total = total + bsum[:, j]
    carry = torch.stack(carries, dim=1)  # [rows, nb]
    running = carry[:, :, None] + sequential_cumsum_f32(blocks.contiguous())  # [rows, nb, width]
    return running.reshape(rows, nb * width)[:, :V], total


def chain_pick(running: torch.Tensor, thr: torch.Tensor) -> torch.Tensor:
    """First index with running > thr (strict), else V-1. running [rows, V], thr [rows] -> int64 [rows].
    The running maximum is monotone, and first exceeds thr where ``running`` first does."""
    V = running.shape[1]
    peak = torch.cummax(running, dim=1).values
    idx = torch.searchsorted(peak, thr[:, None].contiguous(), right=True)[:, 0]
    return torch.where(idx >= V, torch.full_like(idx, V - 1), idx)


def chain_inverse_cdf(dist: torch.Tensor, coin: torch.Tensor) -> torch.Tensor:
    """SGLang's chain-sampler draw (blocks of 4096; total = block sums added in order; thr = coin *
    total; first index with carry + cumsum > thr, no mass test; else V-1). dist [rows, V] f32,
    coin [rows] -> int64 [rows]. No host synchronisation."""
    running, total = chain_running_table(dist)
    return chain_pick(running, coin.to(F32) * total)


def target_only_inverse_cdf(dist: torch.Tensor, coin: torch.Tensor, *, last_valid_fallback: bool) -> torch.Tensor:
    """The target-only sampler's terminal draw (FlashInfer's chunked scan: chunks of 1024*gcd(4, V),
    only tokens with mass, stop once the chunk sums pass thr, fallback the last token with mass seen
    (0.5.23) or V-1). dist [rows, V] f32, coin [rows] -> int64 [rows]."""
    dist = dist.to(F32)
    rows, V = dist.shape
    size = 1024 * math.gcd(4, V)
    blocks = _cdf_blocks(dist, size)
    bsum = pairwise_sum_logical(blocks, size)
    size = blocks.shape[2]
    nb = blocks.shape[1]
    dev = dist.device
    total = torch.zeros(rows, dtype=F32, device=dev)
    for j in range(nb):
        total = total + bsum[:, j]
    thr = coin.to(F32) * total
    cs = sequential_cumsum_f32(blocks)
    sampled = torch.full((rows,), -1, dtype=INT64, device=dev)
    last_valid = torch.full((rows,), -1, dtype=INT64, device=dev)
    agg = torch.zeros(rows, dtype=F32, device=dev)
    done = torch.zeros(rows, dtype=torch.bool, device=dev)
    for j in range(nb):
        active = ~done
        x = blocks[:, j]
        enter = active & ((agg + bsum[:, j]) > thr)
        hit = ((cs[:, j] + agg[:, None]) > thr[:, None]) & (x > 0)
        got = enter & hit.any(dim=1)
        sampled = torch.where(got, j * size + hit.to(torch.int8).argmax(dim=1), sampled)
        pos = x > 0
        lv = j * size + (size - 1) - pos.flip(1).to(torch.int8).argmax(dim=1)
        last_valid = torch.where(active & pos.any(dim=1), lv, last_valid)
        agg = torch.where(active, agg + bsum[:, j], agg)
        done = done | (active & (agg > thr))
    if last_valid_fallback:
        fallback = torch.where(last_valid >= 0, last_valid, torch.full_like(last_valid, V - 1))
    else:
        fallback = torch.full_like(last_valid, V - 1)
    return torch.where(sampled >= 0, sampled, fallback)
