"""The numpy reference draws every request's terminal token in one batched inverse-CDF call when no trace
is recorded (a Monte Carlo of 4000 trials was 4000 single-row calls, ~0.3 s of server CPU per edit,
issue 31); with a trace it draws row by row (events stay in order). Both give the same tokens."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from specviz.reference import cdf, chain_sampling, target_only
from specviz.base.trace import Trace


def _batch(seed: int, bs: int, N: int, V: int):
    rng = np.random.default_rng(seed)
    p = rng.random((bs, N, V)).astype(np.float32)
    p[rng.random(p.shape) < 0.3] = 0
    p[..., 0] += 1e-3
    p /= p.sum(-1, keepdims=True)
    q = rng.random((bs, N - 1, V)).astype(np.float32)
    q[rng.random(q.shape) < 0.2] = 0
    q /= np.maximum(q.sum(-1, keepdims=True), 1e-9)
    cand = rng.integers(0, V, (bs, N))
    return (cand, np.arange(bs * N).reshape(bs, N), rng.random((bs, N)).astype(np.float32),
            rng.random(bs).astype(np.float32), p, q)


@pytest.mark.parametrize("V", [7, 5000])  # one block and two (the chain kernel's blocks hold 4096)
def test_batched_terminal_draws_equal_row_by_row(V):
    cand, ri, u, uf, p, q = _batch(V, 40 if V > 100 else 300, 3, V)
    nt = np.tile([1, -1, -1], (cand.shape[0], 1))
    ns = np.tile([-1, 2, -1], (cand.shape[0], 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sem in ("0.5.23", "earlier"):
            fast = chain_sampling.chain_rejection_sampling(cand, ri, u, uf, p, q, num_speculative_tokens=3, semantics=sem)
            slow = chain_sampling.chain_rejection_sampling(cand, ri, u, uf, p, q, num_speculative_tokens=3, semantics=sem, trace=Trace())
            assert (fast.predicts == slow.predicts).all() and (fast.accept_index == slow.accept_index).all()
            for t in ((1.0, 1.0), (0.6, 0.8)):
                kw = dict(num_speculative_tokens=2, threshold_single=t[0], threshold_acc=t[1], semantics=sem)
                fast = target_only.tree_sampling_target_only(cand, ri, nt, ns, u, uf, p, **kw)
                slow = target_only.tree_sampling_target_only(cand, ri, nt, ns, u, uf, p, trace=Trace(), **kw)
                assert (fast.predicts == slow.predicts).all() and (fast.accept_index == slow.accept_index).all()


def test_a_monte_carlo_is_one_inverse_cdf_call_not_one_per_trial(monkeypatch):
    from specviz.reference.montecarlo import sample_many

    calls = []
    real = cdf.chain_inverse_cdf
    monkeypatch.setattr(chain_sampling, "chain_inverse_cdf", lambda d, c, *a, **k: calls.append(len(c)) or real(d, c, *a, **k))
    cand, ri, u, uf, p, q = _batch(1, 1, 3, 6)
    res = sample_many("chain_rejection_sampling", {"candidates": cand, "retrieve_index": ri, "target_probs": p,
                                                   "draft_probs": q, "num_speculative_tokens": 3}, num_trials=4000, seed=3)
    assert res.num_trials == 4000
    assert calls == [4000], f"{len(calls)} calls"
