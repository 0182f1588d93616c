"""ui.synced_key: a widget key refilled from the scenario, never with the value it already shows."""
from specviz.app.ui.state import synced_key


class Recording(dict):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.writes = []

    def __setitem__(self, key, value):
        self.writes.append(key)
        super().__setitem__(key, value)


def test_refilled_when_missing_or_replaced_but_not_with_its_own_value():
    st = Recording()
    assert synced_key("w", 0.5, 1, st) == "w" and st["w"] == 0.5 and st["w::ver"] == 1
    st.writes.clear()
    synced_key("w", 0.5, 1, st)  # same version: untouched
    assert st.writes == []
    super(Recording, st).__setitem__("w", 0.6)  # the slider's own edit, stored as the scenario's value
    synced_key("w", 0.6, 2, st)  # a new version with the value the widget shows: not pushed back
    assert st.writes == ["w::ver"] and st["w"] == 0.6
    st.writes.clear()
    synced_key("w", 0.25, 3, st)  # replaced by something else (a preset, randomise): refilled
    assert st.writes == ["w", "w::ver"] and st["w"] == 0.25
