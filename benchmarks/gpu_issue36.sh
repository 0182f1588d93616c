#!/bin/bash
# Issue 36 on one H200 (the `run` tool, carry=[".sglang", ".whl", ".before"]): the kernel tests compiled,
# the kernel benchmark with the kernels of 6e1ef88 beside ours (".before", made by `benchmarks/make_before.sh 6e1ef88`),
# the split target_probs kernel's variants (gpu_target_probs.py), the decoding loop's round on the CPU and
# the GPU, then the whole suite. Outputs under $OUT (or ./out): 8 files (what the `run` tool brings back).
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl || exit 1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/probe.txt"
timeout 240 python3 -m pytest -q -x -n 14 -p no:cacheprovider tests/test_kernels_calls.py \
    tests/test_kernels_examples.py > "$OUT/kernel_tests.log" 2>&1; rc=$?; echo "kernel tests rc $rc"; tail -3 "$OUT/kernel_tests.log"
if [ $rc -ne 0 ]; then  # does the direct launch (FastLaunch) break on this Triton? then measure without it, and say so
  SPECVIZ_FAST_LAUNCH=0 timeout 240 python3 -m pytest -q -x -n 14 -p no:cacheprovider tests/test_kernels_calls.py \
      tests/test_kernels_examples.py > "$OUT/kernel_tests_nofast.log" 2>&1 \
      && { echo "FAST LAUNCH OFF: the tests pass without it"; export SPECVIZ_FAST_LAUNCH=0; }
  tail -3 "$OUT/kernel_tests_nofast.log"
fi
python3 - <<'PY' | tee -a "$OUT/probe.txt"
import torch
from kernels import triton_sampling as ts
x = torch.randn(64, 32000, device="cuda")
for kw in (dict(temperature=0.7), dict(temperature=0.7, top_k=50, top_p=0.9)):
    ts.target_probs_from_logits(x, validate=False, **kw); ts.target_probs_from_logits(x, validate=False, **kw)
for key, ck in ts._ROW_KERNEL.compiled.items():
    ck._init_handles()
    print("target_probs_row_kernel", key[1][-4:], "regs", ck.n_regs, "spills", ck.n_spills)
x = torch.randn(64, 128256, device="cuda")
ts.target_probs_from_logits(x, temperature=0.7, validate=False); ts.target_probs_from_logits(x, temperature=0.7, validate=False)
for key, ck in ts._SPLIT_KERNEL.compiled.items():
    ck._init_handles()
    print("target_probs_split_kernel", key[1][-4:], "regs", ck.n_regs, "spills", ck.n_spills)
PY
timeout 420 python3 benchmarks/bench_kernels.py --before .before --impls triton before sglang torch_user triton_one_launch --bits --rounds ${ROUNDS:-3} \
    --out "$OUT/results.json" > "$OUT/bench.log" 2>&1; echo "bench rc $?"
grep -h '"error\|Error' "$OUT/bench.log" | head -10
python3 benchmarks/issue36_summary.py "$OUT/results.json" > "$OUT/summary.md"; grep -v '"same": true' "$OUT/summary.md" | grep -v 'same_as_sglang": true' | cut -c1-230
timeout 100 python3 benchmarks/gpu_target_probs.py --out "$OUT/target_probs.json" 2>&1 | grep '^|'
timeout 120 python3 benchmarks/bench_loop.py --round-only --backends torch triton --repeats 3 2>&1 | tee "$OUT/loop.log"
if [ -z "$NO_SUITE" ]; then
  timeout 300 python3 -m pytest -q -n 14 -rs -p no:cacheprovider --timeout 300 -m "exhaustive or not exhaustive" \
      > "$OUT/suite.log" 2>&1; echo "suite rc $?"; tail -2 "$OUT/suite.log"
fi
