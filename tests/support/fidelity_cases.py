"""Dense-row draw cases for the last-bit fidelity tests and benchmarks (docs/sampling_numerics.md).

One case = a batch of requests whose terminal token is an inverse-CDF draw from a real-sized row:

* ``chain_plain``     chain sampler, no draft slot: the bonus from the plain target row;
* ``chain_residual``  chain sampler, one draft slot that is rejected: relu(p - q);
* ``target_plain``    target-only sampler, root only: the plain target row;
* ``target_residual`` target-only sampler, one rejected child: p with that token's mass removed.

Coins: ``random`` (uniform float32), ``near0`` (0 and the next 4 floats above 0), ``near1``
(the 4 floats below 1, i.e. 1 - k * 2**-24), ``mixed`` (the three in turn, row by row).
"""
from __future__ import annotations

import numpy as np

F32 = np.float32
FAMILIES = ("chain_plain", "chain_residual", "target_plain", "target_residual")
COINS = ("random", "near0", "near1")
ALMOST_ONE = F32(1 - 2 ** -24)


def dense_rows(rng: np.random.Generator, rows: int, V: int) -> np.ndarray:
    """float32 softmax rows of random logits (scale 1..4), like a real target row. [rows, V]."""
    scale = rng.uniform(1.0, 4.0, size=(rows, 1))
    x = (rng.standard_normal((rows, V)) * scale).astype(F32)
    e = np.exp(x - x.max(axis=1, keepdims=True)).astype(F32)
    return (e / e.sum(axis=1, keepdims=True, dtype=F32)).astype(F32)


def coins(rng: np.random.Generator, rows: int, kind: str) -> np.ndarray:
    """[rows] float32 coins of one family."""
    if kind == "random":
        return rng.random(rows, dtype=np.float32)
    k = np.arange(rows) % 5
    if kind == "near0":
        return (k * np.float32(2 ** -149)).astype(F32)  # 0, then the smallest subnormals
    if kind == "near1":
        return (F32(1) - (k % 4 + 1) * F32(2 ** -24)).astype(F32)
    if kind == "mixed":  # row i: random, near0, near1, random, ...
        out = coins(rng, rows, "random")
        idx = np.arange(rows)
        out[idx % 3 == 1] = coins(rng, rows, "near0")[idx % 3 == 1]
        out[idx % 3 == 2] = coins(rng, rows, "near1")[idx % 3 == 2]
        return out
    raise ValueError(kind)


def boundary_coins(rng: np.random.Generator, dist: np.ndarray) -> np.ndarray:
    """Coins whose threshold lands within 3 float32 ulps of a random token's running-sum edge: the
    draws where two summation orders can disagree (the "boundary" coin kind). [rows, V] -> [rows]."""
    rows, V = dist.shape
    cs = np.cumsum(dist.astype(np.float64), axis=1)
    k = rng.integers(V // 8, V - V // 8, size=rows) if V >= 8 else rng.integers(0, V, size=rows)
    u = (cs[np.arange(rows), k] / cs[:, -1]).astype(F32)
    steps = rng.integers(-3, 4, size=rows)
    for i in range(rows):
        for _ in range(abs(int(steps[i]))):
            u[i] = np.nextafter(u[i], F32(0) if steps[i] < 0 else F32(1))
    return np.minimum(u, ALMOST_ONE).astype(F32)


def make_case(rng: np.random.Generator, family: str, rows: int, V: int, coin_kind: str) -> dict:
    """SGLang-form inputs for one family (numpy arrays) plus ``dist`` [rows, V], the terminal
    distribution the draw uses, and ``sampler`` ("chain" / "target_only")."""
    case = _make_case(rng, family, rows, V, "random" if coin_kind == "boundary" else coin_kind)
    if coin_kind == "boundary":
        case["args"]["uniform_samples_for_final_sampling"] = boundary_coins(rng, case["dist"])
    return case


def _make_case(rng: np.random.Generator, family: str, rows: int, V: int, coin_kind: str) -> dict:
    p = dense_rows(rng, rows, V)
    uf = coins(rng, rows, coin_kind)
    ri1 = np.arange(rows, dtype=np.int64).reshape(rows, 1)
    if family == "chain_plain":
        args = dict(candidates=np.zeros((rows, 1), np.int64), retrieve_index=ri1,
                    uniform_samples=np.zeros((rows, 1), F32), uniform_samples_for_final_sampling=uf,
                    target_probs=p[:, None], draft_probs=np.zeros((rows, 0, V), F32), num_speculative_tokens=1)
        return dict(args=args, dist=p, sampler="chain", api="chain_rejection_sampling", slot=0)
    if family == "chain_residual":
        q = dense_rows(rng, rows, V)
        tok = np.argmax(q / np.maximum(p, F32(1e-30)), axis=1)  # q >> p there: rejected by a coin near 1
        cand = np.stack([np.zeros(rows, np.int64), tok], axis=1)
        args = dict(candidates=cand, retrieve_index=np.arange(2 * rows, dtype=np.int64).reshape(rows, 2),
                    uniform_samples=np.full((rows, 2), ALMOST_ONE, F32), uniform_samples_for_final_sampling=uf,
                    target_probs=np.stack([p, dense_rows(rng, rows, V)], axis=1), draft_probs=q[:, None],
                    num_speculative_tokens=2)
        return dict(args=args, dist=np.maximum(p - q, F32(0)), sampler="chain", api="chain_rejection_sampling", slot=0)
    minus1 = np.full((rows, 1), -1, np.int64)
    if family == "target_plain":
        args = dict(candidates=np.zeros((rows, 1), np.int64), retrieve_index=ri1, retrieve_next_token=minus1,
                    retrieve_next_sibling=minus1, uniform_samples=np.zeros((rows, 1), F32),
                    uniform_samples_for_final_sampling=uf, target_probs=p[:, None], num_speculative_tokens=1)
        return dict(args=args, dist=p, sampler="target_only", api="tree_sampling_target_only", slot=0)
    if family == "target_residual":
        tok = rng.integers(0, V, size=rows)
        cand = np.stack([np.zeros(rows, np.int64), tok], axis=1)
        nt = np.stack([np.ones(rows, np.int64), -np.ones(rows, np.int64)], axis=1)
        args = dict(candidates=cand, retrieve_index=np.arange(2 * rows, dtype=np.int64).reshape(rows, 2),
                    retrieve_next_token=nt, retrieve_next_sibling=np.full((rows, 2), -1, np.int64),
                    uniform_samples=np.full((rows, 2), ALMOST_ONE, F32), uniform_samples_for_final_sampling=uf,
                    target_probs=np.stack([p, dense_rows(rng, rows, V)], axis=1), num_speculative_tokens=2)
        dist = p.copy()
        dist[np.arange(rows), tok] = 0
        return dict(args=args, dist=dist, sampler="target_only", api="tree_sampling_target_only", slot=0)
    raise ValueError(family)


def draw(backend, case: dict) -> np.ndarray:
    """The terminal tokens [rows] a backend draws for a case (predicts at the root's row)."""
    res = getattr(backend, case["api"])(**case["args"])
    pr = res.predicts
    pr = pr.detach().cpu().numpy() if hasattr(pr, "detach") else np.asarray(pr)
    k = res.accept_token_num
    k = k.detach().cpu().numpy() if hasattr(k, "detach") else np.asarray(k)
    assert not k.any(), "the case was built so that no draft is accepted"
    rows = k.shape[0]
    return pr.reshape(rows, -1)[:, 0].astype(np.int64)
