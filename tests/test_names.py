"""An edited preset is never called by the preset's name (issue 18, item 8).

Load running_example, edit it (Target(R) = B: the walk R → B), and every place that names the
scenario says it was edited: the sidebar's preset picker (no preset chosen, "edited:
running_example"), the share box ("… (edited)", and the step the link really opens at), every export
file name, the offline HTML's title, the pytest file's test name, the Overview's heading. The
unedited preset keeps its plain name everywhere. Names are derived from the live inputs
(``specviz.inputs.naming``), so undoing the edit gives the plain name back.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.conftest import open_sidebar_boxes

from specviz.inputs import edits, naming
from specviz.rooms.pitfalls import preset
from specviz.rooms.share import QUERY_KEY, decode_state

ROOT = Path(__file__).resolve().parents[1]


def _edited():
    """running_example with Target(R) = B: accept_index [0, 2], outputs B X (another tree walk)."""
    return edits.set_target_predict(preset("running_example"), ["B", "D", "X", "X", "X"])


def _unmd(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


@pytest.fixture
def downloads(monkeypatch):
    """Every st.download_button the page draws: label -> (file_name, data)."""
    seen = {}
    real = st.download_button

    def spy(label, data, file_name=None, *args, **kwargs):
        seen[label] = (file_name, data)
        return real(label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", spy)
    return seen


def _greedy(scenario, lang="en", step=3):
    at = AppTest.from_file(str(ROOT / "pages" / "greedy.py"), default_timeout=120)
    at.session_state["sv_scn::tree"] = scenario.to_json()
    at.session_state["sv_lang"] = lang
    at.session_state["sv_step::greedy"] = step
    open_sidebar_boxes(at, "greedy_export")
    at.run()
    assert not at.exception, at.exception
    return at


def test_naming_is_derived_from_the_inputs():
    s = _edited()
    assert naming.display_name(preset("running_example")) == "running_example"
    assert naming.display_name(s) == "running_example (edited)"
    assert naming.display_name(s, "zh") == "已修改的 running_example"
    assert naming.file_stem(s) == "running_example_edited"
    back = edits.set_target_predict(s, ["A", "C", "X", "X", "X"])  # the edit undone: the preset's inputs again
    assert naming.display_name(back) == "running_example" and naming.file_stem(back) == "running_example"
    own = s.replace(name="my_tree")  # a name of its own (no preset has it) is kept as it is
    assert naming.display_name(own) == "my_tree" and naming.file_stem(own) == "my_tree"


def test_edited_preset_is_named_edited_everywhere_on_the_page(downloads):
    at = _greedy(_edited())
    picker = next(sb for sb in at.sidebar.selectbox if sb.label == "Preset")
    assert picker.value is None and "edited: running_example" in picker.proto.placeholder
    share = _unmd(next(c.value for c in at.sidebar.caption if "The link holds" in c.value))
    assert "the scenario 'running_example (edited)'" in share
    assert "It opens at step 3, the step this page was drawn at" in share  # the truth about the link's step
    url = next(c.value for c in at.sidebar.code if f"?{QUERY_KEY}=" in c.value)
    assert decode_state(url.split(f"?{QUERY_KEY}=", 1)[1]).step == 3
    names = {label: f for label, (f, _) in downloads.items()}
    assert names["Scenario JSON"] == "running_example_edited.json"
    assert names["Save scenario JSON"] == "running_example_edited.json"
    assert names["pytest file"] == "test_running_example_edited.py"
    assert names["Animation (offline HTML)"] == "running_example_edited_walk.html"
    assert all("running_example" not in f or "running_example_edited" in f for f in names.values() if f), names
    pytest_text = downloads["pytest file"][1]
    assert "def test_running_example_edited():" in pytest_text and "'running_example (edited)'" in pytest_text
    page = downloads["Animation (offline HTML)"][1]()  # built on click
    m = re.search(r'"title":\s*"([^"]*)"', page)
    assert m and m.group(1) == "specviz · running_example (edited): R → B, output B X", m and m.group(1)


def test_unedited_preset_keeps_its_name(downloads):
    at = _greedy(preset("running_example"), step=0)
    picker = next(sb for sb in at.sidebar.selectbox if sb.label == "Preset")
    assert picker.value == "running_example"
    share = _unmd(next(c.value for c in at.sidebar.caption if "The link holds" in c.value))
    assert "the scenario 'running_example'," in share and "It opens at step 0" in share
    assert downloads["Scenario JSON"][0] == "running_example.json"
    page = downloads["Animation (offline HTML)"][1]()
    assert '"title":"specviz · running_example: R → A → C, output A C X"' in page.replace('": "', '":"')


def test_choosing_the_preset_again_reloads_it():
    at = _greedy(_edited())
    picker = next(sb for sb in at.sidebar.selectbox if sb.label == "Preset")
    picker.set_value("running_example").run()
    assert not at.exception
    assert naming.display_name(naming_scenario(at)) == "running_example"


def naming_scenario(at):
    from specviz.inputs.scenario import scenario_from_json

    return scenario_from_json(at.session_state["sv_scn::tree"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_overview_heading_follows_the_live_scenario(lang):
    at = AppTest.from_file(str(ROOT / "pages" / "overview.py"), default_timeout=120)
    at.session_state["sv_lang"] = lang
    at.session_state["sv_scn::tree"] = _edited().to_json()
    at.run()
    assert not at.exception, at.exception
    heads = [_unmd(h.value) for h in at.subheader]
    assert "The running example, live" not in heads and "示例（实时）" not in heads
    want = "The scenario 'running_example (edited)', live" if lang == "en" else "场景“已修改的 running_example”（实时）"
    assert want in heads, heads


def test_share_box_in_chinese_names_the_edit():
    at = _greedy(_edited(), lang="zh", step=2)
    share = _unmd(next(c.value for c in at.sidebar.caption if "链接包含" in c.value))
    assert "场景“已修改的 running_example”" in share and "第 2 步" in share
    picker = next(sb for sb in at.sidebar.selectbox if sb.label == "预设")
    assert picker.value is None and "已修改：running_example" in picker.proto.placeholder
