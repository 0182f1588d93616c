"""What a page draws as Graphviz figures, read from an AppTest run.

A figure is laid out on the server (``ui.graph``: inline SVG in a markdown element marked
``sv-graph``), or, without ``dot``, by the browser (``st.graphviz_chart``: its DOT text).
"""
from __future__ import annotations

import html
import re


def graphs(at) -> list[str]:
    """Each figure's text, in page order of kind: the SVG (entities decoded) or the DOT."""
    out = [html.unescape(m.value) for m in at.get("markdown") if 'class="sv-graph"' in m.value]
    return out + [g.proto.spec for g in at.get("graphviz_chart")]


def node_markup(figure: str, name: str) -> str:
    """The part of a figure that draws node ``name`` (``n4``): its SVG group, or its DOT line."""
    if figure.lstrip().startswith("<"):
        m = re.search(rf'class="node[^"]* sv-{re.escape(name)}">(.*?)(?=<g id="[^"]*" class="(?:node|edge)|</svg>)', figure, re.S)
        assert m, f"no node {name} in the figure"
        return m.group(1)
    return next(line for line in figure.splitlines() if line.strip().startswith(f"{name} ["))
