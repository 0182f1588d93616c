"""From target logits to the accepted path in torch: the eagle_sample flow (SEMANTICS.md §5).

target_probs_from_logits: softmax(logits / T), then top-k renorm, then top-p renorm, every row at
once (per-row k / p as tensors; ties at the cut are kept, as FlashInfer does).
"""
from __future__ import annotations

import numpy as np
import torch

from specviz.base.errors import SpecvizError
from specviz.reference.sampling import GREEDY_TEMPERATURE, per_row, check_fill_bonus_args
from specviz.base.results import EagleSampleResult
from specviz.base.validate import check_width, logits_array

from .torch_common import F32, INT32, INT64, as_tensor, pick_device
from .torch_verify import (check_chain_inputs, check_tree_inputs, check_tree_sampling_args, chain_rejection_sampling,
                           tree_sampling_target_only, verify_tree_greedy)


def per_row_values(name: str, value, rows: int, kind: str, device, validate: bool) -> torch.Tensor:
    """A scalar or one value per row as a float64 [rows] tensor; None -> NaN (off)."""
    if validate:
        return torch.as_tensor(per_row(name, value, rows, kind), dtype=torch.float64, device=device)
    if value is None or isinstance(value, (int, float)):  # a fill on the device: no host copy (CUDA graphs)
        return torch.full((rows,), float("nan") if value is None else float(value), dtype=torch.float64, device=device)
    v = torch.as_tensor(value).to(device=device, dtype=torch.float64)
    return v.expand(rows) if v.dim() == 0 else v


def check_logits_args(logits, temp, tk, tpp):
    lg = logits_array("logits", logits, 2)
    if lg.shape[1] < 1:
        raise SpecvizError("logits", "has an empty vocabulary axis")
    t, k, p = (x.cpu().numpy() for x in (temp, tk, tpp))
    if np.any(t < 0):
        raise SpecvizError("temperature", f"holds {t.min()}: temperatures cannot be negative (0 = greedy)")
    if np.any(~np.isnan(k) & ((k < 1) | (k != np.round(k)))):
        raise SpecvizError("top_k", "must be a whole number >= 1 (or None for off)")
    if np.any(~np.isnan(p) & ((p <= 0) | (p > 1))):
        raise SpecvizError("top_p", "must lie in (0, 1] (or None / 1.0 for off)")


def renorm_top_k(probs: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Rows with k (float, NaN = off, >= V = off): keep probs >= the k-th largest, renormalise."""
    V = probs.shape[1]
    on = ~torch.isnan(k) & (k < V)
    kk = torch.where(on, k, torch.ones_like(k)).clamp(1, V).to(INT64)
    desc = probs.sort(dim=1, descending=True).values
    pivot = desc.gather(1, (kk - 1)[:, None])
    kept = torch.where(probs >= pivot, probs, torch.zeros((), dtype=F32, device=probs.device))
    kept = kept / kept.sum(dim=1, keepdim=True)
    return torch.where(on[:, None], kept, probs)


def renorm_top_p(probs: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Rows with top_p < 1: pivot = first ascending prob whose cumulative sum >= 1 - top_p; keep >= pivot."""
    V = probs.shape[1]
    on = ~torch.isnan(top_p) & (top_p < 1.0)
    asc = probs.sort(dim=1).values
    cums = torch.cumsum(asc, dim=1)
    need = (1.0 - torch.where(on, top_p, torch.ones_like(top_p)).to(F32))[:, None]
    hit = cums >= need
    idx = torch.where(hit.any(dim=1), hit.to(torch.int8).argmax(dim=1), torch.full_like(on, V - 1, dtype=INT64))
    pivot = asc.gather(1, idx[:, None])
    kept = torch.where(probs >= pivot, probs, torch.zeros((), dtype=F32, device=probs.device))
    kept = kept / kept.sum(dim=1, keepdim=True)
    return torch.where(on[:, None], kept, probs)


def target_probs_from_logits(logits, *, temperature, top_k=None, top_p=None, validate=True) -> torch.Tensor:
    """logits [rows, V] -> target_probs [rows, V] float32 (SEMANTICS.md §5.1-§5.2).

    temperature: scalar or [rows]; below 1e-6 means greedy (top_k 1 at temperature 1).
    top_k: None or >= V is off; top_p: None or 1.0 is off. ``validate=False`` skips the checks.
    """
    device = pick_device(logits, temperature, top_k, top_p)
    lg = as_tensor("logits", logits, F32, device)
    if validate and lg.dim() != 2:
        logits_array("logits", logits, 2)
    rows = lg.shape[0]
    temp = per_row_values("temperature", temperature, rows, "required", device, validate)
    tk = per_row_values("top_k", top_k, rows, "optional", device, validate)
    tpp = per_row_values("top_p", top_p, rows, "optional", device, validate)
    if validate:
        check_logits_args(logits, temp, tk, tpp)
    greedy = temp < GREEDY_TEMPERATURE
    temp = torch.where(greedy, torch.ones_like(temp), temp)
    tk = torch.where(greedy, torch.ones_like(tk), tk)
    scaled = lg / temp[:, None].to(F32)
    scaled = scaled - scaled.amax(dim=1, keepdim=True)
    e = torch.exp(scaled.to(torch.float64)).to(F32)  # exp rounded once to float32, as the reference does
    probs = e / e.sum(dim=1, keepdim=True)
    # Which renorms can apply is known on the host (rows where they are off pass through unchanged),
    # so no device read: the function can be captured in a CUDA graph.
    if top_k is not None or not isinstance(temperature, (int, float)) or temperature < GREEDY_TEMPERATURE:
        probs = renorm_top_k(probs, tk)
    if top_p is not None:
        probs = renorm_top_p(probs, tpp)
    return probs


def fill_bonus_tokens(accept_tokens, accept_lens, *, stride, validate=True) -> torch.Tensor:
    """bonus[b] = accept_tokens_flat[b*stride + accept_lens[b] - 1] (int32). stride = W = S+1, not n."""
    device = pick_device(accept_tokens, accept_lens)
    if validate:
        check_fill_bonus_args(accept_tokens, accept_lens, stride)
    at = as_tensor("accept_tokens", accept_tokens, INT64, device).reshape(-1)
    al = as_tensor("accept_lens", accept_lens, INT64, device)
    idx = torch.arange(al.shape[0], device=device) * int(stride) + al - 1
    return at[idx].to(INT32)


def gather_accept_tokens(predicts: torch.Tensor, accept_index: torch.Tensor, accept_lens: torch.Tensor) -> torch.Tensor:
    """predicts[accept_index] over each row's valid prefix (accept_lens), -1 beyond. [bs, W] int32."""
    W = accept_index.shape[1]
    valid = torch.arange(W, device=accept_index.device)[None, :] < accept_lens[:, None]
    idx = torch.where(valid, accept_index.to(INT64), torch.zeros((), dtype=INT64, device=accept_index.device))
    return torch.where(valid, predicts.reshape(-1)[idx], torch.full_like(idx, -1)).to(INT32)


def eagle_sample_with(ops, candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, logits, *,
                      num_speculative_tokens, temperature, top_k=None, top_p=None, use_rejection_sampling=False,
                      draft_probs=None, uniform_samples=None, uniform_samples_for_final_sampling=None,
                      threshold_single=1.0, threshold_acc=1.0, semantics="0.5.23", validate=True) -> EagleSampleResult:
    """The EAGLE verify driver over a backend namespace ``ops`` (torch or Triton functions).

    logits [bs*n, V] request-major; temperature / top_k / top_p one value or one per request.
    Greedy path when every request is greedy; else the chain sampler (use_rejection_sampling) or
    the target-only tree sampler. Returns predicts, accept_index, accept_lens, accept_tokens, bonus.
    """
    device = ops.device_for(candidates, logits)
    if validate:
        cand_np, *_ = check_tree_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
        bs, n = cand_np.shape
        lg_np = logits_array("logits", logits, 2)
        if lg_np.shape[0] != bs * n:
            raise SpecvizError("logits", f"has {lg_np.shape[0]} rows but bs*n = {bs * n}: one row per verify row, request-major")
        check_width("num_speculative_tokens", num_speculative_tokens, n)
    cand = as_tensor("candidates", candidates, INT64, device)
    bs, n = cand.shape
    lg = as_tensor("logits", logits, F32, device)
    W = int(num_speculative_tokens)
    temp_req = per_row_values("temperature", temperature, bs, "required", device, validate)
    tk_req = per_row_values("top_k", top_k, bs, "optional", device, validate)
    tp_req = per_row_values("top_p", top_p, bs, "optional", device, validate)
    kw = dict(validate=validate)
    if bool((temp_req < GREEDY_TEMPERATURE).all()):
        target_predict = lg.argmax(dim=1).reshape(bs, n)  # ties -> lowest id
        res = ops.verify_tree_greedy(cand, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict,
                                     num_speculative_tokens=W, predicts_init=0, **kw)
    else:
        tk_rows = tk_req.repeat_interleave(n)
        tp_rows = tp_req.repeat_interleave(n)
        V = lg.shape[1]
        probs = ops.target_probs_from_logits(
            lg, temperature=temp_req.repeat_interleave(n),
            top_k=None if bool(torch.isnan(tk_rows).all()) else torch.where(torch.isnan(tk_rows), float(V), tk_rows),
            top_p=None if bool(torch.isnan(tp_rows).all()) else torch.where(torch.isnan(tp_rows), 1.0, tp_rows),
            **kw).reshape(bs, n, -1)
        if uniform_samples is None or uniform_samples_for_final_sampling is None:
            raise SpecvizError("uniform_samples", "is missing: a sampling path needs coins (uniform_samples and "
                               "uniform_samples_for_final_sampling); specviz never draws them behind your back")
        if use_rejection_sampling:
            if draft_probs is None:
                raise SpecvizError("draft_probs", "is missing: rejection sampling requires the draft's proposal distribution "
                                   "over the target vocabulary (SGLang raises ValueError here)")
            res = ops.chain_rejection_sampling(cand, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                                               probs, draft_probs, num_speculative_tokens=W, semantics=semantics, **kw)
        else:
            res = ops.tree_sampling_target_only(cand, retrieve_index, retrieve_next_token, retrieve_next_sibling,
                                                uniform_samples, uniform_samples_for_final_sampling, probs,
                                                num_speculative_tokens=W, threshold_single=threshold_single,
                                                threshold_acc=threshold_acc, semantics=semantics, **kw)
    accept_lens = (res.accept_token_num.to(INT64) + 1).to(INT32)
    accept_tokens = gather_accept_tokens(res.predicts, res.accept_index, accept_lens)
    bonus = ops.fill_bonus_tokens(accept_tokens, accept_lens, stride=W, validate=False)
    return EagleSampleResult(predicts=res.predicts, accept_index=res.accept_index, accept_lens=accept_lens,
                             accept_tokens=accept_tokens, bonus=bonus)


class _TorchOps:
    """The torch functions eagle_sample composes."""

    device_for = staticmethod(lambda *xs: pick_device(*xs))
    verify_tree_greedy = staticmethod(verify_tree_greedy)
    tree_sampling_target_only = staticmethod(tree_sampling_target_only)
    chain_rejection_sampling = staticmethod(chain_rejection_sampling)
    target_probs_from_logits = staticmethod(target_probs_from_logits)
    fill_bonus_tokens = staticmethod(fill_bonus_tokens)


def eagle_sample(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, logits, **kwargs) -> EagleSampleResult:
    """The EAGLE verify driver on the torch backend (see ``eagle_sample_with``)."""
    return eagle_sample_with(_TorchOps, candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, logits, **kwargs)


__all__ = ["target_probs_from_logits", "fill_bonus_tokens", "eagle_sample", "gather_accept_tokens",
           "check_chain_inputs", "check_tree_sampling_args"]
