"""HAProxy in front of ``specviz serve``'s workers: finding the executable, checking the address it
will listen on (one line naming the field, exit 2, before anything starts), and its configuration
(cookie affinity, websocket tunnels, health checks, redispatch). ``specviz.app.serve`` supervises the
workers and runs HAProxy with this configuration.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import socket

from specviz.base.errors import SpecvizError

COOKIE = "specviz_worker"  # HAProxy's affinity cookie: its value names the worker (w1, w2, ...)
WORKER_HEADER = "X-Specviz-Worker"  # set on every response by HAProxy: which worker answered


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
        "# Written by `specviz serve` (specviz/app/haproxy.py); removed when it stops.",
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
        "    # ... and so is a 503 from a worker that is backing off (specviz serve answers its port with 503",
        "    # until it starts it again), in the second or two before the health checks mark it down.",
        "    retry-on conn-failure empty-response 503",
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


# A host name or an IPv4/IPv6 address: letters, digits and . - _ : % (an IPv6 zone), nothing else (no
# space, no newline: the address is written into HAProxy's config, one directive per line).
_ADDRESS_RE = re.compile(r"[A-Za-z0-9._:%-]{1,253}")


def check_address(address: str, port: int) -> None:
    """Refuse an --address that HAProxy could not listen on, saying what is wrong with it (exit 2):
    empty, not a host name or address, unresolvable, not an address of this machine, or the port taken."""
    shown = ascii(address)  # one line, whatever was given
    if address == "":
        raise SpecvizError("--address", "is empty; give 127.0.0.1 (this machine only) or, to listen on every "
                                        "interface, say so explicitly: --address 0.0.0.0 (or :: for IPv6)")
    if not _ADDRESS_RE.fullmatch(address):
        raise SpecvizError("--address", f"{shown} is not a host name or an IP address (allowed: letters, digits "
                                        "and . - _ : %); e.g. 127.0.0.1 or 0.0.0.0")
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise SpecvizError("--address", f"{shown} cannot be resolved ({exc}); give an IP address of this "
                                        "machine, e.g. 127.0.0.1 or 0.0.0.0") from None
    family, _, _, _, sockaddr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise SpecvizError("--port", f"{address}:{port} is already in use: choose another --port") from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise SpecvizError("--address", f"{shown} is not an address of this machine ({exc.strerror}); "
                                                "e.g. 127.0.0.1 or 0.0.0.0") from None
            if exc.errno == errno.EACCES:
                raise SpecvizError("--port", f"{address}:{port}: permission denied (ports below 1024 need "
                                             "privileges): choose a port from 1024 up") from None
            raise SpecvizError("--address", f"cannot listen on {shown} port {port}: {exc.strerror}") from None
