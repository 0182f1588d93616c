"""A Streamlit Custom Components v2 element whose module is a file of ``static/`` (served by Streamlit beside
app.py: server.enableStaticServing, set by .streamlit/config.toml and `specviz app`), registered once per
process. The element's own script is only a loader that imports that file from the app's own server, so a tab
fetches it once and a rerun carries only the element's data. Used by the step player and the p/q tables.

A module that imports another file, which then loads a stylesheet, costs a tab one round trip per file, one
after another, on its first visit. The loader therefore first asks the browser for every file the module will
need (``also``), all at once: ``<link rel="modulepreload">`` for a JavaScript module, ``<link rel="preload"
as="style">`` for a stylesheet, put in the page's head once per tab; the imports and the stylesheet the module
adds later are then answered from what is already loaded or loading."""
from __future__ import annotations

import json
import re
import threading

_REGISTERED: dict = {}
_LOCK = threading.Lock()
_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.(js|mjs|css)")  # a file of static/, nothing else


def static_url(name: str) -> str:
    """The path at which this server serves ``static/<name>`` (under server.baseUrlPath, if set)."""
    import streamlit as st

    if not _FILE.fullmatch(name):
        raise ValueError(f"static file name {name!r}: must be a plain file name of static/ ending in .js, .mjs or .css "
                         "(letters, digits, '_', '.', '-'); pass the file's name, not a path or a URL")
    root = (st.get_option("server.baseUrlPath") or "").strip("/")
    return ("/" + root if root else "") + "/app/static/" + name


def loader_js(script: str, also: tuple[str, ...] = ()) -> str:
    """The element's script: preload ``also`` (in parallel), then import ``static/<script>`` and hand the
    component to its default export. Only our own static paths go into it, each as a JSON string."""
    main = json.dumps(static_url(script))
    files = json.dumps([static_url(f) for f in dict.fromkeys((script, *also))])
    # Several lines: Streamlit reads a one-line string with a "/" as a file path, not inline code.
    return ("const FILES = " + files + ";\n"
            "function preload() {\n"
            "  const have = new Set([...document.head.querySelectorAll('link[data-sv-preload]')].map((l) => l.href));\n"
            "  for (const f of FILES) {\n"
            "    const href = new URL(f, window.location.origin).href;\n"
            "    if (have.has(href)) continue;\n"
            "    const l = document.createElement('link');\n"
            "    if (href.endsWith('.css')) { l.rel = 'preload'; l.as = 'style'; } else { l.rel = 'modulepreload'; }\n"
            "    l.href = href; l.dataset.svPreload = '';\n"
            "    document.head.appendChild(l);\n"
            "  }\n"
            "}\n"
            "export default async function (c) {\n"
            "  preload();\n"
            "  const m = await import(new URL(" + main + ", window.location.origin).href);\n"
            "  return m.default(c);\n"
            "}\n")


def static_component(name: str, script: str, also: tuple[str, ...] = ()):
    """The component ``name`` whose default export is that of ``static/<script>``; ``also``: the other files of
    static/ that module loads (its imports, its stylesheet), fetched together with it on a tab's first visit."""
    with _LOCK:
        if name not in _REGISTERED:
            import streamlit as st

            _REGISTERED[name] = st.components.v2.component(name, js=loader_js(script, tuple(also)))
        return _REGISTERED[name]
