"""Classic chain rejection sampling (SEMANTICS.md §7), one request at a time: accept draft s when
u * q < p (0.5.23: also 0 < q <= 1), else draw the terminal token from the residual max(p - q, 0).
Glossary: p = target_probs, q = draft_probs (the draft's proposal distribution). Shared helpers are
in ``verify.py``.
"""
from __future__ import annotations

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.base.results import VerifyResult
from specviz.base.trace import Trace
from specviz.base.validate import check_semantics, check_shape, check_tokens, check_width, coin_array, int_array, prob_array
from specviz.reference.cdf import chain_inverse_cdf
from specviz.reference.verify import F32, draw_terminals, inverse_cdf, record_warning

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
                record_warning(trace, b, s, f"request {b} slot {s}: the draft proposed token {tok} with q = 0, which a real draft "
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
            record_warning(trace, b, k, f"request {b}: the residual at row {k} has no mass (p == q); SGLang then emits token V-1 = {V - 1}",
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
        draw_terminals(predicts, terminal, uf, chain_inverse_cdf)
    return VerifyResult(predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num)
