"""DSpark / DFlash chain accept (SEMANTICS.md §8).

Verify window per request: T = gamma + 1 rows; candidates[:, 0] is the anchor (previous bonus),
candidates[:, 1:] the gamma drafts. target_predict[:, t] is the target's token after row t.
"""
from __future__ import annotations

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.base.trace import Trace
from specviz.base.validate import INT64_MAX, check_int32, check_range, check_shape, check_tokens, int_array
from specviz.reference.chain_sampling import chain_rejection_sampling


def dspark_windows(name: str, candidates, int32: bool = False) -> np.ndarray:
    """int32: the tokens go through the chain sampler's int32 predicts (sampling path)."""
    cand = int_array(name, candidates, 2)
    if cand.shape[0] < 1 or cand.shape[1] < 1:
        raise SpecvizError(name, f"has shape {list(cand.shape)}: each request needs the anchor column")
    check_tokens(name, cand, None, int32=int32)
    return cand


def check_greedy_args(candidates, target_predict):
    """Validate dspark_accept_greedy's inputs (shared by every backend); returns them as int64 arrays."""
    cand = dspark_windows("candidates", candidates)
    tp = int_array("target_predict", target_predict, 2)
    check_shape("target_predict", tp, cand.shape, "(like candidates: [bs, T])")
    check_tokens("target_predict", tp, None, int32=False)  # int64 in SGLang's greedy DSpark path
    return cand, tp


def dspark_accept_greedy(candidates, target_predict, *, trace: Trace | None = None):
    """correct_len = leading run of candidates[:, t+1] == target_predict[:, t]; bonus = target_predict[correct_len].

    candidates [bs, T], target_predict [bs, T] -> (correct_len int32 [bs], bonus int64 [bs]).
    A match after the first mismatch is ignored.
    """
    cand, tp = check_greedy_args(candidates, target_predict)
    bs, T = cand.shape
    match = cand[:, 1:] == tp[:, :-1]  # [bs, T-1]
    # Leading run: cumulative product stops at the first False.
    correct_len = np.cumprod(match, axis=1).sum(axis=1).astype(np.int32) if T > 1 else np.zeros(bs, np.int32)
    bonus = tp[np.arange(bs), correct_len].astype(np.int64)
    if trace is not None:
        trace.begin("dspark_accept_greedy", correct_len=np.zeros(bs, np.int32), bonus=np.zeros(bs, np.int64))
        for b in range(bs):
            stopped = False
            for t in range(T - 1):
                hit = bool(match[b, t])
                trace.emit("compare", b, t + 1, token=int(cand[b, t + 1]), target=int(tp[b, t]), target_row=t,
                           match=hit, counted=hit and not stopped,
                           note="after the first mismatch: ignored" if stopped else "")
                stopped = stopped or not hit
            trace.emit("terminal", b, int(correct_len[b]), [("bonus", b, int(bonus[b]))], row=int(correct_len[b]), token=int(bonus[b]))
            trace.emit("commit", b, int(correct_len[b]), [("correct_len", b, int(correct_len[b]))], k=int(correct_len[b]),
                       accept_len=int(correct_len[b]) + 1)
    return correct_len, bonus


def dspark_accept_sampling(candidates, target_probs, draft_probs, uniform_samples, uniform_samples_for_final_sampling,
                           *, trace: Trace | None = None):
    """DSpark sampling: the chain rejection sampler on chain buffers, then the two-level gather.

    candidates [bs, T]; target_probs [bs, T, V]; draft_probs [bs, gamma, V]; uniform_samples [bs, gamma]
    (or [bs, T], last column unused); uniform_samples_for_final_sampling [bs].
    -> (correct_len int32 [bs], bonus int64 [bs] = predicts[accept_index[b, correct_len]]).
    """
    cand = dspark_windows("candidates", candidates, int32=True)
    bs, T = cand.shape
    retrieve_index = np.arange(bs * T, dtype=np.int64).reshape(bs, T)
    res = chain_rejection_sampling(cand, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                                   target_probs, draft_probs, num_speculative_tokens=T, trace=trace)
    correct_len = res.accept_token_num.astype(np.int32)
    bonus = res.predicts[res.accept_index[np.arange(bs), correct_len]].astype(np.int64)
    return correct_len, bonus


def check_cap_args(correct_len, verify_lens):
    """Validate cap_correct_len's inputs (shared by every backend); returns them as int64 arrays."""
    cl = int_array("correct_len", correct_len, 1)
    vl = int_array("verify_lens", verify_lens, 1)
    check_shape("verify_lens", vl, cl.shape, "(one per request, like correct_len)")
    check_int32("verify_lens", vl)
    if np.any(vl < 1):
        raise SpecvizError("verify_lens", f"holds {int(vl.min())}: a verify window holds at least the anchor (>= 1)")
    if np.any(cl < 0):
        raise SpecvizError("correct_len", f"holds {int(cl.min())}: lengths cannot be negative")
    return cl, vl


def cap_correct_len(correct_len, verify_lens):
    """capped = min(correct_len, verify_lens - 1); cap_trim_lens = correct_len - capped (both int32)."""
    cl, vl = check_cap_args(correct_len, verify_lens)
    capped = np.minimum(cl, vl - 1).astype(np.int32)
    return capped, (cl - capped).astype(np.int32)


def check_finalize_args(correct_len, prefix_lens):
    """Validate finalize_accept_lens's inputs (shared by every backend); returns them as int64 arrays."""
    cl = int_array("correct_len", correct_len, 1)
    pl = int_array("prefix_lens", prefix_lens, 1)
    check_shape("prefix_lens", pl, cl.shape, "(one per request, like correct_len)")
    if np.any(cl < 0):
        raise SpecvizError("correct_len", f"holds {int(cl.min())}: lengths cannot be negative")
    if np.any(pl < 0):
        raise SpecvizError("prefix_lens", f"holds {int(pl.min())}: lengths cannot be negative")
    check_int32("correct_len", cl, "SGLang's correct_len is int32")
    check_range("prefix_lens", pl, 0, INT64_MAX - int(cl.max(initial=0)) - 1,
                "prefix_lens + commit_lens must fit int64 (new_seq_lens)")
    return cl, pl


def finalize_accept_lens(correct_len, prefix_lens):
    """commit_lens = correct_len + 1 (int32); new_seq_lens = prefix_lens + commit_lens (int64)."""
    cl, pl = check_finalize_args(correct_len, prefix_lens)
    commit = (cl + 1).astype(np.int32)
    return commit, (pl + commit).astype(np.int64)


def check_out_tokens_args(draft_tokens, correct_len, bonus):
    """Validate build_out_tokens's inputs (shared by every backend); returns them as int64 arrays."""
    dt = int_array("draft_tokens", draft_tokens, 2)
    check_tokens("draft_tokens", dt, None, int32=False)
    bs, gamma = dt.shape
    cl = int_array("correct_len", correct_len, 1)
    bn = int_array("bonus", bonus, 1)
    check_tokens("bonus", bn, None, int32=False)
    check_shape("correct_len", cl, (bs,), "(one per request)")
    check_shape("bonus", bn, (bs,), "(one per request)")
    if np.any((cl < 0) | (cl > gamma)):
        raise SpecvizError("correct_len", f"holds {int(cl.min()) if cl.min() < 0 else int(cl.max())}: it lies in [0, gamma = {gamma}]")
    return dt, cl, bn


def build_out_tokens(draft_tokens, correct_len, bonus):
    """out [bs, T] int64: drafts in columns 0..gamma-1, 0 in column gamma, then bonus scattered at correct_len.

    Only the first commit_lens = correct_len + 1 entries are output; later ones are stale.
    """
    dt, cl, bn = check_out_tokens_args(draft_tokens, correct_len, bonus)
    bs, gamma = dt.shape
    out = np.zeros((bs, gamma + 1), dtype=np.int64)
    out[:, :gamma] = dt
    out[np.arange(bs), cl] = bn
    return out


def dspark_bonus_at(correct_len, *, target_predict=None, predicts=None, accept_index=None):
    """The bonus at a (possibly capped) correct_len: greedy re-reads target_predict[b, c];
    sampling does the two-level gather predicts[accept_index[b, c]]."""
    cl = int_array("correct_len", correct_len, 1)
    bs = cl.shape[0]
    if target_predict is not None:
        tp = int_array("target_predict", target_predict, 2)
        return tp[np.arange(bs), cl].astype(np.int64)
    pr = int_array("predicts", predicts).reshape(-1)
    ai = int_array("accept_index", accept_index, 2)
    return pr[ai[np.arange(bs), cl]].astype(np.int64)
