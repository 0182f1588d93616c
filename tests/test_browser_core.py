"""Browser tests (Playwright on Debian's chromium) for the core pages: overview, tree builder,
greedy accept, batch & KV commit, against ``streamlit run app.py`` (fixture ``app_server``).

Each page loads without an exception and its tree SVG renders; on the greedy page the step
buttons advance the walk and the displayed accept_index fills in as the running example says
(§0: [-1, -1, -1] -> [0, -1, -1] -> ... -> [0, 1, 3]). A projector-sized screenshot of every
page is saved under artifacts/screenshots/ for a person to look at.
"""
from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect  # noqa: E402

from tests.conftest import wait_for_app  # noqa: E402


def _no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


def _tree_svg(page, k: int = 0):
    svg = page.locator('.sv-graph svg, [data-testid="stGraphVizChart"] svg').nth(k)
    svg.wait_for(timeout=30_000)
    return svg


def _press(page, label: str) -> None:
    page.get_by_role("button", name=label, exact=True).first.click()
    wait_for_app(page)


def _accept_index_text(page) -> str:
    """The live accept_index line of the greedy page: `accept_index[0] = [...]`."""
    return page.get_by_text(re.compile(r"accept_index\[0\] = \[")).first.inner_text()


@pytest.mark.exhaustive
def test_overview_page(page, open_page, screenshot_dir):
    open_page(page, "")
    _no_exception(page)
    expect(page.get_by_text("The Accept stage of speculative decoding").first).to_be_visible()
    loop = _tree_svg(page, 0)
    expect(loop).to_contain_text("Target Verify")
    tree = _tree_svg(page, 1)
    expect(tree.locator("g.node")).to_have_count(6)  # R A B C D + the bonus X
    expect(page.get_by_text("Greedy accept").first).to_be_visible()  # a page link
    page.screenshot(path=str(screenshot_dir / "overview.png"))


@pytest.mark.exhaustive
def test_tree_builder_page(page, open_page, screenshot_dir):
    open_page(page, "tree_builder")
    _no_exception(page)
    svg = _tree_svg(page)
    expect(svg.locator("g.node:not(.svkey)")).to_have_count(5)  # the arrow key under the tree is not a node
    expect(svg).to_contain_text("first child")
    mask = page.locator(".sv-graph svg").nth(1)  # the tree mask, drawn by the server as a grid
    expect(mask.locator("rect title")).to_have_count(25)  # one hover per cell of the 5x5 mask
    expect(mask.locator("text", has_text="✓")).to_have_count(11)  # itself, and R for 4 nodes, A for 2
    page.screenshot(path=str(screenshot_dir / "tree_builder.png"))
    # Add a child under the selected node (A): the tree grows to 6 nodes.
    page.get_by_role("button", name=re.compile("Add child")).first.click()
    wait_for_app(page)
    _no_exception(page)
    expect(_tree_svg(page).locator("g.node:not(.svkey)")).to_have_count(6)
    page.screenshot(path=str(screenshot_dir / "tree_builder_added_child.png"))


def _player(page):
    """The step player (an iframe): every frame is in the browser, stepping needs no server."""
    player = page.locator(".sv-player").first
    player.locator("[data-sv-step]").wait_for(timeout=30_000)
    return player


def _player_ai(player) -> str:
    return player.get_by_text(re.compile(r"accept_index\[0\] = \[")).first.inner_text()


@pytest.mark.exhaustive
def test_greedy_steps_fill_accept_index(page, open_page, screenshot_dir):
    open_page(page, "greedy")
    _no_exception(page)
    player = _player(page)
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 0/"))
    assert _player_ai(player).endswith("[-1, -1, -1]")
    page.screenshot(path=str(screenshot_dir / "greedy_step0.png"))
    player.locator('[data-sv-btn="next"]').click()  # start: the root row goes in first
    assert _player_ai(player).endswith("[0, -1, -1]")
    for _ in range(3):  # visit A, compare, accept A
        player.locator('[data-sv-btn="next"]').click()
    assert _player_ai(player).endswith("[0, 1, -1]")
    page.screenshot(path=str(screenshot_dir / "greedy_step4.png"))
    player.locator('[data-sv-btn="last"]').click()
    assert _player_ai(player).endswith("[0, 1, 3]")
    expect(player.locator("[data-sv-caption]")).to_contain_text("accept_token_num = 2")
    page.screenshot(path=str(screenshot_dir / "greedy_final.png"))
    player.locator('[data-sv-btn="back"]').click()
    assert _player_ai(player).endswith("[0, 1, 3]")  # the terminal step writes no accept_index slot
    _no_exception(page)


@pytest.mark.exhaustive
def test_greedy_keyboard_steps_without_a_rerun(page, open_page):
    """→ / ← anywhere on the page step the player; space plays at its labelled speed; no rerun per step
    (the step reaches the server as the component's state once the viewer stops: a rerun per stop)."""
    open_page(page, "greedy")
    player = _player(page)
    runs = page.evaluate("""() => { window.__runs = 0; const app = document.querySelector('[data-testid="stApp"]');
        new MutationObserver(() => { if (app.getAttribute('data-test-script-state') === 'running') window.__runs++; })
          .observe(app, {attributes: true}); return 0; }""")
    page.locator("h1").first.click()  # focus on the app page itself, outside the player
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 4/"))
    page.keyboard.press("ArrowLeft")
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 3/"))
    player.locator("[data-sv-speed]").select_option("4")
    page.locator("h1").first.click()
    total = int(re.search(r"/(\d+)", player.locator("[data-sv-step]").inner_text()).group(1))
    t0 = page.evaluate("performance.now()")
    page.keyboard.press(" ")  # play from step 3 to the end (it stops there)
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(rf"^Step {total}/{total}"), timeout=10_000)
    rate = (total - 3) / ((page.evaluate("performance.now()") - t0) / 1000)
    assert rate > 2.0, rate  # about 4 steps/s (a loaded CI machine may lag; a server round trip per step would not keep up)
    # 8 key steps and a play of several steps: one run for the stop at step 3 (sent when the page was
    # clicked), at most one for the stop at the end; none per step.
    assert runs == 0 and page.evaluate("window.__runs") <= 2


@pytest.mark.exhaustive
def test_greedy_play_advances(page, open_page):
    open_page(page, "greedy")
    player = _player(page)
    player.locator('[data-sv-btn="play"]').click()
    expect(player.get_by_text(re.compile(r"accept_index\[0\] = \[0, 1, 3\]"))).to_be_visible(timeout=40_000)
    _no_exception(page)


@pytest.mark.exhaustive  # presentation mode stays in the default run through test_browser_player_corners' caption test
def test_presentation_mode_folds_editing_and_enlarges_text(page, open_page, screenshot_dir):
    open_page(page, "greedy")
    assert page.get_by_text("Target prediction at each node").first.is_visible()
    page.locator('[data-testid="stSidebar"]').get_by_text("Presentation mode").click()
    wait_for_app(page)
    page.wait_for_timeout(500)
    player = _player(page)
    expect(player).to_have_class(re.compile("present"))
    # The editing controls are folded into a closed expander; the selects are not shown.
    assert not page.get_by_role("combobox", name=re.compile(r"Target\(A\)")).first.is_visible()
    size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('h1')).fontSize)")
    assert size >= 40, size
    page.keyboard.press("ArrowRight")
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 1/"))
    page.screenshot(path=str(screenshot_dir / "greedy_presentation.png"))


@pytest.mark.exhaustive
def test_batch_kv_page(page, open_page, screenshot_dir):
    open_page(page, "batch_kv")
    _no_exception(page)
    svg = _tree_svg(page)
    expect(svg.locator("g.node")).to_have_count(12)  # two requests of 5 nodes + their bonus nodes
    expect(page.get_by_text("accept_index = [[0, 1, 3], [5, 6, 9]]")).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "batch_kv.png"))
    page.get_by_text("Show the wrong way").click()
    wait_for_app(page)
    expect(page.get_by_text(re.compile("Keyed by outputs")).first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "batch_kv_wrong_way.png"))


@pytest.mark.exhaustive
def test_language_switch_survives_page_change(page, open_page, screenshot_dir):
    open_page(page, "greedy")
    page.get_by_text("简体中文").click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="贪心接受").first).to_be_visible()
    page.get_by_role("link", name="构建验证树").first.click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="构建验证树").first).to_be_visible()
    page.screenshot(path=str(screenshot_dir / "tree_builder_zh.png"))


@pytest.mark.exhaustive
def test_load_a_64_node_scenario_file(page, open_page, screenshot_dir, tmp_path):
    """Load scenario JSON through the sidebar: a 64-node EAGLE tree (benchmarks/bench_pages.py)."""
    from benchmarks.bench_pages import scenarios

    path = tmp_path / "tree_64.json"
    path.write_text(scenarios()["64-node tree"]["tree"].to_json())
    open_page(page, "greedy")
    page.get_by_text("Scenario: load / save").click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(path))
    wait_for_app(page)
    page.wait_for_timeout(500)
    wait_for_app(page)
    _no_exception(page)
    player = _player(page)
    player.locator('[data-sv-btn="last"]').click()
    assert _player_ai(player).endswith("[0, 1, 5, 21, 37, 53]")
    page.screenshot(path=str(screenshot_dir / "greedy_64_nodes.png"))
    page.get_by_role("link", name="Tree builder").first.click()
    wait_for_app(page)
    _no_exception(page)
    expect(_tree_svg(page).locator("g.node:not(.svkey)")).to_have_count(64)
    page.screenshot(path=str(screenshot_dir / "tree_builder_64_nodes.png"))
