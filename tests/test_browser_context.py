"""Browser tests share one context per worker (tests/conftest.py ``_worker_context``: its HTTP cache kept), and
nothing a test leaves in it reaches the next test: pages closed, localStorage / sessionStorage and cookies
cleared (``clear_context``, the ``context`` fixture's teardown). No server: an origin of Playwright's routing."""
from __future__ import annotations

import pytest

pytest.importorskip("playwright")

from tests.conftest import clear_context  # noqa: E402

ORIGIN = "http://specviz.test"


def _open(context):
    page = context.new_page()
    page.route(f"{ORIGIN}/**", lambda r: r.fulfill(status=200, content_type="text/html", body="<p>ok</p>"))
    page.goto(f"{ORIGIN}/")
    return page


def test_pages_share_the_workers_context_and_what_a_test_leaves_is_cleared(request, page, context):
    assert context is request.getfixturevalue("_worker_context") and page.context is context
    first = _open(context)
    first.evaluate("() => { localStorage.setItem('sidebarWidth', '333'); sessionStorage.setItem('k', 'v'); }")
    context.add_cookies([{"name": "specviz_worker", "value": "w1", "url": ORIGIN}])
    clear_context(context)
    assert context.pages == [] and context.cookies() == []
    again = _open(context)
    assert again.evaluate("() => [localStorage.length, sessionStorage.length]") == [0, 0]
