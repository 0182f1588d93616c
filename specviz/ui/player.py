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

from specviz.player import GRAPHVIZ_JS, SPEEDS, STATIC, Frame, Row, labels, layout_mode, payload  # noqa: F401  (pages use player.Frame)

TEMPLATE = (STATIC / "player.html").read_text(encoding="utf-8")
PLACEHOLDER = "__SV_PLAYER_DATA__"


def script_json(value) -> str:
    """JSON that is safe inside <script>: no ``</script>``, ``<!--`` or line separators can end it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def build_html(frames: list[Frame], *, start: int = 0, labels: dict, speed: float = 1.0, present: bool = False,
               links: list[str] | None = None, layout: str = "server", graphviz_url: str = "") -> str:
    """The player document for ``frames`` (pure: no streamlit).

    ``layout="server"``: every distinct figure laid out here by ``dot`` (RuntimeError when ``dot`` is
    missing or fails). ``layout="browser"``: the distinct DOT texts go to the page, which loads
    Graphviz from ``graphviz_url`` and lays each out when it is first shown (the rest while idle)."""
    if layout == "browser" and not graphviz_url:
        raise ValueError("browser layout needs the URL of graphviz.umd.js")
    data = payload(frames, labels=labels, start=start, speed=speed, present=present, links=links, layout=layout)
    data["gv"] = graphviz_url or None
    head, tail = TEMPLATE.split(PLACEHOLDER)  # one slot, filled once: data cannot reach another placeholder
    return head + script_json(data) + tail


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
