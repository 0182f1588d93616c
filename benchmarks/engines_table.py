"""The closing-note table of issue 22: for each engine pair, the slots compared and the slots where
the engines differ (with where and why), over every edge preset and 20 random chains, each engine's
own code confirming specviz's description; then the three chi-square p-values of
tests/test_engines.py's Monte Carlo (same p, q, trials and seed).

    TRITON_INTERPRET=1 PYTHONPATH=. python benchmarks/engines_table.py
"""
from __future__ import annotations

import itertools
import os
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np  # noqa: E402

from specviz.rooms.engines import chain as C  # noqa: E402
from specviz.rooms.engines import chain_presets as CP  # noqa: E402
from specviz.rooms.engines import compare as K  # noqa: E402
from specviz.rooms.engines import rules as R  # noqa: E402


def random_chain(seed: int) -> C.Chain:
    """Like test_engines.chains: sparse p and q (zeros make the edges likely), 1-2 requests."""
    rng = np.random.default_rng(seed)
    V, n, bs = int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    reqs = []
    for _ in range(bs):
        p = rng.dirichlet(np.ones(V), size=n + 1) * (rng.random((n + 1, V)) < 0.8)
        q = rng.dirichlet(np.ones(V), size=n) * (rng.random((n, V)) < 0.8)
        p[:, 0] += 1e-3
        q[:, -1] += 1e-3
        p /= p.sum(axis=1, keepdims=True)
        q /= q.sum(axis=1, keepdims=True)
        reqs.append(C.Request(tuple(map(tuple, p)), tuple(map(tuple, q)), tuple(int(x) for x in rng.integers(0, V, size=n)),
                              bool(bs > 1 and rng.random() < 0.5)))
    return C.validate(C.Chain(tuple(reqs), seed))


def main() -> None:
    cases = [(name, CP.preset(name)) for name in CP.PRESETS] + [(f"random{s}", random_chain(s)) for s in range(20)]
    compared, differing, where = defaultdict(int), defaultdict(int), defaultdict(list)
    confirmed = 0
    for name, ch in cases:
        cmp = K.compare(ch)
        for view in cmp.views.values():
            assert not view.error, (name, view.error)
            for b in range(ch.bs):
                ok = view.agrees(b)
                assert ok in (True, None), (name, view.engine, b)
                confirmed += ok is True
        for pair in itertools.combinations(R.ENGINES, 2):
            compared[pair] += cmp.slots_compared(pair)
        for d in cmp.diffs:
            differing[d.pair] += 1
            where[d.pair].append(f"{name}:{'' if ch.bs == 1 else f'r{d.request}:'}{'t' if d.slot == 'terminal' else 's' + str(d.slot)}({d.reason})")
    print(f"{len(cases)} chains; {confirmed} request runs of the engines' own code, all equal to the description\n")
    print("| engine pair | slots compared | slots differing | where (chain:slot(reason); t = terminal token) |")
    print("|---|---|---|---|")
    for pair in itertools.combinations(R.ENGINES, 2):
        edges = [w for w in where[pair] if not w.startswith("random")]
        rand = defaultdict(int)
        for w in where[pair]:
            if w.startswith("random"):
                rand[w.split("(")[1].rstrip(")")] += 1
        tail = ("; random chains: " + ", ".join(f"{k} ×{v}" for k, v in sorted(rand.items()))) if rand else ""
        print(f"| {R.NAMES[pair[0]]} / {R.NAMES[pair[1]]} | {compared[pair]} | {differing[pair]} | {', '.join(edges)}{tail} |")
    from test_engines import MC_P, MC_Q, MC_TRIALS  # noqa: PLC0415
    print(f"\nChi-square against p = {MC_P} (q = {MC_Q}), {MC_TRIALS} trials, seed 2026, each engine's own code:\n")
    print("| engine | counts | chi² | df | p-value |\n|---|---|---|---|---|")
    for e in R.ENGINES:
        m = K.monte_carlo(e, MC_P, MC_Q, trials=MC_TRIALS, seed=2026)
        print(f"| {R.NAMES[e]} | {m.counts.tolist()} | {m.statistic:.3f} | {m.df} | {m.p_value:.4f} |")


if __name__ == "__main__":
    main()
