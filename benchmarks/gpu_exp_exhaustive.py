"""Every float32 x <= 0: benchmarks/exact_exp_table.py's exp (FAST) against libdevice's float64 exp, both rounded to float32,
compiled on a GPU (the check a kernel's bit-identity would rest on if it took that exp; benchmarks/README "Issue 36,
stop 43 (gpu8)").

The arguments are all 2^31 bit patterns with the sign bit set (-0.0, every negative float32 down to -max, -inf
and the 2^23 - 1 negative NaNs) and +0.0: 2^31 + 1 values, in chunks of 2^28 on the GPU. A mismatch: different
float32 bits, unless both are NaN. Also run with WEAK (a degree-3 polynomial, max error 2^-37), which must
mismatch (the check can fail), and a throughput probe of the two exps alone (a sum per program, no output row).

    python3 benchmarks/gpu_exp_exhaustive.py --all-tables --out exhaustive.json
"""
import argparse
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchmarks.exact_exp_table import EXP_N, PARAMS, device_table, exp_rounded  # noqa: E402

CHUNK = 1 << 28
BLOCK = 1024
DEVICE = "cuda"
SMOKE = False  # --smoke (with TRITON_INTERPRET=1): the first and last 2^14 arguments only, on the CPU: checks the script


@triton.jit
def _both_kernel(fast_ptr, ref_ptr, table_ptr, start, WEAK: tl.constexpr, BLOCK: tl.constexpr, N: tl.constexpr,
                 ASM: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    bits = (start + i).to(tl.int32)  # start + i in [-2^31, 0]: the sign-bit patterns, then +0.0
    x = bits.to(tl.float32, bitcast=True)
    tl.store(fast_ptr + i, exp_rounded(x, table_ptr, True, WEAK, N, ASM))
    tl.store(ref_ptr + i, exp_rounded(x, table_ptr, False))


@triton.jit
def _throughput_kernel(out_ptr, table_ptr, FAST: tl.constexpr, BLOCK: tl.constexpr, REPS: tl.constexpr,
                       N: tl.constexpr):
    pid = tl.program_id(0)
    x = -(tl.arange(0, BLOCK) + pid * BLOCK).to(tl.float32) * 1e-4
    acc = tl.zeros([BLOCK], tl.float32)
    for _ in range(REPS):
        acc += exp_rounded(x, table_ptr, FAST, False, N)
        x = x - 0.37
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def check(weak, tsize=EXP_N, report_first=8):
    table = device_table(torch.device(DEVICE), tsize)
    fast = torch.empty(CHUNK, dtype=torch.float32, device=DEVICE)
    ref = torch.empty_like(fast)
    mism = nan_both = nan_in = 0
    first = []
    total = 0
    starts = range(-(1 << 31), 1, CHUNK) if not SMOKE else (-(1 << 31), 1 - CHUNK)
    for start in starts:
        n = min(CHUNK, 1 - start)  # the last chunk stops at +0.0 (bits 0)
        _both_kernel[(triton.cdiv(n, BLOCK),)](fast, ref, table, start, weak, BLOCK, tsize, not SMOKE)
        f, r = fast[:n], ref[:n]
        fn, rn = torch.isnan(f), torch.isnan(r)
        bad = (f.view(torch.int32) != r.view(torch.int32)) & ~(fn & rn)
        c = int(bad.sum())
        mism += c
        nan_both += int((fn & rn).sum())
        xs = torch.arange(start, start + n, device=DEVICE, dtype=torch.int64).to(torch.int32).view(torch.float32)
        nan_in += int(torch.isnan(xs).sum())
        if c and len(first) < report_first:
            idx = torch.nonzero(bad).flatten()[:report_first - len(first)]
            for k in idx.tolist():
                first.append({"x": float(xs[k]), "x_bits": hex((start + k) & 0xFFFFFFFF), "fast": float(f[k]),
                              "libdevice": float(r[k])})
        total += n
    return {"weak": weak, "table": tsize, "arguments": total, "mismatches": mism, "nan_inputs": nan_in,
            "nan_both": nan_both, "first_mismatches": first}


def throughput(fast, tsize=EXP_N, reps=64, programs=132 * 64):
    table = device_table(torch.device("cuda"), tsize)
    out = torch.empty(programs, dtype=torch.float32, device="cuda")
    _throughput_kernel[(programs,)](out, table, fast, BLOCK, reps, tsize)
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        _throughput_kernel[(programs,)](out, table, fast, BLOCK, reps, tsize)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    n = programs * BLOCK * reps
    times.sort()
    return {"fast": fast, "table": tsize if fast else None, "exps": n, "us_min": times[0], "us_median": times[2], "us_max": times[-1],
            "gexp_per_s_median": n / times[2] / 1e3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--all-tables", action="store_true", help="also every other table size of benchmarks/exact_exp_table.py")
    a = ap.parse_args()
    if a.smoke:
        global CHUNK, DEVICE, SMOKE
        CHUNK, DEVICE, SMOKE = 1 << 14, "cpu", True
    res = {"device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu", "triton": triton.__version__,
           "torch": torch.__version__}
    t = time.time()
    res["exhaustive"] = check(False)
    res["exhaustive_s"] = round(time.time() - t, 1)
    print("exhaustive (degree 5):", json.dumps(res["exhaustive"]), f"{res['exhaustive_s']} s", flush=True)
    res["weak"] = check(True)
    if a.all_tables:
        res["other_tables"] = [check(False, n) for n in PARAMS if n != EXP_N]
        for r in res["other_tables"]:
            print(f"exhaustive, table {r['table']}:", json.dumps(r), flush=True)
    print("weak (degree 3):", json.dumps(res["weak"]), flush=True)
    res["throughput"] = [throughput(False)] + [throughput(True, n) for n in PARAMS] if not SMOKE else []
    for r in res["throughput"]:
        print("exp alone,", f"table {r['table']}" if r["fast"] else "libdevice", f"{r['gexp_per_s_median']:.0f} Gexp/s",
              f"(us {r['us_min']:.1f} / {r['us_median']:.1f} / {r['us_max']:.1f})", flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
    ok = res["exhaustive"]["mismatches"] == 0 and (res["weak"]["mismatches"] > 0 or SMOKE) \
        and res["exhaustive"]["nan_both"] == res["exhaustive"]["nan_inputs"] \
        and all(r["mismatches"] == 0 for r in res.get("other_tables", []))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
