#!/bin/bash
# Issue 36, fifth stop (goal 1, the Python call's host work), on one H200 through the `run` tool. The tool sends the
# main checkout, so this tree travels as an ignored copy: here, `git -C WORKTREE archive HEAD | tar -x -C .gpu5`
# (plus .before = `benchmarks/make_before.sh MAIN_REV .before`), carry [".gpu5", ".whl", ".sglang", ".before"],
# and run `cd .gpu5 && bash benchmarks/gpu_issue36_goal1.sh`. Steps: the compiled kernel tests (SUITE=1: the whole
# suite instead), goal 1's bench (ours / before / SGLang / two empty launches timed in the same rounds, bs 1 and 64,
# V 32000), and ours against before at bs 512 (the split samplers' walk-first and two-block paths): bit checks.
# Outputs under $OUT (or ./out).
WHL=${WHL:-../.whl}; BEFORE=${BEFORE:-../.before}
source "$(dirname "$0")/gpu_setup.sh"
if [ -n "$SUITE" ]; then
  timeout ${SUITE_TIMEOUT:-300} python3 -m pytest -q -n 14 -rs -p no:cacheprovider --timeout 300 \
      -m "exhaustive or not exhaustive" > "$OUT/suite.log" 2>&1
  echo "suite rc $?"; grep -E "FAILED|ERROR" "$OUT/suite.log" | head -20; tail -1 "$OUT/suite.log"
else
  timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -x -n 14 -p no:cacheprovider tests/test_kernels_calls.py \
      tests/test_kernels_examples.py tests/test_kernels_host_path.py tests/test_sglang_oracle.py > "$OUT/kernel_tests.log" 2>&1
  echo "kernel tests rc $?"; tail -2 "$OUT/kernel_tests.log"
fi
timeout ${GOAL1_TIMEOUT:-200} python3 benchmarks/bench_kernels.py --before "$BEFORE" --impls triton before sglang \
    --batches 1 64 --vocabs 32000 --rounds ${ROUNDS:-3} --out "$OUT/goal1.json" > "$OUT/goal1.log" 2>&1
echo "goal-1 bench rc $?"; grep -h '"error' "$OUT/goal1.log" | head -5
python3 benchmarks/issue36_summary.py "$OUT/goal1.json" > "$OUT/goal1.md" 2>&1; cut -c1-200 "$OUT/goal1.md"
[ -n "$NO_BITS" ] || { timeout ${BITS_TIMEOUT:-120} python3 benchmarks/bench_kernels.py --before "$BEFORE" --impls triton before \
    --ops tree_sampling_target_only chain_rejection_sampling --batches 512 --vocabs 32000 128256 --rounds 1 \
    --out "$OUT/bits512.json" > "$OUT/bits512.log" 2>&1; echo "bs-512 bench rc $?";
  grep -h 'check\|"error' "$OUT/bits512.log" | cut -c1-200; }
