"""Browser test: the Decoding loop page in chromium, English and 简体中文, screenshots at 1280x720 and 1920x1080."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect  # noqa: E402

from tests.conftest import wait_for_app  # noqa: E402


@pytest.mark.exhaustive
@pytest.mark.parametrize("width,height", [(1280, 720), (1920, 1080)])
def test_decoding_loop_page_screenshots(page, open_page, screenshot_dir, width, height):
    page.set_viewport_size({"width": width, "height": height})
    open_page(page, "")                 # the router first (a fresh server's first deep link skips app.py)
    open_page(page, "decoding_loop")
    expect(page.get_by_role("heading", name="Decoding loop").first).to_be_visible(timeout=60_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    player = page.locator(".sv-player").first      # rounds step in the browser
    expect(player.locator("[data-sv-img]")).to_have_attribute("src", re.compile("^data:image/svg"), timeout=60_000)
    expect(player.locator("[data-sv-img2]")).to_have_attribute("src", re.compile("^data:image/svg"))  # the tree mask
    # The timeline is SVG drawn on the server (the page loads no plotly script): tau labelled, a hover per bar,
    # no taller than 380 px, its round numbers readable.
    timeline = page.locator(".sv-graph svg").filter(has_text="τ = ").first
    expect(timeline).to_be_visible()
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0
    box = timeline.bounding_box()
    assert box["height"] <= 381 and box["width"] <= width, box
    assert timeline.locator("rect title").filter(has_text="bonus").count() == 16  # one bonus bar per round (default 16)
    label = timeline.locator("text", has_text="τ = ").first.bounding_box()
    assert label["height"] >= 12 and label["x"] + label["width"] <= box["x"] + box["width"] + 1, (label, box)
    page.screenshot(path=str(screenshot_dir / f"decoding_loop_{width}x{height}.png"))
    player.locator("[data-sv-step]").scroll_into_view_if_needed()
    runs = page.evaluate("document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state')")
    player.locator('[data-sv-btn="next"]').click()                       # next round
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 1/"))
    expect(player.locator("[data-sv-caption]")).to_contain_text("Round 1:")
    page.keyboard.press("ArrowRight")                                    # the keys step it too
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 2/"))
    assert runs == "notRunning" and page.locator('[data-testid="stStatusWidget"]').count() == 0
    page.screenshot(path=str(screenshot_dir / f"decoding_loop_round1_{width}x{height}.png"))
    page.get_by_role("heading", name="Acceptance metrics").first.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / f"decoding_loop_metrics_{width}x{height}.png"))
    page.get_by_text("简体中文").click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="解码循环").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / f"decoding_loop_zh_{width}x{height}.png"))
    # Scrolled down: the proofs and the metrics.
    page.get_by_text("证明（实时）").first.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / f"decoding_loop_zh_proofs_{width}x{height}.png"))
