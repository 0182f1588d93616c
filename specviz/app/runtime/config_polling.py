"""config.toml and secrets.toml polled every few seconds, not five times a second, on a server that watches no files.

Streamlit watches its config files (every ``config.toml`` it reads) and ``secrets.toml`` with its polling
watcher whatever ``server.fileWatcherType`` says: each watcher wakes every 0.2 s on a thread of its own pool,
takes the GIL and stats its file. specviz serves with ``fileWatcherType = "none"`` (.streamlit/config.toml:
a class server does not reload its own files), yet four such watchers kept each worker busy at ~0.0013 s of
CPU a second while idle (0.0033-0.0040 s/s against 0.0020-0.0027 with a 5 s period, ``streamlit run
app.py`` idle for 30 s, two runs each, stop 44), and each wake-up competes with a script run for the GIL.

``install()``: each polling watcher sleeps ``period()`` between looks: ``POLL_S`` (5 s) while
``server.fileWatcherType`` is ``"none"`` (read at every look, so a command-line flag given after the worker
installed the patches counts), else Streamlit's 0.2 s. A change to config.toml or secrets.toml is then picked
up within 5 s instead of 0.2 s; with any other watcher type nothing changes.

Upstream: the config files are polled on purpose since streamlit/streamlit#13625 (a config.toml created while
the app runs is applied) and secrets.toml since streamlit/streamlit#2968 (forced to poll); no Streamlit issue
asks for those watchers to follow ``fileWatcherType`` (searched; one is yet to be filed).
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app.runtime.CHECKED_ON``).
Without it: an idle worker spends ~0.0013 s of CPU a second more; nothing a user sees.
To drop it: delete this module and its name in ``app_runtime.PATCHES`` when Streamlit lets the config and
secrets watchers be turned off or slowed; tests/test_config_polling.py goes with it.
"""
from __future__ import annotations

import inspect
import logging
import time

from specviz.app.runtime.shape_guard import install_once

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#13625, #2968 (config and secrets files polled whatever fileWatcherType says)"
POLL_S = 5.0
_DEFAULT_S = 0.2  # Streamlit 1.67's period, what the shape check expects


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    return install_once("config files polled slowly", "_specviz_config_polling", _shape, _patch, _log)


def period() -> float:
    """Seconds a polling watcher sleeps before its next look at its file."""
    from streamlit import config

    return POLL_S if config.get_option("server.fileWatcherType") == "none" else _DEFAULT_S


def _shape() -> tuple:
    from streamlit.watcher import polling_path_watcher as ppw

    cls = getattr(ppw, "PollingPathWatcher", None)
    missing = []
    if getattr(ppw, "_POLLING_PERIOD_SECS", None) != _DEFAULT_S:
        missing.append("polling_path_watcher._POLLING_PERIOD_SECS == 0.2")
    for name in ("_schedule", "_check_if_path_changed", "_executor"):
        if not hasattr(cls, name):
            missing.append(f"PollingPathWatcher.{name}")
    if not missing and "_POLLING_PERIOD_SECS" not in inspect.getsource(cls._schedule):
        missing.append("PollingPathWatcher._schedule sleeping _POLLING_PERIOD_SECS")
    return cls, (f"streamlit lacks {missing}" if missing else None), (cls,)


def _patch(cls) -> None:
    def _schedule(self) -> None:  # Streamlit's: sleep, look, and the look schedules the next one
        def look() -> None:
            time.sleep(period())
            self._check_if_path_changed()

        cls._executor.submit(look)

    cls._schedule = _schedule
