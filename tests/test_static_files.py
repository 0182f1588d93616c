"""specviz.app.runtime.static_files: Streamlit's frontend files are answered on the event loop (no worker thread,
so no wait for the GIL behind a script run) with the bytes and headers Streamlit gives them; every other path
is Streamlit's own answer."""
from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os

import anyio.to_thread
import pytest
from starlette.exceptions import HTTPException
from streamlit import file_util
from streamlit.web.server.starlette import starlette_static_routes as routes

from specviz.app.runtime import static_files

STREAMLIT_STATIC = file_util.get_static_dir()


def _streamlit_handler(directory: str):
    """Streamlit's own handler, whether or not this process has patched its factory."""
    return inspect.unwrap(routes.create_streamlit_static_handler)(directory=directory, base_url=None)


def _get(app, path: str, method: str = "GET", headers=()) -> tuple[int, dict, bytes]:
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "query_string": b"",
             "headers": [(k.encode(), v.encode()) for k, v in headers], "scheme": "http", "server": ("t", 80),
             "asgi": {"version": "3.0", "spec_version": "2.4"}, "extensions": {}}
    sent, asked = [], []

    async def receive():
        if not asked:
            asked.append(1)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects

    async def send(message):
        sent.append(message)

    async def go():
        await app(scope, receive, send)
    try:
        # On a thread of its own: after a browser test, Playwright's sync API keeps an event loop running on
        # this thread, and asyncio.run refuses to start a second one there.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, go()).result()
    except HTTPException as exc:  # Starlette's exception middleware answers these in a server
        return exc.status_code, {}, b""
    start = sent[0]
    return (start["status"], {k.decode(): v.decode() for k, v in start["headers"]},
            b"".join(m.get("body", b"") for m in sent[1:]))


def _refuse_threads(monkeypatch):
    """Fail any file IO sent to a worker thread (what Starlette's StaticFiles and FileResponse do)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a worker thread was used")
    monkeypatch.setattr(anyio.to_thread, "run_sync", refuse)


def _some_files() -> list[str]:
    table = static_files.file_table(STREAMLIT_STATIC)
    picks = []
    for ext in (".js", ".css", ".woff2"):
        picks.append(min((k for k in table if k.endswith(ext)), key=lambda k: table[k][1].st_size))
    return ["/" + k.replace(os.sep, "/") for k in picks]


def test_install_patches_the_pinned_streamlit():
    assert static_files.install() and static_files.install()  # idempotent
    assert routes._specviz_static_files
    # A handler the factory builds has the event-loop path (page_base wraps the same factory, before or after).
    handler = routes.create_streamlit_static_handler(directory=STREAMLIT_STATIC, base_url=None)
    get_response, names = handler.get_response, []
    while get_response is not None:  # page_base's wrapper holds static_files' in its closure
        names.append(get_response.__qualname__)
        cells = [c.cell_contents for c in (get_response.__closure__ or ()) if callable(c.cell_contents)
                 and getattr(c.cell_contents, "__name__", "").endswith("get_response")]
        get_response = cells[0] if cells else None
    assert any("fast_get_response" in n for n in names), names


def _checked(handler):
    """A handler past Starlette's one-off check of its folder (a thread, once per server)."""
    _get(handler, "/favicon.png")
    return handler


def test_streamlit_alone_reads_its_files_in_threads(monkeypatch):
    """The premise: without the patch a file under static/ goes through a worker thread."""
    handler = _checked(_streamlit_handler(STREAMLIT_STATIC))
    _refuse_threads(monkeypatch)
    with pytest.raises(AssertionError, match="worker thread"):
        _get(handler, _some_files()[0])


@pytest.mark.parametrize("path", _some_files())
def test_a_frontend_file_is_served_without_a_thread_with_streamlits_bytes_and_headers(path, monkeypatch):
    status, headers, body = _get(_streamlit_handler(STREAMLIT_STATIC), path)
    handler = _checked(_streamlit_handler(STREAMLIT_STATIC))
    static_files.wrap_handler(handler, STREAMLIT_STATIC)
    _refuse_threads(monkeypatch)
    fast_status, fast_headers, fast_body = _get(handler, path)
    assert (fast_status, fast_body) == (status, body) == (200, body)
    assert fast_headers == headers  # content type, length, ETag, Last-Modified, Cache-Control (immutable)
    assert "immutable" in fast_headers["cache-control"]
    # A revalidation with the ETag gets a 304, as from Streamlit.
    assert _get(handler, path, headers=[("if-none-match", headers["etag"])])[0] == 304


def test_every_other_path_is_streamlits_answer(tmp_path):
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "a.X1.js").write_text("export const a = 1;\n")
    (tmp_path / "index.html").write_text("<html><head></head><body>app</body></html>")
    (tmp_path / "secret.txt").write_text("not a frontend file")
    plain, fast = _streamlit_handler(str(tmp_path)), _streamlit_handler(str(tmp_path))
    static_files.wrap_handler(fast, str(tmp_path))
    for path, method in (("/static/js/a.X1.js", "GET"), ("/static/js/a.X1.js", "HEAD"), ("/", "GET"),
                         ("/tree_builder", "GET"), ("/static/js/missing.js", "GET"), ("/secret.txt", "GET"),
                         ("/static/../secret.txt", "GET"), ("/static/js/a.X1.js", "POST")):
        want, got = _get(plain, path, method), _get(fast, path, method)
        assert got[0] == want[0] and got[2] == want[2], (path, method)
        assert {k: v for k, v in got[1].items()} == {k: v for k, v in want[1].items()}, (path, method)
    assert _get(fast, "/static/js/a.X1.js")[2] == b"export const a = 1;\n"
    assert _get(fast, "/static/js/a.X1.js", "POST")[0] == 405
