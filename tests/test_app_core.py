"""AppTest for the core pages: overview, tree builder, greedy accept, batch & KV commit.

Expected values are the running example's (SEMANTICS.md §0): root R has children A, B; A has
children C, D; rows 0..4 = R A B C D; the target predicts R->A, A->C, C->X; W = 3.

- Greedy walk: accept A (row 1), then C (row 3): accept_index [0, 1, 3].
- Target(A) = D instead of C: at level 2, C (row 3) misses, the walk moves to its next sibling D
  (row 4), which matches: accept_index [0, 1, 4].
- Root mismatch: the target at R predicts a token no child has: accept_index [0, -1, -1].
- Batch of two (preset batch_two_requests): request 1's rows are 5..9; it accepts B (row 6) and
  F (row 9): accept_index [[0, 1, 3], [5, 6, 9]].
"""
from __future__ import annotations


import json
import re

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from specviz.app.ui.state import widget_key
from specviz.render.svg import have_dot  # noqa: E402

NO_DOT = "the step player draws with Graphviz's dot, which is not installed here (apt-get install graphviz); pages fall back to the browser's graphviz chart"


from specviz.inputs.scenario import load_scenario  # noqa: E402
from tests.figures import graphs  # noqa: E402
from tests.player_read import players

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120
PAGES = ["pages/overview.py", "pages/tree_builder.py", "pages/greedy.py", "pages/batch_kv.py"]


def _page(path: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at) -> str:
    return "\n".join(str(m.value) for m in at.markdown)


def _player(at) -> dict:
    """The step player's data (every frame of the walk), as the page's rerun sent it."""
    found = players(at)
    assert found, "no step player on the page"
    return found[0]


def _accept_index_at(at, k: int | None = None) -> list[int]:
    """The player's live line `accept_index[0] = [...]` at frame k (default: the last frame)."""
    frames = _player(at)["frames"]
    rows = frames[len(frames) - 1 if k is None else k]["rows"]
    code = next(r["code"] for r in rows if r.get("code", "").startswith("accept_index[0] = "))
    return json.loads(code.split(" = ", 1)[1])


def _press(at, key: str) -> None:
    at.button(key=key).click().run()
    assert not at.exception, at.exception


def _target_box(at, label: str):
    return next(sb for sb in at.selectbox if sb.label.startswith(f"Target({label})"))


@pytest.mark.parametrize("path", PAGES)
def test_page_runs_without_exception_or_error(path):
    at = _page(path)
    assert not at.error, [e.value for e in at.error]
    # the badge: "agree" for what it compared, or (a CPU server) the backends it compares on request
    assert any("backends agree" in str(s.value) for s in at.success) or \
        any("Not compared yet" in str(c.value) for c in at.caption), "no backend badge"


def test_router_lists_the_core_pages_and_switches():
    at = _page("app.py")
    for path in PAGES:
        at.switch_page(path).run()
        assert not at.exception, (path, at.exception)
        assert not at.error, (path, [e.value for e in at.error])


# -- greedy accept ------------------------------------------------------------------------------

def test_greedy_running_example_final_accept_index():
    at = _page("pages/greedy.py")
    assert _accept_index_at(at) == [0, 1, 3]
    text = _texts(at)
    assert "num_correct_drafts = 2" in text and "accept_lens = 3" in text


def test_greedy_target_of_A_set_to_D_accepts_the_sibling():
    """Target(A) = D: C (row 3) misses, next sibling D (row 4) matches -> accept_index [0, 1, 4]."""
    at = _page("pages/greedy.py")
    _target_box(at, "A").select("D").run()
    assert not at.exception
    assert _accept_index_at(at) == [0, 1, 4]
    # The walk shows the miss and the move along retrieve_next_sibling (the player's captions).
    seen = [f["caption"] for f in _player(at)["frames"]]
    assert any("no match" in t for t in seen), seen
    assert any("Move to the next sibling, node 4" in t for t in seen), seen


def test_greedy_root_mismatch_quick_button():
    at = _page("pages/greedy.py")
    _press(at, "w_q_root")
    assert _accept_index_at(at) == [0, -1, -1]
    assert any("hold -1 (padding)" in str(w.value) for w in at.warning)


def test_greedy_player_frames_fill_accept_index_root_first():
    at = _page("pages/greedy.py")
    assert _player(at)["start"] == 0
    assert _accept_index_at(at, 0) == [-1, -1, -1]
    assert _accept_index_at(at, 1) == [0, -1, -1]  # the root row goes in first
    assert _accept_index_at(at, 3) == [0, -1, -1]  # visit A, compare
    assert _accept_index_at(at, 4) == [0, 1, -1]  # accept A


def test_greedy_player_starts_at_the_session_step():
    """A shared link's step sets sv_step::greedy: the player opens there."""
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=TIMEOUT)
    at.session_state["sv_step::greedy"] = 4
    at.run()
    assert _player(at)["start"] == 4


def test_greedy_edit_survives_a_page_switch():
    at = _page("app.py")
    at.switch_page("pages/greedy.py").run()
    _target_box(at, "A").select("D").run()
    at.switch_page("pages/overview.py").run()
    assert "Outputs **A D X**" in _texts(at)
    at.switch_page("pages/greedy.py").run()
    assert _target_box(at, "A").value == "D"


def test_greedy_in_chinese():
    at = _page("pages/greedy.py")
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("zh").run()
    assert not at.exception
    assert at.title[0].value == "贪心接受"


# -- tree builder -------------------------------------------------------------------------------

def _retrieve_table(at):
    return next(d.value for d in at.dataframe if "retrieve_next_token" in d.value.columns)


def test_tree_builder_add_child_changes_the_retrieve_table():
    """Select B (node 2, a leaf) and add a child: B's retrieve_next_token goes from -1 to the new node 5."""
    at = _page("pages/tree_builder.py")
    before = _retrieve_table(at)
    assert list(before["retrieve_next_token"]) == [1, 3, -1, -1, -1]
    assert list(before["retrieve_next_sibling"]) == [-1, 2, -1, 4, -1]
    at.selectbox(key=widget_key("sv_sel::tree", at.session_state)).select(2).run()
    _press(at, "w_add_child")
    after = _retrieve_table(at)
    assert len(after) == 6
    assert list(after["retrieve_next_token"]) == [1, 3, 5, -1, -1, -1]
    assert list(after["positions"]) == [10, 11, 11, 12, 12, 12]


def test_tree_builder_delete_and_reorder():
    at = _page("pages/tree_builder.py")
    at.selectbox(key=widget_key("sv_sel::tree", at.session_state)).select(1).run()  # A
    _press(at, "w_down")  # A after B: the root's children become B, A
    table = _retrieve_table(at)
    assert list(table.iloc[:, 1])[:3] == ["R", "B", "A"]
    _press(at, "w_delete")  # delete the selected subtree (A with C, D)
    table = _retrieve_table(at)
    assert list(table.iloc[:, 1]) == ["R", "B"]


EAGLE_TAB = ":material/account_tree: EAGLE rollout"  # the tab's label: its form is drawn only while it is open


def test_tree_builder_bad_rollout_names_the_field():
    at = AppTest.from_file(str(ROOT / "pages/tree_builder.py"), default_timeout=TIMEOUT)
    at.session_state["w_tree_tab"] = EAGLE_TAB
    at.run()
    assert not at.exception, at.exception
    box = next(t for t in at.text_input if t.label == "selected_index")
    box.set_value("0, 1, 2, 9")
    form_submit = [b for b in at.button if "Build the tree" in str(b.label)]
    form_submit[0].click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("selected_index" in e for e in errors), errors
    assert len(_retrieve_table(at)) == 5  # the tree is kept


def test_tree_builder_not_expressible_as_eagle():
    """Parents [-1, 0, 1, 0]: node 3 (depth 1) comes after node 2 (depth 2), so no rollout numbers it so."""
    at = AppTest.from_file(str(ROOT / "pages/tree_builder.py"), default_timeout=TIMEOUT)
    s = load_scenario(ROOT / "scenarios/running_example.json")
    data = s.model_dump(mode="json")
    data["requests"][0]["tree"] = {"parents": [-1, 0, 1, 0], "tokens": ["R", "A", "C", "B"]}
    data["requests"][0]["target_predict"] = ["A", "C", "X", "X"]
    at.session_state["sv_scn::tree"] = json.dumps(data)
    at.session_state["w_tree_tab"] = EAGLE_TAB
    at.run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("Not expressible as an EAGLE rollout:") and "depth" in w for w in warnings), warnings


def test_tree_builder_mask_modes():
    at = _page("pages/tree_builder.py")
    for mode in ("qlen_only", "qlen_only_bitpacking", "full_mask"):
        next(r for r in at.radio if r.label == "tree_mask_mode").set_value(mode).run()
        assert not at.exception
        assert not at.error, [e.value for e in at.error]
        masks = [g for g in graphs(at) if "→ column" in g]  # the mask grid: one hover per cell
        assert len(masks) == 1
        assert masks[0].count(": attends to (True)") == 11  # 5 nodes: itself (5) + ancestors (R for 4, A for 2)
    code = "\n".join(c.value for c in at.code)
    assert "[111111… ×10] 11010" in code  # C's row in full_mask: the prefix, then R, A and itself


# -- batch & KV ---------------------------------------------------------------------------------

def test_batch_global_rows_and_the_wrong_way():
    at = _page("pages/batch_kv.py")
    text = _texts(at)
    assert "accept_index = [[0, 1, 3], [5, 6, 9]]" in text
    assert "new_seq_lens = [13, 10]" in text
    at.toggle(key=widget_key("sv_wrong::batch", at.session_state)).set_value(True).run()
    assert not at.exception
    assert any("loses its root's KV" in e.value for e in at.error)
    tables = [t.value for t in at.table]
    wrong = [t for t in tables if any("wrong" in str(c) for c in t.columns)]
    assert len(wrong) == 2
    assert "X was never fed to the model" in " ".join(map(str, wrong[0].iloc[:, -1]))


def test_batch_add_request_pads_rows():
    at = _page("pages/batch_kv.py")
    _press(at, "w_add_req")
    assert "accept_index = [[0, 1, 3], [5, 6, 9], [10, 11, 14]]" in _texts(at)


def test_backend_selector_torch_agrees():
    at = _page("pages/greedy.py")
    at.selectbox(key=widget_key("sv_backend", at.session_state)).select("torch").run()
    assert not at.exception
    assert any("backends agree" in str(s.value) for s in at.success)


def test_tree_builder_vocabulary_add_and_empty_label_error():
    at = _page("pages/tree_builder.py")
    _press(at, "w_add_vocab")  # empty label
    assert any(e.value.startswith("**vocab**") for e in at.error), [e.value for e in at.error]
    at.text_input(key="w_new_vocab").set_value("Z").run()
    _press(at, "w_add_vocab")
    assert "Z" in at.selectbox(key=widget_key("sv_tok::tree", at.session_state)).options
    _press(at, "w_add_child")  # a child of A with token Z
    assert "Z" in list(_retrieve_table(at).iloc[:, 1])
