"""target_probs_from_logits, temperature only: where the time goes, and kernel shapes that read a row once
from HBM (issue 36, goal 3), on a CUDA GPU.

    python benchmarks/gpu_probs_passes.py [--out probs_passes.json]

Rows = 8 x bs for bs 64 / 512, V 32000 and 128256, temperature 0.7. Each variant is timed as a CUDA graph
of 20 launches (``bench_kernels.Timer``, median of 3 alternated rounds after a rest), TB/s by the README
table's accounting (logits read once + probs written once), and compared with the product's output
(fraction of identical floats, max relative difference) and with the numpy reference on 8 rows.

* ``product``: what ``target_probs_from_logits`` runs today (the register kernel up to 32768 tokens, the
  split kernel above).
* ``copy``: ``probs.copy_(logits)``, the read + write floor.
* ``split_cC_wW``: rows of 32000 through the split kernel (chunks of C tokens, W warps; the product
  takes it above 32768 tokens only): several programs an SM, the row's last program doing its exps.
* ``row_w32``: the register kernel at 32 warps (half the floats a thread).
* ``row_f32exp``: the register kernel with a float32 exp (NOT the reference's rounding; shows what the
  float64 exp costs).
* ``l2_wW_bB[_pP]`` (``--long``): one program a row (or P programs a multiprocessor looping over rows), blocks of B
  tokens, W warps: pass 1 reads the row from HBM for its max; pass 2 reads it again (L2) and writes each
  token's exp term (float64 exp, rounded once) to the output, summing them per lane; pass 3 reads the
  terms back (L2) and writes term / sum over them. One float64 exp a token; HBM sees one read and (when
  the dirty terms stay in L2) one write.
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

from benchmarks.bench_kernels import Timer  # noqa: E402
from kernels import triton_sampling  # noqa: E402
from kernels.triton_sampling_kernels import target_probs_row_kernel  # noqa: E402
from specviz.base import probs as ref_probs  # noqa: E402

T = 0.7
LONG = False  # --long: also the three-pass L2 kernels (slower everywhere in the 16:30 UTC run)


@triton.jit
def row_f32exp_kernel(logits_ptr, probs_ptr, V, temperature, BLOCK_V: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    v = tl.arange(0, BLOCK_V)
    m = v < V
    x = tl.load(logits_ptr + r * V + v, mask=m, other=float("-inf")) / temperature
    e = tl.where(m, tl.exp(x - tl.max(x, axis=0)), 0.0)
    tl.store(probs_ptr + r * V + v, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def l2_kernel(logits_ptr, probs_ptr, rows, V, temperature, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    nb = tl.cdiv(V, BLOCK)
    for r in range(tl.program_id(0), rows, tl.num_programs(0)):
        base = (r + tl.zeros([], tl.int64)) * V
        row = logits_ptr + base
        out = probs_ptr + base
        mx = tl.full([BLOCK], float("-inf"), tl.float32)
        for j in range(0, nb):
            v = j * BLOCK + offs
            mx = tl.maximum(mx, tl.load(row + v, mask=v < V, other=float("-inf")) / temperature)
        row_max = tl.max(mx, axis=0)
        acc = tl.zeros([BLOCK], tl.float32)
        for j in range(0, nb):
            v = j * BLOCK + offs
            m = v < V
            x = tl.load(row + v, mask=m, other=float("-inf"))
            e = tl.where(m, tl.exp((x / temperature - row_max).to(tl.float64)).to(tl.float32), 0.0)
            acc += e
            tl.store(out + v, e, mask=m)
        s = tl.sum(acc, axis=0)
        for j in range(0, nb):
            v = j * BLOCK + offs
            m = v < V
            tl.store(out + v, tl.load(out + v, mask=m) / s, mask=m)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--long", action="store_true")
    args = ap.parse_args()
    global LONG
    LONG = args.long
    dev = torch.device("cuda")
    nsm = torch.cuda.get_device_properties(dev).multi_processor_count
    timer = Timer(dev)
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows_out = []
    for V in (32000, 128256):
        for bs in (64, 512):
            rows = bs * 8
            logits = torch.randn((rows, V), generator=gen, device="cuda") * 3
            tb = rows * V * 4 * 2 / 1e12
            base = triton_sampling.target_probs_from_logits(logits, temperature=T, validate=False)
            ref = ref_probs.target_probs_from_logits(logits[:8].cpu().numpy(), temperature=T)
            outs = {}

            def mk(name, launch):
                out = torch.empty_like(logits)
                outs[name] = out
                return lambda: launch(out)

            impls = {"product": lambda: triton_sampling.target_probs_from_logits(logits, temperature=T, validate=False),
                     "copy": mk("copy", lambda o: o.copy_(logits))}
            if V <= 32768:
                blk = triton.next_power_of_2(V)
                impls["row_w32"] = mk("row_w32", lambda o: target_probs_row_kernel[(rows,)](
                    logits, logits, logits, logits, o, V, T, 0.0, 1.0, False, False, True, blk, 0, num_warps=32))
                impls["row_f32exp"] = mk("row_f32exp", lambda o: row_f32exp_kernel[(rows,)](
                    logits, o, V, T, blk, num_warps=16))
            if V <= 32768:
                def split(chunk, warps):
                    def call():
                        old = (triton_sampling.ROW_IN_REGISTERS_MAX, triton_sampling.SPLIT_CHUNK, triton_sampling.SPLIT_WARPS)
                        triton_sampling.ROW_IN_REGISTERS_MAX, triton_sampling.SPLIT_CHUNK = 0, chunk
                        triton_sampling.SPLIT_WARPS = warps
                        try:
                            return triton_sampling.target_probs_from_logits(logits, temperature=T, validate=False)
                        finally:
                            (triton_sampling.ROW_IN_REGISTERS_MAX, triton_sampling.SPLIT_CHUNK,
                             triton_sampling.SPLIT_WARPS) = old
                    return call
                for chunk, warps in ((8192, 8), (4096, 4), (16384, 16)):
                    impls[f"split_c{chunk}_w{warps}"] = split(chunk, warps)
            if LONG:
                for w, b, p in ((16, 4096, 0), (8, 4096, 0)):
                    grid = rows if p == 0 else min(rows, p * nsm)
                    name = f"l2_w{w}_b{b}" + (f"_p{p}" if p else "")
                    impls[name] = mk(name, lambda o, w=w, b=b, grid=grid: l2_kernel[(grid,)](
                        logits, o, rows, V, T, b, num_warps=w))
            graphs = {}
            for name, fn in impls.items():
                try:
                    graphs[name] = timer.capture(fn)
                except Exception as exc:  # a variant that does not compile is reported, not fatal
                    print(json.dumps(dict(V=V, bs=bs, impl=name, error=repr(exc)[:300])), flush=True)
            times = timer.alternated(graphs, args.rounds)
            for name in graphs:
                out = outs.get(name, base) if name != "product" else base
                if name not in outs:
                    out = impls[name]()
                torch.cuda.synchronize()
                us = float(np.median(times[name]))
                row = dict(V=V, bs=bs, rows=rows, impl=name, graph_us=round(us, 2), graph_us_rounds=times[name],
                           TBps=round(tb / (us * 1e-6), 3))
                if name != "copy":
                    rel = (out - base).abs() / base.abs().clamp_min(1e-30)
                    row.update(equal_to_product=round(float((out == base).float().mean()), 6),
                               max_rel_diff_vs_product=float(rel.max()),
                               equal_to_ref=round(float((out[:8].cpu().numpy() == ref).mean()), 6),
                               max_abs_diff_vs_ref=float(np.abs(out[:8].cpu().numpy() - ref).max()))
                rows_out.append(row)
                print(json.dumps(row), flush=True)
            del logits, base, outs, graphs
            torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps(rows_out, indent=1))
    print("| V | bs | impl | graph us | TB/s | equal to product | equal to ref |")
    print("|---|---|---|---|---|---|---|")
    for r in rows_out:
        print(f"| {r['V']} | {r['bs']} | {r['impl']} | {r['graph_us']} | {r['TBps']} | {r.get('equal_to_product', '-')} | "
              f"{r.get('equal_to_ref', '-')} |")


if __name__ == "__main__":
    main()
