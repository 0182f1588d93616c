"""Presentation mode at 1280x720 on the chain and DSpark pages (issue 32), both languages: the sidebar starts
folded away (and opens narrow), the title is one line, and the value chips and the test table the narration
talks about are on the first screen with the narration and the picture. Before: the sidebar kept its 300 px,
the chain title wrapped to two lines, and the chips and table were below the fold.
"""
from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright", reason="needs playwright (pip install -c constraints.txt -r requirements-dev.txt)")
from playwright.sync_api import expect  # noqa: E402

from conftest import wait_for_app  # noqa: E402

from specviz.rooms.pitfalls import preset  # noqa: E402
from specviz.rooms.share import ShareState, encode_state, page_path  # noqa: E402

W, H = 1280, 720
PAGES = (("chain_sampling", "chain", "pq_example"), ("dspark", "dspark", "dspark_chain"))


def _one_line(page, selector: str) -> bool:
    return page.evaluate("""(sel) => { const e = document.querySelector(sel);
        const lh = parseFloat(getComputedStyle(e).lineHeight) || parseFloat(getComputedStyle(e).fontSize) * 1.3;
        return e.getBoundingClientRect().height < 1.6 * lh; }""", selector)


# The default run checks the chain page in English and DSpark in Chinese; the other two pairs are exhaustive.
CASES = [pytest.param(*page, lang, id=f"{page[0]}-{lang}",
                      marks=() if (page[0], lang) in {("chain_sampling", "en"), ("dspark", "zh")} else pytest.mark.exhaustive)
         for page in PAGES for lang in ("en", "zh")]


@pytest.mark.parametrize("path,slot,name,lang", CASES)
def test_presentation_mode_fits_the_first_screen(context, app_server, path, slot, name, lang, screenshot_dir):
    page = context.new_page()  # a tab of the worker's context (its HTTP cache warm; device scale 1), sized before the load
    page.set_viewport_size({"width": W, "height": H})
    token = encode_state(ShareState(page=path, slot=slot, lang=lang, scenario=preset(name), step_key=path, step=2,
                                    extra={"present": True}))
    page.goto(f"{app_server}{page_path(path)}?s={token}", wait_until="domcontentloaded", timeout=120_000)
    wait_for_app(page, timeout=180_000)
    player = page.locator(".sv-player").first  # the step player component (issue 33: no iframe)
    expect(player).to_have_class(re.compile("present"), timeout=30_000)
    page.wait_for_timeout(800)  # the player fits its figure to the screen after layout
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.get_attribute("data-collapsed") == "true", "presentation mode folds the sidebar away"
    assert _one_line(page, '[data-testid="stMain"] h1'), page.locator("h1").first.inner_text()
    shown = {"caption": player.locator("[data-sv-caption]"), "chips": player.locator("[data-sv-rows] .row").last,
             "table": player.locator("[data-sv-rows] table").last}
    for what, loc in shown.items():
        box = loc.bounding_box()  # page coordinates
        assert box and box["height"] > 0 and 0 <= box["y"] and box["y"] + box["height"] <= H, (what, box)
    figure = player.locator("[data-sv-img]").bounding_box()
    assert figure and figure["y"] < H and figure["height"] > 40, figure
    page.screenshot(path=str(screenshot_dir / f"present_first_screen_{path}_{lang}.png"))
    # Opened again (its arrow), the sidebar is narrow, and stays open across a rerun (changing the language).
    page.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button').first.click()
    expect(sidebar).to_have_attribute("data-collapsed", "false")
    page.wait_for_timeout(400)
    assert sidebar.bounding_box()["width"] <= 250
    sidebar.get_by_text("English" if lang == "zh" else "简体中文").click()
    wait_for_app(page, timeout=180_000)
    page.wait_for_timeout(400)
    assert sidebar.get_attribute("data-collapsed") == "false"
    # (the page is closed, and what it left in the context cleared, by the ``context`` fixture)
