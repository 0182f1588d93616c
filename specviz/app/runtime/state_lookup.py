"""A widget looks up its one key in session state instead of building a filtered copy of all of it.

Streamlit's radio, selectbox, slider (without a value), number input, text input, text area, date and
time inputs each start with ``get_session_state().filtered_state`` and then ask that dict for their own
``key`` ("was it set to None?"). ``SessionState.filtered_state`` builds a new dict of every user-visible
value in the session: it walks every key, maps widget ids back to user keys, and reads each value
through ``SessionState.__getitem__`` (widget metadata, presenter). That is work in the number of keys
the session holds, for every such widget drawn: a page with many widgets pays it squared. specviz keeps
its values across pages (``sv_`` keys, widget keys, per-slot editors): a session that visited the five
main pages holds ~75 keys, and a rerun draws up to dozens of these widgets. ``benchmarks/state_lookup_keys.py``:
30 keyed select boxes cost 10.2 ms of script CPU with 100 session keys, 3.4 ms with the patch (57 / 7.7 ms
at 1000 keys); benchmarks/README.md, "cpu8: server CPU per edit, stop 43".

``install()`` rebinds the name ``get_session_state`` in those widget modules only (``WIDGET_MODULES``)
to a function that returns the same session state wrapped so that its ``filtered_state`` is a read-only
view: ``key in view`` and ``view[key]`` give exactly what the whole dict would give for that key (the
same value, the same presence), computed from that key alone; iterating it or taking its length builds
the whole dict as before. Everything else (``reset_state_value``, ``query_params``, ...) goes to the real
object. ``st.session_state``, ``AppTest`` and every other caller keep Streamlit's own ``filtered_state``.
Where one key could be answered by more than one entry (a key whose widget id changed while the old id
still holds a value, a raw widget id, a crafted widget state), the view builds the whole dict and answers
from it, so the answer stays Streamlit's even there.
``tests/test_state_lookup.py`` checks the shape and compares the view with the whole dict key by key.

Upstream: streamlit/streamlit#9415 (closed: "Exponential slowdown in Streamlit as the number of widgets
increases", caused by streamlit/streamlit#8529 adding these lookups to the widgets). Its fix made the
reverse key map cheap (``KeyIdMapper``), but each widget still builds the whole filtered dict.
Checked on: Streamlit 1.67.0 (the pin; ``specviz.app.runtime.CHECKED_ON``).
Without it: nothing visible; every rerun of a page with many widgets costs more server CPU, more so the
longer the session (more keys), and a class on one server waits longer for each redraw.
To drop it: delete this module and its name in ``app_runtime.PATCHES`` when Streamlit's widgets look up
their one key (e.g. ``key in session_state`` on the session state itself), or whenever the solo edits of
``benchmarks/bench_real_class.py`` show no difference without it.
"""
from __future__ import annotations

import collections.abc
import importlib
import logging

from specviz.app.runtime.shape_guard import install_once

_log = logging.getLogger(__name__)
UPSTREAM = "streamlit/streamlit#9415 (each widget builds the whole filtered session state)"  # what `specviz doctor` prints
# The widget modules whose calls read ``get_session_state().filtered_state`` for their own key (Streamlit 1.67.0).
WIDGET_MODULES = ("radio", "selectbox", "slider", "number_input", "text_widgets", "time_widgets")
_MISSING = object()


def lookup(state, key):
    """What ``state.filtered_state.get(key, _MISSING)`` returns (``state``: a ``SessionState``), reading
    only the entries that can hold ``key``; None when the answer needs the whole dict (the caller builds it)."""
    from streamlit.runtime.state.common import is_element_id, is_keyed_element_id
    from streamlit.runtime.state.session_state import STREAMLIT_INTERNAL_KEY_PREFIX as internal

    if not isinstance(key, str) or is_element_id(key) or key.startswith(internal):
        return None
    mapper = state._key_id_mapper
    forward, reverse = mapper._key_id_mapping, mapper.id_key_mapping
    widgets, old, new = state._new_widget_state.states, state._old_state, state._new_session_state
    if key in widgets or key in reverse:
        return None  # a crafted widget id, or a user key that is also some widget's id
    ids = [w for w, k in reverse.items() if k == key]
    wid = forward.get(key)
    if wid is None:  # a plain session value (no widget of that key drawn in this session)
        if ids:
            return None
        return state[key] if (key in old or key in new) else _MISSING
    if ids != [wid] or sum(1 for v in forward.values() if v == wid) != 1:
        return None  # an old widget id of this key, or two keys on one id: entries whose order decides
    if not is_keyed_element_id(wid) or wid.startswith(internal):
        return _MISSING
    if not (wid in widgets or wid in old or wid in new or key in old or key in new):
        return _MISSING
    try:
        return state[wid]
    except KeyError:  # as filtered_state: a value without its widget's metadata is left out
        return _MISSING


class _OneKeyView(collections.abc.Mapping):
    """``filtered_state`` as a widget uses it: one key at a time, without building the dict."""

    __slots__ = ("_safe",)

    def __init__(self, safe):
        self._safe = safe

    def _find(self, key):
        safe = self._safe
        with safe._lock:
            found = lookup(safe._state, key)
            if found is None:
                return safe._state.filtered_state.get(key, _MISSING)
            return found

    def __contains__(self, key) -> bool:
        return self._find(key) is not _MISSING

    def __getitem__(self, key):
        found = self._find(key)
        if found is _MISSING:
            raise KeyError(key)
        return found

    def get(self, key, default=None):
        found = self._find(key)
        return default if found is _MISSING else found

    def __iter__(self):
        return iter(self._safe.filtered_state)

    def __len__(self) -> int:
        return len(self._safe.filtered_state)


class _ForWidgets:
    """The session state as the patched widget modules see it: ``filtered_state`` is a ``_OneKeyView``."""

    __slots__ = ("_safe",)

    def __init__(self, safe):
        self._safe = safe

    @property
    def filtered_state(self) -> _OneKeyView:
        return _OneKeyView(self._safe)

    def __getattr__(self, name):
        return getattr(self._safe, name)


def install() -> bool:
    """Patch Streamlit once per process; False (and a log line) if its shape is not the known one."""
    return install_once("one-key state lookup", "_specviz_state_lookup", _shape, _patch, _log)


def _shape() -> tuple:
    from streamlit.runtime.state import safe_session_state, session_state, session_state_proxy

    original = session_state_proxy.get_session_state
    modules = [importlib.import_module(f"streamlit.elements.widgets.{name}") for name in WIDGET_MODULES]
    SafeSessionState, SessionState = safe_session_state.SafeSessionState, session_state.SessionState
    missing = [m.__name__ for m in modules if getattr(m, "get_session_state", None) is not original]
    known = (not missing and hasattr(SafeSessionState, "filtered_state")
             and hasattr(SessionState, "filtered_state") and hasattr(session_state, "STREAMLIT_INTERNAL_KEY_PREFIX")
             and all(hasattr(SessionState, a) for a in ("_key_id_mapper", "_new_widget_state", "_old_state",
                                                          "_new_session_state")))
    why = None if known else "widget modules / SessionState lack the known shape" + (f" ({missing})" if missing else "")
    return SafeSessionState, why, (original, modules)


def _patch(original, modules) -> None:
    def get_session_state():
        return _ForWidgets(original())

    get_session_state.__wrapped__ = original
    for module in modules:
        module.get_session_state = get_session_state
