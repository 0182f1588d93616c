"""target_probs_from_logits, temperature only, rows of V 32000 (the register kernel): which exp and which kernel
shape (issue 36 goal 3a, stop 43; benchmarks/README "Issue 36, stop 43"), on a CUDA GPU.

    python benchmarks/gpu_probs_variants.py --before .before [--out variants.json]

Rows = 8 x bs for bs 64 / 512, logits N(0, 9), temperature 0.7; CUDA graphs of 20 launches, median of 3
alternated rounds (``bench_kernels.Timer``); TB/s = logits read once + probs written once. Each output is compared
bit for bit with the before tree's target_probs_from_logits.

* ``row_<exp>``: one program a row, the row in registers (the product's register kernel, temperature only);
* ``persistent_<exp>``: one program a multiprocessor looping over rows (``tl.range(num_stages=2)``: Triton
  prefetches the next row into shared memory with cp.async while this row's exps run);
* ``<exp>``: ``libdevice`` (tl.exp in float64) or ``tableN`` (benchmarks/exact_exp_table.py, N = 64, 8, 1 table entries).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from benchmarks.bench_kernels import Timer, load_before  # noqa: E402
from kernels import triton_sampling  # noqa: E402
from benchmarks.exact_exp_table import device_table, exp_rounded  # noqa: E402

T = 0.7


@triton.jit
def row_kernel(logits_ptr, probs_ptr, table_ptr, V, temperature, BLOCK_V: tl.constexpr, FAST: tl.constexpr,
               N: tl.constexpr, ASM: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    v = tl.arange(0, BLOCK_V)
    m = v < V
    x = tl.load(logits_ptr + r * V + v, mask=m, other=float("-inf")) / temperature
    row_max = tl.max(x, axis=0)
    e = tl.where(m, exp_rounded(x - row_max, table_ptr, FAST, False, N, ASM), 0.0)
    tl.store(probs_ptr + r * V + v, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def persistent_kernel(logits_ptr, probs_ptr, table_ptr, rows, V, temperature, BLOCK_V: tl.constexpr,
                      FAST: tl.constexpr, N: tl.constexpr, STAGES: tl.constexpr):
    v = tl.arange(0, BLOCK_V)
    m = v < V
    for r in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
        base = r.to(tl.int64) * V
        x = tl.load(logits_ptr + base + v, mask=m, other=float("-inf")) / temperature
        row_max = tl.max(x, axis=0)
        e = tl.where(m, exp_rounded(x - row_max, table_ptr, FAST, False, N), 0.0)
        tl.store(probs_ptr + base + v, e / tl.sum(e, axis=0), mask=m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, nargs="*", default=[64, 512])
    args = ap.parse_args()
    bf = load_before(args.before)
    dev = torch.device("cuda")
    nsm = torch.cuda.get_device_properties(dev).multi_processor_count
    timer = Timer(dev)
    gen = torch.Generator(device="cuda").manual_seed(0)
    exps = {"libdevice": (False, 64), "table64": (True, 64), "table8": (True, 8), "table1": (True, 1)}
    persistent = ("libdevice", "table64", "table8", "table1")
    rows_out = []
    V = 32000
    blk = triton.next_power_of_2(V)
    for bs in args.batches:
        rows = bs * 8
        logits = torch.randn((rows, V), generator=gen, device="cuda") * 3
        tb = rows * V * 4 * 2 / 1e12
        ref = bf.triton_sampling.target_probs_from_logits(logits, temperature=T, validate=False)
        outs = {}

        def mk(name, launch):
            out = torch.empty_like(logits)
            outs[name] = out
            return lambda: launch(out)

        impls = {"before": lambda: bf.triton_sampling.target_probs_from_logits(logits, temperature=T, validate=False),
                 "product": lambda: triton_sampling.target_probs_from_logits(logits, temperature=T, validate=False),
                 "copy": mk("copy", lambda o: o.copy_(logits))}
        for name, (fast, n) in exps.items():
            table = device_table(dev, n)
            impls[f"row_{name}"] = mk(f"row_{name}", lambda o, fast=fast, n=n, table=table: row_kernel[(rows,)](
                logits, o, table, V, T, blk, fast, n, True, num_warps=16))
            if name == "table64":  # the table gathered by tl.load (L1) instead of ld.global.nc
                impls["row_table64_tlload"] = mk("row_table64_tlload", lambda o, table=table: row_kernel[(rows,)](
                    logits, o, table, V, T, blk, True, 64, False, num_warps=16))
            for stages, per_sm in ((2, 1),):
                grid = min(rows, per_sm * nsm)
                impls[f"persistent_{name}"] = mk(f"persistent_{name}", lambda o, fast=fast, n=n, table=table, g=grid,
                                                 s=stages: persistent_kernel[(g,)](logits, o, table, rows, V, T, blk,
                                                                                   fast, n, s, num_warps=16))
        graphs = {}
        for name, fn in impls.items():
            try:
                fn()
                torch.cuda.synchronize()
                graphs[name] = timer.capture(fn)
            except Exception as exc:  # a variant that does not compile is reported, not fatal
                print(json.dumps(dict(V=V, bs=bs, impl=name, error=repr(exc)[:400])), flush=True)
        times = timer.alternated(graphs, args.rounds)
        for name in graphs:
            out = outs.get(name)
            if out is None:
                out = impls[name]()
            torch.cuda.synchronize()
            us = float(np.median(times[name]))
            row = dict(V=V, bs=bs, rows=rows, impl=name, graph_us=round(us, 2), graph_us_rounds=times[name],
                       TBps=round(tb / (us * 1e-6), 3))
            if name != "copy":
                row["same_as_before"] = bool(torch.equal(out, ref))
                if not row["same_as_before"]:
                    row["mismatches"] = int((out != ref).sum())
            rows_out.append(row)
            print(json.dumps(row), flush=True)
        del logits, ref, outs, graphs
        torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps(rows_out, indent=1))
    print("| bs | impl | graph us (rounds) | TB/s | same as before |")
    print("|---|---|---|---|---|")
    for r in rows_out:
        print(f"| {r['bs']} | {r['impl']} | {r['graph_us']} {r['graph_us_rounds']} | {r['TBps']} | "
              f"{r.get('same_as_before', '-')} |")


if __name__ == "__main__":
    main()
