"""An inline figure's SVG made inert for Streamlit's markdown: the fast pass equals the readable one.

``markup._markdown_inert`` turns every markdown-active character of a Graphviz SVG's text and attribute
values into a character reference, in two passes over the whole text (one ``str.translate``, then
the entities and attribute names it broke put back); ``markup.markdown_inert_reference`` does it tag by tag and value by value. They
must agree character for character on every figure the pages draw, hostile labels included.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from specviz.app.ui import markup
from specviz.render.mask import mask_svg
from specviz.render.svg import dot_to_svg, have_dot
from specviz.render.tree import tree_dot

# Labels a student may type: markdown links, emphasis, code, maths, tables, HTML entities, a tooltip
# that ends like an attribute ("a:b="), backslashes and the characters of the xlink names themselves.
HOSTILE = ["[x](http://e.org)", "**b**", "a:b=", "#h", "`c`", "$x$", "_u_", "~s~", "|p|", "&amp;", "\\", "!",
           "xlink:title=", " xmlns:xlink=\"", "&#35;", "R", "<i>", "a\"b", "中文:"]


def _body(svg: str) -> str:
    return svg[markup._SVG_ROOT.search(svg).end():]


def _figures() -> list[str]:
    n = len(HOSTILE)
    parents = [-1] + [i // 2 for i in range(n - 1)]
    tips = {i: f"node {i}: x=1\nparent {parents[i]}: {HOSTILE[i]}" for i in range(n)}  # some end "a:b="
    out = [mask_svg(np.tril(np.ones((6, 6), dtype=bool)), HOSTILE[:6], selected=2, words=("a:b", "[m]", "*r*", "c#l"))]
    if have_dot():
        out.append(dot_to_svg(tree_dot(parents, HOSTILE, states={i: "plain" for i in range(n)}, selected=3, links=True,
                                       tooltips=tips, row_word="row:", link_words=("first [child]", "next_sibling"))))
    return [re.sub(r"<!--.*?-->", "", svg, flags=re.S) for svg in out]  # as inline_svg does first


@pytest.mark.parametrize("k", range(2))
def test_the_fast_pass_equals_the_readable_one_on_real_figures(k):
    figures = _figures()
    if k >= len(figures):
        pytest.skip("needs Graphviz's dot")
    body = _body(figures[k])
    markup._check_svg(figures[k][figures[k].find("<svg"):])  # what _markdown_inert may rely on
    assert markup._markdown_inert(body) == markup.markdown_inert_reference(body)


def test_the_fast_pass_equals_the_readable_one_on_hand_made_text():
    body = ('<g id="a_1" class="node"><a xlink:title="u:x=1 [k](l) #3 &amp; &#45;"><text x="1" fill="#ff0000">'
            'a:b= *b* _u_ `c` $m$ ~s~ |t| \\ ! #h &lt;&#35;</text></a></g>\n<path d="M1,2 C3,4"/>')
    assert markup._markdown_inert(body) == markup.markdown_inert_reference(body)
    assert "xlink:title=" in markup._markdown_inert(body) and "&#58;" in markup._markdown_inert(body)


def test_nothing_active_is_left_outside_tags_and_names():
    """After the pass, markdown sees no active character in any text or attribute value."""
    for svg in _figures():
        out = markup._markdown_inert(_body(svg))
        values = re.findall(r'="([^"]*)"', out)
        texts = re.findall(r">([^<]*)<", out)
        for piece in values + texts:
            assert not re.search(r"[\[\]()!*_`~\\|$:]", piece), piece
            assert not re.search(r"(?<!&)#", piece), piece


@pytest.mark.parametrize("bad, message", [
    ('<g id="a"><script>alert(1)</script></g>', "holds a <script> element"),
    ('<g id="a" onload="alert(1)"></g>', "holds a onload attribute"),
    ('<g id="a"><path style="fill:url(http://e.org/x)"/></g>', "holds a style attribute"),
    ('<g id="a"><text>a < b</text></g>', "holds a tag of another shape"),
    ('<g id="a"><a xlink:href="http://e.org" xlink:title="t"><text>x</text></a></g>', "holds a xlink:href attribute"),
])
def test_the_checker_still_refuses_what_graphviz_does_not_write(bad, message):
    """_check_svg checks every tag at once and walks the document only to name the first offence."""
    for svg in _figures():
        doc = svg[svg.find("<svg"):]
        doc = doc.replace("</svg>", bad + "</svg>")
        with pytest.raises(ValueError, match=message):
            markup._check_svg(doc)
        markup._check_svg(svg[svg.find("<svg"):])  # the figure itself passes
