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

from specviz.pitfalls import preset  # noqa: E402
from specviz.share import ShareState, encode_state  # noqa: E402


def _watch(page):
    dialogs, navigations = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("framenavigated", lambda f: navigations.append(f.url) if f == page.main_frame else None)
    return dialogs, navigations


def test_hostile_link_runs_no_script_in_the_live_app(page, app_server):
    dialogs, navigations = _watch(page)
    for path, slot, name in (("greedy", "tree", "running_example"), ("chain_sampling", "chain", "pq_example"),
                             ("dspark", "dspark", "dspark_chain"), ("tree_builder", "tree", "running_example"),
                             ("batch_kv", "batch", "batch_two_requests")):
        s = _relabel(preset(name), labels=LABELS, title=IFRAME, description=LONG_PAYLOADS[2] + LONG_PAYLOADS[1])
        token = encode_state(ShareState(page=path, slot=slot, scenario=s))
        page.goto(f"{app_server}/{path}?s={token}", wait_until="domcontentloaded")
        wait_for_app(page)
        page.wait_for_timeout(1500)  # a 0 s meta refresh or an onerror would have fired by now
        assert page.locator('[data-testid="stException"]').count() == 0
        main = page.locator('[data-testid="stMain"], [data-testid="stAppViewContainer"]').first
        # (the step player is an iframe of our own fixed page: its frames hold the labels as text only)
        assert main.locator("iframe[srcdoc]:not([data-testid='stIFrame']), img[src='x'], meta[http-equiv]").count() == 0, path
        for frame in page.frames[1:]:
            assert frame.locator("img[src='x'], meta[http-equiv], iframe").count() == 0, path
        for svg in main.locator(".sv-graph svg").all():  # a figure laid out on the server: labels as text only
            assert svg.locator("foreignObject, script, img, iframe").count() == 0, path
        assert page.url.startswith(f"{app_server}/{path}")
    assert dialogs == [], dialogs
    assert all(u.startswith(app_server) for u in navigations), navigations


def test_back_button_never_undoes_a_step(page, app_server):
    """The chain page steps in the browser (the step player): a step changes neither the address bar nor
    the browser's history, so Back has no step to undo and a rerun keeps the link's start step."""
    s = preset("pq_example")
    token = encode_state(ShareState(page="chain_sampling", slot="chain", scenario=s, step_key="chain", step=1))
    page.goto(f"{app_server}/chain_sampling?s={token}", wait_until="domcontentloaded")
    wait_for_app(page)
    player = page.frame_locator('[data-testid="stIFrame"]').first
    step = player.locator("[data-sv-step]")
    expect(step).to_have_text(re.compile(r"^Step 1/"), timeout=30_000)
    url, depth = page.url, page.evaluate("history.length")
    for want in (2, 3):
        player.locator('[data-sv-btn="next"]').click()
        expect(step).to_have_text(re.compile(rf"^Step {want}/"))
    assert page.url == url and page.evaluate("history.length") == depth
    assert page.locator('[data-testid="stException"]').count() == 0
