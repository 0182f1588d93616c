"""Every page in 简体中文: no UI string is left in English only.

Each page runs (AppTest) with the language set to zh; every text the page shows is collected:
titles, headers, markdown, captions, messages, widget labels and options, tab and expander labels,
chart trace names and axis titles, and the step player's captions and row labels. A string
with no Chinese character in it must be "language-neutral": once identifiers (``accept_index``,
``u[0]``, ``predicts[3]``), numbers, token labels and the article's terms that stay in English
in the Chinese article too (Draft, Target, Accept, KV, bonus, token, EAGLE, DSpark, ...) are
removed, no English word may remain. "u[0]  (slot 1)" fails ("slot"); "u[0]  (位置 1)" passes.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
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
    for el in at.get("iframe"):
        m = re.search(r'id="sv-data">(.*?)</script>', getattr(el.proto, "srcdoc", "") or "", re.S)
        if m:
            data = json.loads(m.group(1))
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


@pytest.mark.parametrize("page", PAGES)
def test_every_ui_string_has_chinese(page):
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state["sv_lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    from specviz.scenario import load_scenario

    vocab = set()  # token labels of the presets are data, not UI text
    for f in (ROOT / "scenarios").glob("*.json"):
        vocab |= set(load_scenario(f).vocab)
    texts = _texts(at)
    # What a person typed (a text box's value, e.g. the decoding page's prompt) is data, and so is its echo.
    for kind, text in texts:
        if kind in ("text_input.value", "text_area.value"):
            vocab |= set(WORD.findall(text))
    # A coloured token stream (the decoding loop's generated text, ":gray[...]") is model output: data too.
    missing = sorted({(kind, text[:80]) for kind, text in texts
                      if kind not in ("text_input.value", "text_area.value") and not text.startswith(":gray[")
                      and english_left(text, vocab)})
    assert not missing, f"{page}: English-only strings in 简体中文 mode: {missing}"
