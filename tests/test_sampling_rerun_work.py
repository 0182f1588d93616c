"""What a rerun of the sampling pages (chain, target-only, DSpark) redoes, and what it keeps (issue 31):
a rerun whose scenario, backend and language did not change reuses the step player's packed frames."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.player_read import players

ROOT = Path(__file__).resolve().parents[1]


def _page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=120)
    at.session_state["sv_lang"] = "en"
    return at


@pytest.mark.parametrize("page", ["chain_sampling", "target_only", "dspark"])
def test_a_rerun_with_the_same_scenario_does_not_lay_out_the_player_again(page, monkeypatch):
    from specviz.app.ui import player

    calls = []
    real = player.laid_out
    monkeypatch.setattr(player, "laid_out", lambda frames, **kw: calls.append(len(frames)) or real(frames, **kw))
    player._PAYLOADS.clear()
    at = _page(page)
    at.run()
    assert not at.exception
    first = players(at)
    assert len(calls) == 1
    at.run()  # nothing changed: the same scenario, backend and language
    assert not at.exception
    assert len(calls) == 1, "the player's frames were laid out, serialised and packed again"
    assert players(at) == first
    at.session_state["sv_lang"] = "zh"  # another language: other captions, laid out anew
    at.run()
    assert not at.exception
    assert len(calls) == 2 and players(at) != first


def test_a_chain_coin_edit_still_sends_the_new_walk():
    at = _page("chain_sampling")
    at.run()
    before = players(at)[0]
    for button in ("w_chain_q1", "w_chain_q3"):  # u[0] = .4: the draft is accepted; .7: rejected
        at.button(key=button).click().run()
        assert not at.exception
        after = players(at)[0]
        assert after["frames"] != before["frames"], button
        before = after
