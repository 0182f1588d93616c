"""A widget's session-state lookup against the number of keys a session holds (runtime patch ``state_lookup``).

Streamlit's radio / selectbox / slider / number and text inputs build the whole filtered session state to
look up their own key (streamlit/streamlit#9415), so a rerun that draws W such widgets costs W x (keys in
the session). AppTest runs a script that holds K plain session values (a long session's ``sv_`` keys and
per-slot editors) and draws W keyed select boxes; printed: the script's CPU per rerun (thread time), with
Streamlit's own lookup and with the patch (each in a fresh process, the same script).

    python benchmarks/state_lookup_keys.py [--keys 0 100 300 1000] [--widgets 30] [--runs 20]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    import time

    import streamlit as st

    t0 = time.thread_time()
    keys, widgets = st.session_state["bench_keys"], st.session_state["bench_widgets"]
    for k in range(keys):
        st.session_state.setdefault(f"sv_value::{k}", k)
    for w in range(widgets):
        st.selectbox(f"box {w}", ["a", "b", "c"], key=f"w_box::{w}")
    st.session_state.setdefault("bench_cpu", []).append(time.thread_time() - t0)


def _one(keys: int, widgets: int, runs: int, patched: bool) -> float:
    sys.path.insert(0, str(ROOT))
    from streamlit.testing.v1 import AppTest

    if patched:
        from specviz.app.runtime import state_lookup

        assert state_lookup.install()
    at = AppTest.from_function(_script)
    at.session_state["bench_keys"], at.session_state["bench_widgets"] = keys, widgets
    for _ in range(runs + 2):
        at.run()
    cpu = at.session_state["bench_cpu"][2:]  # the first two runs fill the session
    return sorted(cpu)[len(cpu) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, nargs="+", default=[0, 100, 300, 1000])
    ap.add_argument("--widgets", type=int, default=30)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # keys, patched: run in this process, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(int(args.one[0]), args.widgets, args.runs, args.one[1] == "1")))
        return
    print(f"{args.widgets} keyed select boxes, median of {args.runs} reruns, script CPU (thread time)")
    print("| session keys | Streamlit's lookup | state_lookup | ratio |\n|---|---|---|---|")
    for keys in args.keys:
        ms = []
        for patched in ("0", "1"):
            out = subprocess.run([sys.executable, __file__, "--widgets", str(args.widgets), "--runs", str(args.runs),
                                  "--one", str(keys), patched], capture_output=True, text=True, check=True)
            ms.append(1e3 * json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"| {keys} | {ms[0]:.1f} ms | {ms[1]:.1f} ms | {ms[0] / ms[1]:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
