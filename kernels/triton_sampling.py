"""Launchers: target_probs_from_logits and fill_bonus_tokens on Triton kernels; eagle_sample as glue
over the Triton kernels (the same driver as the torch backend's, ``torch_sampling.eagle_sample_with``)."""
from __future__ import annotations

import torch

from specviz.reference.sampling import GREEDY_TEMPERATURE, check_fill_bonus_args
from specviz.validate import logits_array

from .torch_common import F32, INT32, INT64, as_tensor
from .torch_sampling import check_logits_args, eagle_sample_with, per_row_values
from .triton_common import FastLaunch, pow2, triton_device
from .triton_dspark_kernels import fill_bonus_tokens_kernel
from .triton_sampling_kernels import target_probs_kernel, target_probs_row_kernel
from . import triton_verify


# Rows of at most this many tokens are held in one program's registers (target_probs_row_kernel: one read
# and one write of the row); longer rows take the multi-pass kernel. 32768 floats over 16 warps: 64 a thread.
ROW_IN_REGISTERS_MAX = 32768
_ROW_KERNEL = FastLaunch(target_probs_row_kernel)
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
    probs = torch.empty((rows, V), dtype=F32, device=device)
    if rows:
        args = (lg, temp32, tk32, tp32, probs, V, temp_s, k_s, p_s, has_k, has_p, scalars)
        if V <= ROW_IN_REGISTERS_MAX:
            block = pow2(V, 16)
            _ROW_KERNEL((rows,), *args, block, num_warps=max(1, min(16, block // 2048)))
        else:
            _PASS_KERNEL((rows,), *args, min(4096, pow2(V, 16)), num_warps=4 if V <= 4096 else 8)
    return probs


def fill_bonus_tokens(accept_tokens, accept_lens, *, stride, validate=True) -> torch.Tensor:
    """bonus[b] = accept_tokens_flat[b*stride + accept_lens[b] - 1] (int32). stride = W = S+1, not n."""
    device = triton_device(accept_tokens, accept_lens)
    if validate:
        check_fill_bonus_args(accept_tokens, accept_lens, stride)
    at = as_tensor("accept_tokens", accept_tokens, INT64, device).reshape(-1)
    al = as_tensor("accept_lens", accept_lens, INT64, device)
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
