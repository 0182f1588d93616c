"""Tree and chain accept rules (SEMANTICS.md §4, §6, §7), one request at a time.

Glossary: p = target_probs (the target's distribution), q = draft_probs (the draft's proposal
distribution). In the target-only tree sampler ``draft_probs`` is *not* q: it is a zero work
buffer that collects the target mass of rejected siblings.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import SpecvizError, SpecvizWarning
from ..results import TreeSampleResult, VerifyResult
from ..trace import Trace
from ..validate import (INT32_MAX, INT32_MIN, check_semantics, check_shape, check_tokens, check_tree_arrays, check_width, coin_array,
                        float_array, int_array, prob_array)

from .cdf import chain_inverse_cdf, target_only_inverse_cdf

F32 = np.float32


def _warn(trace: Trace | None, b: int, node, message: str, code: str, **params) -> None:
    """Warn in English (Python's warnings, the CLI) and record the event with ``code`` and its numbers
    (``params``: token ids, rows, V), so an app can word it in any language with the scenario's labels
    (``specviz.wording``)."""
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

def _draw_terminals(predicts, terminal: list, uf, draw) -> None:
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
            _warn(trace, b, node, f"request {b}: the terminal distribution at node {node} has no mass; SGLang then emits "
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
        _draw_terminals(predicts, terminal, uf, lambda d, c: target_only_inverse_cdf(d, c, last_valid_fallback=new))
    return TreeSampleResult(predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num, draft_probs=buf)


# ---------------------------------------------------------------------------------------------
# Classic chain rejection sampling (§7)
# ---------------------------------------------------------------------------------------------

def check_chain_args(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling, target_probs, draft_probs):
    cand = int_array("candidates", candidates, 2)
    bs, N = cand.shape
    if bs < 1 or N < 1:
        raise SpecvizError("candidates", f"has shape {list(cand.shape)}: a chain needs at least one request and the root slot")
    check_tokens("candidates", cand, None)
    ri = int_array("retrieve_index", retrieve_index, 2)
    check_shape("retrieve_index", ri, (bs, N), "(like candidates)")
    if np.any((ri < 0) | (ri >= bs * N)):
        raise SpecvizError("retrieve_index", f"holds {int(ri.min()) if ri.min() < 0 else int(ri.max())}: rows must lie in [0, bs*N) = [0, {bs * N})")
    p = prob_array("target_probs", target_probs, 3, "target probabilities")
    check_shape("target_probs", p, (bs, N, None), "([bs, N, V])")
    V = p.shape[2]
    if draft_probs is None:
        raise SpecvizError("draft_probs", "is missing: chain rejection sampling needs the draft's proposal distribution q "
                           "(SGLang raises here too); use the target-only tree sampler if you have no q")
    q = prob_array("draft_probs", draft_probs, 3, "draft probabilities")
    if q.shape[-1] != V:
        raise SpecvizError("draft_probs", f"has vocabulary size {q.shape[-1]} but target_probs has {V}: q must cover the target's vocabulary")
    check_shape("draft_probs", q, (bs, N - 1, V), "([bs, N-1, V]: row s-1 proposed slot s)")
    check_tokens("candidates", cand[:, 1:], V, offset=(0, 1))
    u = coin_array("uniform_samples", uniform_samples, 2)
    if u.shape[0] != bs or u.shape[1] < N - 1:
        raise SpecvizError("uniform_samples", f"has shape {list(u.shape)} but must be [{bs}, >= {N - 1}]: one coin per draft slot")
    uf = coin_array("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, 1)
    check_shape("uniform_samples_for_final_sampling", uf, (bs,), "([bs])")
    return cand, ri, u, uf, p, q


def chain_accept_probability(p: float, q: float, semantics: str = "0.5.23") -> float:
    """P(the chain test accepts) over a coin u uniform in [0, 1), for target mass p and draft mass q.

    0.5.23 accepts iff 0 < q <= 1 and u*q < p: min(1, p/q) for a valid q, else 0 (q = 0 is
    rejected for every coin). Earlier releases test u*q < p alone: min(1, p/q) for q > 0; with
    q = 0 the product is 0, so every coin accepts iff p > 0."""
    p, q = float(p), float(q)
    if semantics == "0.5.23" and not (0 < q <= 1):
        return 0.0
    if q > 0:
        return min(1.0, max(p, 0.0) / q)
    if q == 0:
        return 1.0 if p > 0 else 0.0
    return 1.0 if p >= 0 else 0.0  # q < 0 (earlier releases only): u*q <= 0, so u*q < p for every u > 0


def chain_rejection_sampling(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                             target_probs, draft_probs, *, num_speculative_tokens, semantics="0.5.23",
                             trace: Trace | None = None) -> VerifyResult:
    """Leviathan-style rejection sampling along a chain (SGLang's chain_speculative_sampling_triton).

    candidates [bs, N] (slot 0 = root); target_probs [bs, N, V]; draft_probs [bs, N-1, V] where
    row s-1 proposed slot s; uniform_samples [bs, >= N-1]. Accept slot s iff u*q < p (0.5.23 also
    needs 0 < q <= 1). On rejection the terminal token comes from relu(p − q) at that row; after
    full acceptance from the plain last target row. accept_index is [bs, N].
    """
    check_semantics(semantics)
    cand, ri, u, uf, p, q = check_chain_args(candidates, retrieve_index, uniform_samples,
                                             uniform_samples_for_final_sampling, target_probs, draft_probs)
    bs, N = cand.shape
    V = p.shape[2]
    W = check_width("num_speculative_tokens", num_speculative_tokens, N)
    if W != N:
        raise SpecvizError("num_speculative_tokens", f"is {W} but the chain has N = {N} slots: for a chain they are equal (accept_index is [bs, N])")
    new = semantics == "0.5.23"

    predicts = np.zeros(bs * N, dtype=np.int32)
    accept_index = np.full((bs, N), -1, dtype=np.int32)
    accept_token_num = np.zeros(bs, dtype=np.int32)
    terminal = []  # (request, row, distribution) of each terminal draw left for one batched call (no trace)
    if trace is not None:
        trace.begin("chain_rejection_sampling", predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num)

    for b in range(bs):
        last = int(ri[b, 0])
        accept_index[b, 0] = last
        k = 0
        if trace is not None:
            trace.emit("start", b, 0, [("accept_index", b * N, last)], row=last)
        for s in range(1, N):
            tok = int(cand[b, s])
            pt, qt, c = F32(p[b, s - 1, tok]), F32(q[b, s - 1, tok]), F32(u[b, s - 1])
            prod = F32(c * qt)
            ok = bool((0 < qt <= 1) and prod < pt) if new else bool(prod < pt)
            if qt == 0:
                _warn(trace, b, s, f"request {b} slot {s}: the draft proposed token {tok} with q = 0, which a real draft "
                      f"cannot do; SGLang {'0.5.23 rejects it' if new else 'earlier releases accept it when p > 0'}",
                      "chain_q_zero", slot=s, token=tok, p=float(pt), semantics="0.5.23" if new else "earlier")
            if trace is not None:
                trace.emit("visit", b, s, row=int(ri[b, s]))
                trace.emit("accept_test", b, s, token=tok, p=float(pt), q=float(qt), coin=float(c), u_times_q=float(prod),
                           accept_prob=chain_accept_probability(pt, qt, semantics), accepted=ok,
                           q_valid=bool(0 < qt <= 1) if new else None, rule="0 < q <= 1 and u*q < p" if new else "u*q < p")
            if not ok:
                if trace is not None:
                    trace.emit("reject", b, s, token=tok, p=float(pt), q=float(qt))
                break
            predicts[last] = tok
            k += 1
            writes = [("predicts", last, tok)]
            last = int(ri[b, s])
            accept_index[b, k] = last
            writes.append(("accept_index", b * N + k, last))
            if trace is not None:
                trace.emit("accept", b, s, writes, token=tok, row=last, k=k)
        else:
            if trace is not None and N > 1:
                trace.emit("depth_limit", b, N - 1, k=k)
        accept_token_num[b] = k
        if k == N - 1:
            dist = p[b, N - 1].copy()
            source, source_code = "target row after the last slot (every draft accepted: bonus from plain p)", "chain_bonus_row"
        else:
            qrow = q[b, k]
            if new:
                qrow = np.where((qrow >= 0) & (qrow <= 1), qrow, F32(0))
            dist = np.maximum(p[b, k] - qrow, F32(0)).astype(F32)
            source, source_code = "residual relu(p − q) at the rejected slot's row", "chain_residual"
        if not np.any(dist > 0):
            _warn(trace, b, k, f"request {b}: the residual at row {k} has no mass (p == q); SGLang then emits token V-1 = {V - 1}",
                  "chain_no_mass", row=k, vocab_size=V)
        if trace is None:  # no events to keep in order: every request's terminal draw in one batched call below
            terminal.append((b, last, dist))
            continue
        tok = inverse_cdf(dist, float(uf[b]), last_valid_fallback=False)
        predicts[last] = tok
        if trace is not None:
            trace.emit("residual", b, k, dist=dist, source=source, source_code=source_code, p=p[b, k].copy(),
                       q=(q[b, k].copy() if k < N - 1 else None))
            trace.emit("terminal", b, k, [("predicts", last, tok)], row=last, token=tok, coin=float(uf[b]))
            trace.emit("commit", b, k, [("accept_token_num", b, k)], k=k, accept_len=k + 1)
    if terminal:
        _draw_terminals(predicts, terminal, uf, chain_inverse_cdf)
    return VerifyResult(predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num)
