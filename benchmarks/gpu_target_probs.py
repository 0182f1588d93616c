"""target_probs_from_logits on rows longer than one program holds (issue 36, goal 3), on a CUDA GPU.

    python benchmarks/gpu_target_probs.py [--out target_probs.json]

Temperature 0.7 only, V 128256 (and 32000, the register kernel, for scale), rows = bs x n for n 8 and bs
1 / 64 / 512. Variants of the split kernel (chunk tokens a program, warps, the last program's block)
beside the multi-pass kernel (``target_probs_kernel``, what such rows took before). Each timed as a CUDA
graph of 20 launches (median of 5 replays, ``bench_kernels.Timer``); TB/s by the README table's
accounting: logits read once + probs written once. Every variant's output is compared with the
multi-pass kernel's (max abs and max relative difference, identical support) and with the numpy
reference on 16 rows (``specviz.base.probs``: float64 exp rounded once, the same float32 division).
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

from benchmarks.bench_kernels import Timer  # noqa: E402
from kernels import triton_sampling  # noqa: E402
from specviz.base import probs as ref_probs  # noqa: E402

VARIANTS = [(8192, 8, 4096), (8192, 8, 2048), (16384, 16, 4096), (4096, 4, 2048)]  # (chunk, warps, final block)


def pass_kernel(logits):
    """The multi-pass kernel forced (what V > 32768 took before): top_p 1.0 is off, so per-row values."""
    temperature = torch.full((logits.shape[0],), 0.7, device=logits.device)  # per-row values: the pass kernel
    return triton_sampling.target_probs_from_logits(logits, temperature=temperature, validate=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    args = ap.parse_args()
    timer = Timer(torch.device("cuda"))
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows_out = []
    for V in (128256, 32000):
        for bs in (1, 64, 512):
            rows = bs * 8
            logits = torch.randn((rows, V), generator=gen, device="cuda") * 3
            tb = rows * V * 4 * 2 / 1e12
            base = pass_kernel(logits)
            ref = ref_probs.target_probs_from_logits(logits[:16].cpu().numpy(), temperature=0.7)
            impls = {"pass_kernel": lambda: pass_kernel(logits)}
            if V > triton_sampling.ROW_IN_REGISTERS_MAX:
                for chunk, warps, block in VARIANTS:
                    def call(chunk=chunk, warps=warps, block=block):
                        triton_sampling.SPLIT_CHUNK, triton_sampling.SPLIT_WARPS = chunk, warps
                        triton_sampling.SPLIT_FINAL_BLOCK = block
                        return triton_sampling.target_probs_from_logits(logits, temperature=0.7, validate=False)
                    impls[f"split_c{chunk}_w{warps}_b{block}"] = call
            else:
                impls["row_kernel"] = lambda: triton_sampling.target_probs_from_logits(logits, temperature=0.7,
                                                                                      validate=False)
            for name, fn in impls.items():
                out = fn()
                torch.cuda.synchronize()
                diff = (out - base).abs()
                rel = float((diff / base.clamp_min(1e-30)).max())
                ref_diff = float(np.abs(out[:16].cpu().numpy() - ref).max())
                ref_equal = float((out[:16].cpu().numpy() == ref).mean())
                us = timer.graph(fn)
                row = dict(V=V, bs=bs, rows=rows, impl=name, graph_us=round(us, 2), TBps=round(tb / (us * 1e-6), 3),
                           max_abs_diff_vs_pass=float(diff.max()), max_rel_diff_vs_pass=rel,
                           same_support=bool(torch.equal(out > 0, base > 0)), max_abs_diff_vs_ref=ref_diff,
                           equal_to_ref_fraction=round(ref_equal, 6))
                rows_out.append(row)
                print(json.dumps(row), flush=True)
            del logits, base
            torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps(rows_out, indent=1))
    print("| V | bs | impl | graph us | TB/s | max rel diff vs pass | equal to ref |")
    print("|---|---|---|---|---|---|---|")
    for r in rows_out:
        print(f"| {r['V']} | {r['bs']} | {r['impl']} | {r['graph_us']} | {r['TBps']} | {r['max_rel_diff_vs_pass']:.2e} | "
              f"{r['equal_to_ref_fraction']} |")


if __name__ == "__main__":
    main()
