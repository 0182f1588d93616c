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


def _scenario(at):
    return scenario_from_json(at.session_state["sv_scn::chain"])


def _box(at):
    return next(e for e in at.expander if e.label == EXPANDER)


def _areas(at):
    box = _box(at)
    p = next(t for t in box.text_area if t.label == "target_probs (p)")
    q = next(t for t in box.text_area if t.label == "draft_probs (q)")
    return p, q


def test_refused_paste_is_answered_under_its_button_and_keeps_other_edits():
    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120).run()
    assert not at.exception
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
    at.run()  # the success note is said once
    assert not any("Applied" in s.value for s in at.success)
