"""From target logits to the accepted path: the eagle_sample flow (SEMANTICS.md §5).

target_probs_from_logits: softmax(logits / T), then top-k renorm, then top-p renorm (ties kept).
eagle_sample: greedy path, chain rejection sampler or target-only tree sampler, then the
hand-off (accept_lens, accept_tokens, bonus).
"""
from __future__ import annotations

import numpy as np

from ..errors import SpecvizError
from ..results import EagleSampleResult
from ..trace import Trace
from ..validate import check_int32, check_tree_arrays, check_width, int_array, logits_array
from .verify import chain_rejection_sampling, tree_sampling_target_only, verify_tree_greedy

F32 = np.float32
GREEDY_TEMPERATURE = 1e-6  # SGLang rewrites T < 1e-6 as greedy (top_k 1 at T 1)


def _per_row(name: str, value, rows: int, kind: str) -> np.ndarray:
    """A scalar for every row, or one value per row. None -> NaN (off)."""
    if value is None:
        return np.full(rows, np.nan)
    arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(rows, float(arr))
    if arr.shape != (rows,):
        raise SpecvizError(name, f"has shape {list(arr.shape)}: give one number, or one per row ({rows})")
    if np.any(np.isnan(arr)) and kind != "optional":
        raise SpecvizError(name, "contains NaN: give a number for every row")
    return arr


def top_k_renorm(probs: np.ndarray, k: int) -> np.ndarray:
    """Keep every probability >= the k-th largest (ties kept), renormalise. [V] -> [V]."""
    V = probs.shape[0]
    k = min(max(int(k), 1), V)
    pivot = np.sort(probs)[::-1][k - 1]
    kept = np.where(probs >= pivot, probs, F32(0)).astype(F32)
    return (kept / kept.sum(dtype=F32)).astype(F32)


def top_p_renorm(probs: np.ndarray, top_p: float) -> np.ndarray:
    """Pivot = first ascending-sorted prob whose cumulative sum >= 1 - top_p; keep probs >= pivot."""
    asc = np.sort(probs)
    cums = np.cumsum(asc, dtype=F32)
    hit = np.nonzero(cums >= F32(1.0) - F32(top_p))[0]
    pivot = asc[hit[0]] if hit.size else asc[-1]
    kept = np.where(probs >= pivot, probs, F32(0)).astype(F32)
    return (kept / kept.sum(dtype=F32)).astype(F32)


def target_probs_from_logits(logits, *, temperature, top_k=None, top_p=None) -> np.ndarray:
    """logits [rows, V] -> target_probs [rows, V] float32.

    temperature: scalar or [rows]; 0 (below 1e-6) means greedy, which SGLang turns into
    top_k 1 at temperature 1. top_k: None or >= V is off. top_p: None or 1.0 is off.
    """
    lg = logits_array("logits", logits, 2)
    rows, V = lg.shape
    if V < 1:
        raise SpecvizError("logits", "has an empty vocabulary axis")
    temp = _per_row("temperature", temperature, rows, "required")
    if np.any(temp < 0):
        raise SpecvizError("temperature", f"holds {temp.min()}: temperatures cannot be negative (0 = greedy)")
    tk = _per_row("top_k", top_k, rows, "optional")
    tpp = _per_row("top_p", top_p, rows, "optional")
    if np.any(~np.isnan(tk) & ((tk < 1) | (tk != np.round(tk)))):
        raise SpecvizError("top_k", "must be a whole number >= 1 (or None for off)")
    if np.any(~np.isnan(tpp) & ((tpp <= 0) | (tpp > 1))):
        raise SpecvizError("top_p", "must lie in (0, 1] (or None / 1.0 for off)")
    greedy = temp < GREEDY_TEMPERATURE
    temp = np.where(greedy, 1.0, temp)
    tk = np.where(greedy, 1.0, tk)
    scaled = (lg / temp[:, None].astype(F32)).astype(F32)
    scaled = scaled - scaled.max(axis=1, keepdims=True)
    # exp correctly rounded to float32 (float64 exp, then one rounding) on every backend: float32 exp
    # libraries disagree in the last bit, which decides near-ties at the top-k / top-p cut.
    e = np.exp(scaled.astype(np.float64)).astype(F32)
    probs = (e / e.sum(axis=1, keepdims=True, dtype=F32)).astype(F32)
    for r in range(rows):
        if not np.isnan(tk[r]) and tk[r] < V:
            probs[r] = top_k_renorm(probs[r], int(tk[r]))
        if not np.isnan(tpp[r]) and tpp[r] < 1.0:
            probs[r] = top_p_renorm(probs[r], float(tpp[r]))
    return probs


def check_fill_bonus_args(accept_tokens, accept_lens, stride):
    """Validate fill_bonus_tokens's inputs (shared by every backend); returns (flat tokens, lengths)."""
    at = int_array("accept_tokens", accept_tokens).reshape(-1)
    al = int_array("accept_lens", accept_lens, 1)
    check_int32("accept_tokens", at, "accept_tokens are gathered from SGLang's int32 predicts")
    check_int32("accept_lens", al)
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise SpecvizError("stride", f"is {stride!r}: it must be a whole number >= 1 (accept_index.shape[1])")
    if np.any(al < 1) or np.any(al > stride):
        raise SpecvizError("accept_lens", f"holds {int(al.min()) if al.min() < 1 else int(al.max())}: each length lies in [1, stride = {stride}]")
    if at.size < al.shape[0] * stride:
        raise SpecvizError("accept_tokens", f"has {at.size} entries; {al.shape[0]} requests x stride {stride} need {al.shape[0] * stride}")
    return at, al


def fill_bonus_tokens(accept_tokens, accept_lens, *, stride) -> np.ndarray:
    """bonus[b] = accept_tokens_flat[b*stride + accept_lens[b] - 1] (int32). stride = W = S+1, not n."""
    at, al = check_fill_bonus_args(accept_tokens, accept_lens, stride)
    idx = np.arange(al.shape[0]) * int(stride) + al - 1
    return at[idx].astype(np.int32)


def eagle_sample(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, logits, *,
                 num_speculative_tokens, temperature, top_k=None, top_p=None, use_rejection_sampling=False,
                 draft_probs=None, uniform_samples=None, uniform_samples_for_final_sampling=None,
                 threshold_single=1.0, threshold_acc=1.0, semantics="0.5.23", trace: Trace | None = None) -> EagleSampleResult:
    """The EAGLE verify driver: logits [bs*n, V] -> accepted path and hand-off.

    temperature / top_k / top_p: one value for all, or one per *request* (repeated over its n rows).
    Greedy path when every request is greedy; otherwise the chain rejection sampler
    (use_rejection_sampling) or the target-only tree sampler.
    """
    cand, ri, nt, ns = check_tree_arrays(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    bs, n = cand.shape
    lg = logits_array("logits", logits, 2)
    if lg.shape[0] != bs * n:
        raise SpecvizError("logits", f"has {lg.shape[0]} rows but bs*n = {bs * n}: one row per verify row, request-major")
    W = check_width("num_speculative_tokens", num_speculative_tokens, n)
    temp_req = _per_row("temperature", temperature, bs, "required")
    tk_req = _per_row("top_k", top_k, bs, "optional")
    tp_req = _per_row("top_p", top_p, bs, "optional")
    if np.all(temp_req < GREEDY_TEMPERATURE):
        target_predict = np.argmax(lg, axis=1).reshape(bs, n)  # ties -> lowest id
        res = verify_tree_greedy(cand, ri, nt, ns, target_predict, num_speculative_tokens=W, predicts_init=0, trace=trace)
    else:
        rep = lambda a: np.repeat(a, n)  # noqa: E731  one value per request -> per row
        tk_rows = rep(tk_req)
        tp_rows = rep(tp_req)
        probs = target_probs_from_logits(
            lg, temperature=rep(temp_req),
            top_k=None if np.all(np.isnan(tk_rows)) else np.where(np.isnan(tk_rows), lg.shape[1], tk_rows),
            top_p=None if np.all(np.isnan(tp_rows)) else np.where(np.isnan(tp_rows), 1.0, tp_rows),
        ).reshape(bs, n, -1)
        if uniform_samples is None or uniform_samples_for_final_sampling is None:
            raise SpecvizError("uniform_samples", "is missing: a sampling path needs coins (uniform_samples and "
                               "uniform_samples_for_final_sampling); specviz never draws them behind your back")
        if use_rejection_sampling:
            if draft_probs is None:
                raise SpecvizError("draft_probs", "is missing: rejection sampling requires the draft's proposal distribution "
                                   "over the target vocabulary (SGLang raises ValueError here)")
            res = chain_rejection_sampling(cand, ri, uniform_samples, uniform_samples_for_final_sampling, probs,
                                           draft_probs, num_speculative_tokens=W, semantics=semantics, trace=trace)
        else:
            res = tree_sampling_target_only(cand, ri, nt, ns, uniform_samples, uniform_samples_for_final_sampling,
                                            probs, num_speculative_tokens=W, threshold_single=threshold_single,
                                            threshold_acc=threshold_acc, semantics=semantics, trace=trace)
    accept_lens = (res.accept_token_num + 1).astype(np.int32)
    accept_tokens = gather_accept_tokens(res.predicts, res.accept_index, accept_lens)
    bonus = fill_bonus_tokens(accept_tokens, accept_lens, stride=W)
    return EagleSampleResult(predicts=res.predicts, accept_index=res.accept_index, accept_lens=accept_lens,
                             accept_tokens=accept_tokens, bonus=bonus)


def gather_accept_tokens(predicts, accept_index, accept_lens) -> np.ndarray:
    """predicts[accept_index] over each row's valid prefix (accept_lens), -1 beyond. [bs, W] int32."""
    pr = np.asarray(predicts).reshape(-1)
    ai = np.asarray(accept_index)
    al = np.asarray(accept_lens)
    valid = np.arange(ai.shape[1])[None, :] < al[:, None]
    return np.where(valid, pr[np.where(valid, ai, 0)], -1).astype(np.int32)


def raw_gather(predicts, accept_index) -> np.ndarray:
    """The hazardous raw gather predicts[accept_index]: a -1 pad reads the last flat element."""
    pr = np.asarray(predicts).reshape(-1)
    return pr[np.asarray(accept_index)].astype(np.int32)
