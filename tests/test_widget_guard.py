"""A crafted widget value over the websocket cannot break a tab (specviz.app.runtime.widget_guard).

A live Streamlit server runs tests/apps/crafted_widgets_app.py (an integer and a float number input, a text
input and a text area with max_chars, the runtime patches installed as app.py installs them). Each case is
a fresh tab (websocket session) that sends one widget value of a kind Streamlit's own frontend never
sends, then reruns plainly, then makes a real edit. Before the guard, Streamlit's deserializers raised on
the crafted value (int(nan), "abc" < 0, 1.5[:8]) and every later rerun of that tab raised again.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.bench_flood import start_server
from tests.support.st_protocol import run_in_thread, tab

ROOT = Path(__file__).resolve().parents[1]
FIRST = "values: n=3 x=0.5 label='abc' note='hi' changes=0"
# (widget label, oneof field, crafted value, what the page then shows)
CASES = [
    ("n", "double_value", math.nan, FIRST),
    ("n", "double_value", math.inf, FIRST),
    ("n", "string_value", "abc", FIRST),
    ("x", "string_value", "q", FIRST),
    ("label", "double_value", 1.5, FIRST),
    ("note", "int_value", 5, FIRST),
    # Of the right kind, already Streamlit's own business: out of range resets to the default, too long is cut.
    ("n", "int_value", 10**12, FIRST),
    ("label", "string_value", "y" * 10_000, FIRST.replace("'abc'", "'yyyyyyyy'")),
]


async def _run(t, widgets=()) -> list[tuple[str, str]]:
    """Send one rerun; (kind, text) of the markdown and exception elements of its answer, until it finished."""
    out = []
    for el, _ in (await t.rerun(widgets=widgets)).elements():
        if el.WhichOneof("type") == "markdown":
            out.append(("markdown", el.markdown.body))
        elif el.WhichOneof("type") == "exception":
            out.append(("exception", f"{el.exception.type}: {el.exception.message}"))
        elif el.WhichOneof("type") in ("number_input", "text_input", "text_area"):
            w = getattr(el, el.WhichOneof("type"))
            out.append(("id:" + w.label, w.id))
    return out


def _shown(answer) -> list[tuple[str, str]]:
    return [(k, v) for k, v in answer if not k.startswith("id:")]


async def _scenario(url: str) -> dict:
    seen: dict = {}
    async with tab(url) as ws:
        ids = {k[3:]: v for k, v in await _run(ws) if k.startswith("id:")}
    for i, (label, field, value, _) in enumerate(CASES):
        async with tab(url) as ws:
            await _run(ws)
            crafted = _shown(await _run(ws, [(ids[label], field, value)]))
            again = _shown(await _run(ws))
            edit = _shown(await _run(ws, [(ids["n"], "int_value", 7)]))
        seen[i] = (crafted, again, edit)
    # The crafted value in a tab's very first request, before the page has drawn the widget.
    async with tab(url) as ws:
        first = _shown(await _run(ws, [(ids["n"], "double_value", math.nan), (ids["label"], "double_value", 2.0)]))
        edit = _shown(await _run(ws, [(ids["n"], "int_value", 9)]))
    seen["first"] = (first, edit)
    return seen


@pytest.fixture(scope="module")
def crafted_answers(tmp_path_factory):
    log = tmp_path_factory.mktemp("widget_guard") / "server.log"
    proc, url = start_server(ROOT, log, script="tests/apps/crafted_widgets_app.py")
    try:
        out = run_in_thread(_scenario(url), 240)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return out, log.read_text(errors="replace")


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{c[1]}-{str(c[2])[:5]}" for c in CASES])
def test_a_crafted_widget_value_is_ignored_and_the_tab_keeps_working(crafted_answers, case):
    seen, _ = crafted_answers
    crafted, again, edit = seen[case]
    expected = CASES[case][3]
    assert crafted == [("markdown", expected)], crafted      # no exception; the widget kept its value
    assert again == [("markdown", expected)], again          # and the next rerun of the tab works
    assert edit == [("markdown", expected.replace("n=3", "n=7").replace("changes=0", "changes=1"))], edit


def test_a_crafted_value_in_a_tabs_first_request_is_ignored(crafted_answers):
    (first, edit), log = crafted_answers[0]["first"], crafted_answers[1]
    assert first == [("markdown", FIRST)], first
    assert edit == [("markdown", FIRST.replace("n=3", "n=9").replace("changes=0", "changes=1"))], edit
    assert "Traceback" not in log, log[-3000:]
    assert "ignored a crafted value" in log, log[-3000:]


def test_the_guard_takes_what_streamlits_frontend_sends_and_refuses_the_rest():
    """The shape: installed on the pinned Streamlit, and ``misfit`` on the real deserializers."""
    from streamlit.elements.widgets.number_input import NumberInputSerde
    from streamlit.elements.widgets.text_widgets import TextInputSerde
    from streamlit.proto.NumberInput_pb2 import NumberInput
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from streamlit.runtime.state import session_state as ss
    from streamlit.runtime.state.common import WidgetMetadata

    from specviz.app.runtime import widget_guard

    assert widget_guard.install() and ss.WStates._specviz_widget_guard
    kinds = widget_guard._guarded_kinds()

    def meta(serde):
        return WidgetMetadata(id="w", deserializer=serde.deserialize, serializer=serde.serialize,
                              value_type="double_value")

    integer = meta(NumberInputSerde(3, NumberInput.INT, 0, 100))
    real = meta(NumberInputSerde(0.5, NumberInput.FLOAT, 0.0, 1.0))
    text = meta(TextInputSerde("abc", max_chars=8))
    fits = [(integer, WidgetState(int_value=7)), (integer, WidgetState(double_value=2.0)), (integer, WidgetState()),
            (real, WidgetState(double_value=math.nan)), (real, WidgetState(int_value=1)),
            (text, WidgetState(string_value="x" * 50))]
    refused = [(integer, WidgetState(double_value=math.nan)), (integer, WidgetState(double_value=-math.inf)),
               (integer, WidgetState(string_value="1")), (real, WidgetState(string_value="q")),
               (text, WidgetState(double_value=1.5)), (text, WidgetState(bool_value=True))]
    assert [widget_guard.misfit(m, p, kinds) for m, p in fits] == [None] * len(fits)
    assert all(widget_guard.misfit(m, p, kinds) for m, p in refused)
    free_text = meta(TextInputSerde("abc"))  # no max_chars: Streamlit passes it on, the page checks it
    assert widget_guard.misfit(free_text, WidgetState(double_value=1.5), kinds) is None
    checkbox = WidgetMetadata(id="c", deserializer=bool, serializer=bool, value_type="bool_value")
    assert widget_guard.misfit(checkbox, WidgetState(string_value="x"), kinds) is None  # other kinds: untouched
