"""Widgets whose incoming values Streamlit itself converts (tests/test_widget_guard.py): an integer and a float
number input, a text input and a text area with ``max_chars``. The Streamlit runtime patches are installed as
app.py installs them; the page prints the values it got and counts the integer input's on_change calls."""
import os
import sys

import streamlit as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from specviz.app import runtime as app_runtime  # noqa: E402

if os.environ.get("SPECVIZ_RUNTIME_PATCHES", "1") == "1":
    app_runtime.install()

st.session_state.setdefault("changes", 0)


def changed():
    st.session_state["changes"] += 1


n = st.number_input("n", min_value=0, max_value=100, value=3, step=1, key="n", on_change=changed)
x = st.number_input("x", min_value=0.0, max_value=1.0, value=0.5, key="x")
label = st.text_input("label", value="abc", max_chars=8, key="label")
note = st.text_area("note", value="hi", max_chars=8, key="note")
st.markdown(f"values: n={n!r} x={x!r} label={label!r} note={note!r} changes={st.session_state['changes']}")
