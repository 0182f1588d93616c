"""Every page in 简体中文: no UI string is left in English only.

Each page runs (AppTest) with the language set to zh; every text the page shows is collected:
titles, headers, markdown, captions, messages, widget labels and options, tab and expander labels,
chart trace names and axis titles, and the step player's captions and row labels. A string
with no Chinese character in it must be "language-neutral": once identifiers (``accept_index``,
``u[0]``, ``predicts[3]``), numbers, token labels and the article's terms that stay in English
in the Chinese article too (Draft, Target, Accept, KV, bonus, token, EAGLE, DSpark, ...) are
removed, no English word may remain. "u[0]  (slot 1)" fails ("slot"); "u[0]  (位置 1)" passes.

A string WITH Chinese in it may still carry an English sentence ("终止分布：residual relu(p - q) at the
rejected slot's row"): no run of three or more English words (terms, identifiers and labels aside)
may appear anywhere, except the article's own English names in ``PHRASES``. Nor may brackets nest
（bonus（奖励 token））, nor a Streamlit icon code show as text (":material_..."). Besides every page
at its defaults, the pages run at the states where the reference words a warning or a special
terminal distribution: a draft token with q = 0 (both semantics), a zero-mass residual, an edited preset.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from tests.player_read import players
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.stem for p in (ROOT / "pages").glob("[!_]*.py"))

# Terms the Chinese text keeps in English (the article does), and names of things.
NEUTRAL = set("""
Draft Target Verify Accept KV bonus token tokens EAGLE DSpark SGLang numpy torch triton Triton CPU GPU CUDA JSON
Monte Carlo PNG SVG HTML URL pytest Python relu softmax argmax max min sum cumsum topk CDF Greedy greedy
reference interpreter Language Target-only English predicts buffer prefix anchor earlier
""".split())
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
IDENT = re.compile(r":[a-z]+(?:-background)?\[|[A-Za-z_][\w.]*(\[[^\]]*\])+|[A-Za-z]*_[\w.]*|[A-Za-z]\w*\(|`[^`]*`|:material/\w+:|&\w+;|https?://\S+")
WORD = re.compile(r"[A-Za-z]{3,}")
# English names the Chinese article itself uses (or a metric's own name, quoted), and the proper name of an
# engine (a product's name is not translated): allowed inside Chinese text.
PHRASES = ("Classic Rejection Sampling", "Target-only Tree Sampling", "mean acceptance length", "Hugging Face transformers")
RUN = re.compile(r"[A-Za-z][A-Za-z']*(?:[ \t,;:/\-–—]+[A-Za-z][A-Za-z']*)+")
NESTED = re.compile(r"（[^（）]*（")


def _texts(at: AppTest) -> list[tuple[str, str]]:
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "success", "warning", "error",
                 "button", "selectbox", "radio", "slider", "toggle", "checkbox", "expander", "select_slider",
                 "number_input", "text_input", "tab", "multiselect", "metric", "text_area"):
        for el in at.get(kind):
            proto = getattr(el, "proto", None)
            for attr in ("body", "label", "value", "help"):
                v = getattr(proto, attr, None) if proto is not None else None
                if isinstance(v, str) and 'class="sv-graph"' in v:  # a figure drawn on the server: each text on its own
                    out += [("figure.text", html.unescape(t)) for t in re.findall(r">([^<>]+)<", v) if t.strip()]
                elif isinstance(v, str) and v and not v.lstrip().startswith("<style"):
                    out.append((f"{kind}.{attr}", v))
            for opt in getattr(proto, "options", []) or []:
                if isinstance(opt, str):
                    out.append((f"{kind}.option", opt))
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        for tr in spec.get("data", []):
            if tr.get("name"):
                out.append(("chart.trace", tr["name"]))
        lay = spec.get("layout", {})
        for key, val in lay.items():
            if key.startswith(("xaxis", "yaxis")) and isinstance(val, dict):
                t = val.get("title")
                t = t.get("text") if isinstance(t, dict) else t
                if t:
                    out.append(("chart.axis", t))
    for data in players(at):
        if data:
            out += [("player.label", v) for v in data["labels"].values()]
            for f in data["frames"]:
                out.append(("player.caption", f["caption"]))
                out += [("player.row", r["label"]) for r in f["rows"] if r["label"]]
    return out


def english_left(text: str, vocab: set) -> list[str]:
    """English words in ``text`` that are not identifiers, terms or token labels ([] if none)."""
    if CJK.search(text):
        return []
    t = html.unescape(re.sub(r"<[^>]+>", " ", text))
    t = IDENT.sub(" ", t)
    return [w for w in WORD.findall(t) if w not in NEUTRAL and w not in vocab]


def english_runs(text: str, vocab: set) -> list[str]:
    """Runs of >= 3 English words (terms, identifiers, labels and ``PHRASES`` aside) anywhere in ``text``."""
    t = html.unescape(re.sub(r"<[^>]+>", " ", text))
    for phrase in PHRASES:
        t = t.replace(phrase, " ")
    t = IDENT.sub(" ", t)
    out = []
    for m in RUN.finditer(t):
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z']*", m.group(0))
                 if len(w) > 1 and w.split("'")[0] not in NEUTRAL and w not in vocab]
        if len(words) >= 3:
            out.append(m.group(0))
    return out


def _vocab() -> set:
    from specviz.inputs.scenario import load_scenario

    vocab = set()  # token labels of the presets are data, not UI text
    for f in (ROOT / "scenarios").glob("*.json"):
        vocab |= set(load_scenario(f).vocab)
    return vocab


def leftovers(at: AppTest) -> list[tuple[str, str, str]]:
    """(problem, element kind, text) for every English leftover the page shows in 简体中文 mode."""
    vocab = _vocab()
    texts = _texts(at)
    # What a person typed (a text box's value, e.g. the decoding page's prompt) is data, and so is its echo.
    for kind, text in texts:
        if kind in ("text_input.value", "text_area.value"):
            vocab |= set(WORD.findall(text))
    found = set()
    for kind, text in texts:
        # A coloured token stream (the decoding loop's generated text, ":gray[...]") is model output: data too.
        if kind in ("text_input.value", "text_area.value") or text.startswith(":gray["):
            continue
        if english_left(text, vocab):
            found.add(("English only", kind, text[:100]))
        for r in english_runs(text, vocab):
            found.add(("English sentence", kind, r[:100]))
        if NESTED.search(text):
            found.add(("nested brackets", kind, text[:100]))
        if ":material_" in text or re.search(r":material/\w+:", re.sub(r"^[^<]*$", "", text)):
            found.add(("raw icon code", kind, text[:100]))
    return sorted(found)


@pytest.mark.parametrize("page", PAGES)
def test_every_ui_string_has_chinese(page):
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state["sv_lang"] = "zh"
    at.session_state["w_chain_text_open"] = True  # the chain's p/q text box: its content is drawn only while open
    at.run()
    assert not at.exception, at.exception
    missing = leftovers(at)
    assert not missing, f"{page}: English left in 简体中文 mode: {missing}"


def _chain(p0, q0, semantics="0.5.23"):
    """pq_example with its first p and q rows replaced (slot 1 proposes A, token 0)."""
    from specviz.rooms.pitfalls import preset
    from specviz.inputs.scenario import scenario_from_json

    d = json.loads(preset("pq_example").to_json())
    d["requests"][0]["target_probs"][0] = p0
    d["requests"][0]["draft_probs"][0] = q0
    d["requests"][0]["coins"] = [0.3]
    d["semantics"] = semantics
    return scenario_from_json(json.dumps(d))


def _edited_tree():
    from specviz.inputs import edits
    from specviz.rooms.pitfalls import preset

    return edits.set_target_predict(preset("running_example"), ["B", "D", "X", "X", "X"])


STATES = {
    # q(A) = 0: 0.5.23 rejects A (a warning), the residual relu(p - q) at row 0 has mass
    "chain_q_zero": ("chain_sampling", "chain", lambda: _chain([.2, .5, .3, 0], [0, .5, .5, 0])),
    # earlier releases accept A (p > 0): the bonus row after the last slot
    "chain_q_zero_earlier": ("chain_sampling", "chain", lambda: _chain([.2, .5, .3, 0], [0, .5, .5, 0], "earlier")),
    # p = q and q(A) = 0: rejected, and the residual has no mass ("emits token V-1")
    "chain_zero_mass": ("chain_sampling", "chain", lambda: _chain([0, .5, .5, 0], [0, .5, .5, 0])),
    "greedy_edited": ("greedy", "tree", _edited_tree),
    "overview_edited": ("overview", "tree", _edited_tree),
    "tour_edited": ("tour", "tree", _edited_tree),
}


@pytest.mark.parametrize("state", list(STATES))
def test_chinese_at_special_states(state):
    """The warnings, terminal-distribution sources and names that only show in corner states are
    Chinese too, and name tokens by their labels (never "token 0")."""
    page, slot, build = STATES[state]
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state["sv_lang"] = "zh"
    at.session_state[f"sv_scn::{slot}"] = build().to_json()
    at.run()
    assert not at.exception, at.exception
    missing = leftovers(at)
    assert not missing, f"{state}: English left in 简体中文 mode: {missing}"
    if state.startswith("chain"):
        warnings = [w.proto.body for w in at.warning]
        assert any("q = 0" in w and "A" in w and "请求" in w for w in warnings), warnings
        assert not any("token 0" in w for w in warnings), warnings
    if state == "chain_zero_mass":
        assert any("V-1 = R" in w.proto.body for w in at.warning), [w.proto.body for w in at.warning]


def test_every_worded_code_in_both_languages():
    """Each code the reference records (terminal-distribution sources, warnings) is worded in 简体中文
    with no English sentence, and names tokens by label; the reference emits no code without words."""
    import ast as _ast

    from specviz.replay import wording
    from specviz.rooms.pitfalls import preset

    s = preset("target_only_sampling")
    vocab = _vocab()
    emitted = set()
    for path in (ROOT / "specviz" / "reference").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        # source, source_code = "English", "code"  /  ("English", "code") pairs
        segments = re.findall(r'source, source_code = ([^\n]*(?:\n {20,}[^\n]*){0,3})', text)  # the statement and its continuation lines
        sources = {c for seg in segments for c in re.findall(r'"([a-z_]+)"', seg)}
        assert sources <= set(wording.SOURCES), sources - set(wording.SOURCES)
        emitted |= sources
        for node in _ast.walk(_ast.parse(text)):
            if isinstance(node, _ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("record_warning", "emit"):
                emitted |= {k.value.value for k in node.keywords if k.arg == "code" and isinstance(k.value, _ast.Constant)}
                if getattr(node.func, "id", "") == "record_warning" and len(node.args) > 4 and isinstance(node.args[4], _ast.Constant):
                    emitted.add(node.args[4].value)
    warn_codes = {"chain_q_zero", "chain_no_mass", "target_only_no_mass", "unlinked_node"}
    assert warn_codes <= emitted and set(wording.SOURCES) <= emitted, emitted
    for code in wording.SOURCES:
        zh = wording.residual_source(code, "zh")
        assert CJK.search(zh) and not english_runs(zh, vocab), (code, zh)
    params = {"slot": 1, "token": 2, "p": 0.25, "semantics": "0.5.23", "row": 0, "vocab_size": s.vocab_size,
              "last_valid_fallback": True}
    for code in sorted(warn_codes):
        for lang in ("en", "zh"):
            text = wording.warning_sentence(code, 0, 3, params, s, lang)
            assert text and "token 2" not in text and "= 5" not in text, text  # labels, not ids
            if lang == "zh":
                assert CJK.search(text) and not english_runs(text, vocab), (code, text)
    assert "C" in wording.warning_sentence("chain_q_zero", 0, 1, params, s, "zh")  # token 2 is labelled C
    assert "R" in wording.warning_sentence("target_only_no_mass", 0, 3, params, s, "en")  # V-1 = 5 is labelled R


def test_math_minus_is_one_sign_everywhere():
    """Issue 32: "relu(p - q)" used an ASCII hyphen where the rest of the app writes "relu(p − q)" with the
    minus sign U+2212. Every user-visible string (string constants of pages/, specviz/ and app.py, docstrings
    left out) writes the subtraction inside relu(...) / max(...) and "p − q", "p − buffer", "1 − u" with "−"."""
    import ast

    root = Path(__file__).resolve().parents[1]
    hyphen = re.compile(r"(relu|max)\((?:[^()]|\([^()]*\))*?\s-\s|\bp(_R)? - (q|buffer|work)|\b1 - (u|sum|p)\b")
    bad = []
    for path in sorted([root / "app.py", *(root / "pages").glob("*.py"), *(root / "specviz").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        bad += [f"{path.relative_to(root)}:{n.lineno}: {hyphen.search(n.value).group(0)!r}" for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs and hyphen.search(n.value)]
    assert bad == [], bad


def _switching_script():
    import streamlit as st

    from specviz.app.ui import i18n, state

    def in_callback():  # a callback reads the language before and after it sets it
        first = i18n.tr("Hello", "你好")
        state.set_value(i18n.LANG_KEY, "zh")
        st.session_state["callback_saw"] = (first, i18n.tr("Hello", "你好"))

    before = i18n.tr("Hello", "你好")
    if st.session_state.get("switch_now"):
        state.set_value(i18n.LANG_KEY, "en" if i18n.lang() == "zh" else "zh")
    st.session_state["run_saw"] = (before, i18n.tr("Hello", "你好"), i18n.term("root"))
    st.button("to zh", key="to_zh", on_click=in_callback)
    state.widget(st.radio, "Language", i18n.LANG_KEY, "en", options=["en", "zh"])


def test_a_language_switch_takes_effect_in_the_run_that_sets_it():
    """``lang()`` is read once per script run; a switch made by ``set_value`` (share links) or by the
    language radio is seen by the very next ``tr`` / ``term``, in a callback too."""
    from specviz.app.ui.state import widget_key

    at = AppTest.from_function(_switching_script).run()
    assert at.session_state["run_saw"] == ("Hello", "Hello", "root")
    at.session_state["switch_now"] = True
    at.run()
    assert at.session_state["run_saw"] == ("Hello", "你好", "根节点")
    at.run()  # switches back: the run starts in zh and ends in en
    assert at.session_state["run_saw"] == ("你好", "Hello", "root")
    at.session_state["switch_now"] = False
    at.button(key="to_zh").click().run()
    assert at.session_state["callback_saw"] == ("Hello", "你好")
    assert at.session_state["run_saw"] == ("你好", "你好", "根节点")
    at.radio(key=widget_key("sv_lang", at.session_state)).set_value("en").run()
    assert at.session_state["run_saw"] == ("Hello", "Hello", "root") and not at.exception
