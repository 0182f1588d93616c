"""The live app in chromium with hostile input (issue 8, findings 1 and 10).

- A share link whose labels, title and description hold script-bearing HTML: on the greedy, chain,
  DSpark, tree builder and batch pages no dialog fires, no navigation happens and no iframe / img / meta from the data
  enters the page.
- Clicking ▶ and then the browser's Back button never takes the step back.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest  # noqa: E402

pytest.importorskip("playwright", reason="needs playwright (pip install -c constraints.txt -r requirements-dev.txt)")
from playwright.sync_api import expect

from conftest import wait_for_app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_hostile_inputs import IFRAME, LABELS, LONG_PAYLOADS, _relabel  # noqa: E402

from specviz.rooms.pitfalls import preset  # noqa: E402
from specviz.rooms.share import ShareState, encode_state, page_path  # noqa: E402


def _watch(page):
    dialogs, navigations = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("framenavigated", lambda f: navigations.append(f.url) if f == page.main_frame else None)
    return dialogs, navigations


SCRIPT_PAGES = (("greedy", "tree", "running_example"), ("chain_sampling", "chain", "pq_example"),
                ("dspark", "dspark", "dspark_chain"), ("tree_builder", "tree", "running_example"),
                ("batch_kv", "batch", "batch_two_requests"))


# All exhaustive (CI time): the default run keeps the exported animation's no-script check in chromium
# (tests/test_hostile_inputs.py) and the image/link check on the live greedy page.
@pytest.mark.parametrize("path,slot,name", [pytest.param(*p, marks=pytest.mark.exhaustive) for p in SCRIPT_PAGES],
                         ids=[p for p, _, _ in SCRIPT_PAGES])
def test_hostile_link_runs_no_script_in_the_live_app(page, app_server, path, slot, name):
    dialogs, navigations = _watch(page)
    s = _relabel(preset(name), labels=LABELS, title=IFRAME, description=LONG_PAYLOADS[2] + LONG_PAYLOADS[1])
    token = encode_state(ShareState(page=path, slot=slot, scenario=s))
    page.goto(f"{app_server}/{path}?s={token}", wait_until="domcontentloaded")
    wait_for_app(page)
    page.wait_for_timeout(1500)  # a 0 s meta refresh or an onerror would have fired by now
    assert page.locator('[data-testid="stException"]').count() == 0
    main = page.locator('[data-testid="stMain"], [data-testid="stAppViewContainer"]').first
    # (the step player is a component of our own module, in the page: its frames hold the labels as text only)
    assert main.locator("iframe, img[src='x'], meta[http-equiv]").count() == 0, path
    for img in main.locator(".sv-player img[src]").all():  # the player's figures: SVG images, nothing else
        assert img.get_attribute("src").startswith("data:image/svg+xml"), path
    for frame in page.frames[1:]:
        assert frame.locator("img[src='x'], meta[http-equiv], iframe").count() == 0, path
    for svg in main.locator(".sv-graph svg").all():  # a figure laid out on the server: labels as text only
        assert svg.locator("foreignObject, script, img, iframe").count() == 0, path
    assert page.url.startswith(f"{app_server}/{path}")
    assert dialogs == [], dialogs
    assert all(u.startswith(app_server) for u in navigations), navigations


@pytest.mark.exhaustive
def test_back_button_never_undoes_a_step(page, app_server):
    """The chain page steps in the browser (the step player): a step changes neither the address bar nor
    the browser's history, so Back has no step to undo and a rerun keeps the link's start step."""
    s = preset("pq_example")
    token = encode_state(ShareState(page="chain_sampling", slot="chain", scenario=s, step_key="chain", step=1))
    page.goto(f"{app_server}/chain_sampling?s={token}", wait_until="domcontentloaded")
    wait_for_app(page)
    player = page.locator(".sv-player").first
    step = player.locator("[data-sv-step]")
    expect(step).to_have_text(re.compile(r"^Step 1/"), timeout=30_000)
    url, depth = page.url, page.evaluate("history.length")
    for want in (2, 3):
        player.locator('[data-sv-btn="next"]').click()
        expect(step).to_have_text(re.compile(rf"^Step {want}/"))
    assert page.url == url and page.evaluate("history.length") == depth
    assert page.locator('[data-testid="stException"]').count() == 0


# ---------------------------------------------------------------------------------------------
# Issue 19, family 3: markdown images and links from a link (a tracking pixel, a phishing link)
# ---------------------------------------------------------------------------------------------

EVIL = "198.51.100.7"  # TEST-NET-2: never a real host; every request to it is aborted and counted
LINKY_LABELS = [f"![i](http://{EVIL}/L)", f"[c](http://{EVIL}/c)", f"http://{EVIL}/u", "www.evil.example", "a@evil.example",
                "<img src=//" + EVIL + "/t>"]
LINKY_TEXT = f"x![i](http://{EVIL}/N) see http://{EVIL}/desc and www.evil.example [here](http://{EVIL}/h)"
SCENARIO_PAGES = (("overview", "tree", "running_example"), ("greedy", "tree", "running_example"),
                  ("target_only", "target_only", "target_only_sampling"), ("chain_sampling", "chain", "pq_example"),
                  ("dspark", "dspark", "dspark_chain"), ("tree_builder", "tree", "running_example"),
                  ("batch_kv", "batch", "batch_two_requests"), ("audit", "audit", "running_example"))


def _linky(name: str):
    import json as _json

    from specviz.inputs.scenario import scenario_from_dict

    s = _relabel(preset(name), labels=LINKY_LABELS, title=LINKY_TEXT[:200], description=LINKY_TEXT)
    data = _json.loads(s.to_json())
    data["name"] = f"x![i](http://{EVIL}/N)"
    data["description_zh"] = LINKY_TEXT
    return scenario_from_dict(data)


@pytest.mark.parametrize("path,slot,name", [p if p[0] == "greedy" else pytest.param(*p, marks=pytest.mark.exhaustive)
                                            for p in SCENARIO_PAGES], ids=[p for p, _, _ in SCENARIO_PAGES])
def test_no_user_text_becomes_an_image_or_link_on_any_scenario_page(page, app_server, path, slot, name):
    """A link whose name, labels, title and description hold markdown images, links and bare URLs, on
    every scenario page in both languages: the browser requests nothing from another host, and no
    <a href> or <img> from that text enters the page (sidebar share caption, tables, captions)."""
    outside = []

    def on_request(req):
        host = req.url.split("://", 1)[-1].split("/", 1)[0].split(":")[0]
        if req.url.startswith(("data:", "blob:", "about:")) or host in ("127.0.0.1", "localhost"):
            return
        outside.append(req.url)

    page.on("request", on_request)
    page.route(re.compile(r"^https?://(?!127\.0\.0\.1|localhost).*"), lambda route: route.abort())
    for lang in ("en", "zh"):
        token = encode_state(ShareState(page=path, slot=slot, lang=lang, scenario=_linky(name)))
        page.goto(f"{app_server}{page_path(path)}?s={token}", wait_until="domcontentloaded", timeout=120_000)
        wait_for_app(page, timeout=180_000)
        page.wait_for_timeout(600)
        exc = page.locator('[data-testid="stException"]')
        assert exc.count() == 0, (lang, path, exc.first.inner_text()[:2000])
        for frame in page.frames:
            bad = frame.evaluate("""(evil) => [...document.querySelectorAll('a[href], img[src], image')]
                .map(e => [e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('xlink:href') || '',
                           (e.parentElement || e).outerHTML.slice(0, 300)])
                .filter(([u]) => u.includes(evil) || u.includes('evil.example') || /^(https?:)?\\/\\//.test(u) &&
                                 !/^(https?:)?\\/\\/(127\\.0\\.0\\.1|localhost)[:/]/.test(u) && !u.includes('w3.org'))""", EVIL)
            assert bad == [], (lang, path, bad)
        assert page.get_by_text("Page not found").count() == 0, (lang, path)
    assert outside == [], outside


def test_hostile_labels_in_the_player_component_stay_text(page, app_server):
    """The step player runs in the app's page (a Components v2 component, no iframe): with hostile labels,
    title and description it fires no dialog, loads no image but its own SVG figures, and shows every
    caption and chip of every frame exactly as the frames hold them (textContent, never markup)."""
    from specviz.replay.engine import run_scenario
    from specviz.replay.playframes import greedy_frames

    dialogs, navigations = _watch(page)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    s = _relabel(preset("running_example"), labels=LABELS, title=IFRAME, description=LONG_PAYLOADS[2] + LONG_PAYLOADS[1])
    token = encode_state(ShareState(page="greedy", slot="tree", scenario=s))
    page.goto(f"{app_server}/greedy?s={token}", wait_until="domcontentloaded")
    wait_for_app(page)
    player = page.locator(".sv-player").first
    expect(player.locator("[data-sv-step]")).to_have_text(re.compile(r"/\d+$"), timeout=30_000)
    frames = greedy_frames(s, run_scenario(s), "en")
    player.locator('[data-sv-btn="first"]').click()
    for k, f in enumerate(frames):
        if k:
            player.locator('[data-sv-btn="next"]').click()
        assert player.locator("[data-sv-caption]").text_content() == f.caption, k
        chips = [c.text_content() for c in player.locator("[data-sv-rows] .chip").all()]
        assert chips == [str(c[0]) for r in f.rows for c in r.chips if not isinstance(c, str)], k
    assert player.locator("iframe, script, meta, object, embed, a").count() == 0
    for img in player.locator("img[src]").all():
        assert img.get_attribute("src").startswith("data:image/svg+xml")
    page.wait_for_timeout(1000)  # an onerror or a 0 s refresh would have fired by now
    assert dialogs == [] and all(u.startswith(app_server) for u in navigations), (dialogs, navigations)
    assert all(u.startswith((app_server, "data:", "blob:")) for u in requests), [u for u in requests if not u.startswith(app_server)]
