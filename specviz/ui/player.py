"""The step player: every frame of a walk goes to the browser at once, and stepping happens there.

A click on step / back / first / last / play / the scrubber (or the keys ←, →, space, Home, End
anywhere on the page) redraws the frame in the browser: no server round trip, no rerun. The
server sends, per rerun, one self-contained HTML document (``static/player.html``) holding:

- the figures, one per distinct frame: SVG laid out on the server by ``dot`` when Graphviz is
  installed there, or else the DOT text, which the browser lays out with the WebAssembly build of
  Graphviz (``static/graphviz.umd.js``, served by the app's own server, loaded once per tab; see
  ``layout_mode``). Either way a figure is shown through ``<img>``, so an SVG can run no script.
  Optionally a second figure per frame (an SVG that ``specviz.render`` drew, e.g. the tree mask,
  also through ``<img>``), and
- per frame: the caption line and the value rows (label + coloured chips with hover text).

All of it is JSON inside ``<script type="application/json">``, escaped for a script context;
the player writes every text with ``textContent``, never as markup.

    frames = [player.Frame(dot=..., caption="...", rows=[player.Row("accept_index", [("0", "accepted", "slot 0")])],
                           table=[["slot", "p"], ["1", ("0.3", "accepted", "p(A)")]])]  # table: optional
    player.show(frames, key="greedy", start=ui.step("greedy"))
"""
from __future__ import annotations

from collections import OrderedDict

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from specviz.render.palette import PALETTE, STATES, text_on
from specviz.render.svg import dots_to_svgs, have_dot, svg_data_url

STATIC = Path(__file__).parent / "static"
TEMPLATE = (STATIC / "player.html").read_text(encoding="utf-8")
PLACEHOLDER = "__SV_PLAYER_DATA__"
SPEEDS = (0.5, 1.0, 2.0, 4.0)
GRAPHVIZ_JS = "graphviz.umd.js"  # Graphviz in WebAssembly (@hpcc-js/wasm 2.35.3; licence beside it)
LAYOUT_ENV = "SPECVIZ_LAYOUT"  # "auto" (default), "server" or "browser"


def layout_mode() -> str:
    """Where the player's figures are laid out: ``"server"`` (Graphviz's ``dot`` here, every frame's
    SVG sent with the page) or ``"browser"`` (the DOT text sent, laid out by Graphviz in WebAssembly
    in the viewer's browser: no ``dot`` needed, and no layout work on the server).

    ``SPECVIZ_LAYOUT=browser`` or ``=server`` chooses; by default (``auto``) the server lays out
    when ``dot`` is on PATH, the browser otherwise (a fresh machine after the README's first command)."""
    want = os.environ.get(LAYOUT_ENV, "auto").strip().lower()
    if want == "browser":
        return "browser"
    if want == "server":
        return "server"
    return "server" if have_dot() else "browser"


@dataclass
class Row:
    """One line of values: a label, then chips ``(text, state, hover)`` or plain strings; or ``code``."""
    label: str
    chips: list = field(default_factory=list)
    code: str | None = None


@dataclass
class Frame:
    dot: str  # the figure at this step (DOT text; identical texts are laid out once)
    caption: str  # the explanation line
    rows: list = field(default_factory=list)  # [Row]
    alt: str = ""  # the figure's text alternative
    table: list | None = None  # optional: rows of cells, the first row the header; a cell is text or (text, state, hover)
    svg2: str | None = None  # optional: a second figure, SVG drawn by specviz.render (e.g. the tree mask), beside the rows


def script_json(value) -> str:
    """JSON that is safe inside <script>: no ``</script>``, ``<!--`` or line separators can end it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _row(r: Row) -> dict:
    out = {"label": str(r.label), "chips": [c if isinstance(c, str) else [str(c[0]), str(c[1]), str(c[2]) if len(c) > 2 else ""]
                                            for c in r.chips]}
    if r.code is not None:
        out["code"] = str(r.code)
    return out


def _cell(c) -> list:
    if isinstance(c, (tuple, list)):
        return [str(c[0]), str(c[1]) if len(c) > 1 and c[1] else "", str(c[2]) if len(c) > 2 else ""]
    return [str(c), "", ""]


def build_html(frames: list[Frame], *, start: int = 0, labels: dict, speed: float = 1.0, present: bool = False,
               links: list[str] | None = None, layout: str = "server", graphviz_url: str = "") -> str:
    """The player document for ``frames`` (pure: no streamlit).

    ``layout="server"``: every distinct figure laid out here by ``dot`` (RuntimeError when ``dot`` is
    missing or fails). ``layout="browser"``: the distinct DOT texts go to the page, which loads
    Graphviz from ``graphviz_url`` and lays each out when it is first shown (the rest while idle)."""
    dots = [f.dot for f in frames]
    uniq = list(dict.fromkeys(dots))
    if layout == "browser":
        if not graphviz_url:
            raise ValueError("browser layout needs the URL of graphviz.umd.js")
        svgs, sources = None, uniq
    else:
        svgs, sources = [svg_data_url(s) for s in dots_to_svgs(uniq)], None
    index = {d: k for k, d in enumerate(uniq)}
    extras = list(dict.fromkeys(f.svg2 for f in frames if f.svg2))
    extra_index = {x: k for k, x in enumerate(extras)}
    colors = {s: [PALETTE[s], text_on(PALETTE[s])] for s in STATES}
    data = {
        "start": int(start), "speed": float(speed), "speeds": list(SPEEDS), "present": bool(present), "labels": labels,
        "colors": colors, "svgs": svgs, "dots": sources, "gv": graphviz_url or None, "links": [str(u) for u in links] if links else None,
        "svgs2": [svg_data_url(x) for x in extras],
        "frames": [{"svg": index[f.dot], "caption": str(f.caption), "alt": str(f.alt), "rows": [_row(r) for r in f.rows],
                    "table": [[_cell(c) for c in row] for row in f.table] if f.table else None,
                    "svg2": extra_index[f.svg2] if f.svg2 else None}
                   for f in frames],
    }
    head, tail = TEMPLATE.split(PLACEHOLDER)  # one slot, filled once: data cannot reach another placeholder
    return head + script_json(data) + tail


def labels(tr) -> dict:
    """The player's words in the chosen language (``tr(en, zh)``)."""
    return {"first": tr("first step", "第一步"), "back": tr("back", "上一步"), "next": tr("next", "下一步"),
            "last": tr("last step", "最后一步"), "play": tr("play", "播放"), "pause": tr("pause", "暂停"),
            "step": tr("Step", "步骤"), "speed": tr("speed (steps/s)", "速度（步/秒）"), "per_s": tr("steps/s", "步/秒"),
            "link": tr("link to this step (copied)", "此步骤的链接（已复制）"),
            "nofig": tr("This figure could not be drawn in the browser (Graphviz did not load). The steps, the caption and the values still work; "
                        "installing Graphviz on the server (apt-get install -y graphviz) draws the figures there.",
                        "浏览器未能绘制此图（Graphviz 未加载）。步骤、说明和数值仍可使用；在服务器上安装 Debian 的 graphviz 软件包后由服务器绘图。"),
            "keys": tr("Keys: ← → step · space play/pause · Home / End", "按键：← → 单步 · 空格 播放/暂停 · Home / End")}


def step_links(page: str, slot: str, step_key: str, count: int, extra: dict | None = None) -> list[str] | None:
    """The share link of this view at each step 0..count-1 (None when the view has no link or the
    walk is too long to carry one link per step)."""
    import dataclasses

    from specviz.errors import SpecvizError
    from specviz.share import QUERY_KEY, encode_state
    from specviz.ui import share_ui

    if count > 512:
        return None
    state = share_ui.current_state(page, slot, step_key, extra)
    base = f"{share_ui.base_url()}/{page}?{QUERY_KEY}="
    try:
        return [base + encode_state(dataclasses.replace(state, step=k)) for k in range(count)]
    except SpecvizError:
        return None


def graphviz_url() -> str:
    """The URL (on the app's own server) of the vendored Graphviz-in-WebAssembly script.

    The folder ``static/`` is registered as a Streamlit component's file folder, which is only a way to
    have Streamlit serve its files (``/component/<name>/<file>``); the player loads the one script."""
    import streamlit as st
    import streamlit.components.v1 as components

    comp = components.declare_component("static", path=str(STATIC))
    base = (st.get_option("server.customComponentBaseUrlPath") or "").rstrip("/")
    if not base:
        root = (st.get_option("server.baseUrlPath") or "").strip("/")
        base = ("/" + root if root else "") + "/component"
    return f"{base}/{comp.name}/{GRAPHVIZ_JS}"


_DOCUMENTS: "OrderedDict[str, str]" = OrderedDict()  # digest of build_html's inputs -> the document
_DOCUMENTS_MAX = 64  # a document is ~100-300 KB
_DOCUMENTS_LOCK = threading.Lock()


def _document_key(frames, content_key, mode: str, gv: str, kwargs: dict):
    """Everything ``build_html`` reads, as a key: a class asks for the same few documents again and again
    (an edit back and forth), and building one is ~0.5 ms of JSON and base64 a rerun. ``content_key``
    (hashable) stands for ``frames`` when the caller knows what they were made from; else a digest of them."""
    import hashlib
    import pickle

    rest = (mode, gv, kwargs["start"], kwargs["speed"], kwargs["present"], tuple(kwargs["links"] or ()),
            tuple(sorted(kwargs["labels"].items())))
    if content_key is not None:
        return (content_key, *rest)
    try:
        return hashlib.sha256(pickle.dumps((frames, rest), protocol=5)).hexdigest()
    except Exception:  # noqa: BLE001  something unpicklable: build it every time
        return None


def show(frames: list[Frame], key: str, start: int = 0, links: list[str] | None = None, content_key=None) -> None:
    """Draw the player (st.iframe, sized to its content). Its figures are laid out by ``dot`` on the
    server, or by Graphviz in the browser (``layout_mode``): stepping works without ``dot``.
    ``content_key``: a hashable key of what ``frames`` were computed from (e.g. ``ui.greedy_frames_key``)."""
    import streamlit as st

    from specviz.ui import common as ui

    kwargs = dict(start=start, labels=labels(ui.tr), present=ui.presenting(),
                  speed=float(st.session_state.get(f"sv_speed::{key}", 1.0)), links=links)
    mode = layout_mode()
    gv = graphviz_url() if mode == "browser" else ""
    key_of = _document_key(frames, content_key, mode, gv, kwargs)
    with _DOCUMENTS_LOCK:  # sessions run on their own threads
        html = _DOCUMENTS.get(key_of) if key_of else None
        if html is not None:
            _DOCUMENTS.move_to_end(key_of)
    if html is None:
        try:
            html = build_html(frames, layout=mode, graphviz_url=gv, **kwargs)
        except RuntimeError:  # dot is there but failed on these figures: the browser lays them out instead
            html = build_html(frames, layout="browser", graphviz_url=graphviz_url(), **kwargs)
        if key_of:
            with _DOCUMENTS_LOCK:
                _DOCUMENTS[key_of] = html
                while len(_DOCUMENTS) > _DOCUMENTS_MAX:
                    _DOCUMENTS.popitem(last=False)
    # The document is our fixed template; the scenario's text sits in it only as escaped JSON data.
    st.iframe(html, height="content")
