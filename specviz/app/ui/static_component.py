"""A Streamlit Custom Components v2 element whose module is a file of ``static/`` (served by Streamlit beside
app.py: server.enableStaticServing, set by .streamlit/config.toml and `specviz app`), registered once per
process. The element's own script is only a loader that imports that file from the app's own server, so a tab
fetches it once and a rerun carries only the element's data. Used by the step player and the p/q tables."""
from __future__ import annotations

import json
import threading

_REGISTERED: dict = {}
_LOCK = threading.Lock()


def static_component(name: str, script: str):
    """The component ``name`` whose default export is that of ``static/<script>``."""
    with _LOCK:
        if name not in _REGISTERED:
            import streamlit as st

            root = (st.get_option("server.baseUrlPath") or "").strip("/")
            url = json.dumps(("/" + root if root else "") + "/app/static/" + script)  # our server's path, not data
            # (several lines: Streamlit reads a one-line string with a "/" as a file path, not inline code)
            loader = (f"export default async function (c) {{\n  const m = await import(new URL({url}, window.location.origin).href);\n"
                      "  return m.default(c);\n}\n")
            _REGISTERED[name] = st.components.v2.component(name, js=loader)
        return _REGISTERED[name]
