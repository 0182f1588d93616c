"""From target logits to the accepted path: the eagle_sample flow (SEMANTICS.md §5).

target_probs_from_logits: softmax(logits / T), then top-k renorm, then top-p renorm (ties kept).
eagle_sample: greedy path, chain rejection sampler or target-only tree sampler, then the
hand-off (accept_lens, accept_tokens, bonus).
"""
from __future__ import annotations

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.base.results import EagleSampleResult
from specviz.base.trace import Trace
from specviz.base.validate import check_int32, check_tree_arrays, check_width, int_array, logits_array
from specviz.reference.chain_sampling import chain_rejection_sampling
from specviz.reference.target_only import tree_sampling_target_only
from specviz.reference.verify import verify_tree_greedy

from specviz.base.probs import F32, GREEDY_TEMPERATURE, per_row, target_probs_from_logits, top_k_renorm, top_p_renorm  # noqa: F401  (re-exported)


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
    temp_req = per_row("temperature", temperature, bs, "required")
    tk_req = per_row("top_k", top_k, bs, "optional")
    tp_req = per_row("top_p", top_p, bs, "optional")
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
