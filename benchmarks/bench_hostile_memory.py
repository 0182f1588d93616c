"""Server memory under hostile links (issue 19, family 1): peak and held RSS of a live server.

Starts ``streamlit run app.py`` from the tree given (default: this checkout), opens one benign
page in chromium to reach a baseline (backends loaded, page caches warm), then

1. the issue's link: a 64-node tree (root with 16 children) with seq_len 15,000,000 on the tree
   builder (full_mask mode);
2. 20 *different* hostile links within the limits (seq_len 10,000,000 + i, the same tree) on the
   tree builder, one after the other in one tab.

After each step it reads the server's VmHWM (peak) and VmRSS (held, after 3 s) from /proc.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_hostile_memory.py [--tree DIR] [--links 20]

Prints one JSON line per step. Run it once on main (``--tree`` pointing at a copy of main) and
once here for a before/after; benchmarks/README.md holds the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def hostile_scenario(seq_len: int, page_tokens: int = 64):
    from specviz.inputs.scenario import scenario_from_dict

    parents = [-1] + [0] * 16 + [1] * 16 + [2] * 16 + [3] * 15
    return scenario_from_dict({"name": "x", "algorithm": "greedy", "vocab": ["A"],
                               "requests": [{"tree": {"parents": parents, "tokens": ["A"] * 64}, "seq_len": seq_len,
                                             "target_predict": ["A"] * 64}]})


def _rss(pid: int) -> dict:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmHWM", "VmRSS")):
            k, v = line.split(":")
            out[k] = int(v.split()[0]) // 1024  # MB
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=str(ROOT))
    ap.add_argument("--links", type=int, default=20)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from specviz.rooms.share import ShareState, encode_state

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=args.tree)
    proc = subprocess.Popen([args.python, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.address", "127.0.0.1", "--server.port", str(port)], cwd=args.tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"])
            page = browser.new_page(viewport={"width": 1400, "height": 1800})

            def visit(url: str, settle: float = 3.0) -> None:
                page.goto(url, wait_until="domcontentloaded", timeout=300_000)
                page.wait_for_selector('[data-testid="stApp"]', timeout=120_000)
                page.wait_for_timeout(800)
                for _ in range(1200):  # until the run is over and the backend badge is drawn
                    if (page.locator('[data-testid="stStatusWidget"]').count() == 0
                            and page.get_by_text(re.compile("backends agree|Not compared yet|disagrees with the reference")).count() > 0):
                        break
                    page.wait_for_timeout(250)
                page.wait_for_timeout(int(settle * 1000))

            def link(seq_len: int) -> str:
                return f"{base}/tree_builder?s=" + encode_state(ShareState(page="tree_builder", scenario=hostile_scenario(seq_len)))

            visit(f"{base}/tree_builder", settle=8.0)  # backends load ~2 s after the first page
            visit(link(10), settle=3.0)
            baseline = _rss(proc.pid)
            print(json.dumps({"step": "baseline", **baseline}), flush=True)
            t0 = time.monotonic()
            visit(link(15_000_000))
            r = _rss(proc.pid)
            print(json.dumps({"step": "issue_link_seq_len_15e6", "link_chars": len(link(15_000_000)) - len(base),
                              "seconds": round(time.monotonic() - t0, 1), **r,
                              "held_above_baseline_MB": r["VmRSS"] - baseline["VmRSS"]}), flush=True)
            for i in range(args.links):
                visit(link(10_000_000 + i), settle=1.0)
            page.wait_for_timeout(3000)
            r = _rss(proc.pid)
            print(json.dumps({"step": f"{args.links}_different_links_seq_len_1e7", **r,
                              "held_above_baseline_MB": r["VmRSS"] - baseline["VmRSS"],
                              "errors_on_page": page.locator('[data-testid="stAlert"]').count()}), flush=True)
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
