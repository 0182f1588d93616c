"""Small SVG charts drawn on the server: bars over a vocabulary, a 0..1 strip with a coin, a grid of
labelled cells.

The pages used plotly for these; its 4.7 MB script costs a classroom PC 1.5-2 s on a page's first
visit and a redraw on every edit. These charts need no script: each is one SVG document (shown
inline through ``ui.markup.svg_figure``), every value carries its exact hover (``<title>``),
and value labels are large enough to read from the back of a room.

Pure functions (no streamlit): values in, SVG text out. Every text is XML-escaped here.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Sequence
from xml.sax.saxutils import escape, quoteattr

from specviz.render.palette import FONT_FAMILY, PALE_GREY, text_on

WIDTH = 900  # viewBox width; the page scales the figure to its column
FONT = 20  # axis and legend text (viewBox units: ~17 px in a 760 px column)
VALUE_FONT = 20  # the numbers on the bars
INK = "#31333F"
MUTED = "#555555"
GRID = "#E6E6E6"


def text_width(s: str, size: float = FONT) -> float:
    """About how wide ``s`` prints at ``size`` (viewBox units): a CJK or full-width character is one
    em, anything else about 0.6 em (enough for bold Latin text)."""
    return size * sum(1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else 0.6 for ch in str(s))


def fmt(v: float) -> str:
    """A value as the charts print it: four significant digits."""
    return f"{float(v):.4g}"


@dataclass
class Bars:
    """One series: a value per category, its colour, an optional printed label per bar and a hover per bar."""
    name: str
    values: Sequence[float]
    color: str
    labels: Sequence[str] | None = None  # printed on (stack) or above (group) each bar; "" prints nothing
    hovers: Sequence[str] | None = None


@dataclass
class Tick:
    """A horizontal tick across one category (e.g. p over a stacked bar), with its printed label."""
    values: Sequence[float]
    name: str
    labels: Sequence[str] | None = None
    color: str = "#000000"


@dataclass
class Segment:
    """A piece [lo, hi) of a 0..1 strip."""
    lo: float
    hi: float
    label: str = ""
    fill: str = PALE_GREY
    hover: str = ""
    below: str = ""  # printed under the piece (e.g. its interval)
    outline: str = "#FFFFFF"
    outline_width: float = 2.0


@dataclass
class _Doc:
    width: float
    height: float
    parts: list = field(default_factory=list)

    def text(self, x, y, s, *, size=FONT, anchor="start", weight="normal", color=INK, rotate=None, hover=""):
        tr = f' transform="rotate({rotate:.0f} {x:.1f} {y:.1f})"' if rotate else ""
        tip = f"<title>{escape(hover)}</title>" if hover else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
                          f'fill="{color}"{tr}>{tip}{escape(str(s))}</text>')

    def rect(self, x, y, w, h, fill, *, hover="", stroke=None, stroke_width=0.0, dash=None):
        st = f' stroke="{stroke}" stroke-width="{stroke_width:g}"' if stroke else ""
        if dash:
            st += f' stroke-dasharray="{dash}"'
        tip = f"<title>{escape(hover)}</title>" if hover else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" fill="{fill}"{st}>{tip}</rect>')

    def line(self, x1, y1, x2, y2, color, width=1.0, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="{width:g}"{d}/>')

    def polygon(self, points, fill, *, stroke="#FFFFFF", stroke_width=2.0, hover=""):
        tip = f"<title>{escape(hover)}</title>" if hover else ""
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f'<polygon points="{pts}" fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width:g}">{tip}</polygon>')

    def svg(self, alt: str = "") -> str:
        title = f"<title>{escape(alt)}</title>" if alt else ""
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:.0f}pt" height="{self.height:.0f}pt" '
                f'viewBox="0 0 {self.width:.0f} {self.height:.0f}"><g font-family={quoteattr(FONT_FAMILY)}>{title}'
                + "".join(self.parts) + "</g></svg>")


def _legend(doc: _Doc, items: Sequence[tuple[str, str]], y: float, x0: float = 10) -> float:
    """Swatch + name per item, wrapping to new lines; returns the y below the legend."""
    x = x0
    for name, color in items:
        w = 34 + text_width(name) + 24
        if x + w > doc.width - 10 and x > x0:
            x, y = x0, y + FONT + 12
        doc.rect(x, y - FONT * 0.8, 24, FONT * 0.9, color)
        doc.text(x + 32, y, name)
        x += w
    return y + FONT


def _legend_height(items: Sequence[tuple[str, str]], width: float) -> float:
    probe = _Doc(width, 0)
    return _legend(probe, items, 0.0) + 14


def _y_axis(doc: _Doc, left: float, top: float, plot_h: float, y_max: float, step: float, right: float | None = None) -> None:
    k = 0
    while k * step <= y_max + 1e-9:
        v = k * step
        y = top + plot_h * (1 - v / y_max)
        doc.line(left, y, doc.width - 10 if right is None else right, y, GRID)
        doc.text(left - 8, y + FONT * 0.35, f"{v:g}", size=FONT - 3, anchor="end", color=MUTED)
        k += 1


def _nice_step(y_max: float) -> float:
    for s in (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10):
        if y_max / s <= 6:
            return s
    return y_max / 5


def bar_chart(categories: Sequence[str], series: Sequence[Bars], *, stack: bool = False, y_max: float | None = None,
              ticks: Sequence[Tick] = (), height: float = 360, alt: str = "", doc: _Doc | None = None,
              top: float = 0.0, width: float = WIDTH, hlines: Sequence[tuple[float, str]] = (),
              highlight: int | None = None, x_title: str = "", y_title: str = "", y_step: float | None = None,
              highlight_hover: str = "", sparse_labels: bool = False) -> str:
    """Bars per category: side by side (``stack=False``) or stacked. Value labels above (grouped)
    or inside (stacked) the bars; ``ticks`` draw a labelled horizontal mark per category. ``width``:
    the viewBox width; a chart for a narrow column takes a smaller one, so its text stays large.

    ``hlines``: dashed horizontal lines across the plot (value, label; e.g. a mean); ``highlight``:
    the category drawn on a tinted band (a selected item); ``x_title``/``y_title``: axis titles;
    ``y_step``: the gridline step. ``sparse_labels`` (many categories, e.g. rounds): only every k-th
    category name is printed (the first and the highlighted one always) so the names never overlap."""
    own = doc is None
    doc = doc or _Doc(width, height)
    items = [(b.name, b.color) for b in series] + [(t.name, t.color) for t in ticks]
    leg_h = _legend_height(items, doc.width)
    _legend(doc, items, top + FONT + 4)
    n = max(len(categories), 1)
    tallest = 0.0
    for k in range(n):
        vals = [float(b.values[k]) for b in series if k < len(b.values)]
        tallest = max(tallest, sum(vals) if stack else max(vals, default=0.0),
                      max((float(t.values[k]) for t in ticks if k < len(t.values)), default=0.0))
    tallest = max([tallest] + [float(v) for v, _ in hlines])
    y_max = float(y_max) if y_max else max(1e-9, tallest * 1.2)
    left, plot_top = 52.0 + (FONT + 8 if y_title else 0.0), top + leg_h + VALUE_FONT + 8
    label_h = FONT + 14 + (FONT + 8 if x_title else 0.0)
    plot_h = (top + height) - plot_top - label_h
    # hline labels sit right of the plot, where they cover no bar
    right = doc.width - 10 - max([text_width(lab) + 16 for _, lab in hlines if lab] + [0.0])
    _y_axis(doc, left, plot_top, plot_h, y_max, y_step or _nice_step(y_max), right)
    slot = (right - left) / n
    base_y = plot_top + plot_h
    if y_title:
        doc.text(FONT, plot_top + plot_h / 2, y_title, size=FONT - 2, anchor="middle", color=MUTED, rotate=-90)
    if x_title:
        doc.text(left + (right - left) / 2, top + height - 8, x_title, size=FONT - 2, anchor="middle", color=MUTED)
    if highlight is not None and 0 <= highlight < n:
        doc.rect(left + slot * highlight, plot_top - 4, slot, plot_h + 4, "#F3DDEA", hover=highlight_hover,
                 stroke="#CC79A7", stroke_width=2)
    cat_size = FONT if n <= 16 else FONT - 6
    widest = max((text_width(c, cat_size) for c in categories), default=0.0) + 8
    every = 1
    while sparse_labels and every * slot < widest and every < n:
        every += 1
    group_w = slot * (0.8 if stack else 0.86)
    bar_w = group_w if stack else group_w / max(len(series), 1)
    small = VALUE_FONT if (bar_w >= 46 or stack) else max(12, int(VALUE_FONT * bar_w / 46))
    for k, cat in enumerate(categories):
        x0 = left + slot * k + (slot - group_w) / 2
        acc = 0.0
        for j, b in enumerate(series):
            v = float(b.values[k]) if k < len(b.values) else 0.0
            h = plot_h * max(v, 0.0) / y_max
            x = x0 if stack else x0 + j * bar_w
            y = base_y - plot_h * (acc + max(v, 0.0)) / y_max if stack else base_y - h
            hover = b.hovers[k] if b.hovers else f"{cat}: {b.name} = {fmt(v)}"
            doc.rect(x + 1, y, bar_w - 2, h, b.color, hover=hover)
            lab = b.labels[k] if b.labels is not None else ""
            if lab:
                if stack:
                    if h >= VALUE_FONT + 4:
                        doc.text(x + bar_w / 2, y + h / 2 + VALUE_FONT * 0.35, lab, size=VALUE_FONT, anchor="middle",
                                 weight="bold", color=text_on(b.color), hover=hover)
                else:
                    doc.text(x + bar_w / 2, y - 6, lab, size=small, anchor="middle", weight="bold", hover=hover)
            if stack:
                acc += max(v, 0.0)
        for t in ticks:
            v = float(t.values[k])
            y = base_y - plot_h * v / y_max
            doc.line(x0 - 4, y, x0 + group_w + 4, y, t.color, width=4)
            if t.labels is not None and t.labels[k]:
                doc.text(x0 + group_w / 2, y - 8, t.labels[k], size=VALUE_FONT, anchor="middle", weight="bold", color=t.color)
        near_hl = highlight is not None and k != highlight and abs(k - highlight) < every
        if (k % every == 0 and not near_hl) or k == highlight:
            doc.text(left + slot * k + slot / 2, base_y + FONT + 6, cat, anchor="middle", weight="bold", size=cat_size)
    doc.line(left, base_y, right, base_y, INK, width=1.5)
    for v, label in hlines:
        y = base_y - plot_h * float(v) / y_max
        doc.line(left, y, right + 4, y, "#444444", width=2.5, dash="10,6")
        if label:
            doc.text(right + 8, y + FONT * 0.35, label, weight="bold", color="#444444")
    return doc.svg(alt) if own else ""


def strip(segments: Sequence[Segment], *, coin: float | None = None, coin_label: str = "", caption: str = "",
          height: float = 150, alt: str = "", doc: _Doc | None = None, top: float = 0.0, current: int | None = None) -> str:
    """A 0..1 bar cut into ``segments`` (an inverse CDF, or accept/reject ranges) with the coin as a
    marker above it and its label; ``caption`` under the axis. ``current``: the segment outlined thick."""
    own = doc is None
    doc = doc or _Doc(WIDTH, height)
    left, right = 20.0, doc.width - 20.0
    span = right - left
    bar_top = top + FONT + 34
    bar_h = 54.0

    def xat(v: float) -> float:
        return left + span * min(max(v, 0.0), 1.0)

    for i, sgm in enumerate(segments):
        x0, x1 = xat(sgm.lo), xat(sgm.hi)
        w = max(x1 - x0, 2.0)
        thick = i == current
        doc.rect(x0, bar_top, w, bar_h, sgm.fill, hover=sgm.hover or f"{sgm.label}: [{fmt(sgm.lo)}, {fmt(sgm.hi)})",
                 stroke="#000000" if thick else sgm.outline, stroke_width=5 if thick else sgm.outline_width)
        if sgm.label and w >= 0.6 * (FONT + 2) * max(len(sgm.label), 1) + 6:
            doc.text((x0 + x1) / 2, bar_top + bar_h / 2 + (FONT + 2) * 0.35, sgm.label, size=FONT + 2, anchor="middle",
                     weight="bold", color=text_on(sgm.fill), hover=sgm.hover)
        if sgm.below and w >= 0.55 * (FONT - 4) * len(sgm.below):
            doc.text((x0 + x1) / 2, bar_top + bar_h + FONT - 2, sgm.below, size=FONT - 4, anchor="middle", color=MUTED)
    axis_y = bar_top + bar_h + (FONT + 6 if any(s.below for s in segments) else 6)
    for k in range(11):
        x = xat(k / 10)
        doc.line(x, axis_y, x, axis_y + 6, MUTED)
        doc.text(x, axis_y + FONT + 4, f"{k / 10:g}", size=FONT - 5, anchor="middle", color=MUTED)
    if coin is not None:
        cx = xat(coin)
        doc.polygon([(cx - 13, bar_top - 24), (cx + 13, bar_top - 24), (cx, bar_top - 2)], "#000000", hover=coin_label)
        anchor = "end" if coin > 0.85 else ("start" if coin < 0.15 else "middle")
        doc.text(cx, bar_top - 30, coin_label, size=FONT + 1, anchor=anchor, weight="bold")
    if caption:
        doc.text(left, axis_y + 2 * FONT + 8, caption, size=FONT - 2, color=MUTED)
    return doc.svg(alt) if own else ""


def strip_height(segments: Sequence[Segment], caption: str = "") -> float:
    """The height ``strip`` needs."""
    return FONT + 34 + 54 + (FONT + 6 if any(s.below for s in segments) else 6) + FONT + 10 + (FONT + 6 if caption else 0)


def bars_over_strip(categories: Sequence[str], series: Sequence[Bars], segments: Sequence[Segment], *,
                    coin: float | None, coin_label: str, y_max: float | None = None, caption: str = "",
                    bars_height: float = 330, alt: str = "", current: int | None = None, width: float = WIDTH) -> str:
    """A bar chart with a strip under it, in one figure (e.g. the residual, then the terminal draw)."""
    sh = strip_height(segments, caption)
    doc = _Doc(width, bars_height + sh + 10)
    bar_chart(categories, series, y_max=y_max, height=bars_height, doc=doc)
    strip(segments, coin=coin, coin_label=coin_label, caption=caption, doc=doc, top=bars_height + 10, current=current)
    return doc.svg(alt)


def cdf_segments(categories: Sequence[str], weights: Sequence[float], chosen: int | None, *, hit_fill: str,
                 outline: str = "#444444") -> list[Segment]:
    """The normalised ``weights`` laid end to end on 0..1 (zero weights take no room), ``chosen`` filled."""
    tot = float(sum(max(float(w), 0.0) for w in weights))
    out, lo = [], 0.0
    for i, w in enumerate(weights):
        w = max(float(w), 0.0) / tot if tot > 0 else 0.0
        if w <= 0:
            continue
        fill = hit_fill if chosen == i else PALE_GREY
        out.append(Segment(lo, lo + w, str(categories[i]), fill, f"{categories[i]}: [{fmt(lo)}, {fmt(lo + w)})",
                           outline=outline, outline_width=1.5))
        lo += w
    return out


def cell_grid(row_names: Sequence[str], cells: Sequence[Sequence[str]], fills: Sequence[Sequence[str | None]],
              hovers: Sequence[Sequence[str]] | None = None, *, col_names: Sequence[str] | None = None,
              marks: Sequence[tuple[float, str]] = (), dashed: Sequence[Sequence[bool]] | None = None,
              faded: Sequence[Sequence[bool]] | None = None, cell_w: float = 86, cell_h: float = 56, alt: str = "",
              light: Sequence[Sequence[bool]] | None = None) -> str:
    """A grid of labelled cells: ``fills[r][c]`` a colour (None: no cell), text on it in a colour that
    reads; ``dashed`` cells get a dotted grey outline, ``light`` ones a solid light-grey outline,
    ``faded`` ones grey text; ``marks`` are vertical dashed lines at column boundary x (0..ncols)
    with a label above. ``cell_w`` is the least cell width: the cells widen to fit their longest text."""
    nrows = len(row_names)
    ncols = max((len(r) for r in cells), default=0)
    name_w = 24 + max((text_width(r) for r in row_names), default=FONT)
    widest = max([text_width(x, FONT + 2) for row in cells for x in row]
                 + [text_width(x, FONT - 3) for x in (col_names or [])] + [0.0])
    cell_w = max(cell_w, widest + 18)
    merged: dict = {}
    for x, label in marks:  # two boundaries on one column line share one label
        merged[x] = f"{merged[x]}, {label}" if x in merged else label
    # a mark's label may reach past the grid's right edge: the figure grows to hold it
    reach = max([name_w + cell_w * ncols + 20]
                + [name_w + cell_w * x + (0 if x >= ncols - 0.01 else text_width(lab) / (1 if x <= 0.01 else 2)) + 10
                   for x, lab in merged.items()])
    # labels that would overlap the one before go one line higher
    placed, level_ends = [], []
    for x in sorted(merged):
        px, tw = name_w + cell_w * x, text_width(merged[x])
        anchor = "end" if x >= ncols - 0.01 else ("start" if x <= 0.01 else "middle")
        x0 = px - (tw if anchor == "end" else tw / 2 if anchor == "middle" else 0)
        level = next((i for i, end in enumerate(level_ends) if x0 > end + 12), len(level_ends))
        if level == len(level_ends):
            level_ends.append(0.0)
        level_ends[level] = x0 + tw
        placed.append((px, merged[x], anchor, level, x0, tw))
    levels = len(level_ends)
    head = (FONT + 16 if col_names else 8) + (FONT + 14) * levels
    width = max(reach, 200)
    doc = _Doc(width, head + cell_h * nrows + 12)
    for px, label, anchor, level, x0, tw in placed:
        doc.line(px, (FONT + 14) * (levels - level) - 2, px, head + cell_h * nrows + 6, "#000000", width=4, dash="8,6")
    for px, label, anchor, level, x0, tw in placed:  # on a white ground: a higher label's line passes behind
        y = (FONT + 14) * (levels - level) - 10
        if levels > 1:
            doc.rect(x0 - 4, y - FONT + 1, tw + 8, FONT + 5, "#FFFFFF")
        doc.text(px, y, label, anchor=anchor, weight="bold")
    if col_names:
        for c, name in enumerate(col_names):
            doc.text(name_w + cell_w * (c + 0.5), head - 10, name, size=FONT - 3, anchor="middle", color=MUTED)
    for r, name in enumerate(row_names):
        y = head + cell_h * r
        doc.text(name_w - 10, y + cell_h / 2 + FONT * 0.35, name, anchor="end", weight="bold")
        for c, text in enumerate(cells[r]):
            fill = fills[r][c]
            if fill is None:
                continue
            dash = bool(dashed and dashed[r][c])
            pale = dash or bool(light and light[r][c])
            hover = hovers[r][c] if hovers else str(text)
            doc.rect(name_w + cell_w * c + 3, y + 4, cell_w - 6, cell_h - 8, fill, hover=hover,
                     stroke="#BBBBBB" if pale else "#444444", stroke_width=2, dash="4,3" if dash else None)
            grey = bool(faded and faded[r][c])
            doc.text(name_w + cell_w * (c + 0.5), y + cell_h / 2 + (FONT + 2) * 0.35, text, size=FONT + 2, anchor="middle",
                     weight="normal" if grey else "bold", color="#777777" if grey else text_on(fill), hover=hover)
    return doc.svg(alt)
