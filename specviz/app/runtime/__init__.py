"""Streamlit's internals, touched here and nowhere else: eight runtime patches of private Streamlit
classes, each a module, each guarded by a shape check (it installs only on the shape it was written
for, else it stays out and says so), and ``install()`` that app.py and the worker call once.

- ``click_queue``: no button press folded away, no callback preempted by a newer rerun;
- ``config_polling``: config.toml and secrets.toml polled every 5 s, not 0.2 s, on a server that watches no files;
- ``failover``: the first edit after ``specviz serve`` moved a tab to another worker is applied;
- ``state_lookup``: a widget looks up its own key in session state, not a filtered copy of all of it;
- ``wakeups``: one event-loop wake-up per burst of a session's messages, not one per element;
- ``widget_guard``: a crafted widget value of the wrong type (websocket) is ignored instead of breaking the tab;
- ``static_files``: Streamlit's frontend files answered on the event loop, not queued behind a script run for a thread;
- ``page_base``: a link straight to a page connects at once, without first pinging the page's own path (two 404s).

Each module's docstring names the upstream behaviour it works around, the Streamlit versions it was
checked on, what a user sees without it, and how to drop it; each installs through
``shape_guard.install_once`` (import, once per process, shape check, patch, mark). ``specviz doctor``
prints ``status()``.
It imports only Streamlit (never specviz.app.ui or pages), so the CLI can report on it.
"""
from __future__ import annotations

import importlib

PATCHES = ("click_queue", "failover", "wakeups", "widget_guard", "state_lookup", "static_files", "config_polling", "page_base")
# Streamlit releases whose private classes these patches were written and tested against
# (tests/test_click_queue.py, test_failover.py, test_wakeups.py, test_widget_guard.py, test_state_lookup.py,
# test_static_files.py, test_config_polling.py, test_page_base.py, test_app_runtime.py).
CHECKED_ON = ("1.67.0",)

_RESULTS: dict[str, bool] = {}


def install() -> dict[str, bool]:
    """Install every patch (idempotent); patch name -> installed. A patch whose shape check fails stays
    out: Streamlit's own behaviour then applies, and ``status()`` / ``specviz doctor`` say so."""
    for name in PATCHES:
        _RESULTS[name] = bool(importlib.import_module(f"{__name__}.{name}").install())
    return dict(_RESULTS)


def streamlit_version() -> str:
    try:
        import streamlit  # noqa: PLC0415
    except ImportError:
        return "missing"
    return getattr(streamlit, "__version__", "unknown")


def status() -> list[dict]:
    """One row per patch: name, installed (bool), and what it works around (its docstring's first line).
    Installs them first (in this process) so that the shape checks themselves answer."""
    results = install()
    out = []
    for name in PATCHES:
        mod = importlib.import_module(f"{__name__}.{name}")
        out.append(dict(name=name, installed=results[name], summary=(mod.__doc__ or "").strip().splitlines()[0],
                        upstream=getattr(mod, "UPSTREAM", "")))
    return out
