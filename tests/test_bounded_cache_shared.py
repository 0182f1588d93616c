"""bounded_cache(copies=False): one cached object for every caller, dropped with its entry."""
from __future__ import annotations

from specviz.app.ui import bounded_cache as bc


def test_shared_values_are_one_object_and_leave_with_their_entry(monkeypatch):
    monkeypatch.setattr(bc, "TOTAL_BYTES", 1 << 20)
    calls = []

    @bc.bounded_cache(share=0.5, copies=False)
    def frames(k: int) -> list:
        calls.append(k)
        return [k] * 1000

    @bc.bounded_cache(share=0.5)
    def copied(k: int) -> list:
        return [k] * 1000

    first = frames(1)
    assert frames(1) is first and calls == [1]  # a hit: the same object, no unpickling
    assert copied(1) is not copied(1) and copied(1) == copied(1)  # the default: each caller its own copy
    for k in range(2, 400):  # ~5 KB each into a 512 KB share: the first entries are evicted
        frames(k)
    assert not frames.contains(1)
    assert all(key in bc._STORE for key in bc._SHARED)  # no object outlives its entry
    again = frames(1)
    assert again == first and again is not first and calls[-1] == 1
    frames.clear()
    assert not [key for key in bc._SHARED if key[0] == frames.cache_name]
