"""specviz.app.runtime.page_base: the index.html a page's link gets names the server's base URL, so Streamlit's
frontend pings /_stcore/health at once instead of <page>/_stcore/health first (two 404s, then a 100 ms wait)."""
from __future__ import annotations

import json
import re

import pytest
from streamlit import file_util

from specviz.app.runtime import page_base
from specviz.app.ui.scenarios import ROOT
from tests.test_static_files import _get, _streamlit_handler

STREAMLIT_STATIC = file_util.get_static_dir()
PAGES = ROOT / "pages"


def _patched(directory: str = STREAMLIT_STATIC, pages_dir=PAGES):
    handler = _streamlit_handler(directory)
    page_base.wrap_handler(handler, directory, pages_dir=pages_dir)
    return handler


def _names_in(body: bytes) -> list[str] | None:
    m = re.search(rb"<script>\(function\(\)\{var pages=(\[.*?\]);", body)
    return None if m is None else json.loads(m.group(1))


def test_install_patches_the_pinned_streamlit():
    from streamlit.web.server.starlette import starlette_static_routes as routes

    assert page_base.install() and page_base.install()  # idempotent
    assert routes._specviz_page_base


def test_the_names_are_streamlits_names_of_the_page_files():
    names = page_base.page_names(PAGES)
    assert {"greedy", "tree_builder", "dspark", "chain_sampling", "target_only", "overview"} <= set(names)
    assert len(names) == len(list(PAGES.glob("[!_]*.py")))
    assert page_base.page_names(PAGES / "no such folder") == []


@pytest.mark.parametrize("path", ["/greedy", "/", "/dspark", "/not_a_page"])
def test_index_html_carries_the_page_names_before_streamlits_bundle(path):
    status, headers, body = _get(_patched(), path)
    plain = _get(_streamlit_handler(STREAMLIT_STATIC), path)
    assert status == plain[0] == 200
    assert _names_in(body) == page_base.page_names(PAGES)
    # The inline script runs before the bundle (a module script, deferred) reads window.__streamlit.
    assert body.index(b"var pages=") < body.index(b'<script type="module"')
    # The rest is Streamlit's index.html, byte for byte.
    assert body.replace(page_base.script_tag(page_base.page_names(PAGES)), b"", 1) == plain[2]
    assert headers["cache-control"] == plain[1]["cache-control"] == "no-cache"
    assert "etag" not in headers and "last-modified" not in headers  # they name the file; this body is not it
    assert headers["content-length"] == str(len(body)) and headers["content-type"].startswith("text/html")


def test_every_other_answer_is_streamlits(tmp_path):
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "a.X1.js").write_text("export const a = 1;\n")
    (tmp_path / "index.html").write_text("<html><head></head><body>app</body></html>")
    plain, patched = _streamlit_handler(str(tmp_path)), _patched(str(tmp_path))
    for path, method in (("/static/js/a.X1.js", "GET"), ("/greedy", "HEAD"), ("/greedy/_stcore/health", "GET"),
                         ("/greedy/_stcore/host-config", "GET"), ("/_stcore/host-config", "GET")):
        assert _get(patched, path, method) == _get(plain, path, method), (path, method)
    # A server that was not told its pages (plain `streamlit run`, a test's handler): Streamlit's index.html.
    assert _get(_patched(str(tmp_path), pages_dir=tmp_path / "none"), "/greedy") == _get(plain, "/greedy")
    assert _names_in(_get(patched, "/greedy")[2]) == page_base.page_names(PAGES)


def test_a_page_added_later_is_named_on_the_next_visit(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "greedy.py").write_text("")
    handler = _patched(pages_dir=pages)
    assert _names_in(_get(handler, "/greedy")[2]) == ["greedy"]
    (pages / "quiz.py").write_text("")
    assert _names_in(_get(handler, "/quiz")[2]) == ["greedy", "quiz"]


def test_no_page_name_can_end_the_script():
    tag = page_base.script_tag(['</script><img src=x onerror="alert(1)">', "a<!--b"]).decode()
    assert tag.count("</script>") == 1 and tag.endswith("</script>") and "<!--" not in tag
    assert "<" not in tag[len("<script>"):-len("</script>")]
    assert page_base.with_script(b"<html><body>no head</body></html>", ["greedy"]) is None
    assert page_base.with_script(b"<html><head></head></html>", []) is None


def test_the_worker_tells_the_patch_where_the_pages_are(monkeypatch):
    monkeypatch.setattr(page_base, "_PAGES_DIR", [])
    page_base.use_pages_of(ROOT / "app.py")
    assert page_base._PAGES_DIR == [PAGES]


@pytest.mark.parametrize("path, base", [("/greedy", "/"), ("/course/greedy", "/course/"), ("/greedy?s=x", "/"),
                                        ("/", None), ("/course", None), ("/not_a_page", None)])
def test_in_a_browser_the_script_names_the_base_streamlit_would_find(page, path, base):
    """The script as chromium runs it: the page path's parent for a page's URL (behind a proxy's prefix too),
    nothing for any other path."""
    body = page_base.with_script(b"<html><head></head><body></body></html>", ["greedy", "dspark"])
    page.route("http://specviz.test/**", lambda route: route.fulfill(status=200, content_type="text/html", body=body))
    page.goto("http://specviz.test" + path)
    got = page.evaluate("window.__streamlit ? window.__streamlit.BACKEND_BASE_URL : null")
    assert got == (None if base is None else "http://specviz.test" + base)


def test_a_link_to_a_page_pings_the_servers_root_only(tmp_path, page):
    """On a server started as `specviz app` starts it, /greedy connects without asking /greedy/_stcore/health
    (Streamlit alone asks it first, gets a 404 and waits 100 ms) and draws the page."""
    from playwright.sync_api import expect

    from tests.conftest import start_app_server, wait_for_app

    with start_app_server(tmp_path / "server.log", worker=True) as url:
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url[len(url):]) if "_stcore" in r.url else None)
        page.goto(f"{url}/greedy", wait_until="domcontentloaded")
        wait_for_app(page)
        expect(page.get_by_role("heading", name="Greedy accept")).to_be_visible(timeout=30_000)
    assert "/_stcore/health" in asked and "/_stcore/host-config" in asked, asked
    assert not [a for a in asked if a.startswith("/greedy/")], asked
