"""Streamlit's frontend files served without a thread hop, so a first visit does not queue behind a script run.

A first visit fetches ~60 files of Streamlit's bundle and then ~40 lazy chunks (one set per kind of element the
page draws) from the app's own Python process, while that process runs the page's script. Streamlit serves
each file with Starlette's ``StaticFiles``: a worker thread looks the path up, another opens the file, one
more reads each 64 KiB. Every hop needs the GIL back, which the script-run thread holds for up to the switch
interval (5 ms) at a time, so under a script run one small chunk took 80-570 ms (benchmarks/README,
"visit8: first visits, stop 43") and the page waits for the last of them before it draws the component.

``install()`` wraps Streamlit's static handler so that a GET of a file under ``static/`` (the hashed
bundle, its chunks, fonts and styles; nothing else) is answered on the event loop from a table of the files
that exist, built once at start-up by walking that folder: one ``read`` of a file the OS has in its page
cache, with the headers Streamlit gives it (the same content type, ETag, Last-Modified, and its
``Cache-Control``, which ``_apply_cache_headers`` adds as before). A path that is not in the table (a
typo, a traversal attempt, the SPA's page paths, index.html, a HEAD) goes to Streamlit's own handler unchanged.

Upstream: Starlette's ``FileResponse`` and ``StaticFiles`` do their file IO in a thread pool (Kludex/starlette#819,
closed: "maybe the thread pool should no longer be used for reading and writing files?"); Streamlit's own
ticket on the static files' share of a first load is streamlit/streamlit#5798. Checked on: Streamlit 1.67.0
with Starlette 1.10.0 (``specviz.app.runtime.CHECKED_ON``).
Without it: the same files, slower to arrive while a script runs; nothing else changes.
To drop it: when Streamlit serves its static files without a thread per read (or behind a proxy that
serves them), delete this module and its name in ``app_runtime.PATCHES``; tests/test_static_files.py goes
with it.
"""
from __future__ import annotations

import functools
import logging
import mimetypes
import os

from specviz.app.runtime.shape_guard import install_once, wrap_static_handlers

_log = logging.getLogger(__name__)
UPSTREAM = "Kludex/starlette#819 (static files read through a thread pool)"  # printed by `specviz doctor`
_LIMIT_FILES = 5000  # a sane bound on the table (Streamlit 1.67 ships ~700 files under static/)


def file_table(static_dir: str) -> dict[str, tuple[str, os.stat_result]]:
    """``static/...`` path (as Starlette's ``get_path`` gives it, OS separators) -> (full path, stat) for every
    regular file under ``static_dir/static``; symlinks and anything else are left to Streamlit."""
    table: dict[str, tuple[str, os.stat_result]] = {}
    root = os.path.join(static_dir, "static")
    for folder, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(folder, name)
            st = os.lstat(full)
            if not os.path.isfile(full) or os.path.islink(full):
                continue
            table[os.path.relpath(full, static_dir)] = (full, st)
            if len(table) >= _LIMIT_FILES:
                return table
    return table


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    return install_once("static files on the event loop", "_specviz_static_files", _shape, _patch, _log)


def _shape() -> tuple:
    from starlette import responses, staticfiles
    from streamlit.web.server.starlette import starlette_static_routes as routes

    missing = [n for n in ("create_streamlit_static_handler", "create_streamlit_static_assets_routes")
               if not hasattr(routes, n)]
    missing += [f"StaticFiles.{n}" for n in ("get_response", "is_not_modified") if not hasattr(staticfiles.StaticFiles, n)]
    missing += [f"FileResponse.{n}" for n in ("set_stat_headers",) if not hasattr(responses.FileResponse, n)]
    return routes, (f"streamlit / starlette lack {missing}" if missing else None), (routes,)


def _patch(routes) -> None:
    wrap_static_handlers(routes, wrap_handler)


def wrap_handler(handler, directory: str) -> None:
    """Give one Streamlit static handler (a ``StaticFiles``) the event-loop path for the files of ``directory``."""
    from starlette.datastructures import Headers
    from starlette.responses import FileResponse, Response
    from starlette.staticfiles import NotModifiedResponse

    apply_cache_headers = getattr(handler, "_apply_cache_headers", None)
    if apply_cache_headers is None:  # its Cache-Control rule: without it the files would lose their caching
        _log.warning("static files stay Streamlit's: its handler has no _apply_cache_headers")
        return
    table = file_table(directory)
    get_response = handler.get_response

    @functools.lru_cache(maxsize=_LIMIT_FILES)
    def headers_of(full: str, st) -> Headers:
        """Starlette's own headers for this file (content type, length, ETag, Last-Modified): built once a
        file, from the stat of the start-up table, not on every request."""
        return FileResponse(full, stat_result=st).headers

    async def fast_get_response(path: str, scope):
        hit = table.get(path) if scope.get("method") == "GET" else None  # HEAD and the rest: Streamlit's
        if hit is None:
            return await get_response(path, scope)
        full, st = hit
        stat_headers = headers_of(full, st)
        if handler.is_not_modified(stat_headers, Headers(scope=scope)):
            response = NotModifiedResponse(stat_headers)
        else:
            try:
                # On the loop: a package file in the page cache reads in well under a ms (1.5 MB: ~0.3 ms),
                # less than one thread hop costs while a script run holds the GIL.
                with open(full, "rb") as f:
                    body = f.read()
            except OSError:
                return await get_response(path, scope)
            headers = {k: v for k, v in stat_headers.items() if k not in ("content-length", "content-type")}
            media_type = stat_headers.get("content-type") or mimetypes.guess_type(full)[0] or "text/plain"
            response = Response(body, media_type=media_type, headers=headers)
        apply_cache_headers(response, path)
        return response

    handler.get_response = fast_get_response
