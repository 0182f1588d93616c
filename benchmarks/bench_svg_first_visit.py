"""First visit of the DSpark and Decoding loop pages (reached from the router page, as a student does):
ms from the sidebar click until every chart on the page is drawn (inline SVG, or plotly's SVG), and
whether the browser fetched Streamlit's PlotlyChart script chunk (4.7 MB).

    /work/main/.venv/bin/python benchmarks/bench_svg_first_visit.py APP_DIR [--pages dspark decoding_loop] [--repeats 3]

One fresh server per visit. The machine is shared: compare two app directories within one run of time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

LINKS = {"dspark": ("DSpark chain", 3), "decoding_loop": ("Decoding loop", 3)}  # nav link, charts on the page
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
DRAWN = """(need) => { const busy = document.querySelector('[data-testid="stStatusWidget"]');
  const plots = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const svgs = document.querySelectorAll('.sv-graph svg').length;
  return !busy && plots.every(p => p.querySelector('.main-svg')) && (plots.length + svgs) >= need; }"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("app", type=Path)
    ap.add_argument("--pages", nargs="*", default=list(LINKS))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    app = str(args.app.resolve())
    os.chdir(app)
    sys.path.insert(0, app)
    from playwright.sync_api import sync_playwright
    from tests.conftest import start_app_server, wait_for_app

    res: dict = {}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for name in args.pages:
            link, need = LINKS[name]
            for _ in range(args.repeats):
                with start_app_server(Path(f"/tmp/bench_svg_first_visit_{name}.log")) as url:
                    ctx = b.new_context(viewport={"width": 1280, "height": 720})
                    pg = ctx.new_page()
                    got: list = []
                    pg.on("response", lambda r: got.append(r.url))
                    pg.goto(url + "/")
                    wait_for_app(pg)
                    pg.wait_for_timeout(3000)  # the router page and the backend import settle
                    got.clear()
                    t0 = time.perf_counter()
                    pg.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=link, exact=True).click()
                    pg.wait_for_function(DRAWN, arg=need, timeout=120_000, polling=50)
                    res.setdefault(name, []).append((round((time.perf_counter() - t0) * 1000), any("lotly" in u for u in got)))
                    ctx.close()
        b.close()
    print(app, "load", os.getloadavg())
    print(json.dumps({k: {"ms": [x[0] for x in v], "median_ms": statistics.median(x[0] for x in v),
                          "plotly_chunk_fetched": [x[1] for x in v]} for k, v in res.items()}))


if __name__ == "__main__":
    main()
