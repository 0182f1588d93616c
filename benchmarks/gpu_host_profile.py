"""Where a kernel's Python call spends its host time (issue 36, goal 1), on a CUDA GPU.

    python benchmarks/gpu_host_profile.py [--out host_profile.json]

For every op of ``bench_kernels`` at bs 1 and 64 (V 32000), the call of our kernels and of SGLang's
(where it has the op) is run 300 times back to back and timed on the host (``time.perf_counter``,
one synchronize at the end: at these sizes the GPU waits for the host, so this is the host's time a
call), then profiled with cProfile (the functions with the most own time, us a call); ours also with
every launch through the JIT (``FastLaunch`` off: what it saves on a real call). Before that,
the pieces a call is made of, timed alone the same way: an empty Triton kernel launched through the
JIT and through ``FastLaunch`` with 1 and 20 arguments, ``torch.empty``, ``torch.cumsum``, ``.item()``.
Profiling adds its own cost to every Python function call, so read its figures as shares, not times.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import benchmarks.bench_kernels as bk  # noqa: E402
from kernels import triton_common  # noqa: E402
from kernels.triton_common import FastLaunch  # noqa: E402

CALLS = 300
ROWS = []


def host_us(fn, calls=CALLS) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    best = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best.append((time.perf_counter() - t0) / calls * 1e6)
    return round(sorted(best)[1], 2)


def profile(fn, calls=CALLS, top=12):
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(prof)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # by own time
    return [(f"{Path(k[0]).name}:{k[1]}:{k[2]}", round(v[2] / calls * 1e6, 2), round(v[3] / calls * 1e6, 2), v[1] // calls)
            for k, v in rows]  # (function, own us a call, cumulative us a call, calls a call)


@triton.jit
def empty1(x_ptr):
    pass


@triton.jit
def empty20(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, s0, s1, s2, s3, s4, C0: tl.constexpr, C1: tl.constexpr,
            C2: tl.constexpr, C3: tl.constexpr, C4: tl.constexpr):
    pass


def pieces():
    x = torch.zeros(64, device="cuda", dtype=torch.int64)
    ts = [torch.zeros(64, device="cuda", dtype=torch.int64) for _ in range(10)]
    f1, f20 = FastLaunch(empty1), FastLaunch(empty20)
    args20 = (*ts, 7, 64, 3, 1000, 2, 1, 2, 3, 4, 5)
    out = {
        "jit_empty_1_arg": host_us(lambda: empty1[(1,)](x)),
        "fast_empty_1_arg": host_us(lambda: f1((1,), x)),
        "jit_empty_20_args": host_us(lambda: empty20[(1,)](*args20)),
        "fast_empty_20_args": host_us(lambda: f20((1,), *args20)),
        "torch_empty_64": host_us(lambda: torch.empty(64, device="cuda", dtype=torch.int64)),
        "torch_empty_4x_vs_1": host_us(lambda: [torch.empty(64, device="cuda", dtype=torch.int64) for _ in range(4)]),
        "torch_cumsum_64": host_us(lambda: torch.cumsum(x, 0)),
        "torch_add_1": host_us(lambda: x + 1),
        "item": host_us(lambda: x[0].item(), 100),
    }
    for k, v in out.items():
        ROWS.append(dict(op="piece", name=k, host_us=v))
        print(f"piece {k:24s} {v:8.2f} us", flush=True)
    prof = profile(lambda: f20((1,), *args20))
    ROWS.append(dict(op="piece", name="fast_empty_20_args_profile", profile=prof))
    for p in prof[:6]:
        print("   ", p)


def bench_impls(results, timer, op, meta, impls, bytes_touched=0.0):
    if meta.get("bs") not in (1, 64) or meta.get("V", 32000) != 32000:
        return {}
    for name in ("triton", "sglang"):
        if name not in impls:
            continue
        fn = impls[name][0]
        try:
            us = host_us(fn)
            prof = profile(fn)
        except Exception as exc:  # report, keep going
            print(op, name, "error", exc)
            continue
        row = dict(op=op, impl=name, host_us=us, profile=prof, **meta)
        if name == "triton":  # the same call with every launch through the JIT (FastLaunch off)
            triton_common._FAST = False
            row["host_us_jit_launch"] = host_us(fn)
            triton_common._FAST = True
        ROWS.append(row)
        print(f"{op} {name} {meta} host {us} us" + (f" (JIT launch: {row['host_us_jit_launch']})" if name == "triton" else ""),
              flush=True)
        for p in prof[:8]:
            print("   ", p)
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    args = ap.parse_args()
    pieces()
    bk.bench_impls = bench_impls
    bk.BATCHES = [1, 64]
    bk.VOCABS = [32000]
    bk.run(argparse.Namespace(smoke=False))
    if args.out:
        Path(args.out).write_text(json.dumps(ROWS, indent=1))


if __name__ == "__main__":
    main()
