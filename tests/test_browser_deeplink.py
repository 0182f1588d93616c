"""A link straight to a page (e.g. a shared /greedy link) opened on a freshly started server.

Streamlit runs a pages/ file on its own while no script has called st.navigation yet in the
server process; specviz.app.ui.common.route_through_app sends such a first request through app.py.
"""
import pytest  # noqa: E402

pytest.importorskip("playwright", reason="needs playwright (pip install -c constraints.txt -r requirements-dev.txt)")
from playwright.sync_api import expect

from conftest import start_app_server, wait_for_app


@pytest.mark.exhaustive
def test_deep_link_on_a_fresh_server_gets_the_router(tmp_path, page, screenshot_dir):
    with start_app_server(tmp_path / "server.log") as url:
        page.goto(f"{url}/greedy", wait_until="domcontentloaded")
        wait_for_app(page)
        # The first run reruns itself through app.py: wait for the routed page, not the first paint.
        expect(page.get_by_role("heading", name="Greedy accept")).to_be_visible(timeout=30_000)
        wait_for_app(page)
        nav = page.locator('[data-testid="stSidebarNav"]')
        # The router's titles ("Greedy accept", "Guided tour"), not file names ("greedy", "app").
        expect(nav.get_by_text("Greedy accept")).to_have_count(1)
        expect(nav.get_by_text("Guided tour")).to_have_count(1)
        expect(nav.get_by_text("app", exact=True)).to_have_count(0)
        page.screenshot(path=str(screenshot_dir / "deep_link_greedy.png"))
