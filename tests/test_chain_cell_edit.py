"""Issue 31: a valid p/q cell edit on the chain page is one run of its fragment. The tables were read after
the widget and a change was followed by a fragment rerun (two runs per edit); their callback now stores a
valid edit before the run that draws it. A refused edit (a row left unnormalised) is still shown by that
run, with the typed cells kept. Spoken over Streamlit's websocket protocol, as a browser does.

The p and q tables are one Components v2 element (``specviz.app.ui.prob_tables``): a cell edit is its state
value ``edit`` ({ver, table, row, col, text, n}), sent as the component's widget value."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("websockets")
from specviz.rooms.share import QUERY_KEY, decode_state  # noqa: E402
from tests.support.st_protocol import run_in_thread, tab  # noqa: E402


_EDITS = iter(range(1, 10**6))


def _cell_edit(sent: dict, table: str, row: int, col: int, text: str) -> dict:
    """The widget state a browser sends when a cell of the tables element ``sent`` (its id, fragment and data) is
    committed: the component's state ``{"edit": {...}}`` as JSON."""
    edit = {"ver": sent["data"]["ver"], "table": table, "row": row, "col": col, "text": text, "n": next(_EDITS)}
    return {sent["id"]: ("json_value", json.dumps({"edit": edit}))}


async def _rerun(t, query: str, fragment: str = "", states: dict | None = None, page: str = "chain_sampling") -> dict:
    """One rerun of tab ``t``; what the chain-page tests read: data editors and prob tables (with their
    fragments), error alerts, runs cut short, the query string after it."""
    a = await t.rerun(page, query, fragment, states or {})
    return {"editors": [(d.id, frag) for d, frag in a.elements("dataframe") if d.id],
            "tables": [{"id": c.id, "fragment": frag, "data": json.loads(c.json or c.mixed.json)}
                       for c, frag in a.elements("bidi_component") if c.component_name == "specviz.prob_tables"],
            "errors": a.errors, "early": a.early, "query": a.query}


def _p(query: str) -> list:
    token = query.split(f"{QUERY_KEY}=", 1)[1].split("&", 1)[0]
    return [list(r) for r in decode_state(token).scenario.requests[0].target_probs]


def test_a_valid_p_cell_edit_is_one_fragment_run(app_server):
    async def go():
        async with tab(app_server) as t:
            first = await _rerun(t, "")
            (pq,) = first["tables"]  # p and q: one element
            frag = pq["fragment"]
            half = await _rerun(t, first["query"], frag, _cell_edit(pq, "p", 0, 0, "0.2"))  # row 0 sums to 0.9: refused
            pq = half["tables"][0]
            valid = await _rerun(t, half["query"], frag, _cell_edit(pq, "p", 0, 1, "0.5"))  # with the kept 0.2: sums to 1
            pq2 = valid["tables"][0]
            bad = await _rerun(t, valid["query"], frag, _cell_edit(pq2, "p", 0, 0, "0.9"))  # row 0 sums to 1.6
            refused = bad
            return first, valid, refused, half

    first, valid, refused, half = run_in_thread(go(), 180)
    assert not first["editors"], "the p/q tables are one component, not data editors"
    assert not first["errors"] and _p(first["query"])[0] == pytest.approx([0.3, 0.4, 0.3, 0.0])
    # the first cell alone leaves row 0 unnormalised: refused (the field named), the typed cell kept on screen
    assert half["early"] == 0 and any("target_probs" in e for e in half["errors"]), half["errors"]
    shown = half["tables"][0]["data"]["tables"][0]
    assert shown["values"][0] == pytest.approx([0.2, 0.4, 0.3, 0.0]) and shown["typed"] == [[0, 0, "0.2"]]
    assert _p(half["query"])[0] == pytest.approx([0.3, 0.4, 0.3, 0.0])  # nothing applied
    assert not valid["errors"], valid["errors"]
    assert _p(valid["query"])[0] == pytest.approx([0.2, 0.5, 0.3, 0.0])
    assert valid["early"] == 0, "a second fragment run for one cell edit"
    assert valid["tables"][0]["data"]["tables"][0]["typed"] == []
    assert refused["early"] == 0 and any("target_probs" in e for e in refused["errors"]), refused["errors"]
    assert _p(refused["query"])[0] == pytest.approx([0.2, 0.5, 0.3, 0.0])  # nothing applied
    assert refused["tables"][0]["data"]["tables"][0]["values"][0] == pytest.approx([0.9, 0.5, 0.3, 0.0])  # the typed cell kept
