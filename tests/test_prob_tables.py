"""specviz.app.ui.prob_tables: the chain page's p and q tables as one Components v2 element (issue 31)."""
from __future__ import annotations

import json
import math
from pathlib import Path

from streamlit.testing.v1 import AppTest

from specviz.app.ui import prob_tables

ROOT = Path(__file__).resolve().parents[1]


def test_heading_parts_keep_the_words_and_mark_bold_and_code():
    text = "**q = draft_probs** `[bs, N−1, V]`（Draft 提出位置 s 时所用的分布）"
    parts = prob_tables.heading_parts(text)
    assert parts == [["b", "q = draft_probs"], ["t", " "], ["c", "[bs, N−1, V]"], ["t", "（Draft 提出位置 s 时所用的分布）"]]
    assert "".join(t for _, t in parts) == text.replace("**", "").replace("`", "")


def test_an_edit_sets_one_cell_and_text_that_is_no_number_reads_nan():
    tables = {"p": [[0.5, 0.5]], "q": [[1.0, 0.0]]}
    new, cell = prob_tables.apply_edit(tables, {"table": "q", "row": 0, "col": 1, "text": "0,25"})
    assert cell == ("q", 0, 1, "0,25") and new == {"p": [[0.5, 0.5]], "q": [[1.0, 0.25]]}
    assert tables["q"] == [[1.0, 0.0]]  # the caller's rows are not changed
    new, cell = prob_tables.apply_edit(tables, {"table": "p", "row": 0, "col": 0, "text": "<b>x</b>"})
    assert cell == ("p", 0, 0, "<b>x</b>") and math.isnan(new["p"][0][0])
    for bad in ({"table": "p", "row": 3, "col": 0, "text": "1"}, {"table": "r", "row": 0, "col": 0, "text": "1"},
                {"table": "p", "row": 0, "col": -1, "text": "1"}):
        assert prob_tables.apply_edit(tables, bad)[1] is None


def test_the_module_writes_text_never_markup():
    js = (ROOT / "static" / "prob_tables.js").read_text(encoding="utf-8")
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "outerHTML" not in js
    assert "textContent" in js


def test_the_chain_page_sends_its_tables_as_one_element_with_todays_labels():
    at = AppTest.from_file(str(ROOT / "pages" / "chain_sampling.py"), default_timeout=120)
    at.session_state["sv_lang"] = "zh"
    at.run()
    assert not at.exception
    assert not at.get("arrow_data_frame") and not [e for e in at.get("dataframe")]
    (el,) = [e for e in at.get("bidi_component") if e.proto.component_name == prob_tables.NAME]
    data = json.loads(el.proto.json or el.proto.mixed.json)
    p, q = data["tables"]
    assert p["columns"] == q["columns"] == ["A", "B", "C", "R"] and data["digits"] == 3
    assert p["rows"] == ["第 0 行：R 之后", "第 1 行：A 之后"] and q["rows"] == ["位置 1：提出 A"]
    assert p["values"] == [[0.3, 0.4, 0.3, 0.0], [0.2, 0.5, 0.3, 0.0]] and q["values"] == [[0.6, 0.3, 0.1, 0.0]]
    assert ["b", "p = target_probs"] in p["head"] and ["c", "[bs, N, V]"] in p["head"]


def test_a_target_only_p_cell_edit_is_stored_and_a_refused_one_kept(app_server):
    """Target-only's p table is the same element: a valid cell edit is applied in one fragment run, a refused one
    (a row left unnormalised) names target_probs and keeps the typed cell on screen, nothing applied."""
    import pytest

    from tests.support.st_protocol import run_in_thread, tab
    from tests.test_chain_cell_edit import _cell_edit, _rerun

    def p_of(query):
        from specviz.rooms.share import QUERY_KEY, decode_state

        token = query.split(f"{QUERY_KEY}=", 1)[1].split("&", 1)[0]
        sc = decode_state(token).scenario
        return [list(r) for r in (sc.requests[0].target_probs if sc.requests[0].target_probs is not None else sc.target_probs(0))]

    async def go():
        async with tab(app_server) as tb:
            first = await _rerun(tb, "", page="target_only")
            (t,) = first["tables"]
            row = t["data"]["tables"][0]["values"][0]
            bad = await _rerun(tb, first["query"], t["fragment"], _cell_edit(t, "p", 0, 0, str(row[0] + 0.5)), page="target_only")
            t2 = bad["tables"][0]
            # move mass within row 0 (still sums to 1): the refused cell is replaced, the row valid again
            good = await _rerun(tb, bad["query"], t2["fragment"], _cell_edit(t2, "p", 0, 0, str(row[0])), page="target_only")
            return first, bad, good, row

    first, bad, good, row = run_in_thread(go(), 180)
    assert not first["errors"] and not first["editors"]
    assert bad["early"] == 0 and any("target_probs" in e for e in bad["errors"]), bad["errors"]
    shown = bad["tables"][0]["data"]["tables"][0]
    assert shown["values"][0][0] == pytest.approx(row[0] + 0.5) and shown["typed"] == [[0, 0, str(row[0] + 0.5)]]
    assert p_of(bad["query"])[0] == pytest.approx(row)  # nothing applied
    assert not good["errors"] and good["tables"][0]["data"]["tables"][0]["typed"] == []
    assert good["tables"][0]["data"]["tables"][0]["values"][0] == pytest.approx(row)


def test_text_that_is_no_number_is_named_and_its_last_typing_counts():
    fields = {"p": "requests[0].target_probs", "q": "requests[0].draft_probs"}
    err = prob_tables.not_a_number([("p", 0, 1, "0.2"), ("q", 0, 2, "abc")], fields)
    assert err.field == "requests[0].draft_probs[0][2]" and "'abc' is not a number" in err.detail
    # st.error reads markdown: the typed text is quoted with its punctuation escaped, never emphasis or a link
    assert "'\\*x\\*' is not a number" in prob_tables.not_a_number([("p", 0, 0, "*x*")], fields).detail
    assert "\\[a\\]\\(" in prob_tables.not_a_number([("p", 0, 0, "[a](javascript:x)")], fields).detail
    assert prob_tables.not_a_number([("p", 1, 0, "abc"), ("p", 1, 0, "0,5")], fields) is None  # fixed since
    assert prob_tables.not_a_number([("p", 1, 0, "0.5"), ("p", 1, 0, "")], fields) is None  # empty: the sum check's
    assert prob_tables.not_a_number([("p", 0, 0)], fields) is None  # (row, col) without text: nothing to say
    assert prob_tables.table("p", "p", ["A"], ["r"], [[float("nan")]], [(0, 0, "abc"), (0, 0)])["typed"] == [
        [0, 0, "abc"], [0, 0, ""]]


def test_a_chain_cell_typed_as_no_number_is_named_and_shown_as_typed(app_server):
    """"abc" in a p cell: st.error names that cell's field and says it is no number (not "contains NaN"), the text
    stays in the cell, nothing is applied; typing a number there goes on as any refused cell does."""
    from tests.support.st_protocol import run_in_thread, tab
    from tests.test_chain_cell_edit import _cell_edit, _rerun

    async def go():
        async with tab(app_server) as tb:
            first = await _rerun(tb, "")
            (t,) = first["tables"]
            bad = await _rerun(tb, first["query"], t["fragment"], _cell_edit(t, "p", 0, 0, "abc"))
            t2 = bad["tables"][0]
            fixed = await _rerun(tb, bad["query"], t2["fragment"], _cell_edit(t2, "p", 0, 0, "0.3"))
            return first, bad, fixed

    first, bad, fixed = run_in_thread(go(), 180)
    assert not first["errors"]
    assert len(bad["errors"]) == 1 and "requests[0].target_probs[0][0]" in bad["errors"][0], bad["errors"]
    assert "'abc' is not a number" in bad["errors"][0] and "NaN" not in bad["errors"][0]
    shown = bad["tables"][0]["data"]["tables"][0]
    assert shown["typed"] == [[0, 0, "abc"]] and shown["values"][0][0] is None
    assert not fixed["errors"], fixed["errors"]  # 0.3 was the cell's value: the row sums to 1 again
    assert fixed["tables"][0]["data"]["tables"][0]["typed"] == []


def test_normalise_rows_keeps_a_cell_that_holds_no_number(app_server):
    """"abc" in a p cell, then "Normalise rows": the cell is no number, so there is nothing to divide. It stays held
    as typed and named by st.error, and p is unchanged (it was read as 0 and the row normalised without it)."""
    from tests.support.st_protocol import run_in_thread, tab
    from tests.test_chain_cell_edit import _cell_edit, _p, _rerun

    async def go():
        async with tab(app_server) as tb:
            first = await _rerun(tb, "")
            (t,) = first["tables"]
            bad = await _rerun(tb, first["query"], t["fragment"], _cell_edit(t, "p", 0, 0, "abc"))
            a = await tb.rerun("chain_sampling", bad["query"])
            (norm,) = [b for b, _ in a.elements("button") if b.label.startswith("Normalise rows")]
            a = await tb.rerun("chain_sampling", bad["query"], "", {norm.id: ("trigger_value", True)})
            after = await _rerun(tb, a.query)
            return first, after

    first, after = run_in_thread(go(), 180)
    assert len(after["errors"]) == 1 and "requests[0].target_probs[0][0]" in after["errors"][0], after["errors"]
    assert "'abc' is not a number" in after["errors"][0]
    assert after["tables"][0]["data"]["tables"][0]["typed"] == [[0, 0, "abc"]]
    assert _p(after["query"]) == _p(first["query"])  # nothing normalised
