"""specviz.ui.click_queue against Streamlit's own ScriptRequests: a second press of a button is never folded away.

Without the queue, Streamlit folds two presses of one button that arrive before the script's next yield
point into one rerun with one trigger (one callback, one lost click: CI of stop 23). These tests drive
the pinned Streamlit's private class directly, so a change of its shape fails here, not in a classroom.
"""
from __future__ import annotations

from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType

from specviz.ui import click_queue

assert click_queue.install(), "the click queue no longer fits this Streamlit's ScriptRequests"


def _states(**values) -> WidgetStates:
    """Widget states: name=True is a pressed button, other values are ints (an ordinary widget)."""
    out = WidgetStates()
    for wid, v in values.items():
        w = WidgetState(id=wid)
        if v is True:
            w.trigger_value = True
        else:
            w.int_value = v
        out.widgets.append(w)
    return out


def _press(**values) -> RerunData:
    return RerunData(query_string="", widget_states=_states(**values))


def _taken(reqs: ScriptRequests, how: str = "yield") -> list:
    """Every rerun the runner takes until nothing is pending, as {widget id: value}."""
    out = []
    while True:
        r = reqs.on_scriptrunner_yield() if how == "yield" else reqs.on_scriptrunner_ready()
        if r is None or r.type != ScriptRequestType.RERUN:
            return out
        out.append({w.id: getattr(w, w.WhichOneof("value")) for w in r.rerun_data.widget_states.widgets})


def _running() -> ScriptRequests:
    """A runner in the middle of a run (CONTINUE), as when the clicks arrive."""
    reqs = ScriptRequests()
    reqs.request_rerun(RerunData(query_string=""))
    assert reqs.on_scriptrunner_ready().type == ScriptRequestType.RERUN
    return reqs


def test_four_presses_of_one_button_in_one_window_are_four_reruns():
    reqs = _running()
    for _ in range(4):
        assert reqs.request_rerun(_press(add=True))
    runs = _taken(reqs)
    assert [r.get("add") for r in runs] == [True] * 4


def test_presses_are_taken_in_order_with_the_values_of_their_moment():
    reqs = _running()
    reqs.request_rerun(_press(add=True, tok=1))
    reqs.request_rerun(_press(add=True, tok=2))
    reqs.request_rerun(_press(tok=3))  # a value change after the second press folds into it
    runs = _taken(reqs, how="ready")
    assert runs == [{"add": True, "tok": 1}, {"add": True, "tok": 3}]


def test_different_buttons_and_values_still_fold_as_streamlit_does():
    reqs = _running()
    reqs.request_rerun(_press(add=True, tok=1))
    reqs.request_rerun(_press(delete=True, tok=2))
    reqs.request_rerun(_press(tok=5))
    runs = _taken(reqs)
    assert runs == [{"add": True, "delete": True, "tok": 5}]


def test_a_press_arriving_between_take_and_next_run_waits_its_turn():
    reqs = _running()
    reqs.request_rerun(_press(add=True))
    reqs.request_rerun(_press(add=True))
    first = reqs.on_scriptrunner_yield()  # run 1 starts; press 2 is now the pending one
    assert first.type == ScriptRequestType.RERUN
    reqs.request_rerun(_press(add=True))  # press 3 arrives while press 2 waits
    assert [r.get("add") for r in _taken(reqs)] == [True, True]


def test_stop_drops_the_queue_and_refuses_later_presses():
    reqs = _running()
    reqs.request_rerun(_press(add=True))
    reqs.request_rerun(_press(add=True))
    reqs.request_stop()
    assert not reqs.request_rerun(_press(add=True))
    assert reqs.on_scriptrunner_ready().type == ScriptRequestType.STOP
