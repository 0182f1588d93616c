#!/bin/bash
# An earlier commit's kernels and library, renamed so they import beside today's: DIR/kernels_before and
# DIR/specviz_before, every `kernels`/`specviz` import in them rewritten. bench_kernels.py --before DIR times them.
# Usage: benchmarks/make_before.sh REV [DIR=.before]
set -euo pipefail
rev=$1; dir=${2:-.before}
cd "$(git rev-parse --show-toplevel)"
rm -rf "$dir" && mkdir -p "$dir"
git archive "$rev" specviz kernels | tar -x -C "$dir"
mv "$dir/specviz" "$dir/specviz_before" && mv "$dir/kernels" "$dir/kernels_before"
grep -rl 'specviz\|kernels' --include='*.py' "$dir" | xargs sed -i -E \
  's/\bspecviz\./specviz_before./g; s/\bfrom specviz import/from specviz_before import/g; s/\bimport specviz\b/import specviz_before/g;
   s/\bkernels\./kernels_before./g; s/\bfrom kernels import/from kernels_before import/g; s/\bimport kernels\b/import kernels_before/g'
echo "$dir: kernels_before/ and specviz_before/ of $(git rev-parse --short "$rev")"
