"""The step player in the app is a Streamlit Custom Components v2 component (issue 33).

* A rerun sends the frames only when the browser does not hold them: an edit that changes the walk
  sends them (packed), a rerun that does not sends only ``{digest, start}``; no iframe, no v1 API.
* In chromium: the step the student stopped on survives a rerun that keeps the frames and a language
  switch (it used to jump to the last step), and the sidebar's export box names that step.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.player_read import players  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120


def _sent(at) -> dict:
    (el,) = [e for e in at.get("bidi_component") if e.proto.component_name == "specviz.player"]
    assert not el.proto.html_content and not el.proto.css_content  # the module comes from the app's server
    return json.loads(el.proto.json or el.proto.mixed.json)


def test_a_rerun_sends_the_frames_only_when_they_change():
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and not at.get("iframe")
    first = _sent(at)
    assert first["z"] and first["start"] == 0
    at.run()  # nothing changed: the digest alone
    again = _sent(at)
    assert again == {"digest": first["digest"], "start": 0}
    box = next(b for b in at.selectbox if b.label.startswith("Target(A)"))
    box.select("B" if box.value != "B" else "C").run()  # a new target prediction: a new walk
    edited = _sent(at)
    assert edited["digest"] != first["digest"] and edited["z"]
    assert players(at)[0]["frames"] != []
    # The loader is the component's only code: no scenario text, and no v1 component anywhere.
    el = next(e for e in at.get("bidi_component") if e.proto.component_name == "specviz.player")
    assert "/app/static/player_streamlit.js" in el.proto.js_content and len(el.proto.js_content) < 1200
    assert "/app/static/player.js" in el.proto.js_content and "/app/static/player.css" in el.proto.js_content  # preloaded


def test_no_v1_component_api_is_left():
    for path in list((ROOT / "specviz").rglob("*.py")) + list((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        text = path.read_text(encoding="utf-8")
        assert "components.v1" not in text and "declare_component" not in text and "st.iframe" not in text, path


def test_the_step_is_component_state_and_survives_language_and_reruns(page, open_page):
    """Chain player: stop on step 3, switch to 简体中文: still step 3 (it was 7/7), and the export box
    names the chain at step 3; a rerun that keeps the frames keeps the step too."""
    from playwright.sync_api import expect

    from tests.conftest import wait_for_app

    open_page(page, "chain_sampling")
    player = page.locator(".sv-player").first
    step = player.locator("[data-sv-step]")
    expect(step).to_have_text(re.compile(r"/\d+$"), timeout=30_000)
    total = int(step.inner_text().split("/")[1])
    assert total >= 4
    player.locator('[data-sv-btn="first"]').click()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(step).to_have_text(f"Step 3/{total}")
    page.wait_for_timeout(1300)  # the step goes to the server once the viewer stops on it (1 s)
    wait_for_app(page)
    expect(step).to_have_text(f"Step 3/{total}")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Export", exact=True).first.click()
    expect(sidebar.get_by_text(re.compile("The chain at step 3")).first).to_be_visible()
    sidebar.get_by_text("简体中文").first.click()
    wait_for_app(page)
    expect(player.locator("[data-sv-step]")).to_have_text(f"步骤 3/{total}")
    if not sidebar.get_by_text(re.compile("第 3 步的链")).count():  # the box, if it closed with the language
        sidebar.get_by_text("导出", exact=True).first.click()
        wait_for_app(page)
    expect(sidebar.get_by_text(re.compile("第 3 步的链")).first).to_be_visible()
    sidebar.get_by_text("English").first.click()
    wait_for_app(page)
    expect(player.locator("[data-sv-step]")).to_have_text(f"Step 3/{total}")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_an_edit_right_after_a_step_is_kept(page, open_page):
    """The step goes to the server a moment after the viewer stops; a click elsewhere sends it first, so
    the click's rerun is never followed by a step request carrying the widgets' old values (which
    Streamlit reads as an edit and which undid the click: seen 1 time in 4 before)."""
    from playwright.sync_api import expect

    from tests.conftest import wait_for_app

    open_page(page, "chain_sampling")
    player = page.locator(".sv-player").first
    step = player.locator("[data-sv-step]")
    expect(step).to_have_text(re.compile(r"/\d+$"), timeout=30_000)
    for _ in range(2):
        player.locator('[data-sv-btn="first"]').click()
        for _ in range(2):
            player.locator('[data-sv-btn="next"]').click()
        page.get_by_role("button", name=".4 accept", exact=True).first.click()  # at once, before the step is sent (1 s)
        wait_for_app(page)
        expect(page.get_by_text("Output this round: A B").first).to_be_visible(timeout=20_000)
        total = step.inner_text().split("/")[1]
        expect(step).to_have_text(f"Step {total}/{total}")  # new inputs open at their outcome
        page.get_by_role("button", name=".7 reject", exact=True).first.click()
        wait_for_app(page)
        expect(page.get_by_text("Output this round: B").first).to_be_visible(timeout=20_000)


def test_a_payload_asked_for_again_stays_readable_by_its_digest(monkeypatch):
    """A scenario asked for again and again (a class's default) is a hit by its inputs' key; its digest entry,
    which tests and benchmarks read the frames by (``data_of``), must stay as fresh, not be evicted behind it."""
    from specviz.app.ui import player

    monkeypatch.setattr(player, "_PAYLOADS", type(player._PAYLOADS)())
    monkeypatch.setattr(player, "_PAYLOADS_MAX", 4)
    monkeypatch.setattr(player, "laid_out", lambda frames, **kw: {"frames": list(frames)})
    kw = dict(speed=1.0, present=False, links=None, labels={})
    hot, _ = player._payload(["hot"], "hot", kw)
    for i in range(6):  # other scenarios come and go; the hot one is asked for between each
        player._payload([f"other{i}"], f"other{i}", kw)
        assert player._payload(["hot"], "hot", kw)[0] == hot
        assert player.data_of({"digest": hot, "start": 0}) is not None, i
