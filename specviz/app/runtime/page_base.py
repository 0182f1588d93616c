"""A link straight to a page (``/greedy``) connects at once, not after two 404s and a 100 ms back-off.

Streamlit's frontend does not know where the server's root is. On a page URL such as ``/greedy`` it first pings
``/greedy/_stcore/health`` and ``/greedy/_stcore/host-config``, gets a 404 for both, waits its first retry delay
(100 ms) and then pings ``/_stcore/health``. That costs every first visit of a page other than the main one
~150 ms before the websocket opens (benchmarks/README, "The double health check, stop 45"). The frontend skips the
guessing when the page sets ``window.__streamlit.BACKEND_BASE_URL``, the hook a host that embeds Streamlit sets.

``install()`` wraps Streamlit's static handler so that the index.html it serves (for ``/`` and, as the
single-page app's fallback, for every page path) carries one inline script before Streamlit's bundle. In the
browser, that script reads ``location.pathname``. When its last segment is one of this app's pages, it sets
``BACKEND_BASE_URL`` to the origin plus the path without that segment: the base the frontend's second guess finds.
It is computed from ``location``, so a proxy that adds a path prefix (``/course/greedy``) still gets its own base.
Any other path (the main page, a path that is no page, a server that was not told its pages) gets no setting and
Streamlit's own guesses. The script holds only the pages' URL names, as a JSON literal: no request data goes into it.

The app's pages are the ``pages/*.py`` files next to the script (``use_pages_of``, called by
``specviz.app.ui.worker`` before the server starts), named as Streamlit names an ``st.Page`` of a file.

Upstream: streamlit/streamlit#7074 (open): "404 health check when navigating directly to a subpage".
Checked on: Streamlit 1.67.0 (``specviz.app.runtime.CHECKED_ON``).
Without it: the same page, connected ~150 ms later.
To drop it: when Streamlit's frontend finds the server's base URL without probing the page's path, delete this
module and its name in ``app_runtime.PATCHES``; tests/test_page_base.py goes with it.
"""
from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

from specviz.app.runtime.shape_guard import install_once, wrap_static_handlers

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#7074 (a deep link to a page pings <page>/_stcore/health first)"  # `specviz doctor`
_HEAD = re.compile(rb"<head[^>]*>", re.IGNORECASE)
_PAGES_DIR: list[Path] = []  # set by use_pages_of (the worker, before the server starts)

# Runs before Streamlit's bundle (a module script, so deferred); leaves a host's own __streamlit alone.
_SCRIPT = ("<script>(function(){var pages=%s;var path=location.pathname.replace(/\\/+$/,\"\");"
           "var cut=path.lastIndexOf(\"/\");if(window.__streamlit||cut===-1||pages.indexOf(path.slice(cut+1))===-1)return;"
           "window.__streamlit={BACKEND_BASE_URL:location.origin+path.slice(0,cut)+\"/\"};})();</script>")


def use_pages_of(script: str | os.PathLike) -> None:
    """Tell the patch which app it serves: the pages are the ``pages/`` folder next to ``script``."""
    _PAGES_DIR[:] = [Path(os.path.abspath(script)).parent / "pages"]


def page_names(pages_dir: Path) -> list[str]:
    """The URL name Streamlit gives an ``st.Page`` of each ``pages/*.py`` file (not ``_*.py``), sorted."""
    try:
        from streamlit.source_util import page_icon_and_name
    except ImportError:  # its name for a file; without it the file's stem (what it is for our pages)
        def page_icon_and_name(path: Path) -> tuple[str, str]:
            return "", path.stem
    try:
        files = sorted(pages_dir.glob("[!_]*.py"))
    except OSError:
        return []
    return sorted({name for f in files if (name := page_icon_and_name(f)[1]) and "/" not in name})


def script_tag(names: list[str]) -> bytes:
    """The inline script for these page names; the names only as a JSON array, ``<`` escaped so that no name
    can close the script element."""
    literal = json.dumps(list(names), ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    return (_SCRIPT % literal).encode("ascii")


def with_script(index_html: bytes, names: list[str]) -> bytes | None:
    """``index_html`` with the script right after ``<head>``; None when there is no page to name or no ``<head>``."""
    m = _HEAD.search(index_html)
    if not names or m is None:
        return None
    return index_html[:m.end()] + script_tag(names) + index_html[m.end():]


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    return install_once("page base in index.html", "_specviz_page_base", _shape, _patch, _log)


def _shape() -> tuple:
    from starlette import responses
    from streamlit.web.server.starlette import starlette_static_routes as routes

    missing = [n for n in ("create_streamlit_static_handler",) if not hasattr(routes, n)]
    missing += [n for n in ("FileResponse", "Response") if not hasattr(responses, n)]
    return routes, (f"streamlit / starlette lack {missing}" if missing else None), (routes,)


def _patch(routes) -> None:
    wrap_static_handlers(routes, wrap_handler)


def wrap_handler(handler, directory: str, pages_dir: Path | None = None) -> None:
    """Give one Streamlit static handler the script in the index.html it serves (``pages_dir``: the app's pages,
    else the folder ``use_pages_of`` named)."""
    from starlette.responses import FileResponse, Response

    index = os.path.realpath(os.path.join(directory, "index.html"))
    get_response = handler.get_response
    made: dict[tuple, bytes | None] = {}  # (pages folder, its mtime, index.html's mtime) -> the body

    def body_now() -> bytes | None:
        folder = pages_dir if pages_dir is not None else (_PAGES_DIR[0] if _PAGES_DIR else None)
        if folder is None:
            return None
        try:  # a page file added or removed changes the folder's mtime: the names are read again
            key = (folder, os.stat(folder).st_mtime_ns, os.stat(index).st_mtime_ns)
        except OSError:
            return None
        if key not in made:
            made.clear()
            with open(index, "rb") as f:
                made[key] = with_script(f.read(), page_names(folder))
        return made[key]

    async def get_response_with_base(path: str, scope):
        response = await get_response(path, scope)
        if (scope.get("method") != "GET" or not isinstance(response, FileResponse) or response.status_code != 200
                or os.path.realpath(response.path) != index):
            return response
        body = body_now()
        if body is None:
            return response
        # No ETag or Last-Modified: they name the file, and this body is not the file. index.html is no-cache
        # anyway (a 3 KB answer on each visit).
        headers = {k: v for k, v in response.headers.items()
                   if k not in ("content-length", "content-type", "etag", "last-modified")}
        return Response(body, media_type="text/html", headers=headers)

    handler.get_response = get_response_with_base
