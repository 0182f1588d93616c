"""``specviz serve``: real HAProxy (Debian's package) in front of 2 real Streamlit workers on loopback.

One test, in phases, against one ``specviz serve --workers 2`` (starting it is the expensive part;
pytest-xdist would start one per worker if the phases were separate tests):

1. a session stays on one worker across 20 reruns (4 websocket connections carrying the
   affinity cookie, 5 reruns each, through the proxy), and every rerun shows its own edit;
2. students without a cookie are spread over both workers;
3. a real browser (chromium) edits the greedy page, then its worker is killed (SIGKILL): the tab
   reconnects through the proxy to the other worker and shows the same scenario, rebuilt from the
   share link in its address bar; no traceback; the next edit there is applied; ``serve`` starts the
   killed worker again;
3b. that restarted worker flaps (killed 6 times, each time just after it starts): it is backed off with
   growing waits while the other worker and HAProxy answer every health check (``_flapping_phase``);
4. SIGTERM stops HAProxy and every worker (the restarted one too) and removes the temporary folder.

And: without HAProxy, ``specviz serve`` says so in one line and exits 2, starting nothing.
"""
from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from specviz.app.haproxy import COOKIE, WORKER_HEADER, find_haproxy, haproxy_config
from tests.conftest import _free_port, wait_for_app
from tests.support.st_protocol import tab

ROOT = Path(__file__).resolve().parents[1]
NCD_RE = re.compile(r"num_correct_drafts = (\d+)`")
EXPECT = {"B": 1, "C": 2}  # num_correct_drafts on the running example's greedy page for Target(A) = B / C


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                TRITON_INTERPRET=os.environ.get("TRITON_INTERPRET", "1"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def test_missing_haproxy_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "specviz", "serve", "--workers", "2", "--port", str(_free_port()),
                           "--haproxy", str(tmp_path / "no-haproxy")], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "HAProxy was not found" in lines[0] and "apt-get install haproxy" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "worker" not in proc.stderr  # nothing was started


def test_config_has_affinity_websockets_and_health_checks():
    cfg = haproxy_config("0.0.0.0", 8501, [("w1", 40001), ("w2", 40002)])
    assert "bind 0.0.0.0:8501" in cfg
    assert f"cookie {COOKIE} insert" in cfg and "timeout tunnel 1h" in cfg and "option redispatch" in cfg
    assert "http-check send meth GET uri /_stcore/health" in cfg
    assert "server w1 127.0.0.1:40001 cookie w1" in cfg and "server w2 127.0.0.1:40002 cookie w2" in cfg


# ----------------------------------------------------------------------------------------------
# A websocket student speaking Streamlit's protocol (as benchmarks/bench_class.py does)
# ----------------------------------------------------------------------------------------------

async def _rerun(t, widgets: dict) -> dict:
    """One rerun of the greedy page in tab ``t``: the last error, the Target(A) box's id, num_correct_drafts shown."""
    seen = {"ncd": None, "target_a": None, "error": None}
    for el, _ in (await t.rerun("greedy", widgets=widgets)).elements():
        which = el.WhichOneof("type")
        if which == "exception" or (which == "alert" and el.alert.format == el.alert.ERROR):
            seen["error"] = str(el)[:300]
        if which == "selectbox" and el.selectbox.label.startswith("Target(A)"):
            seen["target_a"] = el.selectbox.id
        if which == "markdown":
            m = NCD_RE.search(el.markdown.body)
            if m:
                seen["ncd"] = int(m.group(1))
    return seen


async def _sticky_session(base: str, cookie: str, connections: int, reruns: int) -> list[tuple[str, int, int]]:
    """(worker, expected, shown) per rerun: ``connections`` websockets, each ``reruns`` edits of Target(A)."""
    out = []
    for c in range(connections):
        async with tab(base, headers={"Cookie": f"{COOKIE}={cookie}"}) as t:
            worker = t.ws.response.headers.get(WORKER_HEADER)
            first = await _rerun(t, {})
            assert first["error"] is None and first["target_a"], first
            for k in range(reruns):
                value = "BC"[(c + k) % 2]
                seen = await _rerun(t, {first["target_a"]: value})
                assert seen["error"] is None, seen["error"]
                out.append((worker, EXPECT[value], seen["ncd"]))
    return out


def _get_worker(base: str, cookie: str | None = None) -> tuple[str, str | None]:
    """(worker that answered GET /, the affinity cookie it set or None)."""
    req = urllib.request.Request(base + "/", headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        set_cookie = [v for k, v in resp.headers.items() if k.lower() == "set-cookie" and v.startswith(COOKIE + "=")]
        value = set_cookie[0].split(";")[0].split("=", 1)[1] if set_cookie else None
        return resp.headers[WORKER_HEADER], value


def _haproxy_log(cfg: str, n: int = 25) -> str:
    """The end of HAProxy's log (one line per request, beside its config), for a failure message."""
    try:
        return "\n".join((Path(cfg).parent / "haproxy.log").read_text(errors="replace").splitlines()[-n:])
    except OSError as exc:
        return str(exc)


class Served:
    """``python -m specviz serve --workers 2`` with its stderr read line by line."""

    def __init__(self, tmp: Path, env: dict | None = None):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "specviz", "serve", "--workers", "2", "--port", str(self.port)],
                                     cwd=tmp, env=dict(_env(), **(env or {})), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())

    def wait_for(self, pattern: str, timeout: float = 120.0, start: int = 0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[start:]:
                m = re.search(pattern, line)
                if m:
                    return m
            assert self.proc.poll() is None, "specviz serve exited:\n" + "\n".join(self.lines)
            time.sleep(0.1)
        raise AssertionError(f"no line matching {pattern!r} within {timeout:.0f} s:\n" + "\n".join(self.lines))

    def pids(self) -> dict[str, int]:
        """The latest pid of each worker, and of HAProxy (key "haproxy")."""
        out = {}
        for line in self.lines:
            m = re.search(r"worker (w\d+): pid (\d+)", line)
            if m:
                out[m.group(1)] = int(m.group(2))
            m = re.search(r"HAProxy \(pid (\d+), config (\S+?)\)", line)
            if m:
                out["haproxy"] = int(m.group(1))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _pick(page, label_re: str, option: str) -> None:
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=re.compile(label_re)).first
    box.scroll_into_view_if_needed()
    box.locator('input[role="combobox"]').click()
    page.get_by_role("option", name=option, exact=True).click()


def _ncd_shown(page) -> int | None:
    m = re.search(r"num_correct_drafts = (\d+)", page.locator('[data-testid="stMain"]').inner_text())
    return int(m.group(1)) if m else None


def test_serve_two_workers_behind_haproxy(tmp_path, page):
    try:
        find_haproxy()
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{exc} (the README's test command and .ci/run install it)")
    base, cap = BACKOFF
    served = Served(tmp_path, env={"SPECVIZ_SERVE_BACKOFF": f"{base},{cap}"})
    try:
        served.wait_for(r"serving http://")
        pids = served.pids()
        assert set(pids) == {"w1", "w2", "haproxy"}, served.lines
        cfg = re.search(r"config (\S+?)\)", "\n".join(served.lines)).group(1)
        assert Path(cfg).is_file()

        # 1. One student (one cookie): 20 reruns over 4 websocket connections, all on one worker.
        worker, cookie = _get_worker(served.base)
        assert cookie == worker
        box: dict = {}  # (in a thread: Playwright's sync API holds this thread's event loop)
        th = threading.Thread(target=lambda: box.update(runs=asyncio.run(_sticky_session(served.base, cookie, 4, 5))))
        th.start()
        th.join(timeout=120)
        runs = box.get("runs", [])
        assert len(runs) == 20
        assert {w for w, _, _ in runs} == {worker}, runs
        assert [shown for _, _, shown in runs] == [want for _, want, _ in runs], runs

        # 2. Students without a cookie are spread over both workers.
        assert {_get_worker(served.base)[0] for _ in range(6)} == {"w1", "w2"}

        # 3. A browser tab, its worker killed: it reconnects to the other one with its scenario.
        page.goto(f"{served.base}/greedy", wait_until="domcontentloaded")
        wait_for_app(page)
        _pick(page, r"Target\(A\)", "B")  # the running example's default is C (2 drafts accepted)
        page.wait_for_function("() => /num_correct_drafts = 1/.test(document.body.innerText)", timeout=30_000)
        wait_for_app(page)
        link = page.evaluate("location.search")
        (mine,) = [c["value"] for c in page.context.cookies() if c["name"] == COOKIE]
        other = {"w1": "w2", "w2": "w1"}[mine]
        n_lines = len(served.lines)
        os.kill(served.pids()[mine], signal.SIGKILL)
        served.wait_for(rf"worker {mine} exited", timeout=30, start=n_lines)
        # The tab notices, reconnects through HAProxy (redispatched to the live worker), reruns
        # with the link in its address bar, and gets its cookie rewritten to that worker.
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            now = [c["value"] for c in page.context.cookies() if c["name"] == COOKIE]
            if now == [other]:
                break
            page.wait_for_timeout(200)
        assert [c["value"] for c in page.context.cookies() if c["name"] == COOKIE] == [other], _haproxy_log(cfg)
        wait_for_app(page)
        # B again (the default would show 2): rebuilt from the link, on a worker that never saw this tab.
        page.wait_for_function("() => /num_correct_drafts = 1/.test(document.body.innerText)", timeout=30_000)
        assert page.evaluate("location.search") == link and _ncd_shown(page) == 1
        body = page.locator("body").inner_text()
        assert "Traceback" not in body and page.locator('[data-testid="stException"]').count() == 0, body[:2000]
        # The first edit on the new worker: the tab sends it as the new session's first request (it
        # believes it resumed its old one); specviz.app.runtime.failover draws the page from the link first, then
        # applies the edit. It was dropped in 3 runs of 3 before.
        _pick(page, r"Target\(A\)", "C")
        page.wait_for_function("() => /num_correct_drafts = 2/.test(document.body.innerText)", timeout=30_000)
        wait_for_app(page)
        assert _ncd_shown(page) == 2 and page.evaluate("location.search") != link
        assert [c["value"] for c in page.context.cookies() if c["name"] == COOKIE] == [other]
        served.wait_for(rf"worker {mine}: pid (\d+)", timeout=5, start=n_lines)  # started again
        page.close()

        # 3b. The restarted worker flaps; the other one (and so the class) stays served throughout.
        _flapping_phase(served, victim=mine, keeper=other)

        # 4. SIGTERM stops HAProxy and every worker, the restarted one too, and cleans up.
        everything = served.pids()
        served.stop()
        assert served.proc.returncode == 0, served.lines
        time.sleep(0.5)
        assert not [name for name, pid in everything.items() if _alive(pid)], served.lines
        assert not Path(cfg).exists()
    finally:
        served.stop()


# ----------------------------------------------------------------------------------------------
# A flapping worker (issue 35 item 1): backed off, never the class (phase 3b of the serve test)
# ----------------------------------------------------------------------------------------------

def _health(url: str) -> tuple[object, str]:
    """(status code, or the name of the connection error; body) of one GET."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError as exc:
        return type(getattr(exc, "reason", exc)).__name__, ""


BACKOFF = (0.5, 1.5)  # SPECVIZ_SERVE_BACKOFF (base, cap) in seconds of the serve test


def _flapping_phase(served: Served, victim: str, keeper: str) -> None:
    """Issue 35 item 1, a flapping worker: backed off, never the class. ``victim`` is killed (SIGKILL) 6
    times, each time 0.3 s after it was started again (the issue killed a worker 6 times, 2.3 s apart, and
    `serve` then stopped HAProxy and the other worker too). Meanwhile ``keeper``'s own health check and
    HAProxy's are polled every 0.1 s: every answer is 200 (0 refused); the victim's port says it is backing
    off (503) while it waits; the waits grow; and the victim serves again after its back-off. The back-off
    is scaled down (BACKOFF: 0.5 s doubling, 1.5 s cap).

    A phase of the serve test rather than a test of its own since CI time was cut: its own `specviz serve`
    (HAProxy and 2 workers importing torch) cost ~15 CPU-s and ~15 s more, and the kills then waited
    0 + 0.5 + 1 + 2 + 3 + 3 s (a 3 s cap) instead of up to 1.5 s each. Nothing it asserted was dropped."""
    import collections

    base, cap = BACKOFF
    ports = {m.group(1): int(m.group(2)) for m in
             (re.search(r"worker (w\d+): pid \d+ on 127\.0\.0\.1:(\d+)", ln) for ln in served.lines) if m}
    tally = {keeper: collections.Counter(), "haproxy": collections.Counter()}
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            tally[keeper][_health(f"http://127.0.0.1:{ports[keeper]}/_stcore/health")[0]] += 1
            tally["haproxy"][_health(served.base + "/_stcore/health")[0]] += 1
            time.sleep(0.1)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        killed: set[int] = set()
        waits, backing_off_answers = [], []
        for _ in range(6):  # more than the 5 crashes a minute after which the old serve stopped everything
            n_lines = len(served.lines)
            deadline = time.monotonic() + 60
            while served.pids()[victim] in killed:
                assert time.monotonic() < deadline and served.proc.poll() is None, "\n".join(served.lines)
                time.sleep(0.05)
            pid = served.pids()[victim]
            time.sleep(0.3)
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
            line = served.wait_for(rf"worker {victim} (was killed|exited|is backing off).*", timeout=30,
                                   start=n_lines).group(0)
            m = re.search(r"next start in ([0-9.]+) s", line)
            if m:
                waits.append(float(m.group(1)))
                status, body = _health(f"http://127.0.0.1:{ports[victim]}/_stcore/health")
                backing_off_answers.append((status, "backing off" in body))
        # It comes back after its back-off: healthy on its port, and HAProxy sends its cookie to it again.
        served.wait_for(rf"worker {victim}: back-off over", timeout=30)
        deadline = time.monotonic() + 120
        while _health(f"http://127.0.0.1:{ports[victim]}/_stcore/health")[0] != 200:
            assert time.monotonic() < deadline, f"{victim} never came back:\n" + "\n".join(served.lines)
            time.sleep(0.2)
        while _get_worker(served.base, victim)[0] != victim:
            assert time.monotonic() < deadline, f"HAProxy never sent {victim}'s students back to it"
            time.sleep(0.5)
    finally:
        stop.set()
        poller.join(timeout=20)
    assert served.proc.poll() is None and not any("stopping" in ln for ln in served.lines), served.lines
    # The healthy part of the class was served throughout: not one refused or failed health check.
    assert set(tally[keeper]) == {200} and tally[keeper][200] >= 50, tally
    assert set(tally["haproxy"]) == {200}, tally
    assert waits == sorted(waits) and waits[0] < waits[-1] == cap, (waits, served.lines)  # grows to the cap
    assert backing_off_answers and all(a == (503, True) for a in backing_off_answers), backing_off_answers


class _Exited:
    def __init__(self, code: int):
        self.returncode, self.pid = code, 0

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        return self.returncode


def test_backoff_policy_and_clean_exits(monkeypatch):
    """The supervisor's decisions, without processes: a crash restarts at once, crashes in a row back
    off (doubling, capped), a clean exit (code 0) after CLEAN_MIN_UP_S restarts at once without counting,
    a clean exit right after a start counts as a crash, and staying up STABLE_S ends the run."""
    from specviz.app import serve as sv

    assert [sv.backoff_delay(n) for n in range(1, 10)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    from specviz.app.cli import app_command

    srv = sv.Serve(1, "127.0.0.1", _free_port(), "/bin/true", [], out=open(os.devnull, "w"), command=app_command)
    started = []
    monkeypatch.setattr(srv, "_start_worker", lambda w: (started.append(w.name), w.starts.append(clock[0])))
    monkeypatch.setattr(sv, "_BackingOff", lambda port, message: None)
    clock = [1000.0]
    monkeypatch.setattr(sv.time, "monotonic", lambda: clock[0])
    (w,) = srv.workers
    try:
        def exit_after(up: float, code: int):
            w.starts.append(clock[0])
            clock[0] += up
            w.proc = _Exited(code)
            srv._supervise(w)

        exit_after(2, -9)  # one crash: restarted at once
        assert started == ["w1"] and w.restart_at is None and w.exits_in_a_row == 1
        exit_after(2, -9)  # the second in a row: 1 s of back-off
        assert started == ["w1"] and w.restart_at == clock[0] + 1 and w.proc is None
        clock[0] += 1
        srv._supervise(w)
        assert started == ["w1", "w1"] and w.restart_at is None
        exit_after(sv.CLEAN_MIN_UP_S + 5, 0)  # clean, after a while up: at once, not counted
        assert started[-1] == "w1" and len(started) == 3 and w.exits_in_a_row == 2 and w.restart_at is None
        exit_after(0.5, 0)  # clean but at once: flapping, counted (third in a row: 2 s)
        assert w.exits_in_a_row == 3 and w.restart_at == clock[0] + 2
        clock[0] += 2
        srv._supervise(w)
        exit_after(sv.STABLE_S + 1, 1)  # it had stayed up: a new run, restarted at once
        assert w.exits_in_a_row == 1 and w.restart_at is None and len(started) == 5
    finally:
        srv.stop()
