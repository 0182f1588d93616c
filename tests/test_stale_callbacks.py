"""A click that interrupts a rerun runs a callback registered by an EARLIER run (the interrupted
run had not drawn the widget again). Such a callback must edit the scenario as it is now, not the
one of the run that registered it: that older scenario is one edit behind, and rebuilding from it
overwrote the edit just made (the lost "add child" clicks; benchmarks/README.md, "No lost click").

AppTest cannot interrupt a run, so the tests put the earlier run's widget registration back (what
an interrupted run leaves) and click again.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

os.environ.setdefault("SPECVIZ_BADGE_WAIT_S", "120")

from streamlit.testing.v1 import AppTest  # noqa: E402

from specviz.app.ui import scenarios  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _metadata(at):
    """The widget registrations of the last run (Streamlit's SessionState behind AppTest's wrapper)."""
    return object.__getattribute__(at._session_state, "_state")._new_widget_state.widget_metadata


def _registration(at, key: str):
    meta = _metadata(at)
    wid = next(w for w in meta if w == key or w.endswith("-" + key))
    return wid, copy.copy(meta[wid])


def _scenario(at):
    return scenarios.scenario_from_json(at.session_state["sv_scn::tree"])


def test_add_child_from_an_earlier_runs_callback_keeps_the_edit_in_between():
    at = AppTest.from_file(str(ROOT / "pages/tree_builder.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    at.button(key="w_add_child").click().run()  # the session's scenario is in session state from here on
    n0 = _scenario(at).tree(0).n
    wid, older = _registration(at, "w_add_child")  # registered by this run (tree of n0 nodes)
    at.button(key="w_add_child").click().run()  # a child added: n0 + 1
    assert _scenario(at).tree(0).n == n0 + 1
    _metadata(at)[wid] = older  # as if the last run was interrupted before it drew the button
    at.button(key="w_add_child").click().run()
    assert not at.exception, at.exception
    assert _scenario(at).tree(0).n == n0 + 2, "the earlier run's callback overwrote the child added in between"


def test_target_cell_from_an_earlier_runs_callback_keeps_the_other_cell():
    at = AppTest.from_file(str(ROOT / "pages/greedy.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    box = lambda label: next(sb for sb in at.selectbox if sb.label.startswith(f"Target({label})"))  # noqa: E731
    box("A").select("B").run()
    tp0 = list(_scenario(at).requests[0].target_predict)
    key_b = box("B").key
    wid, older = _registration(at, key_b)
    box("A").select("A").run()  # row 1 changed
    _metadata(at)[wid] = older
    new_b = next(v for v in _scenario(at).vocab if v != tp0[2])
    box("B").select(new_b).run()
    assert not at.exception, at.exception
    tp = list(_scenario(at).requests[0].target_predict)
    assert tp[1] == "A" and tp[2] == new_b, (tp0, tp)
