"""Last-bit fidelity: how often do numpy, torch, Triton and SGLang's own chain kernel draw different
tokens from the same dense row and coin? (issue 10, docs/sampling_numerics.md)

    TRITON_INTERPRET=1 python benchmarks/bench_fidelity.py --draws 10000 --V 50000 --workers 4
    python benchmarks/bench_fidelity.py --root /path/to/an/older/checkout ...   # "before" figures

Cases come from this checkout's ``tests/support/fidelity_cases.py`` (loaded by file path, so the same
rows and coins reach every code version; so does SGLang's loader, ``specviz/rooms/engines/sglang_engine.py``); the backends come from ``--root`` (default: this
checkout). Families: chain_plain / chain_residual (the chain sampler's bonus and residual draw,
also run through SGLang's ``chain_speculative_sampling_triton`` where the wheel or ``.sglang/``
is present), target_plain / target_residual (the target-only sampler: no SGLang Triton version).
Coins: random, near0 (0 .. 4 ulps), near1 (1 - k*2**-24, k = 1..4), boundary (the threshold within 3
ulps of a token's running-sum edge: where summation orders can disagree). Backend ``numpy_gpu`` is
the reference in a compiled GPU kernel's order (``specviz.reference.cdf.summation_order("gpu")``);
on an NVIDIA GPU (TRITON_INTERPRET unset) it is the one to compare with Triton and SGLang.

Prints one line per (family, coins): the number of draws where each pair disagrees, and writes
them to ``--json``. Under TRITON_INTERPRET=1 Triton and SGLang run in the interpreter (about
40 ms per V = 50,000 row on one core): spread the work with ``--workers``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
PAIRS = (("numpy", "torch"), ("numpy", "triton"), ("torch", "triton"), ("numpy", "sglang"), ("torch", "sglang"),
         ("triton", "sglang"), ("numpy_gpu", "triton"), ("numpy_gpu", "sglang"), ("numpy", "numpy_gpu"))


def _by_path(name: str, rel: str):
    """A file of this checkout under a private module name (``--root`` may be an older checkout)."""
    spec = importlib.util.spec_from_file_location(name, HERE / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cases_module():
    return _by_path("_fidelity_cases", "tests/support/fidelity_cases.py")


def _sglang_engine():
    return _by_path("_sglang_engine", "specviz/rooms/engines/sglang_engine.py")


_STATE = {}


def _init(root: str, backends: list[str]):
    sys.path.insert(0, root)
    from specviz.algorithms.backends import get_backend  # noqa: PLC0415  (from --root)
    _STATE["cases"] = _cases_module()
    # "numpy_gpu": the reference in a compiled GPU kernel's order (specviz.reference.cdf.summation_order)
    _STATE["backends"] = {b: get_backend("numpy" if b == "numpy_gpu" else b) for b in backends if b != "sglang"}
    if "sglang" in backends:
        _STATE["sgl"] = _sglang_engine().load()
        _STATE["chain_draw"] = _by_path("_sglang_oracle", "tests/support/sglang_oracle.py").chain_draw


def _sglang_draw(args) -> np.ndarray:
    import torch  # noqa: PLC0415
    dev = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    return _STATE["chain_draw"](_STATE["sgl"], args, dev)


def _run_chunk(job):
    family, coin_kind, V, rows, seed = job
    cases = _STATE["cases"]
    case = cases.make_case(np.random.default_rng(seed), family, rows, V, coin_kind)
    out = {}
    for name, be in _STATE["backends"].items():
        if name == "numpy_gpu":
            from specviz.reference.cdf import summation_order  # noqa: PLC0415  (from --root)
            with summation_order("gpu"):
                out[name] = cases.draw(be, case)
        else:
            out[name] = cases.draw(be, case)
    if "sgl" in _STATE and case["sampler"] == "chain":
        out["sglang"] = _sglang_draw(case["args"])
    return family, coin_kind, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(HERE), help="checkout whose specviz/kernels are measured")
    ap.add_argument("--V", type=int, default=50000)
    ap.add_argument("--draws", type=int, default=10000, help="draws per (family, coins)")
    ap.add_argument("--chunk", type=int, default=250, help="rows per launch")
    ap.add_argument("--families", nargs="+", default=["chain_plain", "chain_residual", "target_plain", "target_residual"])
    ap.add_argument("--coins", nargs="+", default=["random", "near0", "near1"])
    ap.add_argument("--backends", nargs="+", default=["numpy", "torch", "triton", "sglang"])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    backends = list(a.backends)
    if "sglang" in backends:
        sys.path.insert(0, a.root)
        if _sglang_engine().locate()[0] is None:
            print("sglang 0.5.23 not found: measuring without it")
            backends.remove("sglang")
        sys.path.pop(0)
    jobs = []
    for fi, fam in enumerate(a.families):
        for ci, ck in enumerate(a.coins):
            for j, start in enumerate(range(0, a.draws, a.chunk)):
                # The same seeds for every --root: identical rows and coins before and after.
                jobs.append((fam, ck, a.V, min(a.chunk, a.draws - start), [a.seed, fi, ci, j]))
    t0 = time.time()
    results = {}
    if a.workers > 1:
        with ProcessPoolExecutor(a.workers, initializer=_init, initargs=(a.root, backends)) as ex:
            done = list(ex.map(_run_chunk, jobs))
    else:
        _init(a.root, backends)
        done = [_run_chunk(j) for j in jobs]
    for fam, ck, out in done:
        acc = results.setdefault(f"{fam}/{ck}", {"draws": 0})
        acc["draws"] += len(next(iter(out.values())))
        for x, y in PAIRS:  # only pairs that were both drawn
            if x in out and y in out:
                acc[f"{x}!={y}"] = acc.get(f"{x}!={y}", 0) + int((out[x] != out[y]).sum())
    for key, acc in results.items():
        print(f"{key:24s} " + "  ".join(f"{k} {v}" for k, v in acc.items()))
    meta = dict(root=a.root, V=a.V, draws=a.draws, backends=backends, seconds=round(time.time() - t0, 1),
                interpret=os.environ.get("TRITON_INTERPRET") == "1")
    print(json.dumps(meta))
    if a.json:
        Path(a.json).write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
