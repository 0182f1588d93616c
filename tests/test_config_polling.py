"""Runtime patch config_polling: Streamlit's polling watchers (config.toml, secrets.toml) look every 5 s on a
server that watches no files (``server.fileWatcherType = "none"``, specviz's config), every 0.2 s otherwise,
and still see a change."""
from __future__ import annotations

import threading

from streamlit import config
from streamlit.watcher import polling_path_watcher as ppw

from specviz.app.runtime import config_polling


def test_installs_on_the_pinned_streamlit():
    assert config_polling.install()
    assert ppw.PollingPathWatcher._schedule.__module__ == config_polling.__name__


def test_the_period_follows_the_watcher_type(monkeypatch):
    for kind, period in (("none", config_polling.POLL_S), ("auto", 0.2), ("poll", 0.2), ("watchdog", 0.2)):
        monkeypatch.setattr(config, "get_option", lambda key, kind=kind: kind if key == "server.fileWatcherType" else None)
        assert config_polling.period() == period, kind


def test_a_watcher_still_sees_its_file_change(tmp_path, monkeypatch):
    """The patched watcher sleeps period(), looks, and calls back on a change (period shortened for the test)."""
    config_polling.install()
    monkeypatch.setattr(config_polling, "period", lambda: 0.02)
    path = tmp_path / "config.toml"
    path.write_text("[server]\n")
    seen = threading.Event()
    watcher = ppw.PollingPathWatcher(str(path), lambda p: seen.set())
    try:
        path.write_text("[server]\nport = 1\n")
        import os
        os.utime(path, (path.stat().st_atime + 5, path.stat().st_mtime + 5))  # a later mtime, whatever the clock
        assert seen.wait(5.0)
    finally:
        watcher.close()
