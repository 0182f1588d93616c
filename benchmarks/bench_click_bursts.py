"""Bursts of clicks on the tree builder, faster than the server answers, under optional CPU load.

Each cycle clicks "Add child" ``--clicks`` times without waiting, reads the scenario back from the
share link in the address bar, and checks that every click added a node and that the new nodes form
a path (each add selects the child it made, so the next one hangs below it); then clicks "Delete
subtree" as often and checks the tree is back to its size. ``--load N`` runs N busy-loop processes
meanwhile (the 2-core CI machine with two pytest workers is what lost clicks at stop 23).

    python benchmarks/bench_click_bursts.py --cycles 8 --clicks 4 --load 2

Prints one line per bad cycle and a summary: cycles, clicks, bad cycles.
"""
from __future__ import annotations

import argparse
import multiprocessing
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, start_app_server, wait_for_app  # noqa: E402
from tests.test_browser_clicks import _wait_scenario  # noqa: E402


def _spin() -> None:
    while True:
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--clicks", type=int, default=4)
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes running meanwhile")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds to wait after the backends' loading note is gone (0: the first burst meets the "
                         "poll's last timer, where a click can still be lost)")
    args = ap.parse_args(argv)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout, sync_playwright

    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    bad = []
    with tempfile.TemporaryDirectory() as tmp, start_app_server(Path(tmp) / "server.log") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/tree_builder", wait_until="domcontentloaded")
        page.wait_for_function("() => !/loading them|正在加载/.test(document.body.innerText)", timeout=180_000)
        wait_for_app(page)
        page.wait_for_timeout(int(args.settle * 1000))  # the loading poll can fire once more: see --settle
        add = page.get_by_role("button", name=re.compile("Add child")).first
        delete = page.get_by_role("button", name=re.compile("Delete subtree")).first
        for sp in spinners:
            sp.start()
        def fresh():
            """A new session on the default scenario (after a bad cycle, the tree is anything)."""
            page.goto(f"{url}/tree_builder", wait_until="domcontentloaded")
            wait_for_app(page)

        def burst(button, n):
            for _ in range(n):
                button.click(no_wait_after=True, timeout=10_000)  # a disabled button (root selected) times out

        try:
            for c in range(args.cycles):
                n0 = _wait_scenario(page, lambda s: True).tree(0).n
                try:
                    burst(add, args.clicks)
                    t = _wait_scenario(page, lambda s: s.tree(0).n >= n0 + args.clicks, timeout=30).tree(0)
                    new = t.parents[n0:]
                    ok_add = t.n == n0 + args.clicks and all(new[i] == n0 + i - 1 for i in range(1, len(new)))
                    if not ok_add:
                        bad.append(f"cycle {c}: {args.clicks} adds on {n0} nodes -> parents {t.parents}")
                    burst(delete, args.clicks)
                    t = _wait_scenario(page, lambda s: s.tree(0).n <= n0, timeout=30).tree(0)
                    if t.n != n0 and ok_add:
                        bad.append(f"cycle {c}: {args.clicks} deletes -> {t.n} nodes, not {n0}")
                    if t.n != n0 or not ok_add:
                        fresh()
                except PlaywrightTimeout as exc:
                    bad.append(f"cycle {c}: a click could not be made ({str(exc).splitlines()[0]})")
                    fresh()
        finally:
            for sp in spinners:
                sp.terminate()
    for line in bad:
        print(line)
    cycles_bad = len({line.split(":")[0] for line in bad})
    print(f"cycles {args.cycles}, clicks {2 * args.cycles * args.clicks}, load {args.load}, bad cycles {cycles_bad}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
