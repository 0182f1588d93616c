"""The presets of the "Three engines" page (issue 22): one chain per edge of the sampler, each one
click away (equal u·q and p, q = 0, p = 0, a residual of zero mass, temperature 0, a greedy row).
Each returns a validated ``specviz.rooms.engines.chain.Chain``.
"""
from __future__ import annotations

import numpy as np

from specviz.rooms.engines.chain import F32, Chain, Request, draws_for, validate
from specviz.base.errors import SpecvizError


def _norm(row) -> list[float]:
    a = np.asarray(row, dtype=np.float64)
    return list(a / a.sum())


def _request(p, q, drafts, greedy=False) -> Request:
    return Request(tuple(tuple(r) for r in p), tuple(tuple(r) for r in q), tuple(drafts), greedy)


def preset_random(seed: int = 7, n: int = 3, V: int = 6) -> Chain:
    """A plain chain: random p and q, drafts drawn from q."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(V), size=n + 1)
    q = rng.dirichlet(np.ones(V), size=n)
    drafts = [int(rng.choice(V, p=row / row.sum())) for row in q]
    return validate(Chain((_request(p, q, drafts),), seed=seed, labels=None))


def preset_equality(n: int = 2, V: int = 4) -> Chain:
    """u·q = p exactly at slot 1, for every engine's own arithmetic: SGLang rejects (strict <),
    vLLM accepts (p/q ≥ u) and transformers accepts (u ≤ p/q). q[draft] is a power of two, so
    u·q and p/q are exact; the seed is the first whose coin also meets transformers' p'/q'
    (its softmax of log p rounds p) exactly."""
    import torch  # noqa: PLC0415

    d = 1
    for seed in range(2000):
        u = draws_for(seed, n, V).coins[0]
        if not 0.05 < u < 0.95:
            continue
        q0 = [0.25, 0.5, 0.125, 0.125]
        p_d = float(F32(u) * F32(0.5))
        rest = (1.0 - p_d) / 3
        p0 = [rest, p_d, rest, rest]
        p0[3] = 1.0 - p0[0] - p0[1] - p0[2]
        p32 = torch.tensor(np.asarray(p0, dtype=F32))
        q32 = torch.tensor(np.asarray(q0, dtype=F32))
        pt, qt = torch.log(p32).softmax(-1), torch.log(q32).softmax(-1)
        if float(F32(u) * F32(0.5)) == float(p32[d]) and float((pt[d] / qt[d]).item()) == float(u):
            p = [p0] + [_norm([1, 2, 3, 4])] * n
            q = [q0] + [_norm([4, 3, 2, 1])] * (n - 1)
            return validate(Chain((_request(p, q, [d] + [0] * (n - 1)),), seed=seed))
    raise RuntimeError("no seed up to 2000 gives an exact equality for all three engines")


def preset_q_zero(n: int = 2, V: int = 4) -> Chain:
    """The draft token has q = 0 (a draft that sampled a token it gave no mass: a broken q), p > 0.
    SGLang rejects (0 < q required), vLLM rejects (q > 0 required); transformers' p/q = inf accepts."""
    p = [[0.1, 0.4, 0.3, 0.2]] + [_norm([1, 1, 1, 1])] * n
    q = [[0.5, 0.0, 0.25, 0.25]] + [_norm([2, 1, 1, 1])] * (n - 1)
    return validate(Chain((_request(p, q, [1] + [0] * (n - 1)),), seed=3))


def preset_p_zero(n: int = 2, V: int = 4) -> Chain:
    """The draft token has p = 0 and the coin is exactly 0: SGLang rejects (0·q < 0 is false),
    vLLM accepts a token the target never emits (0/q ≥ 0). transformers cannot be handed the
    coin: it draws its own (0.830252 here) and rejects; with a coin of exactly 0 (float32, about
    1 in 2^24 draws) it would accept too (0 ≤ 0/q)."""
    p = [[0.5, 0.0, 0.25, 0.25]] + [_norm([1, 1, 1, 1])] * n
    q = [[0.25, 0.5, 0.125, 0.125]] + [_norm([2, 1, 1, 1])] * (n - 1)
    return validate(Chain((_request(p, q, [1] + [0] * (n - 1)),), seed=5, coins_override=((0.0,) + (0.5,) * (n - 1),)))


def preset_zero_mass(n: int = 2, V: int = 4) -> Chain:
    """p = q and the draft token has p = q = 0: every engine rejects it, and the residual
    max(p − q, 0) has zero mass. SGLang falls back to V−1, vLLM's argmax of zeros gives 0,
    transformers divides 0 by 0 and torch.multinomial raises."""
    row = [0.0, 0.5, 0.3, 0.2]
    p = [row] + [_norm([1, 1, 1, 1])] * n
    q = [row] + [_norm([2, 1, 1, 1])] * (n - 1)
    return validate(Chain((_request(p, q, [0] + [1] * (n - 1)),), seed=11))


def preset_temperature_zero(n: int = 2, V: int = 4) -> Chain:
    """Every request greedy (temperature 0): SGLang runs its greedy verifier, vLLM its greedy
    kernel; transformers refuses temperature 0 when sampling and runs an inline argmax loop."""
    p = [[0.1, 0.6, 0.2, 0.1], [0.3, 0.1, 0.5, 0.1], [0.25, 0.25, 0.25, 0.25]][: n + 1]
    while len(p) < n + 1:
        p.append(_norm([1, 2, 3, 4]))
    q = [[0.1, 0.7, 0.1, 0.1]] + [_norm([1, 1, 4, 1])] * (n - 1)
    return validate(Chain((_request(p, q, [1, 2] + [0] * (n - 2), greedy=True),), seed=13))


def preset_greedy_row(n: int = 2, V: int = 4) -> Chain:
    """A batch of two: request 0 samples, request 1 is greedy with a tie at the top of p.
    SGLang turns the greedy row into top_k = 1 at temperature 1 (ties kept: p' = ½, ½) and
    samples it; vLLM's greedy kernel takes the argmax (the first of the tie)."""
    p0 = [_norm([1, 2, 3, 4])] * (n + 1)
    q0 = [_norm([4, 3, 2, 1])] * n
    p1 = [[0.4, 0.1, 0.4, 0.1]] + [_norm([1, 3, 1, 1])] * n
    q1 = [[0.1, 0.1, 0.7, 0.1]] + [_norm([1, 1, 1, 3])] * (n - 1)
    return validate(Chain((_request(p0, q0, [3] * n), _request(p1, q1, [2] + [0] * (n - 1), greedy=True)), seed=17))


PRESETS = {
    "random": (preset_random, ("A random chain", "随机链")),
    "equality": (preset_equality, ("u·q = p exactly", "u·q = p 恰好相等")),
    "q_zero": (preset_q_zero, ("q = 0 for the draft", "draft 的 q = 0")),
    "p_zero": (preset_p_zero, ("p = 0, coin 0", "p = 0，硬币为 0")),
    "zero_mass": (preset_zero_mass, ("Residual of zero mass", "残差质量为零")),
    "temperature_zero": (preset_temperature_zero, ("Temperature 0", "温度为 0")),
    "greedy_row": (preset_greedy_row, ("A greedy row in the batch", "批中有一个贪心请求")),
}


def preset(name: str) -> Chain:
    if name not in PRESETS:
        raise SpecvizError("preset", f"is {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name][0]()
