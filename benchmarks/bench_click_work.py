"""Work a click costs in chromium, counted rather than timed (issue 31 goal 5): the renderer main
thread's task, script, layout and style time (CDP ``Performance.getMetrics`` deltas over the click and
0.5 s after it), the websocket bytes the page received, and the wall time click -> view. On a loaded
machine the wall time swings with the load; the bytes do not, and the main-thread times much less.

    PYTHONPATH=$PWD python benchmarks/bench_click_work.py [--app-dir DIR] [--only tree greedy page_switch] [--repeats 4]

One ``specviz app`` of DIR per kind (bench_browser's server), a fresh tab; each kind alternates two clicks
(tree: Add child / Delete subtree; greedy: the quick-set buttons "Root mismatch" / "Target agrees along";
page_switch: greedy <-> chain), ``--repeats`` of each. Prints min / median / max per measure.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import benchmarks.bench_browser as bb  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, wait_for_app  # noqa: E402

METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
START = {"tree": "tree_builder", "greedy": "greedy", "page_switch": "greedy"}


def _click(page, kind: str, k: int) -> float:
    """Click number ``k`` of ``kind``; the seconds until the view shows it."""
    t0 = bb.now(page)
    if kind == "page_switch":
        target = ["Chain rejection sampling", "Greedy accept"][k % 2]
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text=target).first.click()
        t1 = page.wait_for_function(bb.PAGE_DONE_JS, arg=[t0, target], timeout=30_000, polling="raf").json_value()
    else:
        name = {"tree": ["Add child", "Delete subtree"], "greedy": ["Root mismatch", "Target agrees along"]}[kind][k % 2]
        page.get_by_role("button", name=re.compile(name)).first.click()
        t1 = page.wait_for_function(bb.RERUN_DONE_JS, arg=t0, timeout=30_000, polling="raf").json_value()
    return (t1 - t0) / 1000


def measure(pw, kind: str, repeats: int) -> dict:
    with bb.start_app_server(Path("/tmp") / f"bench_click_work_{kind}.log") as base:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=bb.VIEWPORT)
        page.add_init_script(bb.INIT_JS)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        cdp.send("Network.enable")
        got = {"bytes": 0}
        cdp.on("Network.webSocketFrameReceived",
               lambda e: got.__setitem__("bytes", got["bytes"] + len(e["response"]["payloadData"])))

        def metrics():
            return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}

        page.goto(f"{base}/{START[kind]}", wait_until="domcontentloaded")
        wait_for_app(page)
        time.sleep(1.0)
        rows = {name: [] for name in ("wall_s", "ws_bytes", *METRICS)}
        lost = 0
        for k in range(2 * repeats):
            m0, b0 = metrics(), got["bytes"]
            try:
                wall = _click(page, kind, k)
            except Exception:  # noqa: BLE001  playwright's TimeoutError: no view came (a lost click), counted, not timed
                lost += 1
                continue
            rows["wall_s"].append(wall)
            time.sleep(0.5)  # what the click set going (a figure laid out, a chunk loaded) is counted too
            m1 = metrics()
            rows["ws_bytes"].append(got["bytes"] - b0)
            for name in METRICS:
                rows[name].append(m1[name] - m0[name])
        browser.close()
    rows["lost_clicks"] = [lost]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    ap.add_argument("--only", nargs="*", default=list(START), choices=list(START))
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    bb.APP_DIR, bb.SERVER = args.app_dir.resolve(), "app"
    out = {"load_before": open("/proc/loadavg").read().split()[:3]}
    with sync_playwright() as pw:
        for kind in args.only:
            out[kind] = measure(pw, kind, args.repeats)
            for name, xs in out[kind].items():
                print(f"{kind:12s} {name:20s} min {min(xs):10.3f}  median {statistics.median(xs):10.3f}  max {max(xs):10.3f}")
    out["load_after"] = open("/proc/loadavg").read().split()[:3]
    print(f"load average before {out['load_before']}, after {out['load_after']} (seconds, except ws_bytes)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
