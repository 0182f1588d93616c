"""Browser tests (Playwright on Debian's chromium) for the classroom pages: pitfalls, audit, quiz,
tour and shareable links, against ``streamlit run app.py`` (fixture ``app_server``).

Screenshots (projector-sized, tall viewport) go to artifacts/screenshots/classroom_*.png.
"""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect  # noqa: E402

from specviz.rooms.pitfalls import preset  # noqa: E402
from specviz.inputs.scenario import scenario_from_json  # noqa: E402
from specviz.rooms.share import ShareState, encode_state  # noqa: E402
from tests.conftest import wait_for_app  # noqa: E402


def _no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


def _svgs(page):
    page.locator('.sv-graph svg, [data-testid="stGraphVizChart"] svg').first.wait_for(timeout=30_000)
    return page.locator('.sv-graph svg, [data-testid="stGraphVizChart"] svg')


@pytest.mark.exhaustive
def test_pitfalls_page(page, open_page, screenshot_dir):
    open_page(page, "pitfalls")
    _no_exception(page)
    expect(page.get_by_text("Pitfall gallery").first).to_be_visible()
    expect(_svgs(page)).to_have_count(2)
    page.screenshot(path=str(screenshot_dir / "classroom_pitfalls.png"))
    page.get_by_text("A batch with per-request offsets forgotten").first.click()
    wait_for_app(page)
    _no_exception(page)
    expect(page.get_by_text(re.compile("local node ids")).first).to_be_visible()
    expect(_svgs(page).first).to_contain_text("request 1")
    page.screenshot(path=str(screenshot_dir / "classroom_pitfalls_batch.png"))
    page.get_by_text("简体中文").first.click()
    wait_for_app(page)
    _no_exception(page)
    expect(page.get_by_text("常见错误图鉴").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "classroom_pitfalls_zh.png"))


@pytest.mark.exhaustive
def test_audit_page_highlights_the_first_wrong_row(page, open_page, screenshot_dir):
    open_page(page, "audit")
    _no_exception(page)
    area = page.get_by_label("Your outputs")
    area.fill("accept_index = tensor([[1, 3, -1]], device='cuda:0', dtype=torch.int32)\naccept_lens = [3]")
    area.press("Control+Enter")
    wait_for_app(page)
    _no_exception(page)
    expect(page.get_by_text(re.compile(r"First wrong value: accept_index\[0\]\[0\]")).first).to_be_visible()
    expect(page.get_by_text(re.compile("root's row 0 comes first")).first).to_be_visible()
    # the wrong node (the root) is outlined in the selection colour
    expect(_svgs(page).first.locator("g.node polygon[stroke='#cc79a7'], g.node path[stroke='#cc79a7']").first).to_be_attached()
    page.screenshot(path=str(screenshot_dir / "classroom_audit.png"))


@pytest.mark.exhaustive
def test_quiz_page(page, open_page, screenshot_dir):
    open_page(page, "quiz")
    _no_exception(page)
    box = page.get_by_label("Answer")
    box.fill("1 3")
    box.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Check", exact=True).click()
    wait_for_app(page)
    expect(page.get_by_text(re.compile("Not quite")).first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "classroom_quiz_wrong.png"))
    page.get_by_role("button", name="Reveal", exact=True).click()
    wait_for_app(page)
    _no_exception(page)
    expect(page.get_by_text("The answer").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "classroom_quiz_reveal.png"))


def _prompt_marks_are_icons(page, name: str) -> None:
    """The tour's prompt marks are drawn icons with a text alternative, never a raw ":material_…" code (issue 18)."""
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert ":material" not in text, text[:2000]
    marks = page.locator(f'[data-testid="stMain"] svg[role="img"][aria-label="{name}"]')
    expect(marks.first).to_be_visible()
    box = marks.first.bounding_box()
    assert box and 8 <= box["width"] <= 40, box  # the size of the text around it


@pytest.mark.exhaustive
def test_tour_page(page, open_page, screenshot_dir):
    open_page(page, "tour")
    _no_exception(page)
    expect(page.get_by_text(re.compile("How the target confirms")).first).to_be_visible()
    _prompt_marks_are_icons(page, "not yet")
    page.screenshot(path=str(screenshot_dir / "classroom_tour_1.png"))
    page.get_by_role("button", name=re.compile("Next")).first.click()
    wait_for_app(page)
    page.get_by_role("button", name=re.compile("Next")).first.click()
    wait_for_app(page)
    expect(page.get_by_text(re.compile("Greedy accept: row indices")).first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "classroom_tour_3.png"))
    page.get_by_text("简体中文").first.click()
    wait_for_app(page)
    expect(page.get_by_text(re.compile("Greedy Accept 的行索引与输出")).first).to_be_visible()
    _prompt_marks_are_icons(page, "尚未完成")
    page.screenshot(path=str(screenshot_dir / "classroom_tour_3_zh.png"))
    page.get_by_text("English").first.click()
    wait_for_app(page)
    page.get_by_role("button", name="Open Greedy accept", exact=True).click()
    wait_for_app(page)
    _no_exception(page)
    expect(page).to_have_url(re.compile(r"/greedy"))


@pytest.mark.exhaustive  # CI time; share links round-trip under AppTest in tests/test_share_pages.py
def test_shared_link_opens_the_same_state(page, app_server, screenshot_dir):
    data = json.loads(preset("running_example").to_json())
    data["requests"][0]["target_predict"] = ["A", "D", "X", "X", "X"]
    s = scenario_from_json(json.dumps(data))
    token = encode_state(ShareState(page="audit", lang="zh", slot="audit", scenario=s,
                                    extra={"text": "accept_index = [0, 1, 4]\noutputs = [A, D, X]"}))
    page.goto(f"{app_server}/audit?s={token}", wait_until="domcontentloaded")
    wait_for_app(page)
    _no_exception(page)
    expect(page.get_by_text(re.compile("审计你的 Accept 输出")).first).to_be_visible()
    expect(page.get_by_text(re.compile("正确")).first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "classroom_shared_link_zh.png"))


@pytest.mark.exhaustive
def test_malformed_link_shows_a_clear_error(page, app_server):
    page.goto(f"{app_server}/pitfalls?s=this-is-not-a-link", wait_until="domcontentloaded")
    wait_for_app(page)
    _no_exception(page)
    expect(page.get_by_text(re.compile("This link could not be loaded")).first).to_be_visible()


@pytest.mark.exhaustive
def test_copy_link_round_trip_in_the_browser(page, browser, open_page, screenshot_dir):
    """Pick a pitfall, open the share box, load its link in a fresh browser context: the same pitfall shows."""
    open_page(page, "pitfalls")
    page.get_by_text("6. q = 0 for a proposed token").first.click()
    wait_for_app(page)
    sidebar = page.locator('[data-testid="stSidebar"]')  # every page's share box sits at the bottom of the sidebar
    sidebar.get_by_text(re.compile("Share this view")).first.click()
    code = sidebar.locator('[data-testid="stCode"] code').first
    code.wait_for(timeout=15_000)
    url = code.inner_text().strip()
    assert "/pitfalls?s=" in url
    page.screenshot(path=str(screenshot_dir / "classroom_share_box.png"))
    fresh = browser.new_context(viewport={"width": 1600, "height": 2400}).new_page()
    fresh.goto(url, wait_until="domcontentloaded")
    wait_for_app(fresh)
    _no_exception(fresh)
    expect(fresh.get_by_role("heading", name=re.compile("q = 0 for a proposed token"))).to_be_visible()
    fresh.context.close()


@pytest.mark.exhaustive
def test_pitfall_buttons_switch_pages(page, open_page):
    open_page(page, "")  # the router first (a fresh server's first deep link skips app.py)
    open_page(page, "pitfalls")
    page.get_by_text("2. Gathering predicts through a -1 pad").first.click()
    wait_for_app(page)
    page.get_by_role("button", name="Audit the buggy outputs").click()
    wait_for_app(page)
    expect(page).to_have_url(re.compile(r"/audit"))
    expect(page.get_by_text(re.compile(r"First wrong value: accept_tokens\[0\]\[2\]")).first).to_be_visible()
    open_page(page, "pitfalls")  # a reload is a new session: pick the entry again
    page.get_by_text("2. Gathering predicts through a -1 pad").first.click()
    wait_for_app(page)
    page.get_by_role("button", name="Explore these inputs on the live page").click()
    wait_for_app(page)
    expect(page).to_have_url(re.compile(r"/batch_kv"))
    _no_exception(page)
