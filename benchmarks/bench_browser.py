"""Click -> updated view in a real browser (Playwright on Debian's chromium), against a fresh
``streamlit run app.py`` on this machine.

    /work/main/.venv/bin/python benchmarks/bench_browser.py [--repeats 6] [--only next_step ...]

For each interaction: ``--repeats`` clicks, each timed in the page's own clock from just before
the click until the view shows the change:
- a click that reruns the script: until the app has gone "running" and back to "notRunning", no
  status widget is left and every graph and plotly chart on the page has its SVG;
- a click the page answers in the browser (the step player): until the player's step text shows
  the new step.
A select box edit (target prediction, backend) is timed from the click on the option: opening the
list is the browser's own widget and starts no rerun.
Prints median and p95 per interaction, the machine's load average before and after (the machine
is shared: compare ratios inside one run), and writes JSON with ``--json``.

Interactions: next step (greedy; next_step_chain / _target_only / _dspark on those pages), back to
first step (greedy), change a target prediction (greedy), add child and delete a node (tree builder),
move a coin slider, type a p cell, switch the semantics (chain), switch the backend numpy <-> torch
(greedy), page switch (greedy <-> chain),
language switch, play speed (greedy, 2 steps/s for 6 steps) and the first visit of a page after
the server reports healthy (one fresh server per page), then a second page opened from a link in a second tab
of the same browser while that server is warm (second_picture_<page>: the browser holds Streamlit's files by then).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, _free_port, _wait_health, wait_for_app  # noqa: E402

APP_DIR = ROOT  # --app-dir: another checkout (e.g. `git archive` of an older commit) for a before/after
SERVER = "streamlit"  # --server: "streamlit" (a bare `streamlit run app.py`) or "app" (`specviz app`, the README's)


@contextlib.contextmanager
def start_app_server(log: Path):
    """``streamlit run app.py`` of APP_DIR on a free port; yields the base URL."""
    port = _free_port()
    env = dict(os.environ, TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"))
    with open(log, "w") as out:
        if SERVER == "app":  # the README's command (warmed up before it answers: specviz.app.ui.worker)
            env["PYTHONPATH"] = str(APP_DIR) + os.pathsep + env.get("PYTHONPATH", "")
            cmd = [sys.executable, "-m", "specviz", "app", "--server.port", str(port)]
        else:
            cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                   "--server.address", "127.0.0.1", "--server.port", str(port),
                   "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
        proc = subprocess.Popen(cmd, cwd=APP_DIR, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_health(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

VIEWPORT = {"width": 1280, "height": 720}

# Records every change of the app's script state with its time (performance.now()).
INIT_JS = """
(() => {
  window.__svLog = [];
  const attach = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) { setTimeout(attach, 20); return; }
    const obs = new MutationObserver(() => {
      window.__svLog.push([performance.now(), app.getAttribute('data-test-script-state')]);
    });
    obs.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  };
  attach();
})();
"""

# True (the time) when a rerun started after t0 has finished and the page is drawn.
RERUN_DONE_JS = """
(t0) => {
  const log = window.__svLog || [];
  let ran = false, done = false;
  for (const [t, s] of log) {
    if (t < t0) continue;
    if (s === 'running') ran = true;
    else if (ran && s === 'notRunning') done = true;
  }
  if (!done) return false;
  const app = document.querySelector('[data-testid="stApp"]');
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (document.querySelector('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]')) return false;
  for (const g of document.querySelectorAll('[data-testid="stGraphVizChart"]')) {
    if (!g.querySelector('svg')) return false;
  }
  for (const g of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    if (!g.querySelector('.main-svg')) return false;
  }
  return performance.now();
}
"""

# The "Step k/N" text of the page: in the step player (in a component's shadow root, or an iframe of
# this origin in an older checkout) or in the page.
STEP_TEXT_JS = """
() => {
  const texts = [];
  const roots = [...document.querySelectorAll('*')].filter(e => e.shadowRoot).map(e => e.shadowRoot);
  for (const f of document.querySelectorAll('iframe')) { try { if (f.contentDocument) roots.push(f.contentDocument); } catch (e) {} }
  for (const r of roots) { const e = r.querySelector('[data-sv-step]'); if (e) texts.push(e.textContent); }
  const info = [...document.querySelectorAll('[data-testid="stAlertContentInfo"], [data-testid="stAlert"]')]
    .map(e => e.textContent).find(t => /(Step|步骤) \\d+\\/\\d+/.test(t));
  if (info) texts.push(info);
  return texts.join(' | ');
}
"""

STEP_CHANGED_JS = """
([before, want]) => {
  const t = (%s)();
  const m = t.match(/(?:Step|步骤) (\\d+)\\/(\\d+)/);
  if (!m || t === before) return false;
  if (want !== null && Number(m[1]) !== want) return false;
  return performance.now();
}
""" % STEP_TEXT_JS


# The key picture is on screen: the step player's figure, or a figure drawn on the server.
PICTURE_JS = """
() => {
  const roots = [...document.querySelectorAll('*')].filter(e => e.shadowRoot).map(e => e.shadowRoot);
  for (const f of document.querySelectorAll('iframe')) { try { if (f.contentDocument) roots.push(f.contentDocument); } catch (e) {} }
  for (const r of roots) {
    const i = r.querySelector('[data-sv-img]');
    if (i && i.complete && i.naturalWidth > 0) return true;
  }
  return !!document.querySelector('.sv-graph svg, [data-testid="stGraphVizChart"] svg');
}
"""


def now(page) -> float:
    return page.evaluate("performance.now()")


LOST: list[str] = []  # clicks that never started a rerun (counted and reported, not timed)


def timed_rerun(page, action, timeout=20_000) -> float | None:
    """Seconds from the click to the redrawn page; None (counted in LOST) when no rerun came."""
    t0 = now(page)
    action()
    try:
        t1 = page.wait_for_function(RERUN_DONE_JS, arg=t0, timeout=timeout, polling="raf").json_value()
    except Exception:  # noqa: BLE001  playwright's TimeoutError: a lost click, reported as such
        LOST.append(getattr(action, "__name__", "click"))
        return None
    return (t1 - t0) / 1000


def current_step(page) -> tuple[int, int, str]:
    text = page.evaluate(STEP_TEXT_JS)
    m = re.search(r"(?:Step|步骤) (\d+)/(\d+)", text)
    return (int(m.group(1)), int(m.group(2)), text) if m else (-1, -1, text)


def player_frame(page):
    """The step player (its component in the page, or its frame in an older checkout; None when the page
    steps on the server)."""
    if page.locator(".sv-player [data-sv-step]").count():
        return page.locator(".sv-player").first
    for f in page.frames:
        try:
            if f != page.main_frame and f.query_selector("[data-sv-step]"):
                return f
        except Exception:  # noqa: BLE001  a detached frame
            continue
    return None


def click_step_button(page, which: str) -> None:
    """Press next / first in the player if there is one, else the server-side step buttons."""
    f = player_frame(page)
    for _ in range(50):  # the player's iframe may still be loading (or redrawn by the backend loader)
        if f is not None or page.get_by_role("button", name="Next", exact=True).count():
            break
        page.wait_for_timeout(200)
        f = player_frame(page)
    if f is not None:
        f.locator(f'[data-sv-btn="{which}"]').first.click()
        return
    names = {"next": ["▶", "Next", "next"], "first": ["⏮", "First", "first"]}[which]
    for name in names:
        loc = page.get_by_role("button", name=name, exact=True)
        if loc.count():
            loc.first.click()
            return
    raise RuntimeError(f"no {which} step button on the page")


def timed_step(page, which: str) -> float:
    k, n, before = current_step(page)
    want = 0 if which == "first" else k + 1
    t0 = now(page)
    click_step_button(page, which)
    t1 = page.wait_for_function(STEP_CHANGED_JS, arg=[before, want], timeout=60_000, polling="raf").json_value()
    if player_frame(page) is None:  # a server-side step: also wait for the rerun to finish drawing
        t1 = max(t1, page.wait_for_function(RERUN_DONE_JS, arg=t0, timeout=60_000, polling="raf").json_value())
    return (t1 - t0) / 1000


# In the player's own document: click "next", then wait for the frame after the redraw to be painted
# (two animation frames). The time a click takes inside the browser, without Playwright's input round trip.
INPAGE_NEXT_JS = """
async (root) => {
  const d = root && root.querySelector ? root : document;  // the player's element, or an older checkout's frame
  const b = d.querySelector('[data-sv-btn="next"]'), s = d.querySelector('[data-sv-step]');
  const before = s.textContent, t0 = performance.now();
  b.click();
  while (s.textContent === before) await new Promise(r => requestAnimationFrame(r));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return (performance.now() - t0) / 1000;
}
"""


def bench_next_step_inpage(page, base, repeats, path: str = "chain_sampling"):
    """next step in the player, timed inside the browser (click -> painted frame); None without a player."""
    goto(page, f"{base}/{path}")
    f = player_frame(page)
    if f is None:
        return [float("nan")]
    f.locator('[data-sv-btn="first"]').first.click()
    out = []
    for _ in range(repeats):
        k, n, _ = current_step(page)
        if k >= n:
            f.locator('[data-sv-btn="first"]').first.click()
        out.append(f.evaluate(INPAGE_NEXT_JS))
    return out


def goto(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    wait_for_app(page)
    page.wait_for_selector("h1", timeout=60_000)  # the page's own script has drawn (not just the router)
    wait_for_app(page)


def bench_next_step(page, base, repeats, path: str = "greedy"):
    goto(page, f"{base}/{path}")
    out = []
    if current_step(page)[0] > 0:
        timed_step(page, "first")
    for _ in range(repeats):
        k, n, _ = current_step(page)
        if k >= n:
            timed_step(page, "first")
        out.append(timed_step(page, "next"))
    return out


def bench_first_step(page, base, repeats):
    goto(page, f"{base}/greedy")
    out = []
    for _ in range(repeats):
        timed_step(page, "next")
        out.append(timed_step(page, "first"))
    return out


def _open_select(page, label_re: str, option: str):
    """Open the select box labelled ``label_re`` until ``option`` is listed; returns the option."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=re.compile(label_re)).first
    box.scroll_into_view_if_needed()
    for _ in range(3):  # the layout may still move (a figure finishing its load) under the first click
        box.locator('input[role="combobox"]').click()
        opt = page.get_by_role("option", name=option, exact=True)
        try:
            opt.wait_for(timeout=3_000)
        except Exception:  # noqa: BLE001
            continue
        return opt
    raise RuntimeError(f"could not open the select box {label_re}")


def timed_select(page, label_re: str, option: str) -> float | None:
    """A select box edit, timed from the click on the option (the click that changes the value; opening
    the list is the browser's own widget and starts no rerun)."""
    opt = _open_select(page, label_re, option)
    return timed_rerun(page, opt.click)


def bench_target_prediction(page, base, repeats):
    goto(page, f"{base}/greedy")
    out = []
    for k in range(repeats):
        opt = ["B", "A"][k % 2]  # Target(A) at row 1: A's prediction flips between B and A
        out.append(timed_select(page, r"Target\(A\)", opt))
    return out


def bench_add_child(page, base, repeats):
    goto(page, f"{base}/tree_builder")
    out = []
    for _ in range(repeats):
        btn = page.get_by_role("button", name=re.compile("Add child|添加子节点")).first
        out.append(timed_rerun(page, btn.click))
    return out


def bench_coin_slider(page, base, repeats):
    goto(page, f"{base}/chain_sampling")
    out = []
    for k in range(repeats):
        thumb = page.locator('[data-testid="stSlider"]').filter(has_text="u[0]").locator('[tabindex="0"]').first
        thumb.focus()
        key = "ArrowRight" if k % 2 == 0 else "ArrowLeft"
        out.append(timed_rerun(page, lambda: page.keyboard.press(key)))
    return out


def bench_delete_node(page, base, repeats):
    """Tree builder: add a child (untimed), then time "Delete subtree" on it."""
    goto(page, f"{base}/tree_builder")
    out = []
    for _ in range(repeats):
        timed_rerun(page, page.get_by_role("button", name=re.compile("Add child|添加子节点")).first.click)
        btn = page.get_by_role("button", name=re.compile("Delete subtree|删除子树")).first
        out.append(timed_rerun(page, btn.click))
    return out


def bench_pq_cell(page, base, repeats):
    """Chain page: type a new value into the p table's first cell (row 0, token A), Enter. The p and q tables are
    one component (specviz.app.ui.prob_tables): each cell is a text box labelled "p · <row> · <token>"."""
    goto(page, f"{base}/chain_sampling")
    out = []
    cell = page.locator("input[aria-label^='p · ']").first
    for k in range(repeats):
        cell.scroll_into_view_if_needed()
        cell.click()
        page.keyboard.press("Control+a")
        page.keyboard.type(f"{0.31 + 0.01 * (k % 9):.2f}")  # a new value each time (the row then asks to be normalised)
        out.append(timed_rerun(page, lambda: page.keyboard.press("Enter")))
    return out


def bench_semantics(page, base, repeats):
    """Chain page: the semantics radio, 0.5.23 <-> earlier."""
    goto(page, f"{base}/chain_sampling")
    out = []
    for k in range(repeats):
        target = ["earlier", "0.5.23"][k % 2]
        radio = page.locator('[data-testid="stRadio"]').filter(has_text="earlier").locator("label").filter(
            has_text=re.compile("^" + re.escape(target) + "$")).first
        radio.scroll_into_view_if_needed()
        out.append(timed_rerun(page, radio.click))
    return out


def bench_backend(page, base, repeats):
    """Greedy page: the sidebar backend select box, numpy <-> torch."""
    goto(page, f"{base}/greedy")
    out = []
    for k in range(repeats):
        opt = ["torch", "numpy (reference)"][k % 2]
        out.append(timed_select(page, r"^(Backend|后端)", opt))
    return out


# True (the time) when the page titled ``title`` is drawn and idle. A page switch is timed by its result,
# not by the running -> notRunning change RERUN_DONE_JS waits for: a switch whose run is short enough
# (~50 ms) can go by without the browser ever drawing the "running" state, which counted a switch that
# had happened as a lost click (1 in 24; the websocket showed the run and the address bar the new page).
PAGE_DONE_JS = RERUN_DONE_JS.replace("(t0) => {", """([t0, title]) => {
  const h1 = document.querySelector('h1');
  if (!h1 || !h1.innerText.startsWith(title)) return false;""").replace("if (!done) return false;", "")


def bench_page_switch(page, base, repeats):
    goto(page, f"{base}/greedy")
    out = []
    for k in range(repeats):
        target = ["Chain rejection sampling", "Greedy accept"][k % 2]
        link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=target).first
        t0 = now(page)
        link.click()
        try:
            t1 = page.wait_for_function(PAGE_DONE_JS, arg=[t0, target], timeout=20_000, polling="raf").json_value()
        except Exception:  # noqa: BLE001  playwright's TimeoutError: the page never switched
            LOST.append("page switch")
            out.append(None)
            continue
        out.append((t1 - t0) / 1000)
    return out


def bench_language(page, base, repeats):
    goto(page, f"{base}/greedy")
    out = []
    for _ in range(repeats):
        target = "English" if "贪心" in page.locator("h1").first.inner_text() else "简体中文"  # the other language
        radio = page.locator('[data-testid="stSidebar"] label').filter(has_text=target).first
        out.append(timed_rerun(page, radio.click))
    return out


def bench_play(page, base, repeats):
    """Steps per second while playing at the 2 steps/s setting (the rate over 6 steps)."""
    goto(page, f"{base}/greedy")
    if current_step(page)[0] > 0:
        timed_step(page, "first")
    f = player_frame(page)
    speed = 2.0
    if f is not None:
        f.locator('[data-sv-speed]').first.select_option(f"{speed:g}")
        t0 = now(page)
        f.locator('[data-sv-btn="play"]').first.click()
    else:
        page.locator('[data-testid="stSlider"]').first  # the speed select slider: keep its default 1 step/s
        speed = 1.0
        t0 = now(page)
        page.get_by_role("button", name=re.compile("play|播放")).first.click()
    want = 6
    t1 = page.wait_for_function(STEP_CHANGED_JS, arg=["", want], timeout=60_000, polling="raf").json_value()
    rate = want / ((t1 - t0) / 1000)
    return [rate / speed]  # 1.0 = the labelled speed


# The badge's final state: "(All|The compared) backends agree", or (a CPU server, where torch and the Triton
# interpreter are compared on request) "Not compared yet: ..." beside its button.
BADGE_JS = """() => /backends agree|Not compared yet/.test(document.body.innerText) ? performance.now() : false"""


def bench_first_visit(repeats, pages=("tree_builder", "chain_sampling", "greedy", "target_only", "dspark"), pw=None):
    """Per page, a fresh server: seconds until the key picture shows (the step player's figure, or
    the first figure drawn on the server), until the whole page is drawn (the script done, every
    graph and chart drawn), and until the backend badge shows (BADGE_JS) (the backends may still
    be loading when the page is first drawn: it then says so and redraws itself).

    Then, with that server warm, a second tab of the same browser opens the next page of ``pages`` (as a link
    a student follows does): seconds until its key picture shows (second_picture_<that page>)."""
    out = {}
    for i, name in enumerate(pages):
        times, badge, picture, second = [], [], [], []
        other = pages[(i + 1) % len(pages)]
        for _ in range(max(1, repeats // 3)):
            with start_app_server(Path("/tmp") / f"bench_browser_{os.getpid()}.log") as base:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport=VIEWPORT)  # one HTTP cache for both tabs
                context.add_init_script(INIT_JS)
                page = context.new_page()
                t0 = time.monotonic()
                page.goto(f"{base}/{name}", wait_until="domcontentloaded")
                page.wait_for_function(PICTURE_JS, timeout=120_000, polling="raf")
                picture.append(time.monotonic() - t0)
                page.wait_for_function(RERUN_DONE_JS, arg=0, timeout=120_000, polling="raf")
                times.append(time.monotonic() - t0)
                page.wait_for_function(BADGE_JS, timeout=120_000, polling=50)
                badge.append(time.monotonic() - t0)
                if other != name:
                    tab = context.new_page()
                    t0 = time.monotonic()
                    tab.goto(f"{base}/{other}", wait_until="domcontentloaded")
                    tab.wait_for_function(PICTURE_JS, timeout=120_000, polling="raf")
                    second.append(time.monotonic() - t0)
                browser.close()
        out[f"first_picture_{name}"] = picture
        out[f"first_visit_{name}"] = times
        out[f"first_badge_{name}"] = badge
        if second:
            out[f"second_picture_{other}"] = second
    return out


BENCHES = {
    "next_step": bench_next_step,
    "next_step_chain": lambda page, base, repeats: bench_next_step(page, base, repeats, "chain_sampling"),
    "next_step_target_only": lambda page, base, repeats: bench_next_step(page, base, repeats, "target_only"),
    "next_step_dspark": lambda page, base, repeats: bench_next_step(page, base, repeats, "dspark"),
    "next_step_chain_inpage": lambda page, base, repeats: bench_next_step_inpage(page, base, repeats, "chain_sampling"),
    "next_step_target_only_inpage": lambda page, base, repeats: bench_next_step_inpage(page, base, repeats, "target_only"),
    "first_step": bench_first_step, "target_prediction": bench_target_prediction,
    "add_child": bench_add_child, "delete_node": bench_delete_node, "coin_slider": bench_coin_slider,
    "pq_cell": bench_pq_cell, "semantics": bench_semantics, "backend": bench_backend, "page_switch": bench_page_switch,
    "language": bench_language, "play_speed_ratio": bench_play,
}


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--only", nargs="*", default=None, help=f"subset of {list(BENCHES)} + first_visit")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--pages", nargs="*", default=None,
                    help="first_visit: these pages only (default: tree_builder chain_sampling greedy target_only dspark)")
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    ap.add_argument("--server", choices=("streamlit", "app"), default="streamlit",
                    help="start each server as a bare `streamlit run app.py` or as `specviz app` (warmed up first)")
    args = ap.parse_args()
    global APP_DIR, SERVER
    APP_DIR, SERVER = args.app_dir, args.server
    names = args.only or [*BENCHES, "first_visit"]
    load0 = os.getloadavg()
    results = {}
    with sync_playwright() as pw:
        todo = [n for n in names if n in BENCHES]
        if todo:
            with start_app_server(Path("/tmp") / f"bench_browser_{os.getpid()}.log") as base:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                page.add_init_script(INIT_JS)
                goto(page, f"{base}/greedy")  # warm the server (first visit is timed separately)
                goto(page, f"{base}/chain_sampling")
                goto(page, f"{base}/tree_builder")
                for name in todo:
                    lost0 = len(LOST)
                    results[name] = [x for x in BENCHES[name](page, base, args.repeats) if x is not None]
                    print(f"{name:24s} median {statistics.median(results[name]):6.3f}  p95 {p95(results[name]):6.3f}  "
                          f"(n={len(results[name])}, lost clicks {len(LOST) - lost0})", flush=True)
                browser.close()
        if "first_visit" in names:
            pages = {"pages": tuple(args.pages)} if args.pages else {}
            for k, v in bench_first_visit(args.repeats, pw=pw, **pages).items():
                results[k] = v
                print(f"{k:24s} median {statistics.median(v):6.3f}  max {max(v):6.3f}  (n={len(v)})", flush=True)
    load1 = os.getloadavg()
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f} (1 min); seconds, except play_speed_ratio "
          f"(achieved / labelled steps per second)")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "load": [load0, load1]}, indent=1))


if __name__ == "__main__":
    main()
