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
  started again on its port;
* all workers share one cookie secret, so Streamlit's XSRF cookie stays valid on any worker.

The HAProxy config and the workers' logs go to a temporary folder (printed at start, removed at
the end). Ctrl-C or SIGTERM stops HAProxy and every worker. No proxy is written here: HAProxy
does the proxying (``apt-get install haproxy``).
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

from .errors import SpecvizError

COOKIE = "specviz_worker"  # HAProxy's affinity cookie: its value names the worker (w1, w2, ...)
WORKER_HEADER = "X-Specviz-Worker"  # set on every response by HAProxy: which worker answered
MAX_WORKERS = 64
HEALTH_TIMEOUT_S = 120.0


def find_haproxy(given: str | None = None) -> str:
    """The haproxy executable: ``given``, $SPECVIZ_HAPROXY, then PATH and /usr/sbin (Debian's)."""
    candidates = [given] if given else [os.environ.get("SPECVIZ_HAPROXY") or None, shutil.which("haproxy"),
                                        "/usr/sbin/haproxy", "/usr/local/sbin/haproxy"]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    where = f" at {given}" if given else ""
    raise SpecvizError("haproxy", f"HAProxy was not found{where}: install it (Debian/Ubuntu: sudo apt-get install "
                                  "haproxy) or pass --haproxy PATH")


def haproxy_config(address: str, port: int, workers: list[tuple[str, int]], health_interval_ms: int = 1000) -> str:
    """The HAProxy configuration: one HTTP frontend on ``address:port``, one backend of ``workers``
    (name, loopback port) with cookie affinity, websocket tunnels and health checks."""
    bind = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    lines = [
        "# Written by `specviz serve` (specviz/serve.py); removed when it stops.",
        "global",
        "    maxconn 4096",
        "    # One line per request and per websocket, into haproxy.log beside this file.",
        "    log stdout format raw local0 info",
        "",
        "defaults",
        "    mode http",
        "    log global",
        "    option httplog",
        "    option dontlognull",
        "    option http-server-close",
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout http-request 15s",
        "    timeout http-keep-alive 15s",
        "    timeout queue 30s",
        "    # An open websocket (a student's tab) may stay silent for an hour.",
        "    timeout tunnel 1h",
        "    timeout client-fin 10s",
        "    # A worker that refuses the connection (killed, restarting): try again, on another worker.",
        "    retries 3",
        "    option redispatch 1",
        "",
        "frontend specviz",
        f"    bind {bind}",
        "    default_backend workers",
        "",
        "backend workers",
        "    # A student is placed once, by the first request without a cookie; take turns. (leastconn",
        "    # placed 41 of a class of 50 on one worker: a class arrives at once, and the busier worker's",
        "    # slower answers kept its connection count up, so the other one got nearly everyone.)",
        "    balance roundrobin",
        f"    cookie {COOKIE} insert indirect nocache httponly attr SameSite=Lax",
        "    option httpchk",
        "    http-check send meth GET uri /_stcore/health",
        "    http-check expect status 200",
        f"    http-response set-header {WORKER_HEADER} %[srv_name]",
        f"    default-server check inter {health_interval_ms} fall 2 rise 2",
    ]
    lines += [f"    server {name} 127.0.0.1:{p} cookie {name}" for name, p in workers]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_taken(address: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return True
    return False


def _die_with_parent() -> None:
    """In a child, before exec: get SIGTERM when ``specviz serve`` dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001  not Linux: the signal handlers below still stop the children
        pass


@dataclass
class Worker:
    name: str
    port: int
    log: Path
    proc: subprocess.Popen | None = None
    starts: list[float] = field(default_factory=list)


class Serve:
    def __init__(self, workers: int, address: str, port: int, haproxy: str, extra: list[str], out=sys.stderr, *, command):
        self.address, self.port, self.haproxy, self.extra, self.out = address, port, haproxy, extra, out
        self.command = command  # extra flags -> the app's command line (cli.app_command; passed in: cli imports serve)
        self.dir = Path(tempfile.mkdtemp(prefix="specviz-serve-"))
        self.secret = secrets.token_hex(32)
        self.workers = [Worker(f"w{i + 1}", _free_port(), self.dir / f"w{i + 1}.log") for i in range(workers)]
        self.haproxy_proc: subprocess.Popen | None = None
        self.stopping = False

    def say(self, text: str) -> None:
        print(f"specviz serve: {text}", file=self.out, flush=True)

    def _start_worker(self, w: Worker) -> None:
        cmd = self.command(["--server.address", "127.0.0.1", "--server.port", str(w.port), *self.extra])
        assert cmd[1:3] == ["-m", "specviz.ui.worker"]  # Streamlit, warmed up before it answers
        # (Streamlit takes the cookie secret only from its config or the environment, never a flag.)
        env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", STREAMLIT_SERVER_COOKIE_SECRET=self.secret)
        with open(w.log, "a") as log:
            w.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      start_new_session=True, preexec_fn=_die_with_parent)
        w.starts.append(time.monotonic())
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
        if _port_taken(self.address, self.port):
            raise SpecvizError("port", f"{self.address}:{self.port} is already in use: choose another --port")
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
                if w.proc.poll() is not None and not self.stopping:
                    recent = [t for t in w.starts if time.monotonic() - t < 60]
                    if len(recent) >= 5:
                        self.say(f"worker {w.name} exited 5 times within a minute (log {w.log}); stopping")
                        return 1
                    self.say(f"worker {w.name} exited with code {w.proc.returncode}; its students reconnect to "
                             "another worker; starting it again")
                    self._start_worker(w)
            time.sleep(0.25)
        return 0

    def stop(self) -> None:
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


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def serve(workers: int, address: str, port: int, haproxy: str | None = None, extra: list[str] | None = None, *,
          command) -> int:
    """Run until Ctrl-C / SIGTERM; returns the exit code. ``command(extra)``: a worker's command line
    (``specviz.cli.app_command``, handed in so that serve never imports cli back)."""
    if not 1 <= workers <= MAX_WORKERS:
        raise SpecvizError("--workers", f"must be between 1 and {MAX_WORKERS}, got {workers}")
    if not 1 <= port <= 65535:
        raise SpecvizError("--port", f"must be between 1 and 65535, got {port}")
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
