"""AppTest for the classroom pages: pitfalls, audit, quiz, tour. They run without exception,
key interactions change what is shown, both languages work, and reruns stay fast."""
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import open_sidebar_boxes

from specviz.app.ui.state import widget_key
from specviz.rooms.export import has_dot
from specviz.rooms.pitfalls import PITFALLS
from tests.figures import graphs
from specviz.inputs.scenario import scenario_from_dict, scenario_from_json

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "pages"
TIMEOUT = 60


def page(name: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [e.value for e in at.error] + [e.value for e in at.success]
                     + [e.value for e in at.info] + [e.value for e in at.warning])


def big_tree_scenario() -> dict:
    """64 nodes, a complete binary tree (depth 6); the target follows the first child: k = 6."""
    n = 64
    parents = [-1] + [(i - 1) // 2 for i in range(1, n)]
    vocab = [f"t{k}" for k in range(8)] + ["X", "R"]
    tokens = ["R"] + [vocab[i % 8] for i in range(1, n)]
    kids = {i: [c for c in range(n) if parents[c] == i] for i in range(n)}
    predict = [tokens[kids[i][0]] if kids[i] else "X" for i in range(n)]
    return {"name": "big_tree", "algorithm": "greedy", "vocab": vocab,
            "requests": [{"tree": {"parents": parents, "tokens": tokens}, "seq_len": 10, "target_predict": predict}]}


# -- pitfalls -------------------------------------------------------------------------------------

def test_pitfalls_every_entry_renders_two_sides():
    at = page("pitfalls")
    open_sidebar_boxes(at, "pitfall_export")
    seen = set()
    for p in PITFALLS:
        at.radio(key="w_pitfall::en").set_value(p.key).run()
        assert not at.exception, (p.key, [e.value for e in at.exception])
        body = texts(at).replace("\\*", "*")  # markdown escapes of u*q, b*n
        assert p.symptom["en"] in body and p.fix["en"] in body
        charts = graphs(at)
        assert len(charts) == 2, p.key
        seen.add(charts[0])
        assert charts[0] != charts[1], f"{p.key}: buggy and correct trees look the same"
    assert len(seen) >= 6
    labels = [d.label for d in at.get("download_button")]
    want = {"Scenario JSON", "pytest file", "Animation (offline HTML)"}
    if has_dot():
        want |= {"Figure as SVG", "Figure as PNG"}
    assert want <= set(labels), labels


def test_pitfalls_chinese():
    at = page("pitfalls")
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("zh").run()
    assert not at.exception
    assert "常见错误图鉴" in [t.value for t in at.title][0]
    assert PITFALLS[0].symptom["zh"] in texts(at)


def test_pitfall_audit_button_fills_the_audit_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/pitfalls.py").run()
    at.radio(key="w_pitfall::en").set_value("local_node_ids").run()
    at.button(key="w_pitfall_audit").click().run()
    assert not at.exception
    assert "accept_index" in at.session_state["sv_audit_text"]
    at.switch_page("pages/audit.py").run()
    assert not at.exception
    assert any("accept_index[1][0]" in e.value for e in at.error), [e.value for e in at.error]


# -- audit ----------------------------------------------------------------------------------------

def test_audit_verdicts_change_with_the_pasted_outputs():
    at = page("audit")
    assert any("Paste some outputs" in i.value for i in at.info)
    at.button(key="w_audit_ex_ok").click().run()
    assert any("Correct" in s.value for s in at.success)
    at.button(key="w_audit_ex_bad").click().run()
    assert any("accept_index[0][0]" in e.value for e in at.error)
    assert "root's row 0 comes first" in texts(at)
    # The wrong node (the root, node 0) is outlined in the tree and its row coloured in the shift table.
    fig = graphs(at)[0]
    assert 'stroke-width="6"' in fig or "penwidth=6" in fig or 'penwidth="6"' in fig
    at.text_area(key=widget_key("sv_audit_text", at.session_state)).set_value("predicts = tensor([0, 2, 0, 0, 0], dtype=torch.int32)").run()
    assert "bonus X is written at the last accepted row" in texts(at)


def test_audit_malformed_paste_is_an_error_not_a_traceback():
    at = page("audit")
    for bad in ("accept_index = [0, 1", "nonsense", "foo = [1]", "predicts = [1, 2]", "accept_index = [0, ..., 3]"):
        at.text_area(key=widget_key("sv_audit_text", at.session_state)).set_value(bad).run()
        assert not at.exception, bad
        assert at.error, bad


def test_audit_json_inputs_edit():
    at = page("audit")
    data = json.loads(at.session_state["sv_scn::audit"])
    data["requests"][0]["target_predict"] = ["X", "X", "X", "X", "X"]
    key = next(t.key for t in at.text_area if t.key.startswith("w_audit_json"))
    at.text_area(key=key).set_value(json.dumps(data)).run()
    at.button(key="w_audit_apply").click().run()
    assert not at.exception
    assert scenario_from_json(at.session_state["sv_scn::audit"]).requests[0].target_predict[0] == "X"
    at.text_area(key=widget_key("sv_audit_text", at.session_state)).set_value("accept_index = [0, -1, -1]").run()
    assert any("Correct" in s.value for s in at.success)
    key = next(t.key for t in at.text_area if t.key.startswith("w_audit_json"))
    at.text_area(key=key).set_value("{\"name\": 3}").run()
    assert not at.exception and at.error


def test_audit_dspark_preset():
    at = page("audit")
    key = next(s.key for s in at.selectbox if s.key.startswith("w_audit_preset"))
    at.selectbox(key=key).set_value("dspark_chain").run()
    at.text_area(key=widget_key("sv_audit_text", at.session_state)).set_value("correct_len = 3").run()
    assert not at.exception
    assert any("correct_len[0]" in e.value for e in at.error)


# -- quiz -------------------------------------------------------------------------------------------

def test_quiz_check_and_reveal():
    at = page("quiz")
    at.text_input(key=widget_key("sv_quiz_answer", at.session_state)).set_value("1, 3").run()
    at.button(key="w_quiz_check").click().run()
    assert any("accept_index[0][0]" in e.value for e in at.error)
    assert "root's row 0 comes first" in texts(at)
    at.text_input(key=widget_key("sv_quiz_answer", at.session_state)).set_value("[0, 1, 3]").run()
    at.button(key="w_quiz_check").click().run()
    assert any("Right" in s.value for s in at.success)
    assert at.metric[0].value == "1 / 2"
    at.radio(key=widget_key("sv_quiz_field", at.session_state)).set_value("outputs").run()
    at.text_input(key=widget_key("sv_quiz_answer", at.session_state)).set_value("R A C").run()
    at.button(key="w_quiz_check").click().run()
    assert "shifted by one position" in texts(at)
    assert not at.table
    at.button(key="w_quiz_reveal").click().run()
    # table cells are markdown, so the page escapes them ("\\[A, C, X\\]" renders as "[A, C, X]")
    assert at.table and "[A, C, X]" in at.table[0].value.to_string().replace("\\", "")


def test_quiz_random_and_dspark_questions():
    at = page("quiz")
    before = at.session_state["sv_scn::quiz"]
    at.button(key="w_quiz_random").click().run()
    assert not at.exception and at.session_state["sv_scn::quiz"] != before
    key = next(s.key for s in at.selectbox if s.key.startswith("w_quiz_preset"))
    at.selectbox(key=key).set_value("dspark_chain").run()
    assert at.radio(key=widget_key("sv_quiz_field", at.session_state)).options == ["correct_len", "outputs", "committed_rows"]
    at.radio(key=widget_key("sv_quiz_field", at.session_state)).set_value("correct_len").run()
    at.text_input(key=widget_key("sv_quiz_answer", at.session_state)).set_value("2").run()
    at.button(key="w_quiz_check").click().run()
    assert any("Right" in s.value for s in at.success)


# -- tour -------------------------------------------------------------------------------------------

def test_tour_walks_six_stops_in_both_languages():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/tour.py").run()
    headers = [at.header[0].value]
    for _ in range(5):
        at.button(key="w_tour_next").click().run()
        assert not at.exception
        headers.append(at.header[0].value)
    assert len(set(headers)) == 6 and headers[-1].startswith("6")
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("zh").run()
    assert at.header[0].value.startswith("六")
    at.button(key="w_tour_back").click().run()
    assert at.header[0].value.startswith("五")


def test_tour_prompt_checks_follow_the_live_scenario():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/tour.py").run()
    at.button(key="w_tour_next").click().run()
    at.button(key="w_tour_next").click().run()  # stop 3: greedy
    # drawn icons (inline SVG with a text alternative), never font glyphs or raw ":material/...:" codes in HTML
    assert re.search(r'aria-label="not yet"[^>]*>.*?</svg> Make the target predict D after A', texts(at))
    assert ":material/check_box" not in texts(at) and ":material/forum" not in texts(at)
    data = json.loads(at.session_state["sv_scn::tree"]) if "sv_scn::tree" in at.session_state else None
    s = scenario_from_json(data and json.dumps(data)) if data else None
    base = json.loads((ROOT / "scenarios" / "running_example.json").read_text()) if s is None else data
    base["requests"][0]["target_predict"] = ["A", "D", "X", "X", "X"]
    at.session_state["sv_scn::tree"] = scenario_from_dict(base).to_json()
    at.run()
    assert re.search(r'aria-label="done"[^>]*>.*?</svg> Make the target predict D after A', texts(at))


TOUR_BUTTONS = [  # (stop, button, page file, slot, preset)
    (0, 0, "pages/overview.py", "tree", "running_example"), (0, 1, "pages/greedy.py", "tree", "running_example"),
    (1, 0, "pages/tree_builder.py", "tree", "running_example"), (2, 0, "pages/greedy.py", "tree", "running_example"),
    (2, 1, "pages/pitfalls.py", None, None), (3, 0, "pages/chain_sampling.py", "chain", "pq_example"),
    (3, 1, "pages/target_only.py", "target_only", "target_only_sampling"), (4, 0, "pages/dspark.py", "dspark", "dspark_chain"),
    (5, 0, "pages/batch_kv.py", "batch", "batch_two_requests"), (5, 1, "pages/quiz.py", None, None),
]


def test_tour_buttons_open_every_live_page():
    """Every "open the live page" button loads its preset into the page's slot, and that page runs on it.

    (AppTest does not always follow st.switch_page from a button; the browser test clicks one for real.)"""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    for stop, k, page_file, slot, preset_name in TOUR_BUTTONS:
        if not (ROOT / page_file).exists():
            continue
        if slot == "tree":  # start from another tree, so the click visibly loads the preset
            at.session_state["sv_scn::tree"] = scenario_from_dict(big_tree_scenario()).to_json()
        at.session_state["sv_tour_step"] = stop
        at.switch_page("pages/tour.py").run()
        at.button(key=f"w_tour_page::{stop}::{k}").click().run()
        assert not at.exception, (stop, k, [e.value for e in at.exception])
        if slot:
            assert scenario_from_json(at.session_state[f"sv_scn::{slot}"]).name == preset_name, (stop, k)
        at.switch_page(page_file).run()
        assert not at.exception, (page_file, [e.value for e in at.exception])


@pytest.mark.parametrize("name", ["pitfalls", "audit", "quiz", "tour"])
def test_pages_in_chinese(name):
    at = page(name)
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("zh").run()
    assert not at.exception
    title = at.title[0].value
    assert any("\u4e00" <= ch <= "\u9fff" for ch in title), title
    if name == "pitfalls":
        for p in PITFALLS:
            at.radio(key="w_pitfall::zh").set_value(p.key).run()
            assert not at.exception and p.fix["zh"] in texts(at).replace("\\*", "*")
    if name == "audit":
        at.button(key="w_audit_ex_bad").click().run()
        assert any("第一个错误值" in e.value for e in at.error)
        assert "root 的第 0 行必须排在最前" in texts(at)


PAGE_SLOTS = {"greedy": ("pages/greedy.py", "tree"), "batch_kv": ("pages/batch_kv.py", "batch"),
              "dspark": ("pages/dspark.py", "dspark"), "target_only": ("pages/target_only.py", "target_only"),
              "chain_sampling": ("pages/chain_sampling.py", "chain")}


def test_pitfall_live_buttons_open_their_pages():
    """"Explore these inputs on the live page" loads the pitfall's scenario into that page's slot; the page runs."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    for p in PITFALLS:
        at.switch_page("pages/pitfalls.py").run()
        at.radio(key="w_pitfall::en").set_value(p.key).run()
        if not [b for b in at.button if b.key == "w_pitfall_live"]:
            continue
        at.button(key="w_pitfall_live").click().run()
        assert not at.exception, (p.key, [e.value for e in at.exception])
        # (AppTest does not follow st.switch_page from a column button; the browser test does.) The click put the
        # pitfall's inputs into the live page's slot; that page runs on them.
        page_file, slot = PAGE_SLOTS[p.page]
        assert scenario_from_json(at.session_state[f"sv_scn::{slot}"]) == p.scenario(), p.key
        at.switch_page(page_file).run()
        assert not at.exception, (p.key, [e.value for e in at.exception])
