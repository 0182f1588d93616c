"""The step player's data and documents, for every host (no Streamlit here).

One JS module (``static/player.js`` beside ``app.py``, styled by ``player.css``) draws the player in the
app, in the exported HTML file and in Jupyter, from ``payload(frames, ...)``. Each distinct figure is
laid out once: here by ``dot``, or in the browser by Graphviz in WebAssembly (``static/graphviz.umd.js``).
The player shows a figure only through ``<img>`` (an SVG there runs no script) and every text with
``textContent``: everything in the payload is data.

    frames = [Frame(dot=..., caption="...", rows=[Row("accept_index", [("0", "accepted", "slot 0")])],
                    table=[["slot", "p"], ["1", ("0.3", "accepted", "p(A)")]])]  # table: optional
    standalone_html(payload(frames, labels=labels(tr)), title=..., ...)   # one offline file
"""
from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from specviz.render.palette import PALETTE, STATES, text_on
from specviz.render.svg import dots_to_svgs, have_dot
from specviz.base.safety import json_for_script

SPEEDS = (0.5, 1.0, 2.0, 4.0)
GRAPHVIZ_JS = "graphviz.umd.js"  # Graphviz in WebAssembly (@hpcc-js/wasm 2.35.3; licence beside it)
LAYOUT_ENV = "SPECVIZ_LAYOUT"  # "auto" (default), "server" or "browser"


def static_dir() -> Path:
    """``static/`` beside ``app.py``: the player module, its style, its Streamlit host and Graphviz in
    WebAssembly; the app's server serves it at ``/app/static/`` (``server.enableStaticServing``)."""
    from specviz.base.paths import app_root

    return app_root() / "static"


def asset(name: str) -> str:
    return (static_dir() / name).read_text(encoding="utf-8")


def layout_mode() -> str:
    """Where figures are laid out: ``"server"`` (``dot`` here) or ``"browser"`` (Graphviz in WebAssembly
    in the viewer's browser). ``SPECVIZ_LAYOUT=browser|server`` chooses; by default the server lays out
    when ``dot`` is on PATH, the browser otherwise."""
    want = os.environ.get(LAYOUT_ENV, "auto").strip().lower()
    if want in ("browser", "server"):
        return want
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


def _row(r: Row) -> dict:
    out = {"label": str(r.label), "chips": [c if isinstance(c, str) else _cell(c) for c in r.chips]}
    if r.code is not None:
        out["code"] = str(r.code)
    return out


def _cell(c) -> list:
    if isinstance(c, (tuple, list)):
        return [str(c[0]), str(c[1]) if len(c) > 1 and c[1] else "", str(c[2]) if len(c) > 2 else ""]
    return [str(c), "", ""]


def payload(frames: list[Frame], *, labels: dict, start: int = 0, speed: float = 1.0, present: bool = False,
            links: list[str] | None = None, layout: str = "server") -> dict:
    """The player's data for ``frames`` (JSON-ready). ``layout="server"``: the distinct figures as SVG
    laid out by ``dot`` (RuntimeError when ``dot`` is missing or fails); ``"browser"``: their DOT texts."""
    uniq = list(dict.fromkeys(f.dot for f in frames))
    svgs, dots = (None, uniq) if layout == "browser" else (dots_to_svgs(uniq), None)
    index = {d: k for k, d in enumerate(uniq)}
    extras = list(dict.fromkeys(f.svg2 for f in frames if f.svg2))
    extra_index = {x: k for k, x in enumerate(extras)}
    return {
        "start": int(start), "speed": float(speed), "speeds": list(SPEEDS), "present": bool(present), "labels": labels,
        "colors": {s: [PALETTE[s], text_on(PALETTE[s])] for s in STATES}, "svgs": svgs, "dots": dots,
        "links": [str(u) for u in links] if links else None, "svgs2": extras,
        "frames": [{"svg": index[f.dot], "caption": str(f.caption), "alt": str(f.alt), "rows": [_row(r) for r in f.rows],
                    "table": [[_cell(c) for c in row] for row in f.table] if f.table else None,
                    "svg2": extra_index[f.svg2] if f.svg2 else None}
                   for f in frames],
    }


def laid_out(frames: list[Frame], **kw) -> dict:
    """``payload`` laid out where ``layout_mode()`` says; by the browser when ``dot`` is there but fails on these figures."""
    try:
        return payload(frames, layout=layout_mode(), **kw)
    except RuntimeError:
        return payload(frames, layout="browser", **kw)


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


def tr_for(lang: str):
    """``tr(en, zh)`` for a fixed language (outside the app, which has ``ui.tr``)."""
    return lambda en, zh: zh if lang == "zh" else en


# -- one offline file ------------------------------------------------------------------------------

# Fixed text with ONE slot (__SV_DATA__), filled last with JSON escaped for a script context; the
# boot code writes the title, description and legend with textContent and mounts the player.
_STANDALONE = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'__WASM__; img-src data:">
<title>specviz</title>
<style>
body { margin: 24px; background: #fff; font-family: Helvetica, Arial, 'Noto Sans CJK SC', 'Microsoft YaHei', sans-serif; color: #111; }
h1 { font-size: 26px; margin: 0 0 6px 0; } .sub { color: #555; margin-bottom: 10px; max-width: 70em; white-space: pre-wrap; }
.legend span { display: inline-block; padding: 2px 10px; margin: 0 6px 8px 0; border-radius: 6px; font-size: 15px; }
__CSS__</style></head><body>
<h1 data-sv-title></h1><div class="sub" data-sv-desc></div><div class="legend" data-sv-legend></div><div id="sv"></div>
<script type="application/json" id="sv-data">__SV_DATA__</script>
<script type="module">
__JS__
(() => {
  const P = JSON.parse(document.getElementById("sv-data").textContent);
  document.documentElement.lang = P.lang; document.title = P.title;
  document.querySelector("[data-sv-title]").textContent = P.title;
  document.querySelector("[data-sv-desc]").textContent = P.desc;
  for (const [bg, fg, text] of P.legend) {
    const s = document.createElement("span"); s.style.background = bg; s.style.color = fg; s.textContent = text;
    document.querySelector("[data-sv-legend]").appendChild(s);
  }
  // Graphviz in WebAssembly (only without dot where the file was made) travels base64 in the data, so its
  // text never meets the HTML parser; it runs as an inline script (the CSP's 'unsafe-inline') at the first figure.
  const NAME = "@hpcc-js/wasm/graphviz";
  const graphviz = async () => {
    if (!window[NAME]) {
      const bin = atob(P.graphviz), bytes = new Uint8Array(bin.length);  // a plain loop: Uint8Array.from(bin, f) took 0.1-0.4 s
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const s = document.createElement("script");
      s.textContent = new TextDecoder().decode(bytes);
      document.head.appendChild(s);
    }
    if (!window[NAME]) throw new Error("Graphviz did not load");
    return window[NAME].Graphviz.load();
  };
  const player = svMount(document.getElementById("sv"), P.player, {graphviz: P.graphviz ? graphviz : undefined});
  if (location.hash === "#play") document.querySelector('[data-sv-btn="play"]').click();
})();
</script></body></html>
"""


def standalone_html(data: dict, *, title: str, desc: str, lang: str) -> str:
    """One self-contained HTML file: the player module and its data inlined, no network (CSP). Figures
    laid out by the browser bring Graphviz in WebAssembly too, base64 inside the JSON data (the CSP then
    allows WebAssembly): whatever its text holds (``</script``, ``<!--``, URLs), none of it reaches the
    HTML parser, so the file has exactly two scripts, the data and the module."""
    legend = [("accepted", "accepted", "已接受"), ("rejected", "rejected", "已拒绝"), ("compared", "being compared", "比较中"),
              ("current", "current", "当前"), ("bonus", "bonus", "bonus"), ("discarded", "discarded", "丢弃"),
              ("pending", "pending", "待定")]
    tr = tr_for(lang)
    wasm = data.get("dots") is not None
    page = {"lang": "zh-CN" if lang == "zh" else "en", "title": title, "desc": desc, "player": data,
            "legend": [[PALETTE[k], text_on(PALETTE[k]), tr(en, zh)] for k, en, zh in legend],
            "graphviz": graphviz_base64() if wasm else None}
    head, tail = _STANDALONE.split("__SV_DATA__")
    head = head.replace("__WASM__", " 'wasm-unsafe-eval'" if wasm else "").replace("__CSS__", asset("player.css"))
    tail = tail.replace("__JS__", asset("player.js"))
    return head + json_for_script(page) + tail


@lru_cache(maxsize=1)
def graphviz_base64() -> str:
    """The vendored Graphviz-in-WebAssembly script (``GRAPHVIZ_JS``) as base64 of its UTF-8 bytes: letters,
    digits, ``+ / =`` only (about 1.1 MB; read and encoded once a process)."""
    return base64.b64encode((static_dir() / GRAPHVIZ_JS).read_bytes()).decode("ascii")
