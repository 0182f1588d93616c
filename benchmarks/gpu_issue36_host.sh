#!/bin/bash
# Issue 36 goal 1/2 on one H200 (the `run` tool): the Python calls of this tree's kernels against an earlier
# commit's and SGLang's, in one run, at the batch sizes where the host decides (bs 1, 64, 512).
#   benchmarks/make_before.sh REV DIR     # here, before the run: REV's kernels as DIR/kernels_before
#   BEFORE=DIR WHL=.whl bash benchmarks/gpu_issue36_host.sh     # there; DIR, .whl and .sglang carried
# Outputs under $OUT (or ./out): the compiled kernel tests' log, results.json, summary.md, bench.log.
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile ${WHL:-.whl}/*.whl || exit 1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/probe.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/probe.txt"
[ -n "$SKIP_TESTS" ] || timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -x -n 14 -p no:cacheprovider tests/test_kernels_calls.py \
    tests/test_kernels_examples.py tests/test_kernels_host_path.py > "$OUT/kernel_tests.log" 2>&1
echo "kernel tests rc $?"; tail -3 "$OUT/kernel_tests.log"
timeout ${BENCH_TIMEOUT:-330} python3 benchmarks/bench_kernels.py --before "${BEFORE:-.before}" --impls triton before sglang \
    --batches ${BATCHES:-1 64 512} --rounds ${ROUNDS:-3} ${BITS---bits} --out "$OUT/results.json" > "$OUT/bench.log" 2>&1
echo "bench rc $?"; grep -h '"error\|Error' "$OUT/bench.log" | head -10
python3 benchmarks/issue36_summary.py "$OUT/results.json" > "$OUT/summary.md"
grep -v '"same": true' "$OUT/summary.md" | grep -v 'same_as_sglang": true' | cut -c1-230
