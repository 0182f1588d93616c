"""Bursts of clicks, faster than the server answers, under optional CPU load; every click must land.

``--kind tree`` (default): each cycle clicks "Add child" ``--clicks`` times without waiting, reads the
scenario back from the share link in the address bar, and checks that every click added a node and
that the new nodes form a path (each add selects the child it made, so the next one hangs below it);
then clicks "Delete subtree" as often and checks the tree is back to its size.
``--kind target``: each cycle sets two target cells of the greedy page back to back (the second while
the first edit's rerun runs) to new values and checks both in the scenario.
``--kind coin``: each cycle presses the chain page's u[0] slider ``--clicks`` arrow steps one way, 60 ms
apart, checks the coin moved by exactly that many steps, then as many back.
``--kind pq``: each cycle types two cells of the chain page's p table back to back (row 0: token A, then
token B, the second as soon as the first edit's rerun has started): A up by d, B down by d, so the
row sums to 1 only with both edits; checks both values in the scenario.
``--load N`` runs N busy-loop processes meanwhile (the 2-core CI machine with two pytest workers is
what lost clicks at stop 23). ``--class-students N`` puts a class on the same server meanwhile: N
websocket students of ``bench_class.py`` editing the greedy page without pause, each checking its own
answers; their edits, errors, leaks, lost edits and p50 are printed after the bursts.

    python benchmarks/bench_click_bursts.py --cycles 8 --clicks 4 --load 2
    python benchmarks/bench_click_bursts.py --kind target --cycles 100
    python benchmarks/bench_click_bursts.py --kind coin --cycles 10 --clicks 10
    python benchmarks/bench_click_bursts.py --kind pq --cycles 100
    python benchmarks/bench_click_bursts.py --kind tree --cycles 25 --class-students 50

Prints one line per bad cycle and a summary: kind, cycles, clicks, bad cycles.
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import threading
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, start_app_server, wait_for_app  # noqa: E402
from tests.test_browser_clicks import _pick, _wait_scenario  # noqa: E402


def _spin() -> None:
    while True:
        pass


def tree_cycle(page, clicks: int, c: int) -> str | None:
    add = page.get_by_role("button", name=re.compile("Add child")).first
    delete = page.get_by_role("button", name=re.compile("Delete subtree")).first
    n0 = _wait_scenario(page, lambda s: True).tree(0).n
    for _ in range(clicks):
        add.click(no_wait_after=True, timeout=10_000)  # a disabled button (root selected) times out
    t = _wait_scenario(page, lambda s: s.tree(0).n >= n0 + clicks, timeout=30).tree(0)
    new = t.parents[n0:]
    if not (t.n == n0 + clicks and all(new[i] == n0 + i - 1 for i in range(1, len(new)))):
        return f"{clicks} adds on {n0} nodes -> parents {t.parents}"
    for _ in range(clicks):
        delete.click(no_wait_after=True, timeout=10_000)
    t = _wait_scenario(page, lambda s: s.tree(0).n <= n0, timeout=30).tree(0)
    return None if t.n == n0 else f"{clicks} deletes -> {t.n} nodes, not {n0}"


def target_cycle(page, clicks: int, c: int) -> str | None:
    s0 = _wait_scenario(page, lambda s: True)
    tp0 = list(s0.requests[0].target_predict)
    others = lambda i: [v for v in s0.vocab if v != tp0[i]]  # noqa: E731
    a, b = others(1)[c % len(others(1))], others(2)[(c + 1) % len(others(2))]
    _pick(page, r"Target\(A\)", a)  # row 1
    _pick(page, r"Target\(B\)", b)  # row 2, while the first edit's rerun runs
    got = list(_wait_scenario(page, lambda s: list(s.requests[0].target_predict)[1:3] == [a, b], timeout=30)
               .requests[0].target_predict)
    return None if got[1:3] == [a, b] else f"target cells {tp0[1:3]} -> set {[a, b]}, got {got[1:3]}"


def coin_cycle(page, clicks: int, c: int) -> str | None:
    from specviz.base.limits import COIN_STEP  # one arrow key = one step of the slider

    thumb = page.locator('[data-testid="stSlider"]').filter(has_text="u[0]").locator('[tabindex="0"]').first
    for direction in (1, -1):
        u0 = float(_wait_scenario(page, lambda s: True).requests[0].coins[0])
        step = direction if 0.05 < u0 + direction * clicks * COIN_STEP < 0.95 else -direction
        thumb.focus()
        for _ in range(clicks):
            page.keyboard.press("ArrowRight" if step > 0 else "ArrowLeft")
            page.wait_for_timeout(60)
        want = round(u0 + step * clicks * COIN_STEP, 6)
        got = round(float(_wait_scenario(page, lambda s: round(float(s.requests[0].coins[0]), 6) == want,
                                         timeout=30).requests[0].coins[0]), 6)
        if got != want:
            return f"u[0] {u0} + {step * clicks} steps -> {got}, not {want}"
    return None


SEQUENTIAL = False  # --sequential: B's double-click waits for A's rerun (the control for the burst)
RUNNING_DURING: list = []  # per pq cycle: was the page still running A's rerun when B was entered?
_RUNNING_JS = "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') === 'running'"


def pq_cycle(page, clicks: int, c: int) -> str | None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    s0 = _wait_scenario(page, lambda s: True)
    row = [float(x) for x in s0.requests[0].target_probs[0]]
    d = round(0.01 * (1 + c % 5), 2) * (1 if row[1] > 0.2 else -1)  # B (0.4 at start) goes down while it can
    a, b = round(row[0] + d, 2), round(row[1] - d, 2)
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    # Row 0 (below the ~35 px header), tokens A and B: the columns right of the row labels, at 42% and 59%
    # of the table's width (the chain preset's 4-token table; bench_browser.bench_pq_cell uses the first).
    during = False
    for x, value in ((0.42, a), (0.59, b)):
        page.mouse.dblclick(box["x"] + box["width"] * x, box["y"] + 35 * 1.5)
        editor = page.locator(".gdg-input").first
        editor.wait_for(timeout=10_000)  # (a double-click the grid ignored: no editor, a "click could not be made")
        editor.fill(f"{value}", timeout=5000)
        if x > 0.5:
            during = page.evaluate(_RUNNING_JS)
        editor.press("Enter")
        if SEQUENTIAL and x < 0.5:
            wait_for_app(page)
        elif x < 0.5:
            # A's rerun (the row sums to 1 + d: held) has started: B is typed and entered while it runs. (The
            # grid opens no editor for a double-click ~20 ms after an Enter, before any rerun: that is
            # the browser widget's own pace, which no person's double-click reaches.)
            try:
                page.wait_for_function(_RUNNING_JS, timeout=2_000, polling="raf")
            except PlaywrightTimeout:  # a rerun too short to be seen: B follows it (the scenario check decides)
                pass
    RUNNING_DURING.append(during)
    want = [a, b]
    got = _wait_scenario(page, lambda s: [round(float(x), 6) for x in s.requests[0].target_probs[0][:2]] == want,
                         timeout=30).requests[0].target_probs[0][:2]
    got = [round(float(x), 6) for x in got]
    return None if got == want else f"p[0][A, B] {row[:2]} -> typed {want}, got {got}"


def class_load(url: str, students: int, stop: threading.Event, out: dict) -> None:
    """``students`` bench_class students on ``url`` editing the greedy page without pause until ``stop``."""
    from benchmarks.bench_class import Student

    async def run():
        start = asyncio.Event()
        start.set()
        class_ = [Student(url, k) for k in range(students)]
        tasks = [asyncio.create_task(s.run(10**9, start)) for s in class_]
        while not stop.is_set():
            out["editing"] = sum(len(s.times) for s in class_)
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        times = [x for s in class_ for x in s.times]
        out.update(edits=len(times), errors=sum(s.errors for s in class_), leaks=sum(s.leaks for s in class_),
                   lost=sum(s.lost for s in class_), p50=statistics.median(times) if times else float("nan"))
    asyncio.run(run())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("tree", "target", "coin", "pq"), default="tree")
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--clicks", type=int, default=4)
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes running meanwhile")
    ap.add_argument("--sequential", action="store_true", help="pq: the second cell after the first edit's rerun")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds to wait after the backends' loading note is gone (0: the first burst meets the "
                         "poll's last timer, where a click can still be lost)")
    ap.add_argument("--class-students", type=int, default=0, metavar="N",
                    help="N websocket students editing the greedy page on the same server meanwhile")
    args = ap.parse_args(argv)
    global SEQUENTIAL
    SEQUENTIAL = args.sequential
    from playwright.sync_api import TimeoutError as PlaywrightTimeout, sync_playwright

    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    bad = []
    with tempfile.TemporaryDirectory() as tmp, start_app_server(Path(tmp) / "server.log") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        path = {"tree": "tree_builder", "target": "greedy", "coin": "chain_sampling", "pq": "chain_sampling"}[args.kind]
        page.goto(f"{url}/{path}", wait_until="domcontentloaded")
        page.wait_for_function("() => !/loading them|正在加载/.test(document.body.innerText)", timeout=180_000)
        wait_for_app(page)
        page.wait_for_timeout(int(args.settle * 1000))  # the loading poll can fire once more: see --settle
        for sp in spinners:
            sp.start()
        stop, class_out = threading.Event(), {}
        class_thread = None
        if args.class_students:
            class_thread = threading.Thread(target=class_load, args=(url, args.class_students, stop, class_out), daemon=True)
            class_thread.start()
            while class_out.get("editing", 0) < args.class_students and class_thread.is_alive():
                page.wait_for_timeout(200)  # the class is at work before the first burst

        def fresh():
            """A new session on the default scenario (after a bad cycle, the state is anything)."""
            page.goto(f"{url}/{path}", wait_until="domcontentloaded")
            wait_for_app(page)

        cycle = {"tree": tree_cycle, "target": target_cycle, "coin": coin_cycle, "pq": pq_cycle}[args.kind]
        try:
            for c in range(args.cycles):
                try:
                    problem = cycle(page, args.clicks, c)
                except PlaywrightTimeout as exc:
                    problem = f"a click could not be made ({str(exc).splitlines()[0]})"
                if problem:
                    bad.append(f"cycle {c}: {problem}")
                    fresh()
        finally:
            for sp in spinners:
                sp.terminate()
            stop.set()
            if class_thread is not None:
                class_thread.join(timeout=120)
    for line in bad:
        print(line)
    clicks = {"tree": 2 * args.clicks, "target": 2, "coin": 2 * args.clicks, "pq": 2}[args.kind] * args.cycles
    extra = f", B entered while A's rerun ran: {sum(RUNNING_DURING)} of {len(RUNNING_DURING)}" if RUNNING_DURING else ""
    if args.class_students:
        c = class_out
        extra += (f"; class of {args.class_students} on the same server meanwhile: {c.get('edits')} edits, "
                  f"{c.get('errors')} errors, {c.get('leaks')} leaks, {c.get('lost')} lost, p50 {c.get('p50', float('nan')):.2f} s")
    print(f"kind {args.kind}, cycles {args.cycles}, clicks {clicks}, load {args.load}, bad cycles {len(bad)}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
