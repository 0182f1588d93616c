"""Shareable links and export on the seven live pages (overview, tree builder, greedy, batch and KV,
chain sampling, target-only sampling, DSpark): a session's own link (the ``?s=`` value it writes
into st.query_params) opens a fresh session on the same scenario, step and language, showing the
same results; a malformed link is an st.error and the page still works; the export box is there.

Each sender below changes something away from the default (an edited scenario, a step in the
middle of the animation, the language, a toggle), so a link that dropped it would be caught.
Also: a plotly figure exports to PNG through kaleido, and (Playwright) a greedy link opened in a
fresh browser shows the sender's accept_index at the sender's step.
"""
from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path

import pytest

from specviz.app.ui.state import widget_key
from specviz.rooms.share import DEFAULT_PAGE
from streamlit.testing.v1 import AppTest

from tests.conftest import open_sidebar_boxes

from specviz.rooms.export import has_dot, kaleido_problem
from specviz.rooms.pitfalls import preset
from specviz.inputs.scenario import scenario_from_json
from specviz.rooms.share import decode_state
from tests.figures import graphs
from tests.player_read import players

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _edited_tree():
    """The running example with Target(A) = D instead of C: accept_index [0, 1, 4], outputs A D X."""
    data = json.loads(preset("running_example").to_json())
    data["name"] = "shared_tree"
    data["requests"][0]["target_predict"] = ["A", "D", "X", "X", "X"]
    return scenario_from_json(json.dumps(data))


def _edited_batch():
    """The two-request batch with request 1's root prediction missing both children."""
    data = json.loads(preset("batch_two_requests").to_json())
    data["name"] = "shared_batch"
    data["requests"][1]["target_predict"][0] = "X"
    return scenario_from_json(json.dumps(data))


def _start(page: str, slot: str | None = None, scenario=None, lang: str = "en") -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=TIMEOUT)
    if scenario is not None:
        at.session_state[f"sv_scn::{slot}"] = scenario.to_json()
    at.session_state["sv_lang"] = lang
    open_sidebar_boxes(at, {"pitfalls": "pitfall_export", "quiz": "quiz_export"}.get(page, f"{page}_export"))
    return _ok(at.run())


def _click(at: AppTest, key: str, times: int = 1) -> AppTest:
    for _ in range(times):
        _ok(at.button(key=key).click().run())
    return at


# page -> (slot, step key or None, sender: a session moved away from the defaults)
def _send_overview():
    return _start("overview", "tree", _edited_tree(), lang="zh")


def _send_tree_builder():
    at = _start("tree_builder", "tree", _edited_tree())
    return _ok(at.selectbox(key=widget_key("sv_sel::tree", at.session_state)).set_value(3).run())


def _send_greedy():
    # Stepping happens in the browser (the step player); the session's step is what a link carries.
    at = _start("greedy", "tree", _edited_tree(), lang="zh")
    at.session_state["sv_step::greedy"] = 3
    return _ok(at.run())


def _send_batch_kv():
    at = _start("batch_kv", "batch", _edited_batch())
    return _ok(at.toggle(key=widget_key("sv_wrong::batch", at.session_state)).set_value(True).run())


def _at_step(at: AppTest, key: str, back: int) -> AppTest:
    """Stepping happens in the browser (the step player); the session's step is what a link carries."""
    at.session_state[f"sv_step::{key}"] = at.session_state[f"sv_step::{key}"] - back
    return _ok(at.run())


def _send_chain_sampling():
    at = _click(_start("chain_sampling"), "w_chain_q3")  # u[0] = .7: the draft is rejected
    return _at_step(at, "chain", 2)


def _send_target_only():
    return _at_step(_start("target_only", "target_only", preset("thresholds_below_1")), "target_only", 3)


def _send_dspark():
    return _at_step(_start("dspark", "dspark", preset("dspark_sampling")), "dspark", 2)


PAGES = {
    "overview": ("tree", None, _send_overview),
    "tree_builder": ("tree", None, _send_tree_builder),
    "greedy": ("tree", "greedy", _send_greedy),
    "batch_kv": ("batch", None, _send_batch_kv),
    "chain_sampling": ("chain", "chain", _send_chain_sampling),
    "target_only": ("target_only", "target_only", _send_target_only),
    "dspark": ("dspark", "dspark", _send_dspark),
}


def _token(at: AppTest) -> str:
    token = at.query_params["s"]
    return token[0] if isinstance(token, list) else token


def _without_template(spec: str) -> dict:
    """A plotly spec without layout.template: whether Streamlit's theme template is baked into the
    figure (and an empty layout.title) depends on st.cache_data hits (a cached copy vs a fresh
    figure), not on the inputs."""
    fig = json.loads(spec)
    layout = fig.get("layout", {})
    layout.pop("template", None)
    fig["layout"] = {k: v for k, v in layout.items() if v != {}}  # the template path also leaves title: {}
    return fig


def shown(at: AppTest) -> list:
    """What the main area shows: figures, messages, chips and tables, metrics, raw tensors."""
    out = [("graphviz", g) for g in graphs(at)]
    out += [("plotly", _without_template(p.proto.spec)) for p in at.get("plotly_chart")]
    for kind in ("title", "header", "subheader", "info", "success", "warning", "error", "caption"):
        out += [(kind, e.value) for e in at.main.get(kind)]
    out += [("markdown", m.value) for m in at.main.markdown]
    out += [("code", c.value) for c in at.main.code]
    out += [("table", t.value.to_json()) for t in at.main.get("table")]  # the values (a Styler's id is random)
    out += [("dataframe", str(d.proto.data)) for d in at.main.get("arrow_data_frame")]
    out += [("prob_tables", e.proto.json or e.proto.mixed.json)  # the chain / target-only p and q tables (one element)
            for e in at.main.get("bidi_component") if e.proto.component_name == "specviz.prob_tables"]
    out += [("metric", m.label, m.value) for m in at.main.get("metric")]
    for data in players(at):  # the step player: its start step and what that frame shows
        out.append(("player", data["start"], data["frames"][data["start"]]))
    return out


@pytest.mark.parametrize("page", list(PAGES))
def test_link_round_trip(page):
    """state -> link value -> fresh session with ?s= -> same scenario, step, language and results."""
    slot, step_key, send = PAGES[page]
    sender = send()
    token = _token(sender)
    state = decode_state(token)
    assert state.page == page and state.slot == slot and state.step_key == step_key
    want_scenario = scenario_from_json(sender.session_state[f"sv_scn::{slot}"])
    assert state.scenario == want_scenario
    if step_key:
        assert 0 < state.step == sender.session_state[f"sv_step::{step_key}"], "the sender should sit mid-animation"
    # Read now: the player's frames live in a bounded per-process cache, and the receiver's run (and a parallel
    # test's) may evict the sender's entry before it is read.
    want_shown = shown(sender)

    fresh = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=TIMEOUT)
    fresh.query_params["s"] = token
    _ok(fresh.run())
    assert not [e.value for e in fresh.error if "link" in e.value], [e.value for e in fresh.error]
    assert scenario_from_json(fresh.session_state[f"sv_scn::{slot}"]) == want_scenario
    assert fresh.session_state["sv_lang"] == sender.session_state["sv_lang"]
    if step_key:
        assert fresh.session_state[f"sv_step::{step_key}"] == state.step
    assert shown(fresh) == want_shown
    assert _token(fresh) == token  # the receiver's own link is the same link


def test_link_keeps_page_inputs():
    """Besides the scenario and step: the selected node (tree builder) and the wrong-way toggle (batch)."""
    fresh = AppTest.from_file(str(ROOT / "pages" / "tree_builder.py"), default_timeout=TIMEOUT)
    fresh.query_params["s"] = _token(_send_tree_builder())
    _ok(fresh.run())
    assert fresh.session_state["sv_sel::tree"] == 3
    fresh = AppTest.from_file(str(ROOT / "pages" / "batch_kv.py"), default_timeout=TIMEOUT)
    fresh.query_params["s"] = _token(_send_batch_kv())
    _ok(fresh.run())
    assert fresh.session_state["sv_wrong::batch"] is True
    assert any("Keyed by outputs" in e.value for e in fresh.error)


def test_greedy_link_shows_the_senders_accept_index():
    """Hand-derived: Target(A) = D, three steps in: A accepted, C compared and missed, D compared;
    the fresh session shows the same partial accept_index chip row and narration."""
    if not has_dot():
        pytest.skip("the step player draws with Graphviz's dot, which is not installed here (apt-get install graphviz)")
    def view(at):  # the step player's frame at its start step: caption and value rows
        data = players(at)[0]
        return data["start"], data["frames"][data["start"]]

    sender = _send_greedy()
    want = view(sender)  # before the receiver runs: the frames live in a bounded per-process cache
    fresh = AppTest.from_file(str(ROOT / "pages" / "greedy.py"), default_timeout=TIMEOUT)
    fresh.query_params["s"] = _token(sender)
    _ok(fresh.run())
    assert view(fresh) == want
    assert view(fresh)[0] == 3


def _pack(obj) -> str:
    return base64.urlsafe_b64encode(zlib.compress(json.dumps(obj).encode())).decode().rstrip("=")


BAD_LINKS = {
    "garbage": "this is not a link!",
    "bad_scenario": _pack({"v": 1, "page": "greedy", "scenario": {"name": "x", "algorithm": "greedy"}}),
}


@pytest.mark.parametrize("bad", list(BAD_LINKS))
@pytest.mark.parametrize("page", list(PAGES))
def test_malformed_link_is_an_error_and_the_page_works(page, bad):
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=TIMEOUT)
    at.query_params["s"] = BAD_LINKS[bad]
    _ok(at.run())
    errors = [e.value for e in at.main.error]
    assert any("This link could not be loaded" in e and "**link" in e for e in errors), errors
    assert at.session_state["sv_lang"] == "en"
    assert at.title, "the page goes on after the error"
    assert decode_state(_token(at)).page == page  # and offers a working link of its own
    _ok(at.run())  # the next rerun no longer shows the error
    assert not any("This link could not be loaded" in e.value for e in at.error)


# page -> which figure exports it offers (graphviz "figure", plotly "chart") in its default state
EXPORTS = {"overview": {"figure"}, "tree_builder": {"figure", "chart"}, "greedy": {"figure"}, "batch_kv": {"figure"},
           "chain_sampling": {"figure", "chart"}, "target_only": {"figure", "chart"}, "dspark": {"chart"}}


@pytest.mark.parametrize("page", list(PAGES))
def test_export_and_share_boxes_in_the_sidebar(page):
    at = _start(page)
    sidebar = [d.label for d in at.sidebar.get("download_button")]
    want = ["Scenario JSON", "pytest file", "Animation (offline HTML)"]
    if "figure" in EXPORTS[page] and has_dot():
        want += ["Figure as SVG", "Figure as PNG"]
    if "chart" in EXPORTS[page]:
        want += (["Chart as SVG", "Chart as PNG"] if kaleido_problem() is None else []) + ["Chart as HTML (offline)"]
    assert [w for w in sidebar if w in want] == want, sidebar
    assert not [d for d in at.main.get("download_button") if d.label in want], "export belongs in the sidebar"
    expanders = [e.label for e in at.sidebar.get("expander")]
    assert any(x.startswith("Share this view") for x in expanders) and any(x.startswith("Export") for x in expanders)
    path = "" if page == DEFAULT_PAGE else page  # the first page is served at "/" only
    assert [c.value for c in at.sidebar.code if "?s=" in c.value] == [f"http://localhost:8501/{path}?s={_token(at)}"]


def test_dspark_sampling_exports_the_chain_figure():
    at = _start("dspark")
    _ok(at.radio(key="w_ds_mode").set_value("sampling").run())
    labels = [d.label for d in at.sidebar.get("download_button")]
    assert ("Figure as SVG" in labels) == has_dot() and "Chart as PNG" not in labels


@pytest.mark.skipif(not has_dot(), reason="needs Graphviz's dot: apt-get install -y graphviz")
def test_greedy_figure_export_is_the_tree_at_the_current_step(monkeypatch):
    """The deferred SVG / PNG callables draw the DOT of the tree at the session's step (step 3:
    the root accepted, node 1 being compared)."""
    from specviz.app.ui import share_ui

    given = {}
    real = share_ui.sidebar_controls

    def spy(*args, **kwargs):
        given.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(share_ui, "sidebar_controls", spy)
    _send_greedy()
    dot = given["dot"]
    assert "n1 [" in dot and "#56B4E9" in dot  # node 1 drawn in the "compared" colour at step 3
    svg = share_ui._dot_file(dot, "svg")()
    assert b"<svg" in svg
    assert share_ui._dot_file(dot, "png")().startswith(PNG_SIGNATURE)
    html = share_ui._animation_file(preset("running_example").to_json(indent=None), "zh")()
    assert html.startswith("<!DOCTYPE html>") and "<script" in html


@pytest.mark.exhaustive
def test_plotly_figure_exports_to_png():
    """kaleido (>= 1.0) drives the system Chromium: PNG bytes, and SVG text, of a page's chart."""
    why = kaleido_problem()
    if why is not None:
        pytest.skip(why)
    from specviz.rooms.export import figure_to_png, figure_to_svg
    from specviz.render import sampling_charts as sc
    from specviz.app.ui import share_ui

    fig = sc.accept_test_figure(0.3, 0.6, 0.7, token="A", accepted=False)
    png = figure_to_png(fig)
    assert png.startswith(PNG_SIGNATURE) and len(png) > 2000
    assert b"<svg" in figure_to_svg(fig)[:400]
    assert "<html>" in share_ui._figure_file(fig, "html")()[:100]  # the buttons' deferred callables


# -- in a real browser -----------------------------------------------------------------------------

def _accept_index_text(page) -> str:
    return page.get_by_text(re.compile(r"^accept_index\[0\] = \[")).first.inner_text().strip()


@pytest.mark.exhaustive
def test_greedy_link_in_a_fresh_browser(page, browser, open_page, screenshot_dir):
    """Step to the middle of the greedy walk, copy the sidebar's link, open it in a fresh browser
    context (no shared session): the same step and the same accept_index show."""
    pytest.importorskip("playwright")
    from playwright.sync_api import expect

    from tests.conftest import VIEWPORT, wait_for_app

    open_page(page, "")  # the router first (a fresh server's first deep link skips app.py)
    open_page(page, "greedy")
    player = page.locator(".sv-player").first
    for _ in range(4):
        player.locator('[data-sv-btn="next"]').click()
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"^Step 4/\d+"))
    step_text = player.locator("[data-sv-step]").inner_text()
    sent = player.locator("[data-sv-rows]").inner_text()
    player.locator('[data-sv-btn="link"]').click()
    url = player.locator("[data-sv-link]").input_value()
    assert "/greedy?s=" in url and decode_state(url.split("?s=", 1)[1]).step == 4
    page.screenshot(path=str(screenshot_dir / "share_greedy_sender.png"))

    context = browser.new_context(viewport=VIEWPORT)
    try:
        fresh = context.new_page()
        fresh.goto(url, wait_until="domcontentloaded")
        wait_for_app(fresh)
        assert fresh.locator('[data-testid="stException"]').count() == 0
        got = fresh.locator(".sv-player").first
        expect(got.locator("[data-sv-step]")).to_have_text(step_text)
        assert got.locator("[data-sv-rows]").inner_text() == sent
        fresh.screenshot(path=str(screenshot_dir / "share_greedy_receiver.png"))
    finally:
        context.close()


@pytest.mark.exhaustive
def test_chart_png_download_in_the_browser(page, open_page, tmp_path):
    """The sidebar's "Chart as PNG" builds the image on the server when clicked (kaleido, ~2 s) and
    the browser receives a PNG; the page itself never waited for it."""
    why = kaleido_problem()
    if why is not None:
        pytest.skip(why)
    from tests.conftest import wait_for_app

    open_page(page, "")
    open_page(page, "chain_sampling")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text(re.compile("Export")).first.click()
    wait_for_app(page)
    button = sidebar.get_by_role("button", name=re.compile("Chart as PNG"))
    button.wait_for(timeout=15_000)
    # ~2 s on an idle machine; a heavily loaded one has taken over a minute to start kaleido's Chromium.
    with page.expect_download(timeout=120_000) as info:
        button.click()
    path = tmp_path / "chart.png"
    info.value.save_as(path)
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    assert info.value.suggested_filename.endswith("_chart.png")


def test_chart_export_builds_its_figure_only_when_a_file_is_built():
    """Pages pass a builder for the exported chart: a rerun does no plotly work; a click builds it."""
    from specviz.render import sampling_charts as sc
    from specviz.app.ui import share_ui

    calls = []

    def build():
        calls.append(1)
        return sc.residual_figure(["A", "B"], [0.6, 0.4], [0.3, 0.7], coin_final=0.2, chosen=0)

    deferred = share_ui._figure_file(build, "html")
    assert calls == []
    assert "<html>" in deferred()[:100] and calls == [1]
