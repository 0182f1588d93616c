"""A link straight to a page (e.g. a shared /greedy link) opened on a freshly started server.

Streamlit runs a pages/ file on its own while no script has called st.navigation yet in the
server process; specviz.ui.common.route_through_app sends such a first request through app.py.
"""
from conftest import start_app_server, wait_for_app


def test_deep_link_on_a_fresh_server_gets_the_router(tmp_path, page, screenshot_dir):
    with start_app_server(tmp_path / "server.log") as url:
        page.goto(f"{url}/greedy", wait_until="domcontentloaded")
        wait_for_app(page)
        nav = page.locator('[data-testid="stSidebarNav"]')
        # The router's titles ("Greedy accept"), not file names ("greedy", "app").
        assert nav.get_by_text("Greedy accept").count() == 1
        assert nav.get_by_text("app", exact=True).count() == 0
        assert page.get_by_role("heading", name="Greedy accept").count() >= 1
        page.screenshot(path=str(screenshot_dir / "deep_link_greedy.png"))
