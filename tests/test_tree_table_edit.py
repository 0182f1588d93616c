"""Issue 31: a valid edit of the tree builder's table is one run of its fragment (the table was read after
the widget and a change followed by a fragment rerun: two runs). A refused edit is still shown by that run,
the typed cells kept. Spoken over Streamlit's websocket protocol, as a browser does."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("websockets")
from specviz.rooms.share import QUERY_KEY, decode_state  # noqa: E402
from tests.support.st_protocol import run_in_thread, tab  # noqa: E402
from tests.test_chain_cell_edit import _rerun  # noqa: E402

TABLE_TAB = ":material/table_edit: Table"  # the tab's label: the table editor is drawn only while it is open


async def _tabs(t) -> tuple:
    """A first run of the tree builder: (its query string, the id of its tabs widget, their fragment)."""
    a = await t.rerun("tree_builder")
    (tabs, frag), *_ = a.blocks("tab_container")
    return a.query, tabs.id, frag


def _tree(query: str) -> tuple:
    token = query.split(f"{QUERY_KEY}=", 1)[1].split("&", 1)[0]
    s = decode_state(token).scenario
    t = s.tree(0)
    return list(t.parents), [s.label(x) for x in t.tokens]


def test_a_valid_tree_table_edit_is_one_fragment_run(app_server):
    async def go():
        async with tab(app_server) as t:
            query, tabs, frag = await _tabs(t)
            first = await _rerun(t, query, frag, {tabs: ("string_value", TABLE_TAB)}, page="tree_builder")  # the browser's tab click
            table, frag = first["editors"][0]  # the table editor (the retrieve table comes later)
            relabel = {"edited_rows": {"2": {"token": "C"}}, "added_rows": [], "deleted_rows": []}  # node 2: B -> C
            valid = await _rerun(t, first["query"], frag, {tabs: ("string_value", TABLE_TAB), table: ("string_value", json.dumps(relabel))}, page="tree_builder")
            table2 = valid["editors"][0][0]
            bad = {"edited_rows": {"1": {"parent": 3}}, "added_rows": [], "deleted_rows": []}  # A under its own child
            refused = await _rerun(t, valid["query"], frag, {tabs: ("string_value", TABLE_TAB), table2: ("string_value", json.dumps(bad))}, page="tree_builder")
            return first, valid, refused

    first, valid, refused = run_in_thread(go(), 180)
    assert len(first["editors"]) == 2, "the table editor is not drawn in its open tab"
    assert not first["errors"] and _tree(first["query"]) == ([-1, 0, 0, 1, 1], ["R", "A", "B", "C", "D"])
    assert not valid["errors"], valid["errors"]
    assert _tree(valid["query"]) == ([-1, 0, 0, 1, 1], ["R", "A", "C", "C", "D"])
    assert valid["early"] == 0, "a second fragment run for one table edit"
    assert refused["early"] == 0 and any("tree" in e for e in refused["errors"]), refused["errors"]
    assert _tree(refused["query"]) == ([-1, 0, 0, 1, 1], ["R", "A", "C", "C", "D"])  # nothing applied
