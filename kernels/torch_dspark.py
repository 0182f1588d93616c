"""DSpark / DFlash chain accept in torch (SEMANTICS.md §8), vectorised over the batch.

Verify window per request: T = gamma + 1 rows; candidates[:, 0] is the anchor, candidates[:, 1:]
the gamma drafts; target_predict[:, t] is the target's token after row t.
"""
from __future__ import annotations

import numpy as np
import torch

from specviz.reference.dspark import dspark_windows, check_cap_args, check_greedy_args, check_finalize_args, check_out_tokens_args

from .torch_common import F32, INT32, INT64, as_tensor, pick_device
from .torch_verify import chain_core, check_chain_inputs


def dspark_accept_greedy(candidates, target_predict, *, validate=True):
    """correct_len = leading run of candidates[:, t+1] == target_predict[:, t]; bonus = target_predict[correct_len].

    candidates [bs, T], target_predict [bs, T] -> (correct_len int32 [bs], bonus int64 [bs]).
    """
    device = pick_device(candidates, target_predict)
    if validate:
        check_greedy_args(candidates, target_predict)
    cand = as_tensor("candidates", candidates, INT64, device)
    tp = as_tensor("target_predict", target_predict, INT64, device)
    match = cand[:, 1:] == tp[:, :-1]  # [bs, T-1]
    correct_len = torch.cumprod(match.to(INT32), dim=1).sum(dim=1, dtype=INT64)  # leading run of matches
    bonus = tp.gather(1, correct_len[:, None])[:, 0]
    return correct_len.to(INT32), bonus


def dspark_accept_sampling(candidates, target_probs, draft_probs, uniform_samples, uniform_samples_for_final_sampling,
                           *, validate=True):
    """The chain rejection sampler on chain buffers, then the two-level gather (SEMANTICS.md §8).

    candidates [bs, T]; target_probs [bs, T, V]; draft_probs [bs, gamma, V]; uniform_samples [bs, >= gamma];
    uniform_samples_for_final_sampling [bs] -> (correct_len int32 [bs], bonus int64 [bs]).
    """
    device = pick_device(candidates, target_probs, draft_probs)
    if validate:
        cand_np = dspark_windows("candidates", candidates)
        bs, T = cand_np.shape
        ri_np = np.arange(bs * T, dtype=np.int64).reshape(bs, T)
        check_chain_inputs(cand_np, ri_np, uniform_samples, uniform_samples_for_final_sampling, target_probs,
                           draft_probs, T, "0.5.23")
    cand = as_tensor("candidates", candidates, INT64, device)
    bs, T = cand.shape
    ri = torch.arange(bs * T, dtype=INT64, device=device).reshape(bs, T)
    predicts, accept_index, k = chain_core(
        cand, ri, as_tensor("uniform_samples", uniform_samples, F32, device),
        as_tensor("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, F32, device),
        as_tensor("target_probs", target_probs, F32, device), as_tensor("draft_probs", draft_probs, F32, device), new=True)
    bonus = predicts[accept_index.gather(1, k[:, None])[:, 0].to(INT64)].to(INT64)
    return k.to(INT32), bonus


def cap_correct_len(correct_len, verify_lens, *, validate=True):
    """capped = min(correct_len, verify_lens - 1); cap_trim_lens = correct_len - capped (both int32)."""
    device = pick_device(correct_len, verify_lens)
    if validate:
        check_cap_args(correct_len, verify_lens)
    cl = as_tensor("correct_len", correct_len, INT64, device)
    vl = as_tensor("verify_lens", verify_lens, INT64, device)
    capped = torch.minimum(cl, vl - 1)
    return capped.to(INT32), (cl - capped).to(INT32)


def finalize_accept_lens(correct_len, prefix_lens, *, validate=True):
    """commit_lens = correct_len + 1 (int32); new_seq_lens = prefix_lens + commit_lens (int64)."""
    device = pick_device(correct_len, prefix_lens)
    if validate:
        check_finalize_args(correct_len, prefix_lens)
    cl = as_tensor("correct_len", correct_len, INT64, device)
    pl = as_tensor("prefix_lens", prefix_lens, INT64, device)
    commit = cl + 1
    return commit.to(INT32), pl + commit


def build_out_tokens(draft_tokens, correct_len, bonus, *, validate=True):
    """out [bs, T] int64: drafts in columns 0..gamma-1, 0 in column gamma, bonus scattered at correct_len."""
    device = pick_device(draft_tokens, correct_len, bonus)
    if validate:
        check_out_tokens_args(draft_tokens, correct_len, bonus)
    dt = as_tensor("draft_tokens", draft_tokens, INT64, device)
    cl = as_tensor("correct_len", correct_len, INT64, device)
    bn = as_tensor("bonus", bonus, INT64, device)
    out = torch.cat([dt, torch.zeros((dt.shape[0], 1), dtype=INT64, device=device)], dim=1)
    out.scatter_(1, cl[:, None], bn[:, None])
    return out
