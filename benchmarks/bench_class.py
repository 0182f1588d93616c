"""A class on one server: N students edit the greedy page at once, plus a few real browsers stepping.

    /work/main/.venv/bin/python benchmarks/bench_class.py [--students 10 25 50] [--clicks 5] [--browsers 3]
                                                          [--app-dir DIR] [--serve N | --url URL --pids PID ...]

Each student is a websocket client speaking Streamlit's own protocol (``BackMsg`` /
``ForwardMsg`` protobufs over ``ws://host/_stcore/stream``), like a browser tab: it opens the greedy
page, then makes ``--clicks`` edits, each one changing the target's prediction at node A
(alternately B and C; B leaves 1 draft accepted, C accepts 2), and waits for the page's answer.

Reported per class size:
- p50 / p95 click -> updated view: from sending the edit until the rerun has finished and the
  new view (the ``num_correct_drafts = k`` line) has arrived;
- errors: an exception or st.error in the answer, or a rerun that did not finish;
- leaks: an answer showing another student's value (each student alternates from its own start,
  so half of the class shows B while the other half shows C at every moment);
- lost clicks: an edit whose answer never showed its value (60 s);
- server RSS (max over the run, /proc) and the machine's load average.

A step of the walk does not wait for the server (the step player has every frame in the browser; the
step reaches the server as the component's state once the viewer stops, 1 s after the last step):
``--browsers`` real chromium pages step the player while the class edits; their click -> new step
times are reported too, and the number of script runs the stepping caused (expected: one per stop).
``--app-dir`` runs another checkout (e.g. ``git archive`` of an older commit) for a before/after.

``--serve N`` starts ``specviz serve --workers N`` (HAProxy in front of N workers) instead of one
``streamlit run``, and the class goes through HAProxy: each student first loads ``/`` (getting
the affinity cookie, like a browser), then opens its websocket with that cookie. ``--url`` points
the class at a server already running (e.g. a ``specviz serve`` elsewhere); ``--pids`` names its
processes for the CPU figure. Also reported: **server CPU seconds per edit** (user + system time
of every server process, HAProxy included, from the moment the class starts editing until the
last answer, divided by the edits: the figure that says how many students a core holds), the same
for this benchmark's own process (the 50 simulated students and the browsers' driver share the 2
cores with the server), and how the students were spread over the workers.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, _free_port, _wait_health  # noqa: E402

VALUES = ("B", "C")
EXPECT = {"B": 1, "C": 2}  # num_correct_drafts for Target(A) = B / C on the running example
NCD_RE = re.compile(r"num_correct_drafts = (\d+)`")
TIMEOUT_S = 60.0
ERROR_TEXTS: list[str] = []  # what the errors said (the first few are printed with each row)


def _strings(msg) -> list[str]:
    """Every string field inside a delta's element (labels, markdown bodies, iframe documents)."""
    out = []

    def walk(m):
        for field, value in m.ListFields():
            if field.type == field.TYPE_MESSAGE:
                for v in ([value] if hasattr(value, "ListFields") else value):
                    walk(v)
            elif field.type == field.TYPE_STRING:
                out.extend([value] if isinstance(value, str) else value)
    walk(msg)
    return out


def cpu_seconds(pids) -> float:
    """User + system CPU seconds so far of these processes, their exited-and-reaped children, and their
    children still running (a long-lived ``dot`` a server keeps: its CPU is in no parent's figure until reaped)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    want = {int(p) for p in pids}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            f = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            if int(entry.name) in want:
                total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime
            elif int(f[1]) in want:  # a running child (its ppid is a server process)
                total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def _cookie_and_worker(url: str) -> tuple[str | None, str | None]:
    """GET / as a browser's first request: (the affinity cookie header to send back, the worker)."""
    import urllib.request

    with urllib.request.urlopen(url + "/", timeout=TIMEOUT_S) as resp:
        cookies = [v.split(";")[0] for k, v in resp.headers.items() if k.lower() == "set-cookie"]
        return ("; ".join(cookies) or None), resp.headers.get("X-Specviz-Worker")


class Student:
    def __init__(self, url: str, k: int, proxied: bool = False):
        self.url, self.k, self.proxied, self.worker = url, k, proxied, None
        self.widgets: dict = {}  # id -> WidgetState fields we send back (like a browser does)
        self.target_a_id = None
        self.fragment_id = ""  # the fragment Target(A) is drawn in: a browser's edit reruns only that
        self.times, self.errors, self.leaks, self.lost = [], 0, 0, 0
        self.cache: dict = {}  # ForwardMsg hash -> message (the server may send only a reference)

    async def _run_once(self, ws, widget_states, fragment_id: str = "") -> dict:
        """Send one rerun (of the fragment ``fragment_id``, as a browser does for a widget drawn in
        one); read until script_finished. Returns what the answer showed."""
        bm = BackMsg()
        cs = bm.rerun_script
        cs.query_string = ""
        cs.page_name = "greedy"
        cs.fragment_id = fragment_id
        for wid, (kind, value) in widget_states.items():
            w = cs.widget_states.widgets.add()
            w.id = wid
            setattr(w, kind, value)
        await ws.send(bm.SerializeToString())
        seen = {"ncd": None, "error": False, "finished": False}
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            if fm.WhichOneof("type") == "ref_hash":
                fm = self.cache.get(fm.ref_hash, fm)
            elif fm.hash:
                self.cache[fm.hash] = fm
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                which = el.WhichOneof("type")
                if which in ("exception", "alert") and (which == "exception" or el.alert.format == el.alert.ERROR):
                    seen["error"] = True
                    ERROR_TEXTS.append(el.exception.message if which == "exception" else el.alert.body)
                if which == "selectbox" and el.selectbox.label.startswith("Target(A)"):
                    self.target_a_id = el.selectbox.id
                    self.fragment_id = fm.delta.fragment_id
                for s in _strings(el):
                    m = NCD_RE.search(s)
                    if m and "new_seq_len" in s:
                        seen["ncd"] = int(m.group(1))
            elif kind == "script_finished":
                if fm.script_finished != fm.FINISHED_EARLY_FOR_RERUN:  # a st.rerun() inside the run: keep reading
                    seen["finished"] = True
                    return seen
        return seen

    async def run(self, clicks: int, start_evt: asyncio.Event):
        uri = self.url.replace("http://", "ws://") + "/_stcore/stream"
        headers = {}
        if self.proxied:
            cookie, self.worker = await asyncio.to_thread(_cookie_and_worker, self.url)
            if cookie:
                headers["Cookie"] = cookie
        async with websockets.connect(uri, max_size=None, subprotocols=["streamlit"], additional_headers=headers) as ws:
            self.worker = ws.response.headers.get("X-Specviz-Worker", self.worker)
            first = await self._run_once(ws, {})
            if not first["finished"] or self.target_a_id is None:
                self.errors += 1
                return
            await start_evt.wait()
            for c in range(clicks):
                value = VALUES[(self.k + c) % 2]
                self.widgets[self.target_a_id] = ("string_value", value)
                t0 = time.perf_counter()
                try:
                    seen = await self._run_once(ws, self.widgets, self.fragment_id)
                except (asyncio.TimeoutError, websockets.ConnectionClosed):
                    self.lost += 1
                    continue
                dt = time.perf_counter() - t0
                if not seen["finished"] or seen["ncd"] is None:
                    self.lost += 1
                    continue
                self.times.append(dt)
                if seen["error"]:
                    self.errors += 1
                if seen["ncd"] != EXPECT[value]:
                    self.leaks += 1


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def browsers_stepping(url: str, n: int, stop: threading.Event, out: dict) -> None:
    """``n`` chromium pages on the greedy page press "next" in the step player until ``stop``."""
    from playwright.sync_api import sync_playwright

    from benchmarks.bench_browser import INIT_JS, STEP_CHANGED_JS, current_step, goto, now, player_frame

    times, runs = [], 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = []
        for _ in range(n):
            p = browser.new_page(viewport={"width": 1280, "height": 720})
            p.add_init_script(INIT_JS)
            goto(p, f"{url}/greedy")
            pages.append(p)
        out["ready"] = True
        marks = [len(p.evaluate("window.__svLog")) for p in pages]
        while not stop.is_set():
            for p in pages:
                f = player_frame(p)
                if f is None:
                    out["no_player"] = True
                    stop.wait(0.5)
                    continue
                k, last, before = current_step(p)
                if k >= last:
                    f.locator('[data-sv-btn="first"]').first.click()
                    continue
                t0 = now(p)
                f.locator('[data-sv-btn="next"]').first.click()
                t1 = p.wait_for_function(STEP_CHANGED_JS, arg=[before, k + 1], timeout=60_000, polling="raf").json_value()
                times.append((t1 - t0) / 1000)
        runs = sum(sum(1 for _, s in p.evaluate("window.__svLog")[m:] if s == "running") for p, m in zip(pages, marks))
        browser.close()
    out["times"], out["runs"] = times, runs


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))] if xs else float("nan")


async def one_class(url: str, students: int, clicks: int, pids: list[int], proxied: bool = False) -> dict:
    start = asyncio.Event()
    class_ = [Student(url, k, proxied) for k in range(students)]
    peak = [sum(rss_mb(p) for p in pids)]

    async def watch():
        while True:
            peak.append(sum(rss_mb(p) for p in pids))
            await asyncio.sleep(0.5)

    w = asyncio.create_task(watch())
    tasks = [asyncio.create_task(s.run(clicks, start)) for s in class_]
    await asyncio.sleep(0)
    # Everyone has opened the page before the first edit (a class that sat down).
    while any(s.target_a_id is None and s.errors == 0 for s in class_) and not all(t.done() for t in tasks):
        await asyncio.sleep(0.2)
    cpu0, own0 = cpu_seconds(pids), time.process_time()
    start.set()
    crashed = [r for r in await asyncio.gather(*tasks, return_exceptions=True) if isinstance(r, BaseException)]
    cpu, own = cpu_seconds(pids) - cpu0, time.process_time() - own0
    for r in crashed[:3]:
        print(f"student crashed: {type(r).__name__}: {r}", file=sys.stderr)
    w.cancel()
    times = [t for s in class_ for t in s.times]
    return {"students": students, "edits": len(times), "p50": statistics.median(times) if times else float("nan"),
            "p95": p95(times), "errors": sum(s.errors for s in class_), "leaks": sum(s.leaks for s in class_),
            "lost": sum(s.lost for s in class_), "crashed": len(crashed), "rss_mb": max(peak),
            "cpu_s_per_edit": cpu / len(times) if times else float("nan"),
            "client_cpu_s_per_edit": own / len(times) if times else float("nan"),
            "workers": {w: sum(1 for s in class_ if s.worker == w) for w in sorted({str(s.worker) for s in class_})},
            "error_texts": sorted(set(ERROR_TEXTS))[:3]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, nargs="+", default=[10, 25, 50])
    ap.add_argument("--clicks", type=int, default=5)
    ap.add_argument("--browsers", type=int, default=3)
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--serve", type=int, default=0, metavar="N",
                    help="start `specviz serve --workers N` (HAProxy + N workers) and go through HAProxy")
    ap.add_argument("--url", default=None, help="a server already running (e.g. HAProxy of a specviz serve)")
    ap.add_argument("--pids", type=int, nargs="*", default=[], help="with --url: the server's processes (CPU, RSS)")
    args = ap.parse_args()

    port = _free_port()
    env = dict(os.environ, TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"))
    log_path = Path(f"/tmp/bench_class_{os.getpid()}.log")
    log = open(log_path, "w")
    proc, proxied = None, bool(args.serve or args.url)
    if args.url:
        url, pids = args.url.rstrip("/"), list(args.pids)
    elif args.serve:
        env["PYTHONPATH"] = str(args.app_dir) + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.Popen([sys.executable, "-m", "specviz", "serve", "--workers", str(args.serve), "--port", str(port)],
                                cwd=args.app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
    else:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.address", "127.0.0.1", "--server.port", str(port),
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=args.app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        url, pids = f"http://127.0.0.1:{port}", [proc.pid]
    rows = []
    try:
        if args.serve:
            deadline = time.monotonic() + 300
            while "serving http://" not in log_path.read_text() and time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise RuntimeError("specviz serve exited:\n" + log_path.read_text())
                time.sleep(0.3)
            text = log_path.read_text()
            pids = [int(p) for p in re.findall(r"worker w\d+: pid (\d+)", text) + re.findall(r"HAProxy \(pid (\d+)", text)]
        if proc is not None:
            _wait_health(url, proc)
        for _ in range(max(1, args.serve) * 2):  # warm every worker (imports, caches)
            asyncio.run(one_class(url, 1, 1, pids, proxied))
        for n in args.students:
            stop, out = threading.Event(), {}
            th = None
            if args.browsers:
                th = threading.Thread(target=browsers_stepping, args=(url, args.browsers, stop, out), daemon=True)
                th.start()
                t_wait = time.monotonic()
                while not out.get("ready") and th.is_alive() and time.monotonic() - t_wait < 120:
                    time.sleep(0.2)
            load0 = os.getloadavg()[0]
            row = asyncio.run(one_class(url, n, args.clicks, pids, proxied))
            if th is not None:
                stop.set()
                th.join(timeout=120)
                st = out.get("times", [])
                row.update(browser_steps=len(st), browser_step_p50=statistics.median(st) if st else float("nan"),
                           browser_step_p95=p95(st), browser_step_reruns=out.get("runs"), no_player=out.get("no_player", False))
            row["load"] = [load0, os.getloadavg()[0]]
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    print("\n| students | edits | errors | leaks | lost | p50 click -> view | p95 | server CPU s / edit | client CPU s / edit | server RSS | browser steps p50 / p95 (reruns) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['students']} | {r['edits']} | {r['errors']} | {r['leaks']} | {r['lost']} | {r['p50']:.2f} s | "
              f"{r['p95']:.2f} s | {r['cpu_s_per_edit']:.3f} | {r['client_cpu_s_per_edit']:.3f} | {r['rss_mb']:.0f} MB | {r.get('browser_step_p50', float('nan')) * 1000:.0f} / "
              f"{r.get('browser_step_p95', float('nan')) * 1000:.0f} ms ({r.get('browser_step_reruns')}) |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
