#!/bin/bash
# Issue 36, stop 43 (gpu8), one H200 call (benchmarks/README "Issue 36, stop 43 (gpu8)"), from an ignored copy of the
# branch in the main checkout with the wheels and the before tree (benchmarks/make_before.sh 29e8c9f) carried:
#   cd .gpu8 && WHL=../.whl BEFORE=../.before_gpu8 SUITE=1 bash benchmarks/gpu_issue36_stop43.sh
# (1) benchmarks/exact_exp_table.py's exps against libdevice on every float32 x <= 0, and alone (gpu_exp_exhaustive.py);
# (2) target_probs before/after in the same rounds with the bench's bit checks (check_vs_before); (3) the exps in
# the register kernel and in a persistent kernel, each output against before's bit for bit (gpu_probs_variants.py);
# (4) SUITE=1: the whole test suite, compiled. Outputs under $OUT (or ./out). About 6 minutes.
WHL=${WHL:-.whl}; BEFORE=${BEFORE:-.before}
source "$(dirname "$0")/gpu_setup.sh"
timeout ${EXH_TIMEOUT:-150} python3 benchmarks/gpu_exp_exhaustive.py --all-tables --out "$OUT/exhaustive.json" \
    > "$OUT/exhaustive.log" 2>&1; echo "exhaustive rc $?"; grep -v '^weak' "$OUT/exhaustive.log" | cut -c1-240
grep '^weak' "$OUT/exhaustive.log" | cut -c1-400
timeout ${BENCH_TIMEOUT:-240} python3 benchmarks/bench_kernels.py --before "$BEFORE" --impls triton before \
    --ops target_probs_from_logits target_probs_top_k_top_p --batches 1 64 512 --rounds ${ROUNDS:-3} \
    --out "$OUT/results.json" > "$OUT/bench.log" 2>&1; echo "bench rc $?"
grep -h '"error\|Error' "$OUT/bench.log" | head -5
python3 - "$OUT/bench.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
checks = [r for r in rows if r.get("impl") == "check_vs_before"]
print("check_vs_before: %d of %d same" % (sum(r["same"] for r in checks), len(checks)))
for r in rows:
    if r.get("impl") in ("triton", "before") and r.get("graph_us") and "bs" in r:
        print(r["op"], r["impl"], "bs", r["bs"], "V", r["V"], "graph us", r["graph_us"], r.get("graph_us_rounds"),
              "TB/s", r.get("graph_TBps"))
PY
timeout ${VARIANTS_TIMEOUT:-120} python3 benchmarks/gpu_probs_variants.py --before "$BEFORE" \
    --out "$OUT/variants.json" > "$OUT/variants.log" 2>&1; echo "variants rc $?"; grep '^|\|error' "$OUT/variants.log"
if [ "${SUITE:-0}" = 1 ]; then
  timeout ${SUITE_TIMEOUT:-300} python3 -m pytest -q -n 14 -rs -p no:cacheprovider --timeout 300 \
      -m "exhaustive or not exhaustive" > "$OUT/suite.log" 2>&1; echo "suite rc $?"; tail -3 "$OUT/suite.log"
  grep -E "^(FAILED|ERROR)" "$OUT/suite.log" | head -20
fi
