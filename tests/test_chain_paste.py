"""Chain page, "Edit p and q as text" (issue 18 item 11): a refused paste is answered under the
"Apply the text" button that caused it (st.error naming the field), nowhere else; nothing is
applied, the user's other edits and typed text are kept; a good paste says it was applied and
clears the old error.
"""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from specviz.inputs.scenario import scenario_from_json

ROOT = Path(__file__).resolve().parents[1]
EXPANDER = "Edit p and q as text (paste rows: one row per line)"
OPEN = "w_chain_text_open"  # the box's key: its boxes and button are drawn only while it is open


def _scenario(at):
    return scenario_from_json(at.session_state["sv_scn::chain"])


def _box(at):
    return next(e for e in at.expander if e.label == EXPANDER)


def _areas(at):
    box = _box(at)
    p = next(t for t in box.text_area if t.label == "target_probs (p)")
    q = next(t for t in box.text_area if t.label == "draft_probs (q)")
    return p, q


def open_text_box(at):
    """Open "Edit p and q as text" for the next run, as a user's click on it does."""
    at.session_state[OPEN] = True
    return at


def test_refused_paste_is_answered_under_its_button_and_keeps_other_edits():
    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120).run()
    assert not at.exception
    open_text_box(at).run()
    # another edit first: coin u[0] = .4 (applied through its slider)
    next(s for s in at.slider if s.label.startswith("u[0]")).set_value(0.4).run()
    assert _scenario(at).requests[0].coins[0] == 0.4
    before = _scenario(at)
    p, q = _areas(at)
    bad_p = "0.5 0.4 0.2 0\n0.2 0.5 0.3 0"  # row 0 sums to 1.1
    p.input(bad_p)
    q.input("0.5 0.3 0.2 0")
    next(b for b in _box(at).button if b.label == "Apply the text").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    box_errors = [e.value for e in _box(at).error]
    assert len(box_errors) == 1 and errors == box_errors, (errors, box_errors)  # under the button, nowhere else
    assert "requests[0].target_probs[0]" in box_errors[0].replace("\\", "") and "sums to 1.1" in box_errors[0]
    assert any("Nothing was applied" in c.value for c in _box(at).caption)
    assert _scenario(at) == before  # nothing applied: the coin edit and the old p, q kept
    p, q = _areas(at)
    assert p.value == bad_p and q.value == "0.5 0.3 0.2 0"  # the typed text stays, to be fixed
    # fixed and applied: the old error is gone and the click is answered with a success
    p.input("0.5 0.3 0.2 0\n0.2 0.5 0.3 0")
    next(b for b in _box(at).button if b.label == "Apply the text").click().run()
    assert not at.exception and not at.error
    assert any("Applied" in s.value for s in at.success)
    r = _scenario(at).requests[0]
    assert r.target_probs[0] == [0.5, 0.3, 0.2, 0] and r.draft_probs[0] == [0.5, 0.3, 0.2, 0] and r.coins[0] == 0.4
    at.run()  # a rerun of the same scenario (the backend badge's, when its comparison lands) keeps the answer
    assert any("Applied" in s.value for s in at.success)
    p, _ = _areas(at)
    p.input("0.4 0.4 0.2 0\n0.2 0.5 0.3 0").run()  # new typing, not applied: the note no longer describes the boxes
    assert not any("Applied" in s.value for s in at.success)
    p, _ = _areas(at)
    p.input("0.5 0.3 0.2 0\n0.2 0.5 0.3 0")  # back to what was applied, then another edit: the note is gone with it
    next(s for s in at.slider if s.label.startswith("u[0]")).set_value(0.7).run()
    assert not any("Applied" in s.value for s in at.success)


def test_a_chain_edit_with_the_text_box_closed_draws_no_text_boxes():
    """Closed (the default), the box draws only its header: an edit (here "+ slot") sends neither text box
    nor the Apply button. Opened, they hold the current p and q (the new slot's row too)."""
    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120).run()
    assert not at.exception
    assert not at.text_area and not any(b.label == "Apply the text" for b in at.button)
    n = len(_scenario(at).requests[0].chain)
    at.button(key="w_chain_add").click().run()
    assert not at.exception and len(_scenario(at).requests[0].chain) == n + 1
    assert [e.label for e in at.expander if e.label == EXPANDER] == [EXPANDER]  # the header is still there
    assert not at.text_area and not any(b.label == "Apply the text" for b in at.button)
    open_text_box(at).run()
    p, q = _areas(at)
    r = _scenario(at).requests[0]
    assert len(p.value.splitlines()) == len(r.target_probs) == n + 1 and len(q.value.splitlines()) == len(r.draft_probs) == n


def test_closing_the_text_box_drops_its_answer():
    """A refused paste's error is shown under the button while the box is open; closed and reopened, the box
    starts again from the scenario's p and q, with no stale error."""
    at = open_text_box(AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120)).run()
    p, _ = _areas(at)
    good = p.value
    p.input("0.5 0.5 0.5 0\n0.2 0.5 0.3 0")
    next(b for b in _box(at).button if b.label == "Apply the text").click().run()
    assert len(_box(at).error) == 1
    at.session_state[OPEN] = False
    at.run()
    assert not at.exception and not at.error and not at.text_area
    open_text_box(at).run()
    p, _ = _areas(at)
    assert not at.error and p.value == good


def test_text_box_in_chinese_applies_and_refuses():
    """In 简体中文: the box opens under its Chinese label; "应用文本" applies typed rows, and a refused row is
    answered with st.error naming the field, the typed text kept."""
    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120)
    at.session_state["sv_lang"] = "zh"
    open_text_box(at).run()
    assert not at.exception
    box = next(e for e in at.expander if e.label == "以文本编辑 p 与 q（每行一个分布）")
    p = next(t for t in box.text_area if t.label == "target_probs (p)")
    bad = "0.5 0.4 0.2 0\n" + "\n".join(p.value.splitlines()[1:])  # row 0 sums to 1.1
    p.input(bad)
    next(b for b in box.button if b.label == "应用文本").click().run()
    box = next(e for e in at.expander if e.label == "以文本编辑 p 与 q（每行一个分布）")
    assert [e.value for e in at.error] == [e.value for e in box.error] and len(box.error) == 1
    assert "requests[0].target_probs[0]" in box.error[0].value.replace("\\", "")
    assert next(t for t in box.text_area if t.label == "target_probs (p)").value == bad
    good = "0.5 0.3 0.2 0\n" + "\n".join(bad.splitlines()[1:])
    next(t for t in box.text_area if t.label == "target_probs (p)").input(good)
    next(b for b in box.button if b.label == "应用文本").click().run()
    assert not at.exception and not at.error
    assert any("已应用" in s.value for s in at.success)
    assert _scenario(at).requests[0].target_probs[0] == [0.5, 0.3, 0.2, 0]
