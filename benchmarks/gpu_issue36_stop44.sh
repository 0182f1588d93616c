#!/bin/bash
# Issue 36, stop 44 (gpu10): goal 3b, tree_sampling_target_only at bs >= 512, on one H200 through the `run` tool
# (benchmarks/README "Issue 36, stop 44 (gpu10)"). The tool sends the main checkout, so this tree travels as an
# ignored copy: `git -C WORKTREE ls-files -co --exclude-standard -z | xargs -0 cp --parents -t .gpu10` (in WORKTREE), .sglang
# copied in, `benchmarks/make_before.sh REV .before_gpu10`; carry [".gpu10", ".whl", ".before_gpu10"], then
#   cd .gpu10 && WHL=../.whl BEFORE=../.before_gpu10 SUITE=1 bash benchmarks/gpu_issue36_stop44.sh
# (1) bench_kernels' target-only rows at bs 512 / 4096, after and before in the same rounds, with IMPLS (default: the
# walk-first call's two launches alone and its walker in 4 warps too) and the bits check against before
# (check_vs_before: tokens, accept paths, rebuilt work buffer); (2) SUITE=1: the whole suite, compiled.
WHL=${WHL:-../.whl}; BEFORE=${BEFORE:-../.before_gpu10}
source "$(dirname "$0")/gpu_setup.sh"
timeout ${BENCH_TIMEOUT:-330} python3 benchmarks/bench_kernels.py --before "$BEFORE" --ops tree_sampling_target_only \
    --impls ${IMPLS:-triton before triton_walker triton_draw triton_walker_warps4} --batches ${BATCHES:-512 4096} \
    --rounds ${ROUNDS:-3} --out "$OUT/results.json" > "$OUT/bench.log" 2>&1; echo "bench rc $?"
grep -h '"error\|Error' "$OUT/bench.log" | cut -c1-300 | head -5
python3 benchmarks/target_only_rows.py "$OUT/bench.log"
if [ "${SUITE:-0}" = 1 ]; then run_suite; fi
