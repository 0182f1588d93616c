#!/bin/bash
# Issue 36, fourth stop, on one H200 (the `run` tool, carry=[".whl", ".before", ".sglang"] and this tree, ".before" made by
# `benchmarks/make_before.sh 75292f9`): the kernel tests compiled, where target_probs_from_logits' time goes
# (gpu_probs_passes.py), target_probs before/after/torch-user in the same rounds (bench_kernels --ops), and the
# decoding loop's round on the GPU, after and before (75292f9), and goal 1's in-round bound. Give the bench
# 300 s (the default): 150 s stopped it inside bs 512 V 128256 top-k/top-p (75292f9's kernel: ~72 ms a call). About 9 minutes. Outputs under $OUT (or ./out), at most 8 files.
WHL=${WHL:-.whl}
source "$(dirname "$0")/gpu_setup.sh"
timeout ${TEST_TIMEOUT:-170} python3 -m pytest -q -x -n 14 -p no:cacheprovider tests/test_kernels_calls.py \
    tests/test_kernels_examples.py tests/test_kernels_host_path.py > "$OUT/kernel_tests.log" 2>&1
echo "kernel tests rc $?"; tail -2 "$OUT/kernel_tests.log"
timeout 120 python3 benchmarks/gpu_probs_passes.py --rounds 3 --out "$OUT/probs_passes.json" 2>&1 | grep '^|'
timeout ${BENCH_TIMEOUT:-300} python3 benchmarks/bench_kernels.py --before ${BEFORE:-.before} --impls triton before torch_user \
    --ops target_probs_from_logits target_probs_top_k_top_p --batches 1 64 512 --rounds ${ROUNDS:-3} \
    --out "$OUT/results.json" > "$OUT/bench.log" 2>&1; echo "bench rc $?"
grep -h '"error\|Error' "$OUT/bench.log" | head -5
python3 benchmarks/issue36_summary.py "$OUT/results.json" > "$OUT/summary.md" 2>&1; grep -i "target_probs\|same" "$OUT/summary.md" | cut -c1-260 | head -40
: > "$OUT/loop.log"
for side in after before; do  # before: BEFORE_TREE (the checkout at 75292f9 the tool sends, when run from .gpu4: ..)
  [ $side = after ] && dir=. || dir=${BEFORE_TREE:-..}
  (cd $dir && PYTHONPATH=$PWD timeout ${LOOP_TIMEOUT:-60} python3 benchmarks/bench_loop.py --round-only --backends torch triton \
      --repeats 3) > "$OUT/loop_$side.log" 2>&1; echo "loop $side rc $?"; tail -4 "$OUT/loop_$side.log"
  { echo "== $side"; cat "$OUT/loop_$side.log"; } >> "$OUT/loop.log"; rm "$OUT/loop_$side.log"
done
# Goal 1's bound measured inside each op's Python rounds (two empty launches; needs SGLang's files: carry .sglang)
timeout ${GOAL1_TIMEOUT:-100} python3 benchmarks/bench_kernels.py --impls triton sglang --batches 1 64 --vocabs 32000 \
    --rounds 2 > "$OUT/bench_goal1.log" 2>&1; echo "goal-1 bench rc $?"
