"""Where the step player's figures are laid out: Graphviz's ``dot`` on the server, or Graphviz in
WebAssembly in the browser (``SPECVIZ_LAYOUT=server|browser``, see specviz/app/ui/player.py).

    /work/main/.venv/bin/python benchmarks/bench_player_layout.py [--repeats 3] [--pages greedy,chain_sampling,dspark]

For each mode, one fresh ``streamlit run app.py`` with that ``SPECVIZ_LAYOUT``; for each page and repeat:
- first visit: a new browser context (empty cache), from ``goto`` until the player's picture is
  shown (``data-sv-figure="ready"`` and the image decoded);
- step: a click on "next" inside the player until the new picture is decoded, for every step
  of the walk, timed in the player's own clock (first pass right after the page opened, while the
  browser may still be laying out the other frames, and a second pass);
- (the bytes each rerun sends: benchmarks/bench_player_bytes.py).
Then, on this process: the server's CPU to lay out one edit's figures with ``dot`` (every distinct
DOT text of the page's walk, cache cleared: an edit changes every frame), and the browser's time to
lay out the same texts with Graphviz in WebAssembly (in chromium, one ``layout`` call per text).
Prints min / median / max per figure with the load average before and after.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from specviz.replay.engine import run_scenario  # noqa: E402
from specviz.rooms.pitfalls import preset  # noqa: E402
from specviz.replay.playframes import frames_for  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, _free_port, _wait_health, wait_for_app  # noqa: E402

# The player's element (in its component's shadow root): its picture shown and decoded.
READY = """() => { const host = [...document.querySelectorAll('*')].find(e => e.shadowRoot && e.shadowRoot.querySelector('.sv-player'));
  const root = host && host.shadowRoot.querySelector('.sv-player'); const img = root && root.querySelector('[data-sv-img]');
  return !!(img && root.dataset.svFigure === 'ready' && img.complete && img.naturalWidth > 0); }"""

STEP = """async (root) => { const img = root.querySelector('[data-sv-img]');
  const t = performance.now(); root.querySelector('[data-sv-btn="next"]').click();
  while (root.dataset.svFigure !== 'ready') await new Promise(r => setTimeout(r, 1));
  try { await img.decode(); } catch (e) {}
  return performance.now() - t; }"""

def _frames(page: str) -> list:
    s = preset(PAGE_PRESET[page])
    return frames_for(s, run_scenario(s), "en")


# Each page's default scenario (specviz.app.ui.scenarios): its walk's DOT texts, for the layout work below.
PAGE_PRESET = {"greedy": "running_example", "chain_sampling": "pq_example", "dspark": "dspark_chain",
               "target_only": "target_only_sampling"}


@contextlib.contextmanager
def server(mode: str, log: Path):
    port = _free_port()
    env = dict(os.environ, TRITON_INTERPRET="1", SPECVIZ_LAYOUT=mode)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.address", "127.0.0.1", "--server.port", str(port),
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_health(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def summary(xs: list[float]) -> str:
    return f"min {min(xs):7.1f}  median {statistics.median(xs):7.1f}  max {max(xs):7.1f}  (n={len(xs)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pages", default="greedy,chain_sampling,dspark")
    ap.add_argument("--modes", default="server,browser")
    args = ap.parse_args()
    pages = args.pages.split(",")
    print("CPU:", next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?"),
          "| load average before:", os.getloadavg())
    res: dict = {}
    dots: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for mode in args.modes.split(","):
            with server(mode, Path(f"/tmp/bench_player_layout_{mode}.log")) as url:
                warm = browser.new_context().new_page()  # the server's first run of each page is not a visit
                for name in pages:
                    warm.goto(f"{url}/{name}", wait_until="domcontentloaded")
                    wait_for_app(warm)
                for name in pages:
                    for _ in range(args.repeats):
                        ctx = browser.new_context(viewport={"width": 1280, "height": 720})
                        page = ctx.new_page()
                        t0 = time.perf_counter()
                        page.goto(f"{url}/{name}", wait_until="domcontentloaded")
                        page.wait_for_function(READY, timeout=600_000, polling=10)
                        res.setdefault((mode, name, "first visit ms"), []).append((time.perf_counter() - t0) * 1000)
                        print(mode, name, "first visit ms", round(res[(mode, name, "first visit ms")][-1]), os.getloadavg()[0], flush=True)
                        root = page.locator(".sv-player").first
                        root.locator('[data-sv-btn="first"]').click()
                        frames = _frames(name)
                        if mode == "browser":
                            dots[name] = list(dict.fromkeys(f.dot for f in frames))
                        for pass_name in ("step ms, first pass", "step ms, second pass"):
                            root.locator('[data-sv-btn="first"]').click()
                            for _ in range(len(frames) - 1):
                                res.setdefault((mode, name, pass_name), []).append(root.evaluate(STEP))
                        ctx.close()
        # The same layout work on each side: dot on this machine (server CPU), WebAssembly in chromium.
        from specviz.render import svg as server_svg

        for name, texts in dots.items():
            for _ in range(max(args.repeats, 5)):
                server_svg._CACHE.clear()
                c0, t0 = time.process_time(), time.perf_counter()
                r0 = os.times()
                server_svg.dots_to_svgs(texts)
                r1 = os.times()
                res.setdefault(("server", name, f"dot: lay out one edit's {len(texts)} figures, ms CPU"), []).append(
                    (r1.children_user + r1.children_system - r0.children_user - r0.children_system
                     + time.process_time() - c0) * 1000)
                res.setdefault(("server", name, f"dot: lay out one edit's {len(texts)} figures, ms wall"), []).append(
                    (time.perf_counter() - t0) * 1000)
            page = browser.new_page()
            page.add_script_tag(path=str(ROOT / "static" / "graphviz.umd.js"))
            t_load = page.evaluate("async () => { const t = performance.now(); "
                                   "window.gv = await window['@hpcc-js/wasm/graphviz'].Graphviz.load(); return performance.now() - t; }")
            res.setdefault(("browser", "-", "WebAssembly Graphviz load (compile + instantiate) ms"), []).append(t_load)
            for _ in range(max(args.repeats, 5)):
                ms = page.evaluate("(texts) => { const t = performance.now(); for (const d of texts) window.gv.layout(d, 'svg', 'dot'); "
                                   "return performance.now() - t; }", texts)
                res.setdefault(("browser", name, f"wasm: lay out one edit's {len(texts)} figures, ms"), []).append(ms)
            page.close()
        browser.close()
    for key in sorted(res):
        print(f"{key[0]:8s} {key[1]:15s} {key[2]:55s} {summary(res[key])}")
    print("load average after:", os.getloadavg())


if __name__ == "__main__":
    main()
