"""The step player: every frame of a walk goes to the browser at once, and stepping happens there.

A click on step / back / first / last / play / the scrubber (or the keys ←, →, space, Home, End
anywhere on the page) redraws the frame in the browser: no server round trip, no rerun. The
server sends, per rerun, one self-contained HTML document (``static/player.html``) holding:

- the figures, one SVG per distinct frame (laid out on the server by ``dot``, shown through
  ``<img>``, so an SVG can run no script), and optionally a second figure per frame (an SVG that
  ``specviz.render`` drew, e.g. the tree mask, also through ``<img>``), and
- per frame: the caption line and the value rows (label + coloured chips with hover text).

All of it is JSON inside ``<script type="application/json">``, escaped for a script context;
the player writes every text with ``textContent``, never as markup.

    frames = [player.Frame(dot=..., caption="...", rows=[player.Row("accept_index", [("0", "accepted", "slot 0")])],
                           table=[["slot", "p"], ["1", ("0.3", "accepted", "p(A)")]])]  # table: optional
    player.show(frames, key="greedy", start=ui.step("greedy"))
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from specviz.render.palette import PALETTE, STATES, text_on
from specviz.render.svg import dots_to_svgs, svg_data_url

TEMPLATE = (Path(__file__).parent / "static" / "player.html").read_text(encoding="utf-8")
PLACEHOLDER = "__SV_PLAYER_DATA__"
SPEEDS = (0.5, 1.0, 2.0, 4.0)


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
               links: list[str] | None = None) -> str:
    """The player document for ``frames`` (pure: no streamlit)."""
    dots = [f.dot for f in frames]
    uniq = list(dict.fromkeys(dots))
    svgs = dots_to_svgs(uniq)
    index = {d: k for k, d in enumerate(uniq)}
    extras = list(dict.fromkeys(f.svg2 for f in frames if f.svg2))
    extra_index = {x: k for k, x in enumerate(extras)}
    colors = {s: [PALETTE[s], text_on(PALETTE[s])] for s in STATES}
    data = {
        "start": int(start), "speed": float(speed), "speeds": list(SPEEDS), "present": bool(present), "labels": labels,
        "colors": colors, "svgs": [svg_data_url(s) for s in svgs], "links": [str(u) for u in links] if links else None,
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


def show(frames: list[Frame], key: str, start: int = 0, links: list[str] | None = None) -> None:
    """Draw the player (st.iframe, sized to its content). Falls back to the server-side figure of frame
    ``start`` when Graphviz's ``dot`` is missing."""
    import streamlit as st

    from specviz.ui import common as ui

    try:
        html = build_html(frames, start=start, labels=labels(ui.tr), present=ui.presenting(),
                          speed=float(st.session_state.get(f"sv_speed::{key}", 1.0)), links=links)
    except RuntimeError as exc:  # no dot: the figure of the start frame, laid out by the browser
        st.warning(ui.tr("Stepping in the browser needs Graphviz's dot ({e}); showing one step.",
                         "在浏览器中单步需要 Graphviz 的 dot（{e}）；只显示一步。", e=exc))
        f = frames[max(0, min(len(frames) - 1, start))]
        st.info(f.caption)
        st.graphviz_chart(f.dot)
        return
    # The document is our fixed template; the scenario's text sits in it only as escaped JSON data.
    st.iframe(html, height="content")
