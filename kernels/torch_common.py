"""Shared plumbing of the torch and Triton backends: tensor conversion and input validation.

Both backends accept torch tensors (CPU or CUDA), numpy arrays or nested lists and return torch
tensors with SGLang's dtypes (int64 tree tensors, int32 predicts / accept_index /
accept_token_num, float32 probabilities). Validation reuses ``specviz.validate`` and the
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

import numpy as np
import torch

from specviz.errors import SpecvizError
from specviz.validate import to_numpy

INT64 = torch.int64
INT32 = torch.int32
F32 = torch.float32


def pick_device(*values, default: str | torch.device = "cpu") -> torch.device:
    """The device of the first torch tensor among ``values``; ``default`` when none is a tensor."""
    for v in values:
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device(default)


def as_tensor(name: str, x, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``x`` as a contiguous tensor of ``dtype`` on ``device`` (no copy when it already is one)."""
    if isinstance(x, torch.Tensor) and x.dtype == dtype and x.device == device and x.is_contiguous():
        return x  # the common case, kept cheap: benchmarks time the Python call
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
