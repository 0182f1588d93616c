#!/usr/bin/env bash
# The lead's final sitting of the real class (issue 31), one command:
#   benchmarks/real_class_sitting.sh BEFORE_COMMIT [--rounds 3] [--json /tmp/real_class_sitting.json]
# Before (git archive of BEFORE_COMMIT) and after (this checkout) interleaved, 3 rounds: solo CPU per edit kind,
# 50 students without think time, 50 and (after only) 100 students thinking 0..6 s on `specviz serve --workers 2`,
# and (after only) 50 thinking students on one `specviz app`. One JSON; a min / median / max table on stdout.
# ~7 minutes a round on a quiet 2-core machine (~21-25 minutes for 3). See benchmarks/real_class_sitting.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-/work/main/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
exec "$PY" benchmarks/real_class_sitting.py "$@"
