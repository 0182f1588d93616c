#!/bin/bash
# Issue 36, stop 43 (gpu8), one H200 call: target_probs' exp by kernels/triton_exp.py. Made from an ignored copy of the
# branch in the main checkout (.gpu8/), with .whl, .sglang and the before tree carried (benchmarks/README "Issue 36,
# stop 43"):  cd .gpu8 && WHL=../.whl BEFORE=../.before_gpu8 bash benchmarks/gpu_issue36_stop43.sh
# (1) every float32 x <= 0 against libdevice (gpu_exp_exhaustive.py, with target_probs vs before on wide logits),
# (2) target_probs before/after in the same rounds, with the bench's bits checks (check_vs_before), (3) where the
# time goes (gpu_probs_passes.py: the copy floor, a float32-exp kernel), (4) SUITE=1: the whole test suite, compiled.
# Outputs under $OUT (or ./out).
OUT=${OUT:-out}; mkdir -p "$OUT"
WHL=${WHL:-.whl}; BEFORE=${BEFORE:-.before}
python3 -m pip install -q --no-index --no-deps --no-compile "$WHL"/*.whl > /dev/null 2>&1 || exit 1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/probe.txt"
timeout ${EXH_TIMEOUT:-240} python3 benchmarks/gpu_exp_exhaustive.py --before "$BEFORE" --out "$OUT/exhaustive.json" \
    2>&1 | tee "$OUT/exhaustive.log"; echo "exhaustive rc ${PIPESTATUS[0]}"
timeout ${BENCH_TIMEOUT:-300} python3 benchmarks/bench_kernels.py --before "$BEFORE" --impls triton before \
    --ops target_probs_from_logits target_probs_top_k_top_p --batches 1 64 512 --rounds ${ROUNDS:-3} \
    --out "$OUT/results.json" > "$OUT/bench.log" 2>&1; echo "bench rc $?"
grep -h '"error\|Error' "$OUT/bench.log" | head -5
python3 - "$OUT/bench.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
checks = [r for r in rows if r.get("impl") == "check_vs_before"]
print("check_vs_before: %d of %d same" % (sum(r["same"] for r in checks), len(checks)))
for r in rows:
    if r.get("impl") in ("triton", "before") and r.get("graph_us"):
        tb = r["bs"] * r.get("n", 1) * r["V"] * 8 / r["graph_us"] / 1e6
        print(r["op"], r["impl"], "bs", r["bs"], "n", r.get("n"), "V", r["V"], "graph us", r["graph_us"],
              "rounds", r.get("graph_us_rounds"), "TB/s %.2f" % tb)
PY
[ "${PASSES:-1}" = 1 ] && { timeout ${PASSES_TIMEOUT:-150} python3 benchmarks/gpu_probs_passes.py --rounds 3 \
    --out "$OUT/probs_passes.json" 2>&1 | grep '^|'; }
if [ "${SUITE:-0}" = 1 ]; then
  timeout ${SUITE_TIMEOUT:-300} python3 -m pytest -q -n 14 -rs -p no:cacheprovider --timeout 300 \
      -m "exhaustive or not exhaustive" > "$OUT/suite.log" 2>&1; echo "suite rc $?"; tail -4 "$OUT/suite.log"
  grep -E "^(FAILED|ERROR)" "$OUT/suite.log" | head -20
fi
