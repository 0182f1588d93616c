"""A real class: every student edits a scenario of their own, with every widget kind, on five pages.

    /work/main/.venv/bin/python benchmarks/bench_real_class.py [--students 50 100] [--edits 2] [--think 0 6]
                                                               [--server app|serve] [--workers 2] [--solo 3]
                                                               [--settle 20] [--app-dir DIR] [--json FILE]
                                                               [--classes 50:0 50:6 100:6]

``bench_class.py`` has 50 students make the same two edits on the greedy page: after the first two
every run is a cache hit, so its figure is the floor (Streamlit's own cost per rerun). Here each
student (a websocket client speaking Streamlit's protocol, like a browser tab: ``BackMsg`` /
``ForwardMsg`` over ``/_stcore/stream``, see bench_class) sits on one of the tree builder, greedy,
chain, target-only and DSpark pages (round robin) and edits its own scenario with the widget kinds
that page has:

* tree builder: "Add child" (button), a new vocabulary label (text input + "Add" burst), "Selected node"
  (select box), "Delete subtree" (button);
* greedy: Target(A) (select box, a value of its own), a quick-set button;
* chain: coin u[0] and u_final (sliders, a value of its own), "+ slot" / "- slot" (buttons), a slot's draft
  token (select box), a new p table typed into "Edit p and q as text" + "Apply the text" (text + button; the
  box opened first and closed after, each a rerun of its own, where the box draws its text only while open);
* target-only: the coins and threshold_acc (sliders);
* DSpark: its sliders and select boxes (whatever the page draws, moved to a value of the student's own).

Every edit is checked on the answer against what that student set (the widget redrawn with that value,
the node / slot / label count, the p row text, the greedy line), else it counts as a leak (another
value) or lost (no answer in 60 s). Two phases:

1. **solo** (``--solo R``): one student at a time, R rounds of every edit kind, on an otherwise idle server:
   server CPU seconds per edit per kind (user + system of every server process from /proc, HAProxy
   included), the figure a class is sized by;
2. **class**: S students at once, ``--think T`` seconds between edits (uniform 0..T): p50 / p95 / max
   click -> verified view per kind and overall, server CPU per edit, errors (st.error / exception),
   "busy" refusals, leaks, lost, peak server RSS, load average.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from bench_class import _cookie_and_worker, _strings, cpu_seconds, p95, rss_mb  # noqa: E402
from tests.conftest import _free_port, _wait_health  # noqa: E402

TIMEOUT_S = 60.0
WIDGETS = ("slider", "selectbox", "button", "text_input", "text_area", "number_input", "radio", "select_slider")



def add_widget_states(rerun_script, states: dict) -> None:
    """Write ``{widget id: (proto field, value)}`` into a rerun request, as a browser sends its widgets' values."""
    for wid, (field, value) in states.items():
        w = rerun_script.widget_states.widgets.add()
        w.id = wid
        if field == "double_array_value":
            w.double_array_value.data.extend(value)
        else:
            setattr(w, field, value)

class View:
    """What one answer (a rerun) drew: its widgets by kind and label, every string, errors."""

    def __init__(self):
        self.widgets: dict = {}  # (kind, label) -> (element proto, fragment id)
        self.strings: list = []
        self.errors: list = []
        self.finished = False
        self.query = None  # the ?s= link the page set in this answer (the student's whole scenario)
        self.outside_fragment = 0  # elements drawn outside any fragment (a whole-app run) in this answer

    @property
    def scenario(self) -> dict | None:
        """The scenario of the page's share link in this answer, as a dict (None: no new link)."""
        if not self.query:
            return None
        from urllib.parse import parse_qs

        from specviz.rooms.share import decode_state

        token = parse_qs(self.query).get("s", [None])[0]
        st = decode_state(token) if token else None
        return None if st is None or st.scenario is None else json.loads(st.scenario.to_json(indent=None))

    def find(self, kind: str, label: str, exact: bool = False):
        for (k, lab), v in self.widgets.items():
            if k == kind and (lab == label if exact else lab.startswith(label)):
                return v
        return None

    def labels(self, kind: str, prefix: str) -> list:
        return [lab for (k, lab) in self.widgets if k == kind and lab.startswith(prefix)]


class Student:
    def __init__(self, url: str, k: int, page: str, proxied: bool, think: float, rng: random.Random):
        self.url, self.k, self.page, self.proxied, self.think, self.rng = url, k, page, proxied, think, rng
        self.cache: dict = {}
        self.states: dict = {}  # widget id -> (field, value): what this tab has set, sent with every rerun
        self.results: list = []  # (kind, seconds, outcome) outcome: ok / leak / error / busy / lost
        self.view: View | None = None
        self.ws = None
        self.query = ""  # the page's query string, sent back with each rerun like a browser

    async def rerun(self, fragment_id: str = "", trigger: tuple | None = None) -> View:
        bm = BackMsg()
        cs = bm.rerun_script
        cs.query_string = self.query or ""
        cs.page_name = self.page
        cs.fragment_id = fragment_id
        states = dict(self.states)
        if trigger is not None:
            states[trigger[0]] = trigger[1:]
        add_widget_states(cs, states)
        await self.ws.send(bm.SerializeToString())
        view = View()
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(self.ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            if fm.WhichOneof("type") == "ref_hash":
                fm = self.cache.get(fm.ref_hash, fm)
            elif fm.hash:
                self.cache[fm.hash] = fm
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                view.outside_fragment += not fm.delta.fragment_id
                which = el.WhichOneof("type")
                if which in ("exception", "alert") and (which == "exception" or el.alert.format == el.alert.ERROR):
                    view.errors.append(el.exception.message if which == "exception" else el.alert.body)
                if which in WIDGETS:
                    w = getattr(el, which)
                    view.widgets[(which, w.label)] = (w, fm.delta.fragment_id)
                view.strings.extend(_strings(el))
            elif kind == "delta" and fm.delta.WhichOneof("type") == "add_block":
                blk = fm.delta.add_block
                if blk.WhichOneof("type") == "expandable" and blk.expandable.id:  # a keyed box: a widget (open or not)
                    view.widgets[("expander", blk.expandable.label)] = (blk.expandable, fm.delta.fragment_id)
            elif kind == "page_info_changed":
                view.query = fm.page_info_changed.query_string
                self.query = view.query
            elif kind == "script_finished":
                if fm.script_finished != fm.FINISHED_EARLY_FOR_RERUN:
                    view.finished = True
                    break
        # a fragment rerun redraws only the fragment: keep the rest of the last full view
        if fragment_id and self.view is not None:
            merged = View()
            merged.widgets = dict(self.view.widgets)
            for key in [k for k, (_, f) in merged.widgets.items() if f == fragment_id]:
                del merged.widgets[key]
            merged.widgets.update(view.widgets)
            merged.strings, merged.errors, merged.finished, merged.query = view.strings, view.errors, view.finished, view.query
            merged.outside_fragment = view.outside_fragment
            view = merged
        if view.query is None:  # no new link in this answer: the page's link (and scenario) is the one it had
            view.query = self.query
        live = {w.id for w, _ in view.widgets.values()}
        self.states = {i: v for i, v in self.states.items() if i in live}
        self.view = view
        return view

    # -- the edits: each returns (kind, [(widget id, field, value, is_trigger)], fragment, check(view) -> bool) or None

    def _set(self, kind, label, field, value):
        got = self.view.find(kind, label)
        if got is None:
            return None
        w, frag = got
        return w.id, field, value, frag

    def edits(self):
        return getattr(self, "edits_" + self.page)()

    def edits_greedy(self):
        sel = self.view.find("selectbox", "Target(A)")
        if sel is not None:
            opts = list(sel[0].options)
            value = opts[self.rng.randrange(len(opts))]
            yield ("greedy: Target(A) select box", [(sel[0].id, "string_value", value, False)], sel[1],
                   lambda v, value=value: _req(v).get("target_predict", [None, None])[1] == value)
        b = self.view.find("button", "Root mismatch")
        if b is not None:
            def root_mismatch(v):
                r = _req(v)
                t = r.get("tree", {})
                kids = [tok for tok, par in zip(t.get("tokens", []), t.get("parents", [])) if par == 0]
                return bool(r) and r["target_predict"][0] not in kids
            yield ("greedy: quick-set button", [(b[0].id, "trigger_value", True, True)], b[1], root_mismatch)

    def edits_chain_sampling(self):
        for lab, field in (("u[0]", "coins"), ("u_final", "coin_final")):
            sl = self.view.find("slider", lab)
            if sl is not None:
                value = round(self.rng.randrange(1, 99) / 100, 2)
                yield ("chain: coin slider", [(sl[0].id, "double_array_value", [value], False)], sl[1],
                       lambda v, field=field, value=value: _close(_req(v).get(field), value))
        n = len(self.view.labels("selectbox", "slot ")) + 1  # slots, the root included
        if n < 5:
            b = self.view.find("button", "+ slot")
            if b is not None:
                yield ("chain: + slot button", [(b[0].id, "trigger_value", True, True)], b[1],
                       lambda v, n=n: len(_req(v).get("chain", ())) == n + 1)
        else:
            b = self.view.find("button", "− slot")
            if b is not None:
                yield ("chain: - slot button", [(b[0].id, "trigger_value", True, True)], b[1],
                       lambda v, n=n: len(_req(v).get("chain", ())) == n - 1)
        sel = self.view.find("selectbox", "slot 1")
        if sel is not None:
            opts = list(sel[0].options)
            value = opts[self.rng.randrange(len(opts))]
            yield ("chain: slot token select box", [(sel[0].id, "string_value", value, False)], sel[1],
                   lambda v, value=value: _req(v).get("chain", [None, None])[1] == value)
        # "Edit p and q as text" draws its text boxes only while open (a keyed box; on an older tree they are
        # always drawn and the box is no widget): open it, type + Apply, close it again, as a user does.
        box = lambda: self.view.find("expander", "Edit p and q as text")  # noqa: E731
        has_text = lambda v: v.find("text_area", "target_probs (p)") is not None  # noqa: E731
        if box() is not None and not has_text(self.view):
            yield ("chain: open the p/q text box", [(box()[0].id, "bool_value", True, False)], box()[1], has_text)
        ta, bt = self.view.find("text_area", "target_probs (p)"), self.view.find("button", "Apply the text")
        if ta is not None and bt is not None:
            rows = ta[0].default.splitlines()
            width = len(rows[0].split())
            a = round(self.rng.randrange(5, 60) / 100, 2)
            row = [a] + [round((1 - a) / (width - 1), 4)] * (width - 1)
            row[-1] = round(1 - sum(row[:-1]), 4)
            rows[0] = " ".join(f"{x:.6g}" for x in row)
            qa = self.view.find("text_area", "draft_probs (q)")  # its value as drawn: a browser sends every box's value
            q_state = [(qa[0].id, "string_value", qa[0].default, False)] if qa is not None else []
            yield ("chain: p/q text + Apply", [(ta[0].id, "string_value", "\n".join(rows), False), *q_state, (bt[0].id, "trigger_value", True, True)],
                   bt[1], lambda v, row=row: _close(_req(v).get("target_probs", [None])[0], row))
        if box() is not None and has_text(self.view):
            yield ("chain: close the p/q text box", [(box()[0].id, "bool_value", False, False)], box()[1],
                   lambda v: box() is not None and not has_text(v))

    def edits_target_only(self):
        for lab, get in (("u[0]", lambda v: _req(v).get("coins")), ("threshold_acc", lambda v: (v.scenario or {}).get("threshold_acc")),
                         ("u_final", lambda v: _req(v).get("coin_final"))):
            sl = self.view.find("slider", lab)
            if sl is not None:
                lo, hi = sl[0].min, sl[0].max
                value = round(lo + (hi - lo) * self.rng.randrange(1, 99) / 100, 2)
                yield ("target-only: slider", [(sl[0].id, "double_array_value", [value], False)], sl[1],
                       lambda v, get=get, value=value: _close(get(v), value))

    def edits_tree_builder(self):
        # (a generator: each edit looks its widgets up in the view the previous edit left)
        n = lambda: len(self.view.find("selectbox", "Selected node")[0].options)  # noqa: E731  nodes
        b = self.view.find("button", "Add child")
        if b is not None and n() < 7:
            yield ("tree: Add child button", [(b[0].id, "trigger_value", True, True)], b[1],
                   lambda v, n=n(): len(_req(v).get("tree", {}).get("parents", ())) == n + 1)
        ti, add = self.view.find("text_input", "New label"), self.view.find("button", "Add", exact=True)
        if ti is not None and add is not None:
            label = f"s{self.k}x{self.rng.randrange(10**6)}"
            yield ("tree: new label text + Add", [(ti[0].id, "string_value", label, False), (add[0].id, "trigger_value", True, True)],
                   add[1], lambda v, label=label: label in (v.scenario or {}).get("vocab", ()))
        sel = self.view.find("selectbox", "Selected node")
        if sel is not None and n() > 1:
            value = list(sel[0].options)[self.rng.randrange(1, n())]
            yield ("tree: Selected node select box", [(sel[0].id, "string_value", value, False)], sel[1],
                   lambda v, value=value: _selected(v, "selectbox", "Selected node", value))
        d = self.view.find("button", "Delete subtree")
        if d is not None and n() >= 5 and not d[0].disabled:
            yield ("tree: Delete subtree button", [(d[0].id, "trigger_value", True, True)], d[1],
                   lambda v, n=n(): 0 < len(_req(v).get("tree", {}).get("parents", ())) < n)

    def edits_dspark(self):
        for lab, field, t in (("t=1 draft", "chain", 1), ("target after t=1", "target_predict", 1)):
            sel = self.view.find("selectbox", lab)
            if sel is not None:
                opts = list(sel[0].options)
                value = opts[self.rng.randrange(len(opts))]
                yield ("dspark: select box", [(sel[0].id, "string_value", value, False)], sel[1],
                       lambda v, field=field, t=t, value=value: (_req(v).get(field) or [None] * (t + 1))[t] == value)

    async def run(self, rounds: int, start: asyncio.Event | None = None):
        uri = self.url.replace("http://", "ws://") + "/_stcore/stream"
        headers = {}
        if self.proxied:
            cookie, _ = await asyncio.to_thread(_cookie_and_worker, self.url)
            if cookie:
                headers["Cookie"] = cookie
        async with websockets.connect(uri, max_size=None, subprotocols=["streamlit"], additional_headers=headers) as ws:
            self.ws = ws
            first = await self.rerun()
            if not first.finished:
                self.results.append(("open page", TIMEOUT_S, "lost"))
                return
            if start is not None:
                await start.wait()
            for _ in range(rounds):
                for kind, sets, frag, check in self.edits():
                    if self.think:
                        await asyncio.sleep(self.rng.uniform(0, self.think))
                    trigger = None
                    for wid, field, value, is_trigger in sets:
                        if is_trigger:
                            trigger = (wid, field, value)
                        else:
                            self.states[wid] = (field, value)
                    t0 = time.perf_counter()
                    try:
                        view = await self.rerun(frag, trigger)
                    except (asyncio.TimeoutError, websockets.ConnectionClosed):
                        self.results.append((kind, TIMEOUT_S, "lost"))
                        return
                    dt = time.perf_counter() - t0
                    busy = any("busy" in e for e in view.errors)
                    outcome = ("lost" if not view.finished else "busy" if busy else "error" if view.errors
                               else "ok" if check(view) else "leak")
                    if outcome in ("error", "leak") and len(ERRORS) < 12:
                        ERRORS.append((self.page, kind, outcome, view.errors[:1]))
                    self.results.append((kind, dt, outcome))


ERRORS: list = []


def _selected(v: View, kind: str, label: str, value: str) -> bool:
    got = v.find(kind, label)
    if got is None:
        return False
    w = got[0]
    opts = list(w.options)
    shown = opts[w.default] if w.HasField("default") and 0 <= w.default < len(opts) else None
    if w.set_value and w.HasField("raw_value"):
        shown = w.raw_value
    return shown == value or (shown is None and value in opts)


def _req(v: View) -> dict:
    """Request 0 of the scenario in the answer's share link ({} when the answer set no link)."""
    sc = v.scenario
    return sc["requests"][0] if sc else {}


def _close(got, want) -> bool:
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(abs(a - b) < 1e-6 for a, b in zip(got, want))
    if isinstance(got, list):
        got = got[0] if got else None
    return got is not None and abs(got - want) < 1e-6


def _slider_is(v: View, label: str, value: float) -> bool:
    got = v.find("slider", label)
    if got is None:
        return False
    w = got[0]
    vals = list(w.value) if w.set_value else list(w.default)
    return bool(vals) and abs(vals[0] - value) < 1e-6


def _text_row(v: View, label: str, first_row: str) -> bool:
    got = v.find("text_area", label)
    return got is not None and got[0].default.splitlines()[:1] == [first_row]


def _n_options(v: View, label: str) -> int:
    got = v.find("selectbox", label)
    return len(got[0].options) if got else -1


def _has_option(v: View, label: str, value: str) -> bool:
    got = v.find("selectbox", label)
    return got is not None and value in list(got[0].options)


def kind_prefix(page: str) -> str:
    return {"tree_builder": "tree", "chain_sampling": "chain", "target_only": "target-only"}.get(page, page)


PAGES = ("tree_builder", "greedy", "chain_sampling", "target_only", "dspark")


async def solo(url: str, pids: list, rounds: int, proxied: bool, pages=PAGES) -> dict:
    """Server CPU per edit kind: one student per page, alone, every edit kind ``rounds`` times; the CPU of
    each edit is the server's CPU from its send to its verified answer (nothing else runs)."""
    per: dict = {}
    lost: list = []
    for k, page in enumerate(PAGES):
        if page not in pages:
            continue
        s = Student(url, 1000 + k, page, proxied, 0.0, random.Random(k))
        uri = url.replace("http://", "ws://") + "/_stcore/stream"
        headers = {}
        if proxied:
            cookie, _ = await asyncio.to_thread(_cookie_and_worker, url)
            headers = {"Cookie": cookie} if cookie else {}
        async with websockets.connect(uri, max_size=None, subprotocols=["streamlit"], additional_headers=headers) as ws:
            s.ws = ws
            await s.rerun()
            for _ in range(rounds):
                if lost and lost[-1].split(":")[0] == kind_prefix(page):
                    break
                for kind, sets, frag, check in s.edits():
                    trigger = None
                    for wid, field, value, is_trigger in sets:
                        if is_trigger:
                            trigger = (wid, field, value)
                        else:
                            s.states[wid] = (field, value)
                    await asyncio.sleep(0.15)  # let the server settle (websocket writes, GC)
                    c0 = cpu_seconds(pids)
                    try:
                        view = await s.rerun(frag, trigger)
                    except (asyncio.TimeoutError, websockets.ConnectionClosed):  # lost: this page's solo ends here
                        per.setdefault(kind, []).append((cpu_seconds(pids) - c0, False))
                        lost.append(kind)
                        break
                    await asyncio.sleep(0.05)
                    cpu = cpu_seconds(pids) - c0
                    ok = view.finished and not view.errors and check(view)
                    per.setdefault(kind, []).append((cpu, ok))
                    if os.environ.get("BENCH_DEBUG"):
                        print(page, kind, f"{cpu:.3f}", ok, view.errors[:1], file=sys.stderr)
    return {k: {"n": len(v), "cpu_s": statistics.mean(c for c, _ in v), "verified": sum(ok for _, ok in v)} for k, v in per.items()}


async def one_class(url: str, n: int, rounds: int, think: float, pids: list, proxied: bool) -> dict:
    start = asyncio.Event()
    students = [Student(url, k, PAGES[k % len(PAGES)], proxied, think, random.Random(k)) for k in range(n)]
    peak = [sum(rss_mb(p) for p in pids)]

    async def watch():
        while True:
            peak.append(sum(rss_mb(p) for p in pids))
            await asyncio.sleep(0.5)

    w = asyncio.create_task(watch())
    tasks = [asyncio.create_task(s.run(rounds, start)) for s in students]
    while any(s.view is None and not s.results for s in students) and not all(t.done() for t in tasks):
        await asyncio.sleep(0.2)
    c0, t0 = cpu_seconds(pids), time.monotonic()
    start.set()
    crashed = [r for r in await asyncio.gather(*tasks, return_exceptions=True) if isinstance(r, BaseException)]
    cpu, wall = cpu_seconds(pids) - c0, time.monotonic() - t0
    w.cancel()
    res = [r for s in students for r in s.results]
    ok_times = [dt for _, dt, o in res if o == "ok"]
    kinds = {}
    for kind in sorted({k for k, _, _ in res}):
        ts = sorted(dt for k, dt, o in res if k == kind and o == "ok")
        kinds[kind] = {"n": len(ts), "p50": statistics.median(ts) if ts else None, "p95": p95(ts) if ts else None,
                       "max": max(ts) if ts else None}
    count = lambda o: sum(1 for _, _, x in res if x == o)  # noqa: E731
    return {"students": n, "think": think, "edits": len(res), "ok": count("ok"), "lost": count("lost"), "errors": count("error"),
            "leaks": count("leak"), "busy": count("busy"), "crashed": len(crashed), "crash_texts": [repr(c)[:200] for c in crashed[:3]],
            "p50": statistics.median(ok_times) if ok_times else None, "p95": p95(ok_times) if ok_times else None,
            "max": max(ok_times) if ok_times else None, "server_cpu_s_per_edit": cpu / max(1, len(res)),
            "edits_per_s": len(res) / wall, "rss_mb": max(peak), "kinds": kinds, "error_samples": ERRORS[:6]}


def start_server(kind: str, workers: int, app_dir: Path):
    port = _free_port()
    env = dict(os.environ, TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"))
    env["PYTHONPATH"] = str(app_dir) + os.pathsep + env.get("PYTHONPATH", "")
    log_path = Path(f"/tmp/bench_real_class_{os.getpid()}.log")
    log = open(log_path, "w")
    if kind == "serve":
        proc = subprocess.Popen([sys.executable, "-m", "specviz", "serve", "--workers", str(workers), "--port", str(port)],
                                cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while "serving http://" not in log_path.read_text() and time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("specviz serve exited:\n" + log_path.read_text())
            time.sleep(0.3)
        text = log_path.read_text()
        pids = [int(p) for p in re.findall(r"worker w\d+: pid (\d+)", text) + re.findall(r"HAProxy \(pid (\d+)", text)]
    else:
        prof = os.environ.get("BENCH_PYSPY")  # "PY_SPY_BINARY:OUT.txt": sample the server (py-spy record, raw folded stacks)
        wrap = [prof.split(":")[0], "record", "--format", "raw", "--rate", "200", "-o", prof.split(":")[1], "--"] if prof else []
        proc = subprocess.Popen([*wrap, sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.address", "127.0.0.1", "--server.port", str(port),
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        pids = [proc.pid]
    url = f"http://127.0.0.1:{port}"
    _wait_health(url, proc)
    return proc, url, pids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, nargs="+", default=[50])
    ap.add_argument("--edits", type=int, default=2, help="rounds of every edit kind per student")
    ap.add_argument("--think", type=float, nargs="+", default=[0.0],
                    help="seconds between a student's edits: uniform 0..T (several: one class per value and size)")
    ap.add_argument("--server", choices=("app", "serve"), default="app")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--solo", type=int, default=3, help="rounds of the solo CPU phase (0: skip)")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds of quiet after the warm-up, before measuring")
    ap.add_argument("--app-dir", type=Path, default=ROOT)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--classes", nargs="+", default=None, metavar="S:T",
                    help="the classes to run, each S students with think time 0..T s (instead of every --students x --think)")
    ap.add_argument("--solo-pages", nargs="+", choices=PAGES, default=list(PAGES),
                    help="pages of the solo phase (default: all five)")
    args = ap.parse_args()
    proc, url, pids = start_server(args.server, args.workers, args.app_dir)
    proxied = args.server == "serve"
    out = {"server": args.server, "workers": args.workers if proxied else 1, "cpu": _cpu_model(), "load_start": os.getloadavg()}
    try:
        for _ in range(2 * (args.workers if proxied else 1)):  # warm every worker (imports, first runs)
            asyncio.run(one_class(url, len(PAGES), 1, 0.0, pids, proxied))
        ERRORS.clear()
        time.sleep(args.settle)  # background work after the warm-up (backend loading, comparisons) ends first
        c0 = cpu_seconds(pids)
        time.sleep(3.0)
        out["idle_cpu_s_per_s"] = (cpu_seconds(pids) - c0) / 3.0  # what the server burns with nobody editing
        print(f"server CPU while idle: {out['idle_cpu_s_per_s']:.3f} s/s", flush=True)
        if args.solo:
            load0 = os.getloadavg()
            out["solo"] = asyncio.run(solo(url, pids, args.solo, proxied, args.solo_pages))
            out["solo_load"] = [load0, os.getloadavg()]
            kinds = out["solo"]
            print("\n| edit kind (alone on the server) | edits | verified | server CPU s / edit |\n|---|---|---|---|")
            for k, v in kinds.items():
                print(f"| {k} | {v['n']} | {v['verified']} | {v['cpu_s']:.3f} |")
            print(f"| **mean over kinds** | | | **{statistics.mean(v['cpu_s'] for v in kinds.values()):.3f}** |", flush=True)
        out["classes"] = []
        classes = ([(int(c.split(":")[0]), float(c.split(":")[1])) for c in args.classes] if args.classes
                   else [(n, t) for t in args.think for n in args.students])
        for n, think in [(n, t) for n, t in classes if n > 0]:
            load0 = os.getloadavg()
            row = asyncio.run(one_class(url, n, args.edits, think, pids, proxied))
            row["load"] = [load0, os.getloadavg()]
            out["classes"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "kinds"}), flush=True)
            print("\n| edit kind (class) | ok | p50 | p95 | max |\n|---|---|---|---|---|")
            for k, v in row["kinds"].items():
                f = lambda x: "-" if x is None else f"{x:.2f} s"  # noqa: E731
                print(f"| {k} | {v['n']} | {f(v['p50'])} | {f(v['p95'])} | {f(v['max'])} |")
    finally:
        if os.environ.get("BENCH_PYSPY"):
            import signal

            proc.send_signal(signal.SIGINT)  # py-spy writes its samples on Ctrl-C, not on SIGTERM
        else:
            proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    out["load_end"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


def _cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


if __name__ == "__main__":
    main()
