"""Launchers of the Triton DSpark / DFlash kernels (SEMANTICS.md §8) and fill_bonus_tokens.

Validation reuses the torch backend's checks (the reference's messages); ``validate=False`` skips them.
"""
from __future__ import annotations

import numpy as np
import torch

from specviz.reference.dspark import dspark_windows, check_greedy_args

from .torch_common import F32, INT32, INT64, as_tensor
from .torch_dspark import check_cap_args, check_finalize_args, check_out_tokens_args
from .torch_verify import check_chain_inputs
from .triton_common import FastLaunch, pow2, triton_device
from .triton_dspark_kernels import (build_out_tokens_kernel, cap_correct_len_kernel, dspark_accept_greedy_kernel,
                                    finalize_accept_lens_kernel)
from .triton_verify import chain_launch

ELEMENTWISE_BLOCK = 256
_DSPARK_GREEDY = FastLaunch(dspark_accept_greedy_kernel)
_CAP = FastLaunch(cap_correct_len_kernel)
_FINALIZE = FastLaunch(finalize_accept_lens_kernel)
_OUT_TOKENS = FastLaunch(build_out_tokens_kernel)


def dspark_accept_greedy(candidates, target_predict, *, validate=True):
    """(correct_len int32 [bs], bonus int64 [bs]) for windows candidates / target_predict [bs, T]."""
    device = triton_device(candidates, target_predict)
    if validate:
        check_greedy_args(candidates, target_predict)
    cand = as_tensor("candidates", candidates, INT64, device)
    tp = as_tensor("target_predict", target_predict, INT64, device)
    bs, T = cand.shape
    correct_len = torch.empty(bs, dtype=INT32, device=device)
    bonus = torch.empty(bs, dtype=INT64, device=device)
    _DSPARK_GREEDY((bs,), cand, tp, correct_len, bonus, T, pow2(T), num_warps=1)
    return correct_len, bonus


def dspark_accept_sampling(candidates, target_probs, draft_probs, uniform_samples, uniform_samples_for_final_sampling,
                           *, validate=True):
    """The chain kernel on chain buffers; the kernel stores the bonus (= predicts[accept_index[b, correct_len]])."""
    device = triton_device(candidates, target_probs, draft_probs)
    if validate:
        cand_np = dspark_windows("candidates", candidates)
        bs, T = cand_np.shape
        check_chain_inputs(cand_np, np.arange(bs * T, dtype=np.int64).reshape(bs, T), uniform_samples,
                           uniform_samples_for_final_sampling, target_probs, draft_probs, T, "0.5.23")
    cand = as_tensor("candidates", candidates, INT64, device)
    bs, T = cand.shape
    ri = torch.arange(bs * T, dtype=INT64, device=device).reshape(bs, T)
    bonus = torch.empty(bs, dtype=INT64, device=device)
    _, _, correct_len = chain_launch(
        cand, ri, as_tensor("uniform_samples", uniform_samples, F32, device),
        as_tensor("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, F32, device),
        as_tensor("target_probs", target_probs, F32, device), as_tensor("draft_probs", draft_probs, F32, device),
        new=True, bonus=bonus)
    return correct_len, bonus


def _grid(bs: int):
    return (max(1, -(-bs // ELEMENTWISE_BLOCK)),)


def cap_correct_len(correct_len, verify_lens, *, validate=True):
    """capped = min(correct_len, verify_lens - 1); cap_trim_lens = correct_len - capped (both int32)."""
    device = triton_device(correct_len, verify_lens)
    if validate:
        check_cap_args(correct_len, verify_lens)
    cl = as_tensor("correct_len", correct_len, INT64, device)
    vl = as_tensor("verify_lens", verify_lens, INT64, device)
    bs = cl.shape[0]
    capped = torch.empty(bs, dtype=INT32, device=device)
    trim = torch.empty(bs, dtype=INT32, device=device)
    _CAP((_grid(bs)[0],), cl, vl, capped, trim, bs, ELEMENTWISE_BLOCK)
    return capped, trim


def finalize_accept_lens(correct_len, prefix_lens, *, validate=True):
    """commit_lens = correct_len + 1 (int32); new_seq_lens = prefix_lens + commit_lens (int64)."""
    device = triton_device(correct_len, prefix_lens)
    if validate:
        check_finalize_args(correct_len, prefix_lens)
    cl = as_tensor("correct_len", correct_len, INT64, device)
    pl = as_tensor("prefix_lens", prefix_lens, INT64, device)
    bs = cl.shape[0]
    commit = torch.empty(bs, dtype=INT32, device=device)
    new_seq = torch.empty(bs, dtype=INT64, device=device)
    _FINALIZE((_grid(bs)[0],), cl, pl, commit, new_seq, bs, ELEMENTWISE_BLOCK)
    return commit, new_seq


def build_out_tokens(draft_tokens, correct_len, bonus, *, validate=True):
    """out [bs, gamma+1] int64: drafts, 0 in the last column, bonus at correct_len."""
    device = triton_device(draft_tokens, correct_len, bonus)
    if validate:
        check_out_tokens_args(draft_tokens, correct_len, bonus)
    dt = as_tensor("draft_tokens", draft_tokens, INT64, device)
    cl = as_tensor("correct_len", correct_len, INT64, device)
    bn = as_tensor("bonus", bonus, INT64, device)
    bs, gamma = dt.shape
    out = torch.empty((bs, gamma + 1), dtype=INT64, device=device)
    _OUT_TOKENS((bs,), dt, cl, bn, out, gamma, pow2(gamma + 1), num_warps=1)
    return out
