#!/bin/bash
# Issue 36, stop 45 (gpu12): goal 3b, tree_sampling_target_only at bs 512, the walk-first call's draw as a
# programmatic dependent launch (benchmarks/README "Issue 36, stop 45 (gpu12)"), on one H200 through the `run`
# tool. As stop 44's script: this tree travels as an ignored copy in the main checkout (.gpu12, .sglang copied
# in), `benchmarks/make_before.sh main .before_gpu12`; carry [".gpu12", ".whl", ".before_gpu12"], then
#   cd .gpu12 && WHL=../.whl BEFORE=../.before_gpu12 SUITE=1 bash benchmarks/gpu_issue36_stop45.sh
# (0) whether this Triton has programmatic dependent launch; (1) the target-only tests, compiled (TESTS=1);
# (2) bench_kernels' target-only rows with IMPLS, after and before in the same rounds, and check_vs_before;
# (3) SUITE=1: the whole suite, compiled.
WHL=${WHL:-../.whl}; BEFORE=${BEFORE:-../.before_gpu12}
source "$(dirname "$0")/gpu_setup.sh"
python3 -c "import triton.language.extra.cuda as c, triton.backends.nvidia.compiler as k; print('gdc', hasattr(c, 'gdc_wait'), 'launch_pdl option', 'launch_pdl' in k.CUDAOptions.__dataclass_fields__)" | tee -a "$OUT/probe.txt"
if [ "${TESTS:-0}" = 1 ]; then
  timeout 200 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_kernels_calls.py tests/test_kernels_examples.py \
      -k "target_only" > "$OUT/tests.log" 2>&1; echo "target-only tests rc $?"; tail -2 "$OUT/tests.log"
  grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -10
fi
timeout ${BENCH_TIMEOUT:-330} python3 benchmarks/bench_kernels.py --before "$BEFORE" --ops tree_sampling_target_only \
    --impls ${IMPLS:-triton before triton_pdl_off} --batches ${BATCHES:-512 4096} --vocabs ${VOCABS:-32000 128256} \
    --rounds ${ROUNDS:-3} --out "$OUT/results.json" > "$OUT/bench.log" 2>&1; echo "bench rc $?"
grep -h '"error\|Error' "$OUT/bench.log" | cut -c1-300 | head -5
python3 benchmarks/target_only_rows.py "$OUT/bench.log"
if [ "${SUITE:-0}" = 1 ]; then run_suite; fi
