"""CPU seconds of the Decoding loop page's rerun after each toggle (issue 32): q_as_buffer (Monte Carlo off and
on) and "Run the Monte Carlo", target-only sampler, the page's defaults, numpy backend.

Each measurement is a fresh Python process (empty caches) that runs the page once in Streamlit's AppTest,
flips one toggle and measures the rerun it causes: CPU seconds of the process and its children (Graphviz)
from getrusage, and wall seconds. The browser's own work is not included.

    PYTHONPATH=. python benchmarks/bench_loop_toggles.py [--runs 3] [--root PATH]

``--root``: the checkout whose pages/ and specviz/ run (default: this one), e.g. a worktree of main for
the figures before a change.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CASES = {
    "q_as_buffer (Monte Carlo off)": ({}, {"sv_loop::m::q_as_buffer": True}),
    "q_as_buffer (Monte Carlo on)": ({"sv_loop::run_mc": True}, {"sv_loop::m::q_as_buffer": True}),
    "Run the Monte Carlo": ({}, {"sv_loop::run_mc": True}),
}

CHILD = r"""
import json, resource, sys, time
from streamlit.testing.v1 import AppTest
root, before, after = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
at = AppTest.from_file(root + "/pages/decoding_loop.py", default_timeout=600)
at.session_state["sv_backend"] = "numpy"
at.session_state["sv_loop::algorithm"] = "target_only"
for k, v in before.items():
    at.session_state[k] = v
at.run()
assert not at.exception, at.exception
for k, v in after.items():
    at.session_state[k] = v
c0, w0 = cpu(), time.perf_counter()
at.run()
print(json.dumps({"cpu_s": cpu() - c0, "wall_s": time.perf_counter() - w0, "ok": not at.exception}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = ap.parse_args()
    root = str(Path(args.root).resolve())
    env = dict(os.environ, PYTHONPATH=root, TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"))
    print(f"root {root}; load average {os.getloadavg()[0]:.2f}")
    for name, (before, after) in CASES.items():
        got = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", CHILD, root, json.dumps(before), json.dumps(after)], env=env,
                                 capture_output=True, text=True, cwd=root, timeout=900)
            if out.returncode != 0:
                raise SystemExit(out.stderr[-2000:])
            got.append(json.loads(out.stdout.strip().splitlines()[-1]))
        cpu = [g["cpu_s"] for g in got]
        wall = [g["wall_s"] for g in got]
        print(f"{name:32s} CPU s min/median/max {min(cpu):.2f}/{statistics.median(cpu):.2f}/{max(cpu):.2f}  "
              f"wall s {min(wall):.2f}/{statistics.median(wall):.2f}/{max(wall):.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
