"""DOT -> SVG on the server with Graphviz's ``dot`` (no layout work left to the browser).

``st.graphviz_chart`` lays the graph out in the browser on every rerun (a WebAssembly Graphviz),
which costs a visible fraction of a second per click on a classroom PC. Here ``dot`` runs once
per distinct DOT text (cached), and a whole animation's frames go through ONE ``dot`` process
(``dot`` reads several graphs from one input and writes one SVG document per graph).
"""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import time
from collections import OrderedDict

_CACHE: OrderedDict[str, str] = OrderedDict()
_CACHE_MAX = 2048  # distinct DOT texts kept (a frame's SVG is ~2-30 KB)
_TIMEOUT_S = 20.0


_DOT_SEEN: dict = {}  # PATH -> (monotonic time of the look, found)
_DOT_RECHECK_S = 5.0


def have_dot() -> bool:
    """True when Graphviz's ``dot`` binary is on PATH. The answer is reused for a few seconds (each page
    asks several times a rerun, and a PATH search was 8% of a class's server CPU); a ``dot`` installed
    while the app runs is seen within ``_DOT_RECHECK_S``."""
    path = os.environ.get("PATH")
    now = time.monotonic()
    seen = _DOT_SEEN.get(path)
    if seen is None or now - seen[0] > _DOT_RECHECK_S:
        seen = _DOT_SEEN[path] = (now, shutil.which("dot", path=path) is not None)
    return seen[1]


def _remember(dot: str, svg: str) -> None:
    _CACHE[dot] = svg
    _CACHE.move_to_end(dot)
    while len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)


def _strip(svg: str) -> str:
    """The <svg> element alone (no XML prolog or DOCTYPE), so documents can be split and embedded."""
    start = svg.find("<svg")
    return svg[start:].strip() if start >= 0 else svg.strip()


def dots_to_svgs(dots: list[str]) -> list[str]:
    """SVG text for each DOT text, in order; one ``dot`` process for all the uncached ones.

    Raises RuntimeError when ``dot`` is missing or fails (callers fall back to the browser).
    """
    todo = list(dict.fromkeys(d for d in dots if d not in _CACHE))
    if todo:
        if not have_dot():
            raise RuntimeError("Graphviz 'dot' is not installed")
        proc = subprocess.run(["dot", "-Tsvg"], input="\n".join(todo).encode("utf-8"), capture_output=True,
                              timeout=_TIMEOUT_S, check=False)
        docs = [d for d in re.split(r"(?=<\?xml )", proc.stdout.decode("utf-8", errors="replace")) if d.strip()]
        if proc.returncode != 0 or len(docs) != len(todo):
            raise RuntimeError(f"dot failed ({proc.returncode}): {proc.stderr.decode('utf-8', 'replace')[:300]}")
        for d, svg in zip(todo, docs):
            _remember(d, _strip(svg))
    out = []
    for d in dots:
        svg = _CACHE[d]
        _CACHE.move_to_end(d)
        out.append(svg)
    return out


def dot_to_svg(dot: str) -> str:
    """SVG text of one DOT text (cached by the text)."""
    return dots_to_svgs([dot])[0]


def svg_data_url(svg: str) -> str:
    """``data:image/svg+xml;base64,...``: shown through <img>, an SVG can run no script."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def svg_size_pt(svg: str) -> tuple[float, float]:
    """(width, height) in points from the root element's attributes (0, 0 when absent)."""
    m = re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"[^>]*\bheight="([\d.]+)pt"', svg)
    return (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)
