"""Target-only tree sampling (SEMANTICS.md §6), one request at a time: the coin against the running
sum of target mass over siblings, the work buffer (not q: it collects the target mass of rejected
siblings) and the terminal draw from relu(p - buffer). Shared helpers are in ``verify.py``.
"""
from __future__ import annotations

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.base.results import TreeSampleResult
from specviz.base.trace import Trace
from specviz.base.validate import check_semantics, check_shape, check_tokens, check_tree_arrays, check_width, coin_array, float_array, prob_array
from specviz.reference.cdf import target_only_inverse_cdf
from specviz.reference.verify import F32, draw_terminals, inverse_cdf, record_warning

# ---------------------------------------------------------------------------------------------
# Target-only tree sampling (§6)
# ---------------------------------------------------------------------------------------------

def check_threshold(name: str, v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise SpecvizError(name, f"is {v!r}: it must be a number in [0, 1]") from None
    if not np.isfinite(v) or v < 0 or v > 1:
        raise SpecvizError(name, f"is {v}: thresholds lie in [0, 1] (1 = exact sampling)")
    return v


def check_work_buffer(draft_probs, shape) -> np.ndarray:
    """The target-only sampler's work buffer on entry as float32 [bs, n, V]: zeros for None (SGLang's
    zero buffer), else finite values in [0, 1] of exactly ``shape`` (the "q as buffer" mistake)."""
    if draft_probs is None:
        return np.zeros(shape, dtype=F32)
    buf = float_array("draft_probs", draft_probs, 3).astype(F32).copy()
    check_shape("draft_probs", buf, tuple(shape), "(the work buffer: [bs, n, V], like target_probs)")
    if not np.all(np.isfinite(buf)) or np.any(buf < 0) or np.any(buf > 1):
        raise SpecvizError("draft_probs", "holds values outside [0, 1]: the work buffer starts at zero (None) or at a probability table")
    return buf


def tree_sampling_target_only(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, uniform_samples,
                              uniform_samples_for_final_sampling, target_probs, *, num_speculative_tokens,
                              threshold_single=1.0, threshold_acc=1.0, semantics="0.5.23", draft_probs=None,
                              trace: Trace | None = None) -> TreeSampleResult:
    """SGLang's TreeSpeculativeSamplingTargetOnly: sibling scan with a running sum of target mass.

    uniform_samples [bs, n]: coin of each level, indexed by the last accepted *node*;
    uniform_samples_for_final_sampling [bs]; target_probs [bs, n, V] (p of each node's row).
    draft_probs [bs, n, V]: the work buffer on entry. None = zeros, what SGLang passes; anything
    else is the "q as buffer" mistake (the terminal draw then subtracts it).
    Returns predicts, accept_index, accept_token_num and the work buffer draft_probs [bs, n, V].
    """
    cand, ri, nt, ns = check_tree_arrays(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling)
    bs, n = cand.shape
    check_semantics(semantics)
    W = check_width("num_speculative_tokens", num_speculative_tokens, n)
    p = prob_array("target_probs", target_probs, 3, "target probabilities")
    check_shape("target_probs", p, (bs, n, None), "([bs, n, V])")
    V = p.shape[2]
    check_tokens("candidates", cand[:, 1:], V, offset=(0, 1))
    u = coin_array("uniform_samples", uniform_samples, 2)
    check_shape("uniform_samples", u, (bs, n), "([bs, n]: one coin per node)")
    uf = coin_array("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, 1)
    check_shape("uniform_samples_for_final_sampling", uf, (bs,), "([bs])")
    t_single = F32(check_threshold("threshold_single", threshold_single))
    t_acc = F32(max(check_threshold("threshold_acc", threshold_acc), 1e-9))
    new = semantics == "0.5.23"

    predicts = np.zeros(bs * n, dtype=np.int32)
    accept_index = np.full((bs, W), -1, dtype=np.int32)
    accept_token_num = np.zeros(bs, dtype=np.int32)
    buf = check_work_buffer(draft_probs, (bs, n, V))
    terminal = []  # (request, row, distribution) of each terminal draw left for one batched call (no trace)
    if trace is not None:
        trace.begin("tree_sampling_target_only", predicts=predicts, accept_index=accept_index,
                    accept_token_num=accept_token_num, draft_probs=buf)

    for b in range(bs):
        node = 0
        coin = F32(u[b, 0])
        last = int(ri[b, 0])
        accept_index[b, 0] = last
        k = 0
        if trace is not None:
            trace.emit("start", b, 0, [("accept_index", b * W, last)], row=last, coin=float(coin))
        for level in range(1, W):
            child = int(nt[b, node])
            acc = F32(0)
            if child == -1 and trace is not None:
                trace.emit("no_child", b, node, level=level)
            while child != -1:
                tok = int(cand[b, child])
                pt = F32(p[b, node, tok])
                acc = F32(acc + pt)
                bound = F32(acc / t_acc)
                if new:
                    ok = bool(pt > 0 and (coin < bound or pt >= t_single))
                else:
                    ok = bool(coin <= bound or pt >= t_single)
                if trace is not None:
                    trace.emit("visit", b, child, level=level, row=int(ri[b, child]))
                    trace.emit("accept_test", b, child, level=level, token=tok, p=float(pt), prob_acc=float(acc),
                               bound=float(bound), coin=float(coin), threshold_acc=float(t_acc),
                               threshold_single=float(t_single), single_fired=bool(pt >= t_single), accepted=ok,
                               rule="pt > 0 and (coin < prob_acc/threshold_acc or pt >= threshold_single)" if new
                               else "coin <= prob_acc/threshold_acc or pt >= threshold_single")
                if ok:
                    break
                buf[b, node, tok] = pt
                nxt = int(ns[b, child])
                if trace is not None:
                    trace.emit("reject", b, child, [("draft_probs", (b * n + node) * V + tok, float(pt))],
                               level=level, token=tok, p=float(pt))
                    trace.emit("next_sibling", b, nxt if nxt != -1 else None, level=level, came_from=child)
                    if nxt == -1:
                        trace.emit("no_child", b, node, level=level, reason="every sibling rejected")
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
            coin = F32(u[b, child])
            if trace is not None:
                trace.emit("accept", b, child, writes, level=level, token=int(cand[b, child]), row=last, k=k,
                           next_coin=float(coin))
        else:
            if trace is not None and W > 1:
                trace.emit("depth_limit", b, node, k=k)
        accept_token_num[b] = k
        if k == W - 1:
            dist = p[b, node].copy()
            source, source_code = "target row (every level accepted: plain p)", "plain_target_row"
        else:
            dist = np.maximum(p[b, node] - buf[b, node], F32(0))
            source, source_code = (("relu(p − work buffer): the rejected siblings' mass removed", "buffer_residual")
                                   if np.any(buf[b, node] > 0) else
                                   ("relu(p − work buffer) = the plain target row (nothing was rejected at this node)", "buffer_empty"))
        if not np.any(dist > 0):
            record_warning(trace, b, node, f"request {b}: the terminal distribution at node {node} has no mass; SGLang then emits "
                  f"{'the last token with mass, else ' if new else ''}token V-1 = {V - 1}",
                  "target_only_no_mass", last_valid_fallback=bool(new), vocab_size=V)
        if trace is None:  # no events to keep in order: every request's terminal draw in one batched call below
            terminal.append((b, last, dist))
            continue
        tok = inverse_cdf(dist, float(uf[b]), last_valid_fallback=new, sampler="target_only")
        predicts[last] = tok
        if trace is not None:
            trace.emit("residual", b, node, dist=dist, source=source, source_code=source_code, p=p[b, node].copy(),
                       buffer=buf[b, node].copy())
            trace.emit("terminal", b, node, [("predicts", last, tok)], row=last, token=tok, coin=float(uf[b]))
            trace.emit("commit", b, node, [("accept_token_num", b, k)], k=k, accept_len=k + 1)
    if terminal:
        draw_terminals(predicts, terminal, uf, lambda d, c: target_only_inverse_cdf(d, c, last_valid_fallback=new))
    return TreeSampleResult(predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num, draft_probs=buf)
