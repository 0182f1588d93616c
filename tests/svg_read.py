"""Read the server-drawn SVG charts (specviz.render.svgchart) back in tests: cells, texts, fills, hovers."""
from __future__ import annotations

import html
import re

_EL = re.compile(r'<(rect|text|line)\b([^>]*?)(?:/>|>(?:<title>(.*?)</title>)?(.*?)</\1>)', re.S)


def elements(svg: str) -> list[dict]:
    """Every rect / text / line in document order: its tag, attributes, hover (``<title>``) and text, unescaped."""
    out = []
    for m in _EL.finditer(svg):
        attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w:-]+)="([^"]*)"', m.group(2))}
        out.append({"tag": m.group(1), **attrs, "hover": html.unescape(m.group(3) or ""), "text": html.unescape(m.group(4) or "")})
    return out


def texts(svg: str) -> list[str]:
    return [e["text"] for e in elements(svg) if e["tag"] == "text"]


def cells(svg: str) -> list[dict]:
    """A grid's cells (``svgchart.cell_grid``): each rect with the text printed on it (same hover), in row-major order."""
    els = elements(svg)
    out = []
    for a, b in zip(els, els[1:]):
        if a["tag"] == "rect" and b["tag"] == "text" and a["hover"] and a["hover"] == b["hover"]:
            out.append({"text": b["text"], "fill": a["fill"], "hover": a["hover"], "dashed": "stroke-dasharray" in a,
                        "text_fill": b["fill"], "x": float(a["x"]), "y": float(a["y"])})
    return out


def grid_rows(svg: str) -> list[list[dict]]:
    """The cells grouped by row (same y), top to bottom."""
    rows: dict = {}
    for c in cells(svg):
        rows.setdefault(c["y"], []).append(c)
    return [rows[y] for y in sorted(rows)]
