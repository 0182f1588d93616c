"""Values that survive a page switch: a widget's own key is never the source of truth
(Streamlit drops widget keys when the page changes); ``persist_key`` / ``widget`` keep the value
in an ``sv_`` key and mirror it into the widget.
"""
from __future__ import annotations

from streamlit.errors import StreamlitAPIException
import streamlit as st

# -------------------------------------------------------------------------------------------
# Persistent values and widgets
# -------------------------------------------------------------------------------------------

def persist_key(key: str, default):
    """A non-widget session value (survives page switches); set to ``default`` the first time."""
    if key not in st.session_state:
        st.session_state[key] = default
    return st.session_state[key]


def widget(fn, label: str, key: str, default, **kwargs):
    """Render ``fn(label, key=..., ...)`` whose value lives in the session key ``key``.

    The widget gets its own key ``"w_" + key``, refilled from ``key`` when Streamlit dropped it
    (after a page switch), and copied back on change, so the value survives page switches.
    """
    persist_key(key, default)
    wkey = "w_" + key
    # The session key is the one source of truth: the widget is refilled from it on every run
    # (Streamlit keeps widget state per page, so a widget copy kept across a page switch can
    # show another value than the one every page reads).
    st.session_state.pop("sv_dirty::" + key, None)
    st.session_state[wkey] = st.session_state[key]

    def _copy():
        st.session_state[key] = st.session_state[wkey]

    fn(label, key=wkey, on_change=_copy, **kwargs)
    return st.session_state[key]


def set_value(key: str, value) -> None:
    """Set a persistent value and the widget showing it (call from a callback or before rendering)."""
    st.session_state[key] = value
    if "w_" + key in st.session_state:
        try:
            st.session_state["w_" + key] = value
        except StreamlitAPIException:  # the widget is already drawn in this run: refill it on the next
            st.session_state["sv_dirty::" + key] = True
