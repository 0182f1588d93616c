"""specviz.app.runtime.state_lookup: a widget's one-key view of session state answers exactly what Streamlit's
whole ``filtered_state`` answers, for widget keys, plain keys, internal keys, missing keys, a widget whose id
changed and a widget that is gone; and the widget modules (only they) get the view."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from specviz.app.runtime import state_lookup


def _script():
    import streamlit as st
    from streamlit.runtime.state import get_session_state

    from specviz.app.runtime import state_lookup

    def check(where):
        safe = get_session_state()
        state, view = safe._state, state_lookup._OneKeyView(safe)
        whole = safe.filtered_state
        mapper = state._key_id_mapper
        probes = (set(whole) | set(mapper._key_id_mapping) | set(mapper.id_key_mapping) | set(state._old_state)
                  | set(state._new_widget_state.states) | {"never_set", "$$STREAMLIT_INTERNAL_KEY_probe"})
        bad = [(where, k) for k in sorted(probes)
               if (k in view) != (k in whole) or view.get(k, "<absent>") != whole.get(k, "<absent>")]
        fast = sorted(k for k in ("pick", "size", "count", "note", "plain") if state_lookup.lookup(state, k) is not None)
        log = st.session_state.setdefault("log", [])  # written after the comparison: its own key is probed next time
        log.append((where, len(probes), bad, fast))

    check("start")
    n = st.session_state.get("n", 0)
    st.session_state["$$STREAMLIT_INTERNAL_KEY_probe"] = n
    st.radio("Pick" if n % 2 == 0 else "Choose", ["a", "b"], key="pick")  # a new label: a new id, the same key
    st.selectbox("Size", ["s", "m"], key="size")
    st.number_input("Count", key="count", value=None if n == 2 else 1)
    if n % 2 == 0:
        st.text_input("Note", key="note")  # drawn every other run: its value goes stale, then is removed
    st.slider("Level", 0, 9, key="level")
    st.radio("Anonymous", ["x", "y"])  # no key: never in filtered_state
    if n == 1:
        st.session_state["plain"] = "p"
    if n == 3:
        del st.session_state["plain"]
    check("end")


def test_the_view_answers_what_the_whole_dict_answers():
    assert state_lookup.install()
    at = AppTest.from_function(_script).run()
    for n in range(1, 6):
        at.session_state["n"] = n
        if n == 2:
            at.session_state["count"] = None  # set to None through session state: the widget shows no value
        at.radio(key="pick").set_value("b" if n % 2 else "a")
        at.run()
        assert not at.exception, at.exception
    log = at.session_state["log"]
    assert len(log) == 12 and all(count >= 8 for _, count, _, _ in log[1:])
    assert [bad for _, _, bad, _ in log] == [[]] * 12
    # the cheap path answered the drawn widgets' keys at the end of each run (the point of the patch)
    ends = [fast for where, _, _, fast in log if where == "end"]
    assert all({"size", "count"} <= set(fast) for fast in ends), ends
    assert at.number_input(key="count").value is not None and at.selectbox(key="size").value == "s"


def test_only_the_widget_modules_get_the_view():
    import importlib

    import streamlit as st
    from streamlit.runtime.state import session_state_proxy

    assert state_lookup.install() and state_lookup.install()  # idempotent
    for name in state_lookup.WIDGET_MODULES:
        module = importlib.import_module(f"streamlit.elements.widgets.{name}")
        assert module.get_session_state.__module__ == state_lookup.__name__
        assert module.get_session_state.__wrapped__ is session_state_proxy.get_session_state
    assert session_state_proxy.get_session_state.__module__ != state_lookup.__name__
    assert st.session_state.__class__.__module__.startswith("streamlit.")


def test_entries_whose_order_decides_are_answered_from_the_whole_dict():
    """Hand-made states Streamlit reaches rarely: a key whose widget id changed while the old id still holds
    a value, two keys on one id, a raw widget id, an internal key."""
    from streamlit.runtime.state.safe_session_state import SafeSessionState
    from streamlit.runtime.state.session_state import SessionState

    old_id, new_id, other = "$$ID-aaa-moved", "$$ID-bbb-moved", "$$ID-ccc-shared"
    state = SessionState()
    state._key_id_mapper["moved"] = old_id
    state._key_id_mapper["moved"] = new_id  # remapped: the reverse map still names the old id
    state._old_state.update({old_id: "old", new_id: "new", "plain": 3, "$$STREAMLIT_INTERNAL_KEY_x": 1})
    state._key_id_mapper["a"] = other
    state._key_id_mapper["b"] = other  # two keys on one id
    state._old_state[other] = "shared"
    state._new_session_state["fresh"] = [1, 2]
    state._key_id_mapper["gone"] = "$$ID-ddd-gone"  # mapped, no value anywhere
    safe = SafeSessionState(state, lambda: None)
    whole, view = state.filtered_state, state_lookup._OneKeyView(safe)
    keys = ["moved", "a", "b", "plain", "fresh", "gone", old_id, new_id, other, "$$STREAMLIT_INTERNAL_KEY_x", "nope"]
    for key in keys:
        assert (key in view) == (key in whole), key
        assert view.get(key, "<absent>") == whole.get(key, "<absent>"), key
    assert dict(view) == whole and len(view) == len(whole)
    assert [k for k in keys if state_lookup.lookup(state, k) is None] == ["moved", "a", "b", old_id, new_id, other,
                                                                           "$$STREAMLIT_INTERNAL_KEY_x"]
