"""Every value from data is text, on every page (issue 32, "Audit (markup from data)").

Token labels that are markdown or HTML (``**x**``, ``[k](x)``, ``![e](y)``, ``<img src=y>``,
``<a href=x>``) go into every page that shows labels, with a wrong answer on the audit page (its
verdict names got / expected values). Each element's text is rendered the way Streamlit renders it
(CommonMark; raw HTML only where the element allows HTML) and the result must hold no link to ``x``,
no image of ``y`` and no bold ``x``: nothing of a label may become an element. The audit verdict
rendered ``[k](x)`` as a live link and ``![e](y)`` as an image before the fix.
"""
from __future__ import annotations

import json
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_hostile_inputs import _relabel  # noqa: E402

from specviz.rooms.pitfalls import preset  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LABELS = ["**x**", "[k](x)", "![e](y)", "<img src=y>", "<a href=x>", "_x_"]
TARGETS = {"x", "y", "/x", "/y"}

# page -> (scenario slot, preset); None: the page takes no scenario (its own data is set below). The pitfall
# gallery shows only its own presets; the loop page's data is its prompt.
PAGES = {"overview": ("tree", "running_example"), "tree_builder": ("tree", "running_example"),
         "greedy": ("tree", "running_example"), "batch_kv": ("batch", "batch_two_requests"),
         "chain_sampling": ("chain", "pq_example"), "target_only": ("target_only", "target_only_sampling"),
         "dspark": ("dspark", "dspark_chain"), "audit": ("audit", "running_example"), "tour": ("tree", "running_example"),
         "quiz": ("quiz", "running_example"), "engines": (None, None), "decoding_loop": (None, None)}


class _Elements(HTMLParser):
    """The links, images and bold / italic runs in a piece of rendered HTML."""

    def __init__(self):
        super().__init__()
        self.found, self._open = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and (a.get("href") or "") in TARGETS:
            self.found.append(("link", a.get("href")))
        if tag == "img" and ((a.get("src") or "") in TARGETS or "e" == (a.get("alt") or "")):
            self.found.append(("image", a.get("src")))
        if tag in ("strong", "em", "b", "i"):
            self._open.append(tag)

    def handle_endtag(self, tag):
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open and data.strip() == "x":
            self.found.append((self._open[-1], data))


def elements_from_labels(text: str, allow_html: bool) -> list:
    """Render ``text`` as Streamlit's markdown would and list the elements built from a label."""
    rendered = MarkdownIt("commonmark", {"html": allow_html}).render(text)
    p = _Elements()
    p.feed(rendered)
    return p.found


def _texts(at):
    """(kind, text, allow_html) for every piece of text the page draws as markdown."""
    def walk(node):
        for child in (node.children.values() if hasattr(node, "children") else ()):
            yield child
            yield from walk(child)
    for el in walk(at._tree):
        proto = getattr(el, "proto", None)
        if proto is None:
            continue
        for field in ("body", "label", "help", "placeholder"):
            value = getattr(proto, field, None)
            if isinstance(value, str) and value:
                if field == "body" and value.startswith('<div class="sv-graph"><svg '):
                    continue  # a Graphviz figure: tests/test_hostile_inputs.py checks its text
                yield el.type, value, bool(getattr(proto, "allow_html", False))
        if el.type == "radio":  # radio options are markdown too
            for option in proto.options:
                yield el.type, option, False


def _wrong_outputs(s) -> str:
    """A paste whose ``outputs`` name labels but are wrong (the verdict quotes got and expected)."""
    from specviz.rooms.audit import expected_outputs

    exp = expected_outputs(s)["outputs"]
    wrong = [[s.vocab[(t + 1) % len(s.vocab)] for t in row] for row in exp]
    return "outputs = " + json.dumps(wrong, ensure_ascii=False)


def test_the_checker_sees_links_images_and_bold():
    """The checker itself: each label shape would be caught as markdown (and the tags as HTML)."""
    assert elements_from_labels('is ["[k](x)"], expected ["![e](y)"]', False) == [("link", "x"), ("image", "y")]
    assert elements_from_labels("**x**", False) == [("strong", "x")]
    assert elements_from_labels("<img src=y> <a href=x>k</a>", True) == [("image", "y"), ("link", "x")]
    assert elements_from_labels("<img src=y> <a href=x>k</a>", False) == []  # not HTML: shown as text
    from specviz.base.safety import md_text
    assert elements_from_labels(" ".join(md_text(v) for v in LABELS), False) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_label_becomes_markup_on_any_page(page, lang):
    from streamlit.testing.v1 import AppTest

    slot, name = PAGES[page]
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state["sv_lang"] = lang
    if slot is not None:
        s = _relabel(preset(name), labels=LABELS, title="**x** [k](x) ![e](y)", description="<img src=y> <a href=x>k</a>")
        at.session_state[f"sv_scn::{slot}"] = s.to_json()
        if page == "audit":
            at.session_state["sv_audit_text"] = _wrong_outputs(s)
    elif page == "decoding_loop":  # its data is the prompt the tiny models continue
        at.session_state["sv_backend"] = "numpy"
        at.session_state["sv_loop::prompt"] = "**x** [k](x) ![e](y) <img src=y> <a href=x>k</a> _x_ "
        at.session_state["sv_loop::rounds"] = 3
    else:  # the engines page: a chain of its own (JSON, as its editor holds it)
        from specviz.rooms.engines import chain as C
        from specviz.rooms.engines import chain_presets as CP

        data = json.loads(C.to_json(CP.preset("equality")))
        data["labels"] = [LABELS[i % len(LABELS)] + ("" if i < len(LABELS) else f"~{i}") for i in range(len(data["requests"][0]["target_probs"][0]))]
        at.session_state["sv_engines_json"] = json.dumps(data)
    at.run()
    assert not at.exception, at.exception
    if page == "audit":
        assert at.error, "the audit page must show its verdict for the wrong outputs"
    bad = [(kind, text[:200], found) for kind, text, allow_html in _texts(at)
           if (found := elements_from_labels(text, allow_html))]
    assert bad == [], bad
