"""The "Three engines" page (issue 22) in both languages: each edge preset one click away, the
differences named with their rule in the chosen language, the Monte Carlo's p-values, a clear
note (never a traceback) for an engine that is not installed, and hostile labels kept as text."""
from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from specviz.rooms.engines import adapters as A
from specviz.rooms.engines import chain as C
from specviz.rooms.engines import chain_presets as CP
from specviz.rooms.engines import compare as K

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "engines.py")
TIMEOUT = 600  # the first run imports transformers and loads the kernels (slow on a busy machine)
ALL_THREE = pytest.mark.skipif(not all(ok for ok, _ in A.availability().values()),
                               reason="needs sglang, vllm and transformers installed")


def _run(lang: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state["sv_lang"] = lang
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _diff_lines(at: AppTest) -> list[str]:
    """The bullet lines under "Where they differ", with md_text's escapes removed."""
    from specviz.base.safety import WORD_JOINER  # (invisible, breaks autolinks after "word:")

    return [m.value.replace("\\", "").replace(WORD_JOINER, "") for m in at.markdown if m.value.startswith("- **")]


@ALL_THREE
@pytest.mark.parametrize("lang, title, reason", [
    ("en", "Three engines: same law, different draws", "Residual of zero mass"),
    ("zh", "三个引擎：同一分布，不同抽样", "残差质量为零"),
])
def test_page_shows_the_differences_in_both_languages(lang, title, reason):
    at = _run(lang)
    assert at.title[0].value == title
    # the default chain is the equality edge: SGLang rejects, the other two accept
    eq = K.REASONS["equality"][0 if lang == "en" else 1]
    assert sum(eq in line for line in _diff_lines(at)) == 2, _diff_lines(at)  # SGLang vs vLLM, SGLang vs transformers
    if lang == "zh":  # Chinese punctuation around Chinese words, not "请求 0, 位置 1: 拒绝 vs 接受."
        heads = [line.split("。")[0] for line in _diff_lines(at)]  # "- **A vs B**，请求 0，位置 1：拒绝 vs 接受"
        assert all("**，请求 0，" in h and "：" in h and ", " not in h and ": " not in h for h in heads), heads
    at.button(key="w_engines_preset_zero_mass").click().run()
    assert not at.exception
    lines = _diff_lines(at)
    assert len(lines) == 3 and all(reason in line for line in lines), lines
    table = at.dataframe[0].value
    assert list(table.columns) == ["SGLang 0.5.23", "vLLM 0.33.0", "transformers"]
    own = table.iloc[-1].tolist()  # every engine's own code agrees with specviz's description
    assert all(cell.startswith("agrees" if lang == "en" else "一致") for cell in own), own


@ALL_THREE
def test_every_preset_is_one_click_away_and_the_monte_carlo_shows_p_values():
    at = _run("en")
    for name in CP.PRESETS:
        at.button(key=f"w_engines_preset_{name}").click().run()
        assert not at.exception and not at.error, (name, [e.value for e in at.error])
        assert C.from_json(at.session_state["sv_engines_json"]) == CP.preset(name)
    at.button(key="w_engines_preset_random").click().run()
    at.select_slider(key="w_engines_trials").set_value(100).run()
    at.button(key="w_engines_mc").click().run()
    mc = at.dataframe[-1].value
    assert mc["engine"].tolist() == ["SGLang 0.5.23", "vLLM 0.33.0", "transformers"]
    assert all(float(v) > 1e-3 for v in mc["p-value"]), mc


def test_missing_engine_is_a_note_not_a_traceback(monkeypatch):
    real = A.availability

    def without_vllm():
        out = dict(real())
        out["vllm"] = (False, "vllm==0.33.0 is not installed (pip download --no-deps -d .wheels vllm==0.33.0)")
        return out

    monkeypatch.setattr(A, "availability", without_vllm)
    st.cache_data.clear()
    try:
        at = _run("zh")
        notes = [i.value for i in at.info]
        assert any(n.startswith("此环境未安装 vLLM 0.33.0") for n in notes), notes
    finally:
        st.cache_data.clear()


def test_bad_json_names_the_field_and_keeps_the_chain():
    at = _run("en")
    before = at.session_state["sv_engines_json"]
    at.text_area(key="w_engines_json").set_value('{"requests": [{"target_probs": [[0.5, 0.6]], "draft_probs": [], '
                                                  '"draft_tokens": [0]}]}').run()
    assert not at.exception
    assert any("target_probs" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["sv_engines_json"] == before


def test_hostile_labels_stay_text():
    ch = CP.preset("q_zero").with_(labels=("[x](javascript:alert(1))", "<b>B</b>", "*c*", "d"))
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state["sv_engines_json"] = C.to_json(ch)
    at.run()
    assert not at.exception
    for m in at.markdown:
        assert "](javascript" not in m.value and "<b>" not in m.value


@ALL_THREE
def test_an_engine_installed_while_the_app_runs_is_seen_on_the_next_rerun(monkeypatch):
    """Issue 32 item 5: "not installed" was cached with the chain's results, so the preset shown
    first kept saying so after README command 2 installed the engines."""
    real = A.availability
    missing = {"on": True}

    def maybe_without_vllm():
        out = dict(real())
        if missing["on"]:
            out["vllm"] = (False, "vllm==0.33.0 is not installed (pip download --no-deps -d .wheels vllm==0.33.0)")
        return out

    monkeypatch.setattr(A, "availability", maybe_without_vllm)
    st.cache_data.clear()
    try:
        at = _run("en")
        assert any(i.value.startswith("vLLM 0.33.0 is not installed") for i in at.info)
        missing["on"] = False          # installed now; same chain, no preset clicked
        at.run()
        assert not at.exception
        assert not any("not installed" in i.value for i in at.info), [i.value for i in at.info]
        own = at.dataframe[0].value.iloc[-1].tolist()
        assert own[1].startswith("agrees"), own
    finally:
        st.cache_data.clear()


@pytest.mark.parametrize("lang, sampler, unverified", [
    ("en", "its own Sampler draws it", "unverified"),
    ("zh", "自己的 Sampler", "未经验证"),
])
def test_page_says_what_is_a_stand_in_and_what_is_unverified(lang, sampler, unverified):
    at = _run(lang)
    captions = " ".join(c.value for c in at.caption)
    assert sampler in captions and unverified in captions, captions


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


@pytest.mark.parametrize("bad", ["abc", "-1", "2147483648", "1e3", "NaN"])
def test_a_bad_seed_is_an_error_naming_the_field_and_the_tab_keeps_working(bad):
    at = _run("en")
    before = at.session_state["sv_engines_json"]
    at.text_input(key="w_engines_seed").set_value(bad).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(e.startswith("seed") for e in _errors(at)), _errors(at)
    assert at.session_state["sv_engines_json"] == before
    at.text_input(key="w_engines_seed").set_value("42").run()   # the next edit works
    assert not at.exception and not _errors(at), _errors(at)
    assert C.from_json(at.session_state["sv_engines_json"]).seed == 42


def test_a_crafted_websocket_seed_does_not_break_the_tab(monkeypatch):
    """Issue 35 item 6: a NaN (or a string) sent for the seed made every later rerun of the tab fail
    with ValueError inside Streamlit (an integer number_input converts it). Crafted here the way a
    hostile client sends it: the seed widget's state as a double NaN instead of its text."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from streamlit.testing.v1.element_tree import TextInput

    at = _run("en")
    real = TextInput._widget_state

    def crafted(self):
        ws = real.fget(self)
        if self.key == "w_engines_seed":
            ws = WidgetState(id=ws.id, double_value=float("nan"))
        return ws

    monkeypatch.setattr(TextInput, "_widget_state", property(crafted))
    at.text_input(key="w_engines_seed").set_value("1").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(e.startswith("seed") for e in _errors(at)), _errors(at)
    monkeypatch.setattr(TextInput, "_widget_state", real)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    at.button(key="w_engines_preset_random").click().run()
    assert not at.exception and at.title


def test_a_bidi_label_reaches_the_page_as_a_visible_escape():
    ch = CP.preset("q_zero").with_(labels=("exe\u202etxt", "b", "c", "d"))
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.session_state["sv_engines_json"] = C.to_json(ch)
    at.run()
    assert not at.exception
    texts = [m.value for m in at.markdown] + [str(d.value.to_dict()) for d in at.dataframe] + [c.value for c in at.caption]
    assert not any("\u202e" in t for t in texts)
    assert any("exe\\u202etxt" in t.replace("\\\\", "\\") for t in texts)


def _token(at: AppTest) -> str:
    token = at.query_params["s"]
    return token[0] if isinstance(token, list) else token


def _shown(at: AppTest) -> list:
    out = [(kind, e.value) for kind in ("title", "subheader", "info", "success", "warning", "error", "caption")
           for e in at.main.get(kind)]
    out += [("markdown", m.value) for m in at.main.markdown]
    out += [("dataframe", d.value.to_json()) for d in at.main.dataframe]
    return out


def test_share_link_round_trip():
    """Issue 35 item 5: after an edit the page writes ?s= (like every other page), and opening that
    link in a fresh session shows the same chain, language and results."""
    from specviz.rooms.share import decode_state

    at = _run("zh")
    at.button(key="w_engines_preset_p_zero").click().run()
    at.text_input(key="w_engines_seed").set_value("77").run()
    assert not at.exception and not _errors(at), _errors(at)
    token = _token(at)
    state = decode_state(token)
    assert state.page == "engines" and state.lang == "zh"
    assert C.from_json(state.extra["chain"]) == CP.preset("p_zero").with_(seed=77)

    fresh = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    fresh.query_params["s"] = token
    fresh.run()
    assert not fresh.exception and not _errors(fresh), _errors(fresh)
    assert fresh.session_state["sv_engines_json"] == at.session_state["sv_engines_json"]
    assert fresh.text_input(key="w_engines_seed").value == "77"
    assert _shown(fresh) == _shown(at)
    assert _token(fresh) == token


def test_a_bad_chain_in_a_link_is_refused_naming_the_field():
    import base64
    import json
    import zlib

    bad = C.to_json(CP.preset("q_zero")).replace('"greedy": false', '"greedy": "false"', 1)
    raw = json.dumps({"v": 1, "page": "engines", "extra": {"chain": bad}}).encode()
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params["s"] = base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")
    at.run()
    assert not at.exception
    assert any("link.extra.chain.requests[0].greedy" in e for e in _errors(at)), _errors(at)
    assert C.from_json(at.session_state["sv_engines_json"]) == CP.preset("equality")   # the default, nothing half-applied
