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


def _parents(at) -> dict:
    """Widget key -> the block it sits in directly (its proto), over the whole element tree."""
    out = {}

    def walk(node, parent):
        for child in (node.children.values() if isinstance(node.children, dict) else node.children):
            key = getattr(child, "key", None)
            if key is not None:
                out[key] = parent
            if getattr(child, "children", None) is not None:
                walk(child, child)

    walk(at._tree, None)
    return out


@pytest.mark.parametrize("page, keys", [
    ("chain_sampling", ["w_chain_tok1", "w_chain_seed", "w_chain_rand", "w_chain_q1", "w_chain_q2", "w_chain_q3", "w_chain_add", "w_chain_del",
                        "w_chain_norm", "w_chain_sem", "w_chain_ptext::1", "w_chain_qtext::1"]),
    ("target_only", ["w_to_seed", "w_to_rand"]),
    ("dspark", ["w_ds_add", "w_ds_del"]),
    ("greedy", ["w_q_first", "w_q_last", "w_q_root"]),  # the quick picks of Target(A)
])
def test_rows_of_widgets_are_one_horizontal_block_not_columns(page, keys):
    """A row of k st.columns is k + 1 blocks, sent and drawn on every edit that reruns it (the coin box's
    rows rerun with every coin edit): each row is one horizontal container."""
    from streamlit.proto.Block_pb2 import Block

    at = _page(page)
    at.session_state["w_chain_text_open"] = True  # the chain's p/q text boxes are drawn only while open
    at.run()
    assert not at.exception
    parents = _parents(at)
    for key in keys:
        block = parents[key].proto
        assert block.WhichOneof("type") == "flex_container", (key, block.WhichOneof("type"))
        assert block.flex_container.direction == Block.FlexContainer.Direction.HORIZONTAL, key
    rows = {id(parents[k]) for k in keys}
    assert len(rows) < len(keys)  # widgets share their rows


def test_target_only_fixed_section_is_not_sent_again_by_an_edit(app_server):
    """Section 4 (fixed words) is drawn by the page, not by the scenario's fragment: a threshold edit's
    fragment run does not send it again, and it stays on the page (a full run draws it)."""
    pytest.importorskip("websockets")
    from tests.support.st_protocol import run_in_thread, tab

    def drawn(a) -> dict:
        """The headings, the sliders (label -> id, fragment, value) and how many errors one answer drew."""
        return {"headings": [h.body for h, _ in a.elements("heading")],
                "sliders": {s.label: (s.id, frag, list(s.value)) for s, frag in a.elements("slider")},
                "errors": len(a.exceptions) + len(a.errors)}

    async def go():
        async with tab(app_server) as t:
            first = drawn(await t.rerun("target_only"))
            sid, frag, _ = first["sliders"]["threshold_acc"]
            edit = drawn(await t.rerun("target_only", fragment=frag, widgets={sid: ("double_array_value", [0.7])}))
            return first, edit, frag

    first, edit, frag = run_in_thread(go(), 180)
    fixed = "4. Why this is not classic p/q rejection"
    assert fixed in first["headings"] and not first["errors"]
    assert not edit["errors"] and edit["sliders"]["threshold_acc"][1] == frag  # the edit was drawn by its fragment
    assert "2. The end state" in edit["headings"]
    assert fixed not in edit["headings"], "the fixed section was sent again by a fragment run"


def test_dspark_lengths_are_one_horizontal_block():
    from streamlit.proto.Block_pb2 import Block

    at = _page("dspark")
    at.run()
    assert not at.exception
    found = []

    def walk(node):
        kids = list(node.children.values()) if isinstance(node.children, dict) else list(node.children)
        metrics = [c for c in kids if getattr(c, "type", None) == "metric"]
        if metrics:
            found.append((node.proto, [m.label for m in metrics]))
        for c in kids:
            if getattr(c, "children", None) is not None:
                walk(c)

    walk(at._tree)
    (block, labels), = found
    assert labels == ["correct_len", "bonus", "commit_lens", "new_seq_lens", "cap_trim_lens"]
    assert block.WhichOneof("type") == "flex_container" and block.flex_container.direction == Block.FlexContainer.Direction.HORIZONTAL
