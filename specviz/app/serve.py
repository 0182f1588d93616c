"""``specviz serve``: N Streamlit worker processes behind HAProxy, on one address.

One Streamlit server runs every student's script in one Python process (one interpreter lock):
on a machine with several cores, one server uses one of them. ``specviz serve --workers N``
starts N ordinary ``specviz app`` servers on loopback ports and Debian's HAProxy in front of
them, on the address students open:

* **session affinity**: HAProxy inserts a cookie (``specviz_worker``) naming the worker that
  served a browser's first request; the page's assets and its websocket then go to that worker
  for the whole session (a Streamlit session lives in one server's memory);
* **websockets**: ``timeout tunnel`` keeps an open websocket for an hour of silence;
* **health checks** on ``/_stcore/health``; a worker that is down (killed, crashed, restarting)
  gets no new student, and a student whose worker died is sent to another one
  (``option redispatch``): the browser reconnects, and the page rebuilds its scenario from the
  share link that every page keeps in the address bar (``?s=...``). A worker that exits is
  started again on its port; one that keeps exiting is started again after a back-off that
  doubles with each exit in a row (capped), while HAProxy and the other workers keep serving and
  its port answers 503 with the reason (see ``backoff_delay``);
* all workers share one cookie secret, so Streamlit's XSRF cookie stays valid on any worker.

The HAProxy config and the workers' logs go to a temporary folder (printed at start, removed at
the end). Ctrl-C or SIGTERM stops HAProxy and every worker. No proxy is written here: HAProxy
does the proxying (``apt-get install haproxy``); its configuration and the address check are in
``specviz.app.haproxy``, and this module is the supervisor (workers, restarts, back-off, shutdown).
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from specviz.base.errors import SpecvizError
from specviz.app.haproxy import check_address, find_haproxy, haproxy_config

MAX_WORKERS = 64
HEALTH_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """In a child, before exec: get SIGTERM when ``specviz serve`` dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001  not Linux: the signal handlers below still stop the children
        pass


# A worker that exits is started again; one that keeps exiting (a crash loop, a student's input that
# kills it, a machine out of memory) is started again after a back-off that doubles with each exit in
# a row, from BACKOFF_BASE_S up to BACKOFF_CAP_S, while HAProxy and the other workers keep serving (its
# students are redispatched to them). The run of exits ends when a worker has stayed up STABLE_S.
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 60.0
STABLE_S = 60.0
# A clean exit (code 0) is a deliberate stop, not a crash (Streamlit exits 0 when it is sent SIGTERM or
# SIGINT, e.g. an operator restarting one worker): it is started again at once and does not lengthen the
# back-off. But a worker that exits 0 within CLEAN_MIN_UP_S of its start is flapping whatever its code,
# and is counted as a crash (otherwise a worker that exits 0 at once would be restarted in a busy loop).
CLEAN_MIN_UP_S = 10.0


def backoff_delay(exits_in_a_row: int, base: float = BACKOFF_BASE_S, cap: float = BACKOFF_CAP_S) -> float:
    """Seconds to wait before starting a worker again after its ``exits_in_a_row``-th exit in a row:
    the first is restarted at once (one crash: its students fail over, nothing to wait for), then
    base, 2 base, 4 base, ... up to ``cap``."""
    if exits_in_a_row <= 1:
        return 0.0
    return min(cap, base * 2.0 ** min(exits_in_a_row - 2, 60))


class _BackingOff:
    """While a worker backs off, its loopback port answers every request (its /_stcore/health too)
    with 503 and one line saying why and until when: HAProxy keeps it marked down, and an operator
    who asks that worker's health gets the reason instead of a refused connection. Only that worker's
    port: HAProxy's own address and the other workers answer as before."""

    def __init__(self, port: int, message: str):
        import http.server
        import threading

        body = (message + "\n").encode("utf-8")

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  (http.server's name)
                self.send_response(503)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Retry-After", "5")
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET  # noqa: N815

            def log_message(self, *args):  # no line per health check on serve's stderr
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@dataclass
class Worker:
    name: str
    port: int
    log: Path
    proc: subprocess.Popen | None = None
    starts: list[float] = field(default_factory=list)
    exits_in_a_row: int = 0  # crashes (and quick clean exits) since it last stayed up STABLE_S
    restart_at: float | None = None  # backing off: start it again at this time.monotonic()
    placeholder: _BackingOff | None = None


class Serve:
    def __init__(self, workers: int, address: str, port: int, haproxy: str, extra: list[str], out=sys.stderr, *, command):
        self.address, self.port, self.haproxy, self.extra, self.out = address, port, haproxy, extra, out
        self.backoff_base, self.backoff_cap = _backoff_from_env()  # (before anything is made: bad input, exit 2)
        self.command = command  # extra flags -> the app's command line (cli.app_command; passed in: cli imports serve)
        self.dir = Path(tempfile.mkdtemp(prefix="specviz-serve-"))
        # One secret for every worker (XSRF cookies stay valid across a failover); from the environment when the
        # operator shares one across machines or pods (deploy/kubernetes.yaml: a Secret), else a fresh one.
        self.secret = os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET") or secrets.token_hex(32)
        self.workers = [Worker(f"w{i + 1}", _free_port(), self.dir / f"w{i + 1}.log") for i in range(workers)]
        self.haproxy_proc: subprocess.Popen | None = None
        self.stopping = False

    def say(self, text: str) -> None:
        print(f"specviz serve: {text}", file=self.out, flush=True)

    def worker_env(self) -> dict:
        """Every worker's environment: one cookie secret (Streamlit takes it only from its config or the
        environment, never a flag) and one lock directory for the machine-wide heavy-work slots (ui.heavy)."""
        from specviz.base.limits import MALLOC_ENV  # fewer malloc arenas: freed memory reused, not held (issue 35 item 3)

        env = dict(MALLOC_ENV)
        env.update(os.environ)
        env.update(STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", STREAMLIT_SERVER_COOKIE_SECRET=self.secret,
                   SPECVIZ_HEAVY_DIR=str(self.dir))
        return env

    def _start_worker(self, w: Worker) -> None:
        cmd = self.command(["--server.address", "127.0.0.1", "--server.port", str(w.port), *self.extra])
        assert cmd[1:3] == ["-m", "specviz.app.ui.worker"]  # Streamlit, warmed up before it answers
        env = self.worker_env()
        with open(w.log, "a") as log:
            w.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      start_new_session=True, preexec_fn=_die_with_parent)
        w.starts = [*w.starts[-9:], time.monotonic()]
        self.say(f"worker {w.name}: pid {w.proc.pid} on 127.0.0.1:{w.port} (log {w.log})")

    def _wait_healthy(self, w: Worker, timeout: float = HEALTH_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping:
            if w.proc.poll() is not None:
                tail = w.log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
                raise SpecvizError("workers", f"worker {w.name} exited with code {w.proc.returncode} before it was "
                                              f"healthy: {tail[0]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{w.port}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        if not self.stopping:
            raise SpecvizError("workers", f"worker {w.name} was not healthy within {timeout:.0f} s (log {w.log})")

    def _start_haproxy(self) -> None:
        cfg = self.dir / "haproxy.cfg"
        cfg.write_text(haproxy_config(self.address, self.port, [(w.name, w.port) for w in self.workers]))
        check = subprocess.run([self.haproxy, "-c", "-q", "-f", str(cfg)], capture_output=True, text=True)
        if check.returncode != 0:
            raise SpecvizError("haproxy", f"HAProxy refused the config {cfg}: {_last_line(check.stderr + check.stdout)}")
        log = open(self.dir / "haproxy.log", "w")
        self.haproxy_proc = subprocess.Popen([self.haproxy, "-db", "-f", str(cfg)], stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                             preexec_fn=_die_with_parent)
        log.close()
        # Ready when its frontend accepts a connection (it exits at once when it cannot bind).
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.address, self.address)
        deadline = time.monotonic() + 30
        while True:
            if self.haproxy_proc.poll() is not None:
                text = (self.dir / "haproxy.log").read_text(errors="replace")
                raise SpecvizError("port", f"HAProxy could not listen on {self.address}:{self.port}: {_last_line(text)}")
            try:
                socket.create_connection((host, self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise SpecvizError("haproxy", f"HAProxy did not accept connections within 30 s (log {self.dir / 'haproxy.log'})")
                time.sleep(0.1)

    def run(self) -> int:
        for w in self.workers:
            self._start_worker(w)
        for w in self.workers:
            self._wait_healthy(w)
        if self.stopping:
            return 0
        self._start_haproxy()
        host = "localhost" if self.address in ("0.0.0.0", "::") else self.address
        self.say(f"serving http://{host}:{self.port} with {len(self.workers)} workers behind HAProxy "
                 f"(pid {self.haproxy_proc.pid}, config {self.dir / 'haproxy.cfg'}); Ctrl-C stops everything")
        while not self.stopping:
            if self.haproxy_proc.poll() is not None:
                self.say(f"HAProxy exited with code {self.haproxy_proc.returncode} (log {self.dir / 'haproxy.log'}); "
                         "stopping the workers")
                return 1
            for w in self.workers:
                if not self.stopping:
                    self._supervise(w)
            time.sleep(0.25)
        return 0

    def _supervise(self, w: Worker) -> None:
        """Start again a worker that exited: at once after one exit, after a growing back-off when it
        keeps exiting (it never stops the others: HAProxy sends its students to them meanwhile)."""
        now = time.monotonic()
        if w.restart_at is not None:
            if now >= w.restart_at:
                self._end_backoff(w)
                self.say(f"worker {w.name}: back-off over; starting it again")
                self._start_worker(w)
            return
        if w.proc is None or w.proc.poll() is None:
            return
        code = w.proc.returncode
        up = now - (w.starts[-1] if w.starts else now)
        if up >= STABLE_S:
            w.exits_in_a_row = 0  # it had stayed up: this exit starts a new run
        how = "exited cleanly (code 0)" if code == 0 else (f"exited (killed by signal {-code})" if code < 0
                                                             else f"exited with code {code}")
        if code == 0 and up >= CLEAN_MIN_UP_S:
            self.say(f"worker {w.name} {how} after {up:.0f} s; its students reconnect to another worker; "
                     "starting it again (a clean exit is not counted as a crash)")
            self._start_worker(w)
            return
        w.exits_in_a_row += 1
        delay = backoff_delay(w.exits_in_a_row, self.backoff_base, self.backoff_cap)
        if delay <= 0:
            self.say(f"worker {w.name} {how} after {up:.1f} s; its students reconnect to another worker; "
                     "starting it again")
            self._start_worker(w)
            return
        w.restart_at = now + delay
        message = (f"worker {w.name} is backing off: it {how} {w.exits_in_a_row} times in a row (the last after "
                   f"{up:.1f} s up); next start in {delay:g} s (log {w.log}); the other workers keep serving")
        w.proc = None
        try:  # (before the log line: whoever reads the line finds the port answering)
            w.placeholder = _BackingOff(w.port, message)
        except OSError as exc:  # its port taken meanwhile: HAProxy sees a refused connection instead
            self.say(f"worker {w.name}: cannot answer its health checks while backing off ({exc})")
        self.say(message)

    def _end_backoff(self, w: Worker) -> None:
        w.restart_at = None
        if w.placeholder is not None:
            w.placeholder.close()
            w.placeholder = None

    def stop(self) -> None:
        for w in self.workers:
            self._end_backoff(w)
        procs = [p for p in [self.haproxy_proc, *(w.proc for w in self.workers)] if p is not None]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _backoff_from_env() -> tuple[float, float]:
    """(base, cap) of the back-off: BACKOFF_BASE_S / BACKOFF_CAP_S, or $SPECVIZ_SERVE_BACKOFF="BASE,CAP"
    in seconds (tests scale it down; an operator may lengthen it)."""
    given = os.environ.get("SPECVIZ_SERVE_BACKOFF", "").strip()
    if not given:
        return BACKOFF_BASE_S, BACKOFF_CAP_S
    try:
        base, cap = (float(x) for x in given.split(","))
        if not (0 < base <= cap <= 3600):
            raise ValueError
    except ValueError:
        raise SpecvizError("SPECVIZ_SERVE_BACKOFF", f"{ascii(given)} is not BASE,CAP in seconds with "
                                                    "0 < BASE <= CAP <= 3600, e.g. 1,60") from None
    return base, cap


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def serve(workers: int, address: str, port: int, haproxy: str | None = None, extra: list[str] | None = None, *,
          command) -> int:
    """Run until Ctrl-C / SIGTERM; returns the exit code. ``command(extra)``: a worker's command line
    (``specviz.app.cli.app_command``, handed in so that serve never imports cli back)."""
    if not 1 <= workers <= MAX_WORKERS:
        raise SpecvizError("--workers", f"must be between 1 and {MAX_WORKERS}, got {workers}")
    if not 1 <= port <= 65535:
        raise SpecvizError("--port", f"must be between 1 and 65535, got {port}")
    check_address(address, port)  # before anything starts: one line naming what is wrong, exit 2
    exe = find_haproxy(haproxy)  # before anything starts: a missing HAProxy is one line and exit 2
    srv = Serve(workers, address, port, exe, list(extra or []), command=command)

    def on_signal(signum, frame):
        srv.stopping = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = srv.run()
        if srv.stopping:
            srv.say("stopping HAProxy and the workers")
        return code
    finally:
        srv.stop()
        for s, h in old.items():
            signal.signal(s, h)
