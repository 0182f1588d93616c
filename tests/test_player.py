"""The step player's data (specviz.replay.player.payload), its one-file document (standalone_html) and the tree's arrow key.

The player receives every frame as JSON (in a file: inside <script type="application/json">): hostile
text in a caption, a row label, a chip or a link stays data (escaped for a script context, written
by the player with textContent), and the data reads back unchanged. The tree draws its arrow words
in a key under the tree, never as edge labels (which overlapped nodes and clipped Chinese).
"""
from __future__ import annotations

import json
import re

import pytest

from specviz.render.svg import have_dot
from specviz.render.tree import tree_dot
from specviz.replay import player

HOSTILE = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "__SV_PLAYER_DATA__",
           "<!--", "\u2028\u2029", "&lt;b&gt;", '"; alert(1); "']

pytestmark = pytest.mark.skipif(not have_dot(), reason="Graphviz dot is not installed (apt-get install graphviz)")


def _data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="sv-data">(.*?)</script>', html, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))["player"]


def _html(frames, **kw) -> str:
    return player.standalone_html(player.payload(frames, labels=_labels(), **kw), title="t", desc="d", lang="en")


def _labels():
    return player.labels(lambda en, zh=None, **fmt: en.format(**fmt) if fmt else en)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_stays_data(text):
    dot = tree_dot([-1, 0], ["R", "A"], links=True)  # DOT quoting of labels: issue 8 finding 8 (security helper)
    frames = [player.Frame(dot=dot, caption=text, rows=[player.Row(text, [(text, "accepted", text)], code=text)],
                           table=[[text, "p"], [(text, "rejected", text), text]])]
    html = player.standalone_html(player.payload(frames, labels=_labels(), links=[f"http://x/greedy?s={text}"]),
                                  title=text, desc=text, lang="en")
    # The template's own two </script> closers are the only ones; nothing else opens a tag from the data.
    assert html.count("</script>") == 2
    assert "<img src=x" not in html and "<script>alert" not in html
    data = _data(html)
    assert data["frames"][0]["caption"] == text
    assert data["frames"][0]["rows"][0] == {"label": text, "chips": [[text, "accepted", text]], "code": text}
    assert data["frames"][0]["table"] == [[[text, "", ""], ["p", "", ""]], [[text, "rejected", text], [text, "", ""]]]
    assert data["links"] == [f"http://x/greedy?s={text}"]
    assert "<svg" in data["svgs"][0] and "<script" not in data["svgs"][0]  # SVG text, shown only through <img>
    assert "img.setAttribute(\"src\", srcs[k])" in player.asset("player.js")


def test_identical_figures_are_laid_out_once():
    a, b = tree_dot([-1, 0], ["R", "A"]), tree_dot([-1, 0], ["R", "B"])
    frames = [player.Frame(dot=d, caption=str(k)) for k, d in enumerate([a, a, b, a])]
    data = _data(_html(frames, start=2))
    assert [f["svg"] for f in data["frames"]] == [0, 0, 1, 0] and len(data["svgs"]) == 2
    assert data["start"] == 2


@pytest.mark.parametrize("words", [("first child", "next sibling"), ("第一个子节点", "下一个兄弟")])
@pytest.mark.parametrize("n", [5, 12, 64])
def test_arrow_words_are_a_key_not_edge_labels(words, n):
    parents = [-1] + [(i - 1) // 4 for i in range(1, n)]
    dot = tree_dot(parents, [f"t{i}" for i in range(n)], links=True, link_words=words)
    assert "xlabel" not in dot and not re.search(r"-> \w+ \[[^\]]*\blabel=", dot)  # no word sits on an arrow
    assert words[0] in dot  # the key names the first-child arrow
    if n <= 16:
        assert words[1] in dot


def test_table_is_optional_and_cells_are_written_as_text():
    """A frame without a table sends none; the template writes cells with textContent only."""
    dot = tree_dot([-1, 0], ["R", "A"])
    html = _html([player.Frame(dot=dot, caption="c")])
    assert _data(html)["frames"][0]["table"] is None
    script = player.asset("player.js")
    assert "el.textContent = text" in script and "innerHTML" not in script and "insertAdjacentHTML" not in script


def test_second_figure_is_optional_deduplicated_and_an_image():
    """A frame may carry a second drawn figure (the loop page's tree mask): sent once per distinct
    SVG, shown through <img> (a data URL, so it can run no script), hidden on frames without one."""
    from specviz.render.mask import mask_svg

    dot = tree_dot([-1, 0], ["R", "A"])
    m1, m2 = mask_svg([[1, 0], [1, 1]], ["R", "<img src=x>"]), mask_svg([[1, 0], [0, 1]], ["R", "B"])
    frames = [player.Frame(dot=dot, caption="a", svg2=m1), player.Frame(dot=dot, caption="b", svg2=m1),
              player.Frame(dot=dot, caption="c"), player.Frame(dot=dot, caption="d", svg2=m2)]
    html = _html(frames)
    data = _data(html)
    assert [f["svg2"] for f in data["frames"]] == [0, 0, None, 1] and len(data["svgs2"]) == 2
    assert all("<svg" in u for u in data["svgs2"])
    assert "<img src=x" not in html
    script = player.asset("player.js")
    assert "img2.hidden = true" in script
