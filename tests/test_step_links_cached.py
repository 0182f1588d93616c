"""The player's per-step share links are encoded once per state (not on every rerun that did not change it),
and follow the scenario when it changes."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_step_links_encoded_once_per_state(monkeypatch):
    import specviz.rooms.share as share

    calls = []
    real = share._token  # every link's encoding (encode_state, encode_steps)

    def counting(d):
        calls.append(d["step"])
        return real(d)

    monkeypatch.setattr(share, "_token", counting)
    from specviz.app.ui import player

    player._LINKS.clear()  # another test may have drawn the same states in this process
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    first = len(calls)
    at.run()  # the same state again
    assert not at.exception, at.exception
    again = len(calls) - first
    assert again <= 2, f"a rerun with nothing changed encoded {again} links"  # the share box's own link, not one per step
    at.button(key="w_q_root").click().run()  # a new scenario: new links
    assert not at.exception, at.exception
    assert len(calls) - first - again >= 3
