"""What an edit's rerun draws, after the cuts of issue 20 (benchmarks/README.md, "A class of 50"):
the greedy shift table is one escaped HTML element coloured by the run, the sidebar's closed boxes
draw no content until opened, and the result's chip rows are one element."""
from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from specviz.replay.engine import run_scenario
from specviz.rooms.pitfalls import preset
from specviz.render.palette import state_color
from specviz.base.safety import html_text
from specviz.app.ui.state import widget_key
from tests.conftest import open_sidebar_boxes

ROOT = Path(__file__).resolve().parents[1]


def _greedy(**state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "greedy.py"), default_timeout=120)
    for k, v in state.items():
        at.session_state[k] = v
    return at


def _shift_table(at) -> str:
    return next(m.value for m in at.markdown if 'class="sv-table"' in m.value)


def _row_fills(table: str) -> list[str | None]:
    rows = re.findall(r"<tr( style=\"[^\"]*\")?>", table.split("<tbody>", 1)[1])
    return [re.search(r"background:(.*?);color:", r).group(1) if r else None for r in rows]


def test_shift_table_rows_are_coloured_by_the_run_after_each_edit():
    at = _greedy()
    at.run()
    assert not at.exception
    s = preset("running_example")
    for value in ("D", "C", "B", "D"):  # Target(A): B and C accept the walk's second draft differently
        box = next(sb for sb in at.selectbox if sb.label.startswith("Target(A)"))
        box.select(value).run()
        assert not at.exception
        from specviz.inputs import edits
        tp = list(s.requests[0].target_predict)
        tp[1] = value
        s = edits.set_target_predict(s, tp, 0)
        accepted = set(run_scenario(s, "numpy").commits[0].accept_nodes)
        table = _shift_table(at)
        fills = _row_fills(table)
        assert fills == [html_text(state_color("accepted" if i in accepted else "discarded"))
                         for i in range(s.tree(0).n)], value
        heads = len(re.findall(r"<th>", table))
        assert all(len(re.findall(r"<td>", r)) == heads for r in table.split("<tr")[2:])  # one cell per column


def test_closed_sidebar_boxes_draw_nothing_until_opened():
    at = _greedy()
    at.run()
    assert not at.exception
    labels = [e.label for e in at.sidebar.get("expander")]
    assert any(x.startswith("Share this view") for x in labels) and any(x.startswith("Export") for x in labels)
    assert not at.sidebar.get("download_button") and not at.sidebar.code
    assert not [sb for sb in at.sidebar.selectbox if sb.label == "Preset"]
    assert at.query_params.get("s")  # the address bar's link is written while the share box is closed
    open_sidebar_boxes(at, "greedy_export").run()
    assert not at.exception
    assert {"Scenario JSON", "pytest file", "Save scenario JSON"} <= {d.label for d in at.sidebar.get("download_button")}
    assert [c.value for c in at.sidebar.code if "?s=" in c.value]
    assert [sb for sb in at.sidebar.selectbox if sb.label == "Preset"]


def test_result_chip_rows_are_one_element():
    at = _greedy()
    at.run()
    rows = [m.value for m in at.markdown if 'class="sv-row"' in m.value and html_text("accept_index") in m.value]
    assert len(rows) == 1
    for label in ("accept_index", "predicts[accept_index] →", "output tokens", "KV kept for", "discarded"):
        assert html_text(label) in rows[0], label


def test_raw_tensors_are_written_out_only_while_their_box_is_open():
    """Closed, the raw tensors box draws nothing (its text was ~7% of an edit's script time); opened, it
    holds the run's arrays, and after an edit the new ones (never an earlier run's)."""
    at = _greedy().run()
    box = next(e for e in at.main.expander if e.label.startswith("Raw tensors"))
    assert box is not None and not at.main.code
    at.session_state["w_raw_open::greedy"] = True
    at.run()
    text = "\n".join(c.value for c in at.main.code)
    ai = run_scenario(preset("running_example")).result["accept_index"].reshape(-1).tolist()
    assert "accept_index (result" in text and str(ai).replace(" ", "") in text.replace(" ", "")
    cell = next(sb for sb in at.selectbox if sb.label.startswith("Target(A)"))
    cell.select("B").run()
    text = "\n".join(c.value for c in at.main.code)
    s = preset("running_example")
    tp = list(s.requests[0].target_predict)
    tp[1] = "B"
    from specviz.inputs import edits

    ai2 = run_scenario(edits.set_target_predict(s, tp, 0)).result["accept_index"].reshape(-1).tolist()
    assert ai2 != ai and str(ai2).replace(" ", "") in text.replace(" ", "")


def _eagle_inputs(at) -> list[str]:
    """The EAGLE rollout form's inputs drawn by this run (number and text inputs)."""
    names = {"topk", "depth", "num_draft_tokens", "parent_list", "selected_index", "draft tokens (nodes 1..n-1)"}
    return [w.label for w in [*at.number_input, *at.text_input] if w.label in names]


def test_a_tree_edit_does_not_draw_the_eagle_form_while_its_tab_is_closed():
    """The tree builder's EAGLE form (six inputs, issue 31) is drawn only while its tab is open: an edit
    made by hand does not draw it; opening the tab draws it with the edited tree's rollout."""
    at = AppTest.from_file(str(ROOT / "pages" / "tree_builder.py"), default_timeout=120).run()
    assert not at.exception
    assert _eagle_inputs(at) == []
    at.button(key="w_add_child").click().run()
    assert not at.exception and _eagle_inputs(at) == []
    at.session_state["w_tree_tab"] = ":material/account_tree: EAGLE rollout"  # what the browser sends on a tab click
    at.run()
    assert not at.exception
    assert sorted(_eagle_inputs(at)) == sorted(["topk", "depth", "num_draft_tokens", "parent_list", "selected_index",
                                                "draft tokens (nodes 1..n-1)"])
    assert next(w.value for w in at.number_input if w.label == "num_draft_tokens") == 6  # the tree after Add child
    at.session_state["w_tree_tab"] = ":material/edit: Draw by hand"
    at.run()
    assert not at.exception and _eagle_inputs(at) == []


def _table_editors(at) -> list:
    """The tree builder's table editors drawn by this run (data editors with a parent column)."""
    return [d for d in at.dataframe if list(d.value.columns) == ["node", "parent", "token"]]


def test_a_tree_edit_does_not_draw_the_table_editor_while_its_tab_is_closed():
    """The tree builder's table editor (a pandas frame, its Arrow conversion and hash: ~a quarter of a tree
    edit's script CPU, issue 31) is drawn only while its tab is open: an edit made by hand does not draw it;
    opening the tab draws it with the edited tree's parents and tokens."""
    at = AppTest.from_file(str(ROOT / "pages" / "tree_builder.py"), default_timeout=120).run()
    assert not at.exception and _table_editors(at) == []
    at.button(key="w_add_child").click().run()
    assert not at.exception and _table_editors(at) == []
    at.session_state["w_tree_tab"] = ":material/table_edit: Table"  # what the browser sends on a tab click
    at.run()
    assert not at.exception
    (table,) = [e.value for e in _table_editors(at)]
    assert list(table["parent"]) == [-1, 0, 0, 1, 1, 1] and list(table["token"]) == ["R", "A", "B", "C", "D", "A"]
    assert _eagle_inputs(at) == []
    at.session_state["w_tree_tab"] = ":material/edit: Draw by hand"
    at.run()
    assert not at.exception and _table_editors(at) == []


def test_the_chain_end_state_is_one_escaped_table_not_an_arrow_frame():
    """The chain page's end state (every slot at once) is one escaped HTML table coloured by verdict, not a
    pandas frame through st.dataframe (an Arrow conversion on every chain edit, issue 31); its numbers are
    the run's. A token label with markup stays text."""
    import json

    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120).run()
    assert not at.exception
    at.button(key="w_chain_add").click().run()  # R A + one slot: slot 1 rejected at u = .7, slot 2 (A) not reached
    assert not at.exception
    assert not [d for d in at.dataframe if "verdict" in d.value.columns]
    table = next(m.value for m in at.markdown if 'class="sv-table"' in m.value and "verdict" in m.value)
    cells = [re.findall(r"<td>(.*?)</td>", r) for r in table.split("<tbody>", 1)[1].split("<tr")[1:]]
    assert cells == [["1", "A", "0.3", "0.6", "0.5", "0.7", "0.42", "✘ rejected"],
                     ["2", "A", "", "", "", "0.5", "", "not reached"]], cells
    fills = _row_fills(table)
    assert fills == [html_text(state_color("rejected")), html_text(state_color("discarded"))]
    text = at.session_state["sv_scn::chain"]  # a label with markup is escaped, never drawn
    at.session_state["sv_scn::chain"] = json.dumps(json.loads(text.replace('"A"', '"<b>A</b>"')))
    at.run()
    assert not at.exception
    table = next(m.value for m in at.markdown if 'class="sv-table"' in m.value and "verdict" in m.value)
    assert "<td>&lt;b&gt;A&lt;/b&gt;</td>" in table and "<b>A</b>" not in table


def test_the_dspark_comparison_table_is_one_escaped_table_not_an_arrow_table():
    """DSpark's fixed "EAGLE tree vs DSpark chain" table is one escaped HTML table drawn on every DSpark edit,
    not a frame through st.table (an Arrow conversion each edit, issue 31); its words follow the language."""
    at = AppTest.from_file(str(ROOT / "pages" / "dspark.py"), default_timeout=120).run()
    assert not at.exception
    assert not at.table
    for lang, words in (("en", ["topology", "linear chain", "correct_len [bs]"]), ("zh", ["拓扑", "线性链", "correct_len [bs]"])):
        at.session_state["sv_lang"] = lang
        at.run()
        assert not at.exception and not at.table
        table = next(m.value for m in at.markdown if 'class="sv-table"' in m.value and "DSpark Chain" in m.value)
        import html

        cells = [html.unescape(c) for c in re.findall(r"<t[dh]>(.*?)</t[dh]>", table)]
        assert "EAGLE Tree" in cells and all(w in cells for w in words), cells


def test_a_tree_edit_hands_the_retrieve_table_to_streamlit_as_arrow(monkeypatch):
    """The tree builder's retrieve_* table goes to st.dataframe as an Arrow table built from its columns, not
    a pandas frame that Streamlit converts to Arrow on every tree edit (~80% of that table's cost, issue 31).
    Its values are the tree's."""
    import pyarrow as pa
    import streamlit

    at = AppTest.from_file(str(ROOT / "pages" / "tree_builder.py"), default_timeout=120).run()
    assert not at.exception
    handed = []
    original = streamlit.dataframe
    monkeypatch.setattr(streamlit, "dataframe", lambda data, *a, **k: handed.append(type(data)) or original(data, *a, **k))
    at.selectbox(key=widget_key("sv_sel::tree", at.session_state)).select(2).run()  # B, a leaf
    at.button(key="w_add_child").click().run()
    assert not at.exception
    assert handed == [pa.Table, pa.Table], handed  # one table a run
    table = next(d.value for d in at.dataframe if "retrieve_next_token" in d.value.columns)
    assert list(table["retrieve_next_token"]) == [1, 3, 5, -1, -1, -1]
    assert list(table["positions"]) == [10, 11, 11, 12, 12, 12]
    assert list(table.iloc[:, 1]) == ["R", "A", "B", "C", "D", "A"]  # the new node: the token box's first token
