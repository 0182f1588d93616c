#!/usr/bin/env bash
# One before/after pair of test files, -n 0: CPU-s (/usr/bin/time user + sys: pytest and every reaped child) and wall,
# and benchmarks.pytest_cpu per file. BEFORE / AFTER are two trees of the project (e.g. `git archive main | tar -x -C DIR`
# and this checkout); REV=1 runs AFTER first (alternate the order between pairs).
#   bash benchmarks/ci_pair.sh TAG BEFORE AFTER tests/test_a.py tests/test_b.py
#   python -m benchmarks.pytest_cpu OUT/TAG.before.jsonl OUT/TAG.after.jsonl     # per file, side by side
set -euo pipefail
tag=$1 before=$(realpath "$2") after=$(realpath "$3"); shift 3
py=${PYTHON:-$PWD/.venv/bin/python} out=${OUT:-/tmp/ci_pair}
mkdir -p "$out"
sides="before after"; [ "${REV:-0}" = 1 ] && sides="after before"
for side in $sides; do
  d=$before; [ "$side" = after ] && d=$after
  load=$(cut -d' ' -f1 /proc/loadavg)
  (cd "$d" && PYTHONPATH=$d TRITON_INTERPRET=1 /usr/bin/time -f "%e wall %U user %S sys" -o "$out/$tag.$side.time" \
     "$py" -m pytest -q -n 0 -p benchmarks.pytest_cpu --cpu-out="$out/$tag.$side.jsonl" "$@" > "$out/$tag.$side.out" 2>&1) || true
  echo "$tag $side load=$load $(tail -1 "$out/$tag.$side.time") | $(tail -1 "$out/$tag.$side.out")"
done
