"""The largest scenario the limits admit, on every page: wall time and peak memory (issue 8, finding 6).

    TRITON_INTERPRET=1 python benchmarks/bench_worst_scenario.py            # every page x worst case
    TRITON_INTERPRET=1 python benchmarks/bench_worst_scenario.py --only greedy

Budget (specviz.inputs.scenario limits are chosen to meet it): one page run plus one "next" click on the
worst scenario takes <= 5 s (CPU time of the process; wall time on an idle machine) and <= 1 GB of memory beyond the process after imports.
Each (page, scenario) runs in a fresh subprocess (AppTest) after one warm-up run of the page on
its default preset (imports, first kernel calls), so the figures are the scenario's own cost.
Also times how a file beyond the limits (the old 16 x 64 x 4,096 worst case, 8 MB) is refused
before parsing. A benchmark, not a test: figures depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specviz.inputs.scenario import MAX_BATCH, MAX_SCENARIO_CHARS, MAX_TABLE_CELLS, MAX_VOCAB  # noqa: E402
from specviz.inputs.model import MAX_TREE_NODES  # noqa: E402


def _row(rng, V):
    w = [rng.random() ** 3 for _ in range(V)]
    s = sum(w)
    row = [round(x / s, 9) for x in w]
    row[0] = round(1.0 - sum(row[1:]), 9)
    if row[0] < 0:
        row = [1.0] + [0.0] * (V - 1)
    return row


def worst(algorithm: str, bs: int, n: int, V: int, seed: int = 0) -> dict:
    """A valid scenario of ``bs`` requests x ``n`` nodes (or chain slots) x vocabulary ``V``."""
    rng = random.Random(seed)
    vocab = [f"t{i}" for i in range(V)]
    reqs = []
    for _ in range(bs):
        r: dict = {"seq_len": 100}
        toks = [rng.choice(vocab) for _ in range(n)]
        if algorithm in ("greedy", "target_only"):
            r["tree"] = {"parents": [-1] + [(i - 1) // 2 for i in range(1, n)], "tokens": toks}
        else:
            r["chain"] = toks
        if algorithm in ("greedy", "dspark_greedy"):
            r["target_predict"] = [rng.choice(vocab) for _ in range(n)]
        else:
            r["target_probs"] = [_row(rng, V) for _ in range(n)]
            r["coins"] = [round(rng.random() * 0.999, 6) for _ in range(n if algorithm == "target_only" else n - 1)]
            r["coin_final"] = 0.5
        if algorithm in ("chain_rejection", "dspark_sampling"):
            r["draft_probs"] = [_row(rng, V) for _ in range(n - 1)]
        reqs.append(r)
    return {"format": "specviz.scenario", "version": 1, "name": f"worst_{algorithm}_{bs}x{n}x{V}", "algorithm": algorithm,
            "vocab": vocab, "requests": reqs}


# page -> (slot, algorithm)
PAGES = {"overview": ("tree", "greedy"), "tree_builder": ("tree", "greedy"), "greedy": ("tree", "greedy"),
         "batch_kv": ("batch", "greedy"), "chain_sampling": ("chain", "chain_rejection"),
         "target_only": ("target_only", "target_only"), "dspark": ("dspark", "dspark_sampling"), "audit": ("audit", "greedy")}
SHAPES = [(MAX_BATCH, MAX_TREE_NODES, MAX_TABLE_CELLS // (MAX_BATCH * MAX_TREE_NODES)),  # many requests and nodes
          (1, MAX_TABLE_CELLS // MAX_VOCAB, MAX_VOCAB)]                                   # the widest vocabulary

CHILD = r"""
import json, resource, sys, time
from streamlit.testing.v1 import AppTest
page, slot, path = sys.argv[1:4]
text = open(path).read()
warm = AppTest.from_file(f"pages/{page}.py", default_timeout=600)  # imports, kernels' first calls: not the scenario's cost
warm.run()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
c0 = cpu()
t0 = time.perf_counter()
at = AppTest.from_file(f"pages/{page}.py", default_timeout=600)
at.session_state[f"sv_scn::{slot}"] = text
at.run()
t1 = time.perf_counter()
nxt = [b for b in at.button if b.key and b.key.startswith("w_next::")]
if nxt:
    nxt[0].click().run()
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"first_run_s": t1 - t0, "click_s": t2 - t1, "cpu_s": cpu() - c0, "extra_mb": (peak - base) / 1024,
                  "exceptions": [str(e.value)[:200] for e in at.exception], "errors": [str(e.value)[:160] for e in at.error]}))
"""


def run_page(page: str, slot: str, scenario: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(scenario, fh)
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, page, slot, fh.name], cwd=ROOT, capture_output=True, text=True,
                             timeout=900, env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)})
    finally:
        os.unlink(fh.name)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"failed": out.stderr[-400:]}


def refuse_oversized() -> dict:
    """The old worst case (16 x 64 x 4,096 with full tables, ~8 MB): refused before parsing?"""
    from specviz.base.errors import SpecvizError
    from specviz.inputs.scenario import load_scenario

    big = worst("target_only", 16, 64, 4096)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(big, fh)
    size = os.path.getsize(fh.name)
    t0 = time.perf_counter()
    try:
        load_scenario(fh.name)
        verdict = "accepted"
    except SpecvizError as exc:
        verdict = str(exc)[:120]
    dt = time.perf_counter() - t0
    os.unlink(fh.name)
    return {"bytes": size, "seconds": dt, "verdict": verdict}


def monte_carlo_worst() -> None:
    """One Monte Carlo click at the widest scenarios, trials capped by specviz.app.ui.heavy.cap_trials (numpy backend)."""
    from specviz.algorithms import distributions as dist
    from specviz.algorithms.backends import get_backend
    from specviz.replay.engine import scenario_inputs
    from specviz.inputs.scenario import scenario_from_dict
    from specviz.app.ui.heavy import cap_trials

    for algo, shape in (("chain_rejection", (1, 16, MAX_VOCAB)), ("target_only", (1, 64, MAX_TABLE_CELLS // 64))):
        s = scenario_from_dict(worst(algo, *shape))
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        inputs = {k: v for k, v in scenario_inputs(s).items() if not k.startswith("uniform_samples")}
        inputs["num_speculative_tokens"] = s.width
        trials = cap_trials(40_000, s.n, s.vocab_size)
        c0 = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        t0 = time.perf_counter()
        if algo == "chain_rejection":
            dist.chain_monte_carlo(get_backend("numpy").sample_many, inputs, num_trials=trials, seed=1, draft_from_q=True,
                                   semantics=s.semantics)
        else:
            t = s.tree(0)
            dist.target_only_monte_carlo(get_backend("numpy").sample_many, inputs, num_trials=trials, seed=1,
                                         root_children_tokens=[t.tokens[c] for c in t.children(0)], threshold_single=1.0,
                                         threshold_acc=1.0, semantics=s.semantics)
        extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        cpu = sum(resource.getrusage(resource.RUSAGE_SELF)[:2]) - c0
        print(f"monte carlo {algo:16} {'x'.join(map(str, shape)):10} trials {trials:>6} {time.perf_counter() - t0:6.2f} s wall "
              f"{cpu:6.2f} s CPU +{extra:.0f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="one page")
    ap.add_argument("--mc", action="store_true", help="only the Monte Carlo worst case")
    ap.add_argument("--shape", default="", help="e.g. 1x16x1024 (requests x nodes x vocabulary) instead of the limits' worst")
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in args.shape.split("x"))] if args.shape else SHAPES
    print(f"limits: {MAX_BATCH} requests, {MAX_TREE_NODES} nodes, {MAX_TABLE_CELLS:,} table cells, vocabulary <= {MAX_VOCAB}, "
          f"file <= {MAX_SCENARIO_CHARS:,} bytes")
    if args.mc:
        monte_carlo_worst()
        return
    print("oversized file:", json.dumps(refuse_oversized()))
    print(f"{'page':15} {'shape':14} {'bytes':>9} {'first run s':>11} {'click s':>8} {'CPU s':>6} {'extra MB':>9}  notes")
    for page, (slot, algo) in PAGES.items():
        if args.only and page != args.only:
            continue
        page_shapes = shapes if args.shape or algo in ("greedy", "target_only") else \
            [(MAX_BATCH, 17, MAX_TABLE_CELLS // (MAX_BATCH * 17)), shapes[1]]  # a chain is at most 17 slots (depth 16)
        for bs, n, V in page_shapes:
            sc = worst(algo, bs, n, V)
            size = len(json.dumps(sc))
            r = run_page(page, slot, sc)
            if "failed" in r:
                print(f"{page:15} {bs}x{n}x{V:<8} {size:>9}  FAILED {r['failed']}")
                continue
            note = "; ".join(r["exceptions"] + r["errors"])[:120]
            print(f"{page:15} {bs}x{n}x{V:<8} {size:>9} {r['first_run_s']:>11.2f} {r['click_s']:>8.2f} {r['cpu_s']:>6.2f} {r['extra_mb']:>9.0f}  {note}",
                  flush=True)


if __name__ == "__main__":
    main()
