"""Launchers: target_probs_from_logits and fill_bonus_tokens on Triton kernels; eagle_sample as glue
over the Triton kernels (the same driver as the torch backend's, ``torch_sampling.eagle_sample_with``)."""
from __future__ import annotations

import torch

from specviz.reference.sampling import GREEDY_TEMPERATURE, check_fill_bonus_args
from specviz.base.validate import logits_array

from .torch_common import F32, INT32, INT64, as_tensor
from .torch_sampling import check_logits_args, eagle_sample_with, per_row_values
from .triton_common import DeviceCache, FastLaunch, pow2, triton_device
from .triton_dspark_kernels import fill_bonus_tokens_kernel
from .triton_sampling_kernels import target_probs_kernel, target_probs_row_kernel, target_probs_split_kernel
from . import triton_verify


# Rows of at most this many tokens are held in one program's registers (target_probs_row_kernel: one read
# and one write of the row); longer rows take the split kernel (temperature only, Python numbers: the row in
# chunks across programs, 2 reads and a write) or the multi-pass kernel (top-k / top-p, or per-row values).
# 32768 floats over 16 warps: 64 a thread.
ROW_IN_REGISTERS_MAX = 32768
SPLIT_CHUNK = 8192  # tokens a program of the split kernel holds in registers (8 warps: 32 floats a thread)
SPLIT_WARPS = 8
SPLIT_FINAL_BLOCK = 4096  # the last program's block as it writes the row
_ROW_KERNEL = FastLaunch(target_probs_row_kernel)
_SPLIT_KERNEL = FastLaunch(target_probs_split_kernel)
_SPLIT_COUNTERS = DeviceCache()  # [rows] finished chunks, left zero by the kernel
_SPLIT_PARTS = DeviceCache()  # [rows, 2, NC_P2] chunk max / sum, written before read
_PASS_KERNEL = FastLaunch(target_probs_kernel)
_FILL_BONUS = FastLaunch(fill_bonus_tokens_kernel)


def _scalar(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def target_probs_from_logits(logits, *, temperature, top_k=None, top_p=None, validate=True) -> torch.Tensor:
    """logits [rows, V] -> target_probs [rows, V] float32: softmax(logits / T), top-k, then top-p renorm.

    Python numbers (or None) for temperature, top_k and top_p go to the kernel as scalar arguments
    (no per-row tensors built); tensors or sequences go as per-row float32 tensors."""
    device = triton_device(logits, temperature, top_k, top_p)
    if validate:
        logits_array("logits", logits, 2)
    lg = as_tensor("logits", logits, F32, device)
    rows, V = lg.shape
    has_p = top_p is not None
    if _scalar(temperature) and _scalar(top_k) and _scalar(top_p) and temperature is not None:
        if validate:
            check_logits_args(logits, *(per_row_values(name, value, 1, kind, "cpu", True) for name, value, kind in (
                ("temperature", temperature, "required"), ("top_k", top_k, "optional"), ("top_p", top_p, "optional"))))
        greedy = temperature < GREEDY_TEMPERATURE  # greedy rows become top_k 1 at temperature 1
        temp_s = 1.0 if greedy else float(temperature)
        k_s = 1.0 if greedy else 0.0 if top_k is None else float(top_k)
        p_s = 1.0 if top_p is None else float(top_p)
        has_k = top_k is not None or greedy
        temp32 = tk32 = tp32 = lg  # unread
        scalars = True
    else:
        temp = per_row_values("temperature", temperature, rows, "required", device, validate)
        tk = per_row_values("top_k", top_k, rows, "optional", device, validate)
        tpp = per_row_values("top_p", top_p, rows, "optional", device, validate)
        if validate:
            check_logits_args(logits, temp, tk, tpp)
        greedy = temp < GREEDY_TEMPERATURE
        temp32 = torch.where(greedy, torch.ones_like(temp), temp).to(F32).contiguous()
        # Greedy rows become top_k 1; per-row temperatures may hold a greedy row, so top-k is compiled in.
        has_k = True
        tk32 = torch.where(greedy, torch.ones_like(tk), torch.nan_to_num(tk, nan=0.0)).to(F32).contiguous()
        tp32 = torch.nan_to_num(tpp, nan=1.0).to(F32).contiguous()
        temp_s = k_s = p_s = 0.0
        scalars = False
    probs = torch.empty(rows, V, dtype=F32, device=device)
    if rows:
        args = (lg, temp32, tk32, tp32, probs, V, temp_s, k_s, p_s, has_k, has_p, scalars)
        if V <= ROW_IN_REGISTERS_MAX:
            block = pow2(V, 16)
            _ROW_KERNEL((rows,), *args, block, num_warps=max(1, min(16, block // 2048)))
        elif scalars and not has_k and not has_p:
            nc = -(-V // SPLIT_CHUNK)
            nc_p2 = pow2(nc)
            _SPLIT_KERNEL((rows, nc), lg, probs, _SPLIT_PARTS.get(rows * 2 * nc_p2, device),
                          _SPLIT_COUNTERS.get(rows, device), V, temp_s, SPLIT_CHUNK, nc, nc_p2, SPLIT_FINAL_BLOCK,
                          num_warps=SPLIT_WARPS)
        else:
            _PASS_KERNEL((rows,), *args, min(4096, pow2(V, 16)), num_warps=4 if V <= 4096 else 8)
    return probs


def _int_tensor(name, x, device) -> torch.Tensor:
    """``x`` as a contiguous int32 or int64 tensor on ``device``: an int32 one (what the samplers return) is
    taken as it is (the kernel is compiled for either), anything else converted to int64."""
    if isinstance(x, torch.Tensor) and x.dtype == INT32 and x.device == device and x.is_contiguous():
        return x
    return as_tensor(name, x, INT64, device)


def fill_bonus_tokens(accept_tokens, accept_lens, *, stride, validate=True) -> torch.Tensor:
    """bonus[b] = accept_tokens_flat[b*stride + accept_lens[b] - 1] (int32). stride = W = S+1, not n."""
    device = triton_device(accept_tokens, accept_lens)
    if validate:
        check_fill_bonus_args(accept_tokens, accept_lens, stride)
    at = _int_tensor("accept_tokens", accept_tokens, device).reshape(-1)
    al = _int_tensor("accept_lens", accept_lens, device)
    bs = al.shape[0]
    bonus = torch.empty(bs, dtype=INT32, device=device)
    if bs:
        _FILL_BONUS((max(1, -(-bs // 256)),), at, al, bonus, bs, int(stride), 256)
    return bonus


class _TritonOps:
    """The Triton functions eagle_sample composes."""

    device_for = staticmethod(lambda *xs: triton_device(*xs))
    verify_tree_greedy = staticmethod(triton_verify.verify_tree_greedy)
    tree_sampling_target_only = staticmethod(triton_verify.tree_sampling_target_only)
    chain_rejection_sampling = staticmethod(triton_verify.chain_rejection_sampling)
    target_probs_from_logits = staticmethod(target_probs_from_logits)
    fill_bonus_tokens = staticmethod(fill_bonus_tokens)


def eagle_sample(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, logits, **kwargs):
    """The EAGLE verify driver over the Triton kernels (argmax / probabilities, accept, bonus)."""
    return eagle_sample_with(_TritonOps, candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, logits,
                             **kwargs)
