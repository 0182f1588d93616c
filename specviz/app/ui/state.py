"""Values that survive a page switch: a widget's own key is never the source of truth
(Streamlit drops widget keys when the page changes); ``persist_key`` / ``widget`` keep the value
in an ``sv_`` key and mirror it into the widget.
"""
from __future__ import annotations

from streamlit.errors import StreamlitAPIException
import streamlit as st

from specviz.app.ui import i18n

# -------------------------------------------------------------------------------------------
# Persistent values and widgets
# -------------------------------------------------------------------------------------------

def persist_key(key: str, default):
    """A non-widget session value (survives page switches); set to ``default`` the first time."""
    if key not in st.session_state:
        _written(key)
        st.session_state[key] = default
    return st.session_state[key]


def widget(fn, label: str, key: str, default, **kwargs):
    """Render ``fn(label, key=..., ...)`` whose value lives in the session key ``key``.

    The widget gets its own key (``widget_key(key)``), refilled from ``key`` when Streamlit dropped it
    (after a page switch), and copied back on change, so the value survives page switches.
    """
    persist_key(key, default)
    wkey = widget_key(key)
    # The session key is the one source of truth: the widget is refilled from it on every run
    # (Streamlit keeps widget state per page, so a widget copy kept across a page switch can
    # show another value than the one every page reads).
    st.session_state.pop("sv_dirty::" + key, None)
    st.session_state[wkey] = st.session_state[key]

    def _copy():
        if wkey != widget_key(key):  # a report about a widget a callback has since replaced (see widget_key)
            return
        _written(key)
        st.session_state[key] = st.session_state[wkey]

    fn(label, key=wkey, on_change=_copy, **kwargs)
    return st.session_state[key]


def synced_key(wkey: str, current, version, state=None) -> str:
    """A widget key kept equal to the scenario's value ``current``: refilled whenever the scenario was
    replaced (``version``, e.g. ``ui.scenario_version(slot)``, moved on) or Streamlit dropped the key.

    Not when the widget already shows that value (its own edit): a value written into a widget's key is
    pushed to the browser, which sets the widget to it, and a slider moved on by more arrow steps while
    the run ran jumped back and lost them (benchmarks/README.md, "No lost click": 7 bursts of 10 under
    load lost a step). Returns ``wkey``."""
    state = st.session_state if state is None else state
    if state.get(wkey + "::ver") != version or wkey not in state:
        if wkey not in state or state[wkey] != current:
            state[wkey] = current
        state[wkey + "::ver"] = version
    return wkey


def widget_key(key: str, state=None) -> str:
    """The key of the widget showing ``key`` now: ``"w_" + key``, plus ``#n`` after n changes made by callbacks.

    Why the number: every rerun request carries the browser's values of all its widgets, and a click
    sent before the browser drew the previous run still carries the value from before that run's
    callback (the tree builder's selection before "Add child" moved it). Streamlit takes that stale
    value for a user change and its on_change would put the old value back: the next "Add child" then
    hangs the node under the wrong parent (a burst of clicks, issue 20). A callback that changes the
    value gives the widget a new key, and ``widget``'s on_change ignores reports about a replaced
    widget (Streamlit still calls them when the run that replaced it was preempted by the click)."""
    state = st.session_state if state is None else state
    gen = state["sv_gen::" + key] if "sv_gen::" + key in state else 0
    return f"w_{key}#{gen}" if gen else "w_" + key


def _written(key: str) -> None:
    """Before a persistent value is written: the language is read once per run (``i18n.lang``), so say so."""
    if key == i18n.LANG_KEY:
        i18n.forget_lang()


def _in_callback() -> bool:
    """Whether this code runs in a widget callback (Streamlit's thread state; False if that is unknown)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import RunLocation, ThreadState
        return ThreadState.get().run_location is RunLocation.CALLBACK
    except Exception:  # noqa: BLE001  no script context, or a Streamlit without it
        return False


def set_value(key: str, value) -> None:
    """Set a persistent value and the widget showing it (call from a callback or before rendering)."""
    changed = key not in st.session_state or st.session_state[key] != value
    _written(key)
    st.session_state[key] = value
    wkey = widget_key(key)
    if wkey not in st.session_state:
        return
    if changed and _in_callback():
        st.session_state["sv_gen::" + key] = st.session_state.get("sv_gen::" + key, 0) + 1  # see widget_key
        return
    try:
        st.session_state[wkey] = value
    except StreamlitAPIException:  # the widget is already drawn in this run: refill it on the next
        st.session_state["sv_dirty::" + key] = True


def lazy_expander(label: str, key: str, *, expanded: bool = False, icon: str | None = None, parent=None):
    """``(expander, open)``: an expander whose content the page draws only while it is open (Streamlit's
    ``on_change="rerun"``: opening it reruns the page, which then draws the content). The sidebar's
    closed boxes (scenario I/O, share, export: some 20 elements) were a third of every edit's script
    time (benchmarks/README.md, "A class of 50"). On a Streamlit without that option: always drawn."""
    parent = st if parent is None else parent
    try:
        box = parent.expander(label, expanded=expanded, icon=icon, key=key, on_change="rerun")
    except TypeError:
        return parent.expander(label, expanded=expanded, icon=icon), True
    return box, bool(getattr(box, "open", True))
