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
python3 - "$OUT/bench.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
checks = [r for r in rows if r.get("impl") == "check_vs_before"]
print("check_vs_before: %d of %d same" % (sum(r["same"] for r in checks), len(checks)))
for r in checks:
    if not r["same"]:
        print("DIFFERS", r)
for r in rows:
    if r.get("graph_us") and "bs" in r and r.get("op") == "tree_sampling_target_only":
        print(r["impl"], "shape", r.get("topk"), r.get("depth"), r.get("n"), "bs", r["bs"], "V", r["V"], "graph us",
              r["graph_us"], r.get("graph_us_rounds"), "TB/s", r.get("graph_TBps"), "py us", r.get("python_us"))
PY
if [ "${SUITE:-0}" = 1 ]; then
  timeout ${SUITE_TIMEOUT:-240} python3 -m pytest -q -n 14 -rs -p no:cacheprovider --timeout 300 \
      -m "exhaustive or not exhaustive" > "$OUT/suite.log" 2>&1; echo "suite rc $?"; tail -3 "$OUT/suite.log"
  grep -E "^(FAILED|ERROR)" "$OUT/suite.log" | head -20
fi
