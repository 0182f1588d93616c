"""Issue 31: a valid p/q cell edit on the chain page is one run of its fragment. The tables were read after
the widget and a change was followed by a fragment rerun (two runs per edit); their on_change now stores a
valid edit before the run that draws it. A refused edit (a row left unnormalised) is still shown by that
run, with the typed cells kept. Spoken over Streamlit's websocket protocol, as a browser does."""
from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

websockets = pytest.importorskip("websockets")
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from specviz.rooms.share import QUERY_KEY, decode_state  # noqa: E402


async def _rerun(ws, query: str, fragment: str = "", states: dict | None = None, page: str = "chain_sampling") -> dict:
    bm = BackMsg()
    bm.rerun_script.page_name = page
    bm.rerun_script.query_string = query
    bm.rerun_script.fragment_id = fragment
    for wid, value in (states or {}).items():
        w = bm.rerun_script.widget_states.widgets.add()
        w.id, w.string_value = wid, value
    await ws.send(bm.SerializeToString())
    out = {"editors": [], "errors": [], "early": 0, "query": query}
    while True:
        fm = ForwardMsg()
        fm.ParseFromString(await asyncio.wait_for(ws.recv(), 60))
        kind = fm.WhichOneof("type")
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            if el.WhichOneof("type") == "dataframe" and el.dataframe.id:
                out["editors"].append((el.dataframe.id, fm.delta.fragment_id))
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
            (p_id, frag), _ = first["editors"][:2]  # the p table, then q
            edit = {"edited_rows": {"0": {"A": 0.2, "B": 0.5}}, "added_rows": [], "deleted_rows": []}  # row 0 still sums to 1
            valid = await _rerun(ws, first["query"], frag, {p_id: json.dumps(edit)})
            p_id2 = valid["editors"][0][0]
            bad = {"edited_rows": {"0": {"A": 0.9}}, "added_rows": [], "deleted_rows": []}  # row 0 sums to 1.6
            refused = await _rerun(ws, valid["query"], frag, {p_id2: json.dumps(bad)})
            return first, valid, refused

    with ThreadPoolExecutor(1) as ex:
        first, valid, refused = ex.submit(asyncio.run, go()).result(180)
    assert not first["errors"] and _p(first["query"])[0] == pytest.approx([0.3, 0.4, 0.3, 0.0])
    assert not valid["errors"], valid["errors"]
    assert _p(valid["query"])[0] == pytest.approx([0.2, 0.5, 0.3, 0.0])
    assert valid["early"] == 0, "a second fragment run for one cell edit"
    assert refused["early"] == 0 and any("target_probs" in e for e in refused["errors"]), refused["errors"]
    assert _p(refused["query"])[0] == pytest.approx([0.2, 0.5, 0.3, 0.0])  # nothing applied
