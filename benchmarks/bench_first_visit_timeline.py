"""Where a first visit's time goes: a timeline of one cold first visit of a page in chromium (a fresh server, a
fresh browser), all in the page's own clock (ms since the navigation started):

    /work/main/.venv/bin/python benchmarks/bench_first_visit_timeline.py [--page greedy] [--runs 1] [--server app]

Prints one row per resource the page fetched (start and end of its request, kind, bytes), and the marks:
the page's HTML answered, DOMContentLoaded, the websocket created / open, the first message on it (the first
ForwardMsg), the app's first script run seen starting and ending, and the key picture visible (the step
player's figure, or a figure drawn on the server: bench_browser's PICTURE_JS). Rows that start only after
another one ended are what a visit waits for one after another. With ``--runs N`` the marks of every run
are summarised (min / median / max) and the table is that of the last run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from playwright.sync_api import sync_playwright  # noqa: E402

import bench_browser as bb  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

# The websocket's life in the page's clock (the app opens one; Streamlit's own code is not touched).
WS_JS = """
(() => {
  window.__svT = {};
  const W = window.WebSocket;
  window.WebSocket = class extends W {
    constructor(...args) {
      super(...args);
      const T = window.__svT;
      if (T.wsCreate === undefined) T.wsCreate = performance.now();
      this.addEventListener('open', () => { if (T.wsOpen === undefined) T.wsOpen = performance.now(); });
      this.addEventListener('message', () => {
        if (T.firstMessage === undefined) T.firstMessage = performance.now();
        T.messages = (T.messages || 0) + 1;
      });
    }
  };
  // The first component element on the page, and the first preload link a loader of ours puts in the head
  // (static_component: the loader has started).
  new MutationObserver(() => {
    const T = window.__svT;
    if (T.component === undefined && document.querySelector('[data-testid^="stBidiComponent"]')) T.component = performance.now();
    if (T.loader === undefined && document.querySelector('link[data-sv-preload]')) T.loader = performance.now();
  }).observe(document, {childList: true, subtree: true});
})();
"""

PICTURE_AT_JS = "() => (%s)() ? performance.now() : false" % bb.PICTURE_JS.strip()

# Every resource the page fetched, and the navigation's own marks.
ENTRIES_JS = """
() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const rows = performance.getEntriesByType('resource').map(e => ({
    name: e.name, kind: e.initiatorType, start: e.startTime, end: e.responseEnd, bytes: e.transferSize || e.encodedBodySize}));
  const log = window.__svLog || [];
  const running = log.find(([t, s]) => s === 'running');
  const done = log.find(([t, s]) => s === 'notRunning' && running && t > running[0]);
  return {rows, html: nav ? nav.responseEnd : null, dcl: nav ? nav.domContentLoadedEventEnd : null,
          T: window.__svT || {}, running: running ? running[0] : null, done: done ? done[0] : null, log};
}
"""

MARKS = ("html", "dcl", "wsCreate", "wsOpen", "firstMessage", "scriptRunning", "scriptDone", "component", "loader", "picture")


def short(url: str) -> str:
    path = url.split("://", 1)[-1].split("/", 1)[-1]
    return ("/" + path) if len(path) < 70 else "/" + path[:40] + "..." + path[-25:]


def one_visit(pw, page_name: str) -> dict:
    with bb.start_app_server(Path("/tmp") / f"bench_timeline_{os.getpid()}.log") as base:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=bb.VIEWPORT)
            page.add_init_script(bb.INIT_JS)
            page.add_init_script(WS_JS)
            t0 = time.monotonic()
            page.goto(f"{base}/{page_name}", wait_until="domcontentloaded")
            picture = page.wait_for_function(PICTURE_AT_JS, timeout=120_000, polling="raf").json_value()
            wall = time.monotonic() - t0
            page.wait_for_function(bb.RERUN_DONE_JS, arg=0, timeout=120_000, polling="raf")
            page.wait_for_timeout(300)  # late resources (a stylesheet the player adds) land in the list
            got = page.evaluate(ENTRIES_JS)
        finally:
            browser.close()
    T = got["T"]
    marks = {"html": got["html"], "dcl": got["dcl"], "wsCreate": T.get("wsCreate"), "wsOpen": T.get("wsOpen"),
             "firstMessage": T.get("firstMessage"), "scriptRunning": got["running"], "scriptDone": got["done"],
             "component": T.get("component"), "loader": T.get("loader"), "picture": picture}
    return {"marks": marks, "rows": got["rows"], "wall": wall, "log": got["log"]}


def print_table(visit: dict) -> None:
    events = [(r["start"], r["end"], r["kind"], r["bytes"], short(r["name"])) for r in visit["rows"]]
    events += [(v, v, "MARK", 0, k) for k, v in visit["marks"].items() if v is not None]
    events += [(t, t, "state", 0, f"script state {s}") for t, s in visit["log"]]  # every run, reruns included
    print(f"{'start ms':>9} {'end ms':>9} {'took':>7}  {'kind':10} {'bytes':>8}  what")
    for start, end, kind, size, what in sorted(events, key=lambda e: (e[0], e[1])):
        took = f"{end - start:7.1f}" if kind != "MARK" else ""
        print(f"{start:9.1f} {end:9.1f} {took:>7}  {kind:10} {size or '':>8}  {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--page", default="greedy")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    ap.add_argument("--server", choices=("streamlit", "app"), default="app")
    args = ap.parse_args()
    bb.APP_DIR, bb.SERVER = args.app_dir, args.server
    load0 = os.getloadavg()
    visits = []
    with sync_playwright() as pw:
        for _ in range(args.runs):
            visits.append(one_visit(pw, args.page))
    print(f"page {args.page}, server {args.server}, app dir {args.app_dir}; the last run's timeline:")
    print_table(visits[-1])
    print(f"\nmarks over {len(visits)} run(s), ms since navigation start: min / median / max")
    for k in MARKS:
        xs = [v["marks"][k] for v in visits if v["marks"][k] is not None]
        if xs:
            print(f"  {k:14s} {min(xs):7.0f} {statistics.median(xs):7.0f} {max(xs):7.0f}")
    ws = [v["wall"] for v in visits]
    print(f"  picture, s from goto (bench_browser's first_picture): {min(ws):.3f} / {statistics.median(ws):.3f} / {max(ws):.3f}")
    print(f"load average before {load0[0]:.2f}, after {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
