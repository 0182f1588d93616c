"""A button whose callback takes a while, as every callback does on a server busy with a class
(tests/test_browser_clicks.py): each press must count once, in order, however fast they come."""
import os
import sys
import time

import streamlit as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from specviz.app.runtime import click_queue  # noqa: E402

if os.environ.get("SPECVIZ_CLICK_QUEUE", "1") == "1":
    click_queue.install()

st.session_state.setdefault("presses", [])


def add():
    time.sleep(0.25)  # waiting, as for the interpreter lock while 50 students' reruns run
    st.session_state["presses"] = st.session_state["presses"] + [len(st.session_state["presses"]) + 1]


st.button("Add", on_click=add)
st.number_input("step", 0, 100, 0, key="step")
st.markdown(f"presses = {st.session_state['presses']} · step = {st.session_state['step']}")
