"""Tree and chain accept rules (SEMANTICS.md §4, §6, §7), one request at a time: greedy tree
verification here, with what the samplers share (warnings, predicts_init, the terminal draws); the
target-only tree sampler in ``target_only.py`` (§6) and chain rejection sampling in
``chain_sampling.py`` (§7), each readable top to bottom.

Glossary: p = target_probs (the target's distribution), q = draft_probs (the draft's proposal
distribution). In the target-only tree sampler ``draft_probs`` is *not* q: it is a zero work
buffer that collects the target mass of rejected siblings.
"""
from __future__ import annotations

import warnings

import numpy as np

from specviz.base.errors import SpecvizError, SpecvizWarning
from specviz.base.results import VerifyResult
from specviz.base.trace import Trace
from specviz.base.validate import INT32_MAX, INT32_MIN, check_shape, check_tokens, check_tree_arrays, check_width, int_array

from specviz.reference.cdf import chain_inverse_cdf, target_only_inverse_cdf

F32 = np.float32


def record_warning(trace: Trace | None, b: int, node, message: str, code: str, **params) -> None:
    """Warn in English (Python's warnings, the CLI) and record the event with ``code`` and its numbers
    (``params``: token ids, rows, V), so an app can word it in any language with the scenario's labels
    (``specviz.replay.wording``)."""
    warnings.warn(message, SpecvizWarning, stacklevel=3)
    if trace is not None:
        trace.emit("warning", b, node, message=message, code=code, **params)


def check_predicts_init(predicts_init) -> int:
    if isinstance(predicts_init, bool) or not isinstance(predicts_init, (int, np.integer)):
        raise SpecvizError("predicts_init", f"is {predicts_init!r}: it must be a whole number (0 in eagle_sample, -1 in SGLang's tests)")
    v = int(predicts_init)
    if not INT32_MIN <= v <= INT32_MAX:
        raise SpecvizError("predicts_init", f"is {v}: outside int32 [-2**31, 2**31 - 1], the dtype of SGLang's predicts")
    return v


# ---------------------------------------------------------------------------------------------
# Greedy tree verification (§4)
# ---------------------------------------------------------------------------------------------

def verify_tree_greedy(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict, *,
                       num_speculative_tokens, predicts_init=0, trace: Trace | None = None) -> VerifyResult:
    """Walk each request's tree from the root, following the child whose token equals the target's
    prediction at the last accepted row.

    candidates [bs, n] tokens per node (node 0 = root); retrieve_* [bs, n];
    target_predict [bs, n] argmax of the target per row, read at the *flat global row*.
    Returns predicts [bs*n], accept_index [bs, W] (root row first, -1 padded), accept_token_num [bs].
    """
    cand, ri, nt, ns = check_tree_arrays(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    bs, n = cand.shape
    tp = int_array("target_predict", target_predict, 2)
    check_shape("target_predict", tp, (bs, n), "(like candidates)")
    check_tokens("target_predict", tp, None)
    W = check_width("num_speculative_tokens", num_speculative_tokens, n)
    init = check_predicts_init(predicts_init)
    tp_flat = tp.reshape(-1)

    predicts = np.full(bs * n, init, dtype=np.int32)
    accept_index = np.full((bs, W), -1, dtype=np.int32)
    accept_token_num = np.zeros(bs, dtype=np.int32)
    if trace is not None:
        trace.begin("verify_tree_greedy", predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num)

    for b in range(bs):
        last = int(ri[b, 0])
        accept_index[b, 0] = last
        k, node = 0, 0
        if trace is not None:
            trace.emit("start", b, 0, [("accept_index", b * W, last)], row=last)
        for level in range(1, W):
            target = int(tp_flat[last])
            child = int(nt[b, node])
            if child == -1 and trace is not None:
                trace.emit("no_child", b, node, level=level)
            while child != -1:
                tok = int(cand[b, child])
                hit = tok == target
                if trace is not None:
                    trace.emit("visit", b, child, level=level, row=int(ri[b, child]))
                    trace.emit("compare", b, child, level=level, token=tok, target=target, target_row=last, match=hit)
                if hit:
                    break
                nxt = int(ns[b, child])
                if trace is not None:
                    trace.emit("reject", b, child, level=level, token=tok, target=target)
                    trace.emit("next_sibling", b, nxt if nxt != -1 else None, level=level, came_from=child)
                    if nxt == -1:
                        trace.emit("no_child", b, node, level=level, reason="no sibling matched")
                child = nxt
            if child == -1:
                break
            predicts[last] = cand[b, child]
            k += 1
            writes = [("predicts", last, int(cand[b, child]))]
            last = int(ri[b, child])
            accept_index[b, k] = last
            writes.append(("accept_index", b * W + k, last))
            node = child
            if trace is not None:
                trace.emit("accept", b, child, writes, level=level, token=int(cand[b, child]), row=last, k=k)
        else:
            if trace is not None and W > 1:
                trace.emit("depth_limit", b, node, k=k)
        accept_token_num[b] = k
        predicts[last] = tp_flat[last]
        if trace is not None:
            trace.emit("terminal", b, node, [("predicts", last, int(tp_flat[last]))], row=last, token=int(tp_flat[last]))
            trace.emit("commit", b, node, [("accept_token_num", b, k)], k=k, accept_len=k + 1)
    return VerifyResult(predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num)


# ---------------------------------------------------------------------------------------------
# Terminal sampling (§6.2, §7)
# ---------------------------------------------------------------------------------------------

def draw_terminals(predicts, terminal: list, uf, draw) -> None:
    """Every deferred terminal draw as one batched call: ``draw(dists [m, V], coins [m])`` treats each row on
    its own (cdf.py sums and scans row by row), so the tokens are those of m single-row calls; a Monte Carlo
    of 4000 trials then costs one call instead of 4000 (issue 31)."""
    rows = np.stack([d for _, _, d in terminal]).astype(F32, copy=False)
    coins = np.asarray([uf[b] for b, _, _ in terminal], F32)
    toks = draw(rows, coins)
    for (_, last, _), tok in zip(terminal, toks):
        predicts[last] = int(tok)


def inverse_cdf(dist: np.ndarray, coin: float, *, last_valid_fallback: bool, sampler: str = "chain") -> int:
    """One inverse-CDF draw in SGLang's float32 order (``cdf.py``): the first token whose running sum
    exceeds coin * total, summed blockwise as SGLang's kernel sums.

    sampler "chain": the Triton chain kernel (blocks of 4096, no mass test, fallback V-1).
    sampler "target_only": the FlashInfer chunked scan (tokens with dist > 0 only); the fallback is
    the last token with mass seen (``last_valid_fallback``, 0.5.23), else V-1.
    """
    row = np.asarray(dist, F32).reshape(1, -1)
    if sampler == "chain":
        return int(chain_inverse_cdf(row, [coin])[0])
    return int(target_only_inverse_cdf(row, [coin], last_valid_fallback=last_valid_fallback)[0])
