"""Issue 31: a valid p/q cell edit on the chain page is one run of its fragment. The tables were read after
the widget and a change was followed by a fragment rerun (two runs per edit); their callback now stores a
valid edit before the run that draws it. A refused edit (a row left unnormalised) is still shown by that
run, with the typed cells kept. Spoken over Streamlit's websocket protocol, as a browser does.

The p and q tables are one Components v2 element (``specviz.app.ui.prob_tables``): a cell edit is its state
value ``edit`` ({ver, table, row, col, text, n}), sent as the component's widget value."""
from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

websockets = pytest.importorskip("websockets")
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from specviz.rooms.share import QUERY_KEY, decode_state  # noqa: E402


_EDITS = iter(range(1, 10**6))


def _cell_edit(sent: dict, table: str, row: int, col: int, text: str) -> dict:
    """The widget state a browser sends when a cell of the tables element ``sent`` (its id, fragment and data) is
    committed: the component's state ``{"edit": {...}}`` as JSON."""
    edit = {"ver": sent["data"]["ver"], "table": table, "row": row, "col": col, "text": text, "n": next(_EDITS)}
    return {sent["id"]: ("json_value", json.dumps({"edit": edit}))}


async def _rerun(ws, query: str, fragment: str = "", states: dict | None = None, page: str = "chain_sampling") -> dict:
    bm = BackMsg()
    bm.rerun_script.page_name = page
    bm.rerun_script.query_string = query
    bm.rerun_script.fragment_id = fragment
    for wid, (field, value) in (states or {}).items():
        w = bm.rerun_script.widget_states.widgets.add()
        w.id = wid
        setattr(w, field, value)
    await ws.send(bm.SerializeToString())
    out = {"editors": [], "tables": [], "errors": [], "early": 0, "query": query}
    while True:
        fm = ForwardMsg()
        fm.ParseFromString(await asyncio.wait_for(ws.recv(), 60))
        kind = fm.WhichOneof("type")
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            if el.WhichOneof("type") == "dataframe" and el.dataframe.id:
                out["editors"].append((el.dataframe.id, fm.delta.fragment_id))
            if el.WhichOneof("type") == "bidi_component" and el.bidi_component.component_name == "specviz.prob_tables":
                out["tables"].append({"id": el.bidi_component.id, "fragment": fm.delta.fragment_id,
                                      "data": json.loads(el.bidi_component.json or el.bidi_component.mixed.json)})
            if el.WhichOneof("type") == "alert" and el.alert.format == el.alert.ERROR:
                out["errors"].append(el.alert.body)
        elif kind == "page_info_changed":
            out["query"] = fm.page_info_changed.query_string
        elif kind == "script_finished":
            if fm.script_finished == fm.FINISHED_EARLY_FOR_RERUN:
                out["early"] += 1
            else:
                return out


def _p(query: str) -> list:
    token = query.split(f"{QUERY_KEY}=", 1)[1].split("&", 1)[0]
    return [list(r) for r in decode_state(token).scenario.requests[0].target_probs]


def test_a_valid_p_cell_edit_is_one_fragment_run(app_server):
    async def go():
        async with websockets.connect(app_server.replace("http://", "ws://") + "/_stcore/stream", max_size=None,
                                      subprotocols=["streamlit"]) as ws:
            first = await _rerun(ws, "")
            (pq,) = first["tables"]  # p and q: one element
            frag = pq["fragment"]
            half = await _rerun(ws, first["query"], frag, _cell_edit(pq, "p", 0, 0, "0.2"))  # row 0 sums to 0.9: refused
            pq = half["tables"][0]
            valid = await _rerun(ws, half["query"], frag, _cell_edit(pq, "p", 0, 1, "0.5"))  # with the kept 0.2: sums to 1
            pq2 = valid["tables"][0]
            bad = await _rerun(ws, valid["query"], frag, _cell_edit(pq2, "p", 0, 0, "0.9"))  # row 0 sums to 1.6
            refused = bad
            return first, valid, refused, half

    with ThreadPoolExecutor(1) as ex:
        first, valid, refused, half = ex.submit(asyncio.run, go()).result(180)
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
