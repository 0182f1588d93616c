"""Give freed memory back to the system (issue 35 item 3: a worker held +0.5 to +1 GB after 340 share links).

Measured with benchmarks/bench_links.py --heap (specviz/app/ui/heapdump.py): after the links' sessions expired,
the Python objects still alive were ~15 MB above the baseline for 12 links while the worker's RSS stayed ~190 MB
up. The rest was memory Python and the libraries had freed but glibc's malloc kept: each session's script
thread allocates from its own malloc arena (up to 8 per core), and an arena's freed pages are returned only
from its top. Two measures:

* ``MALLOC_ENV`` (``MALLOC_ARENA_MAX=2``): fewer arenas, so freed memory is reused instead of held in
  dozens of half-empty arenas. It must be in a process's environment when it starts: ``specviz app``,
  ``specviz serve``'s workers, the Dockerfile and deploy/kubernetes.yaml set it;
* ``start_trimmer()``: every ``TRIM_EVERY_S`` a daemon thread calls glibc's ``malloc_trim(0)``, which returns
  the free pages of every arena (a few ms; nothing on other C libraries), after a ``gc.collect()`` when
  sessions have ended since the last time.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time

from specviz.base.limits import MALLOC_ENV  # noqa: F401  (written once, read by the CLI and serve too)
TRIM_EVERY_S = 20.0
_started = threading.Event()


def trim() -> bool:
    """glibc's malloc_trim(0): True if memory was given back; False where there is no glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False


def _sessions() -> int | None:
    """Sessions this server holds (connected, and disconnected ones kept for a reconnect), or None outside one."""
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        return len(Runtime.instance()._session_mgr.list_sessions())  # (read only: a snapshot)
    except Exception:  # noqa: BLE001  another Streamlit, or the list changed while read: just trim
        return None


def start_trimmer(every: float = TRIM_EVERY_S) -> bool:
    """Start the trimming thread once per process; False if it was already running.

    When sessions have gone since the last look, their objects are collected first (``gc.collect()``: an
    ended session is a web of reference cycles, and with ``runner.postScriptGC`` off and torch's millions
    of long-lived objects a full collection otherwise comes rarely), then the freed memory is trimmed."""
    if _started.is_set():
        return False
    _started.set()

    def loop():
        import gc

        seen = _sessions()
        while True:
            time.sleep(every)
            now = _sessions()
            if now is not None and seen is not None and now < seen:
                gc.collect()
            seen = now
            trim()

    threading.Thread(target=loop, name="specviz-malloc-trim", daemon=True).start()
    return True
