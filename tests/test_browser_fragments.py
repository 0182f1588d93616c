"""An edit reruns the page's scenario fragment, not the page, and nothing on screen is left behind
(chromium, a live server).

The editing pages draw everything that depends on the scenario in one ``st.fragment`` (issue 20,
goal 5): a widget drawn there reruns that function only. These tests watch the websocket: the
edit's rerun request names a fragment, and no full-page message (navigation) comes back. Then they
check what a fragment rerun could leave stale: the share box in the sidebar (drawn by the fragment
into the sidebar) and the address bar both hold the edited scenario, and a full rerun afterwards (the
language) redraws the fragment's content in the new language.
"""
from __future__ import annotations

import re

import pytest

from specviz.rooms.share import QUERY_KEY, decode_state
from tests.conftest import wait_for_app
from tests.support.st_protocol import back_msg, forward_msg
from tests.test_browser_clicks import _pick, _scenario, _settled, _wait_scenario


def _watch(page) -> dict:
    """Record the rerun requests the browser sends and the kinds of messages it receives."""
    seen = {"reruns": [], "received": []}

    def sent(payload):
        if isinstance(payload, (bytes, bytearray)):
            bm = back_msg(payload)
            if bm.WhichOneof("type") == "rerun_script":
                seen["reruns"].append(bm.rerun_script.fragment_id)

    def received(payload):
        if isinstance(payload, (bytes, bytearray)):
            seen["received"].append(forward_msg(payload).WhichOneof("type"))

    page.on("websocket", lambda ws: (ws.on("framesent", sent), ws.on("framereceived", received)))
    return seen


def _share_box_link(page) -> str:
    box = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]').filter(has_text=re.compile("Share this view|分享此视图"))
    if not box.locator("code").count():
        box.locator("summary").first.click()
        wait_for_app(page)
    return box.locator("code").first.inner_text().strip()


def _edit_target_a(page, s0):
    new = [v for v in s0.vocab if v != s0.requests[0].target_predict[1]][0]
    _pick(page, r"Target\(A\)", new)
    return lambda s: s.requests[0].target_predict[1] == new


def _add_child(page, s0):
    page.get_by_role("button", name=re.compile("Add child|添加子节点")).first.click()
    return lambda s: s.tree(0).n == s0.tree(0).n + 1


def _coin_step(page, s0):
    from specviz.base.limits import COIN_STEP

    u0 = float(s0.requests[0].coins[0])
    thumb = page.locator('[data-testid="stSlider"]').filter(has_text="u[0]").locator('[tabindex="0"]').first
    thumb.focus()
    page.keyboard.press("ArrowLeft" if u0 > 0.5 else "ArrowRight")
    want = round(u0 + (-COIN_STEP if u0 > 0.5 else COIN_STEP), 6)
    return lambda s: round(float(s.requests[0].coins[0]), 6) == want


@pytest.mark.parametrize("path, edit, zh_text", [
    ("greedy", _edit_target_a, "遍历过程"),
    ("tree_builder", _add_child, "添加子节点"),
    ("chain_sampling", _coin_step, "输入"),
])
def test_an_edit_reruns_the_fragment_and_the_sidebar_link_follows(page, open_page, path, edit, zh_text):
    seen = _watch(page)
    _settled(page, path, open_page)
    _share_box_link(page)  # the share box open before the edit: it must follow the edit
    s0 = _wait_scenario(page, lambda s: True)
    seen["reruns"].clear()
    seen["received"].clear()
    done = edit(page, s0)
    s1 = _wait_scenario(page, done)
    assert done(s1), f"the edit did not reach the scenario in the address bar on {path}"
    assert seen["reruns"] and all(seen["reruns"]), f"{path}: an edit's rerun request named no fragment: {seen['reruns']}"
    assert "navigation" not in seen["received"], f"{path}: the edit reran the whole page"
    link = _share_box_link(page)
    token = re.search(rf"[?&]{QUERY_KEY}=([^&\s]+)", link).group(1)
    assert done(decode_state(token).scenario), f"{path}: the share box still holds the scenario before the edit"
    assert link.endswith(page.url.split("?", 1)[1]), (link, page.url)
    # A full rerun (the language) draws the fragment again in the new language, with the edit kept.
    page.locator('[data-testid="stSidebar"] label').filter(has_text="简体中文").first.click()
    wait_for_app(page)
    page.wait_for_function("t => document.querySelector('[data-testid=\"stMain\"]').innerText.includes(t)", arg=zh_text,
                           timeout=30_000)
    assert done(_scenario(page))
    assert not page.locator('[data-testid="stException"]').count()
