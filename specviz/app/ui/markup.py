"""The only place the app builds HTML: small fixed templates, every value escaped.

``st.markdown(..., unsafe_allow_html=True)`` is called from here only (plus fixed CSS). Values
(token labels, field names, numbers, titles) go through ``specviz.base.safety.html_text``; a piece
this module built is a ``Markup`` string and is not escaped twice. Anything else handed to
``row`` is escaped, so a caller cannot pass raw text through by mistake.
"""
from __future__ import annotations

import functools
import re

import streamlit as st

from specviz.base.safety import html_text


class Markup(str):
    """HTML that this module built from escaped values (safe to place in a template)."""


def _esc(value) -> str:
    return value if isinstance(value, Markup) else html_text(value)


def chip(text, state: str = "pending", title: str = "") -> Markup:
    """A value on a state colour, with an exact-value hover (``title``)."""
    from specviz.render.palette import state_color, text_on

    fill = state_color(state)
    t = f' title="{html_text(title)}"' if title else ""
    return Markup(f'<span class="sv-chip"{t} style="background:{html_text(fill)};color:{html_text(text_on(fill))}">'
                  f"{html_text(text)}</span>")


def row_html(label, chips) -> Markup:
    """A labelled row of chips (non-chip items are escaped as text). The chips are one group: beside the label when
    they all fit there, else on the lines below it (wrapping inside the group), never a chip wrapped back under
    the label, where it read as the start of another row (``accept_index 0 1`` over ``3``)."""
    return Markup(f'<div class="sv-row"><span class="sv-label">{html_text(label)}</span>'
                  f'<span class="sv-chips">{"".join(_esc(c) for c in chips)}</span></div>')


def show(pieces) -> None:
    """Draw pieces built here (others escaped as text) in one markdown element."""
    st.markdown("".join(_esc(p) for p in pieces), unsafe_allow_html=True)


def row(label, chips) -> None:
    show([row_html(label, chips)])


def table_html(columns, rows, states: dict) -> Markup:
    """A table of text cells whose rows are coloured by state (``{row position: state}``), every cell
    escaped. A Styler through ``st.table`` drew the same for ~20% of a class's server CPU."""
    from specviz.render.palette import state_color, text_on

    head = "".join(f"<th>{html_text(c)}</th>" for c in columns)
    body = []
    for pos, values in enumerate(rows):
        state = states.get(pos)
        style = ""
        if state is not None:
            fill = state_color(state)
            style = f' style="background:{html_text(fill)};color:{html_text(text_on(fill))};font-weight:600"'
        body.append(f"<tr{style}>" + "".join(f"<td>{html_text(v)}</td>" for v in values) + "</tr>")
    return Markup(f'<div class="sv-table-wrap"><table class="sv-table"><thead><tr>{head}</tr></thead>'
                  f'<tbody>{"".join(body)}</tbody></table></div>')


def big_cell(caption, text) -> None:
    """A bold caption over one large value (e.g. the root / anchor token of a chain)."""
    show([Markup(f"<b>{html_text(caption)}</b><br><span style='font-size:1.6rem'>{html_text(text)}</span>")])


# Small status icons drawn here (fixed shapes, no font needed): a Streamlit ":material/...:" icon is
# only drawn in markdown text, never inside HTML, where it would show as raw text.
_ICONS = {
    "todo": ('<rect x="3.5" y="3.5" width="17" height="17" rx="2.5" fill="none" stroke="currentColor" stroke-width="2"/>'),
    "done": ('<rect x="2.5" y="2.5" width="19" height="19" rx="3" fill="#009E73"/>'
             '<polyline points="6.5,12.5 10.5,16.5 17.5,8" fill="none" stroke="#fff" stroke-width="2.6"/>'),
    "talk": ('<path d="M4 4.5 H20 V15.5 H10 L5.5 20 V15.5 H4 Z" fill="none" stroke="currentColor" stroke-width="2" '
             'stroke-linejoin="round"/><line x1="8" y1="8.5" x2="16" y2="8.5" stroke="currentColor" stroke-width="1.6"/>'
             '<line x1="8" y1="11.5" x2="14" y2="11.5" stroke="currentColor" stroke-width="1.6"/>'),
}


def icon(name: str, label: str) -> Markup:
    """An inline status icon (``todo``, ``done``, ``talk``) with ``label`` as its text alternative."""
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="1.1em" height="1.1em" role="img" '
                  f'aria-label="{html_text(label)}" style="vertical-align:-0.15em;margin-right:.3em">'
                  f"<title>{html_text(label)}</title>{_ICONS[name]}</svg>")


def fixed_markup(source_html: str) -> None:
    """Markup written in the source code (CSS, the tour's prose), never built from data."""
    st.markdown(source_html, unsafe_allow_html=True)


_SVG_ROOT = re.compile(r'<svg\b[^>]*?>', re.S)
# What Graphviz's SVG output is made of (for the figures the renderers write): any other element
# or attribute (a link, a script, an event handler, foreign HTML) refuses the document.
_SVG_TAGS = frozenset({"svg", "g", "title", "a", "polygon", "polyline", "path", "ellipse", "text", "defs", "line",
                       "linearGradient", "radialGradient", "stop", "rect", "tspan"})
_SVG_ATTRS = frozenset({"id", "class", "transform", "viewBox", "width", "height", "fill", "stroke", "stroke-width",
                        "stroke-dasharray", "stroke-opacity", "fill-opacity", "points", "d", "cx", "cy", "rx", "ry", "r",
                        "x", "y", "x1", "y1", "x2", "y2", "text-anchor", "font-family", "font-size", "font-weight",
                        "font-style", "xlink:title", "xmlns", "xmlns:xlink", "offset", "style", "gradientUnits",
                        "preserveAspectRatio", "stop-color", "stop-opacity"})
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][\w:-]*)((?:\s+[\w:-]+\s*=\s*\"[^\"]*\")*)\s*/?\s*>")
_ATTR = re.compile(r'([\w:-]+)\s*=\s*"([^"]*)"')


def _check_svg(svg: str) -> None:
    """Raise ValueError unless every tag is one Graphviz writes, with attributes it writes."""
    # One pass over the document: [text, tag name, its attributes, text, ...]. Every tag and attribute is
    # checked at once (a figure has hundreds of tags: a Python step per tag, and a second pass to find the
    # text outside the tags, were most of a new figure's inline_svg); only a document that fails is walked
    # tag by tag, for the first offence.
    pieces = _TAG.split(svg)
    if any("<" in text for text in pieces[::3]):
        raise ValueError("the SVG holds a tag of another shape")
    attrs = _ATTR.findall("".join(pieces[2::3]))
    if (set(pieces[1::3]) <= _SVG_TAGS and {name for name, _ in attrs} <= _SVG_ATTRS
            and not any(name == "style" and ("url(" in value or "expression" in value) for name, value in attrs)):
        return
    for m in _TAG.finditer(svg):
        if m.group(1) not in _SVG_TAGS:
            raise ValueError(f"the SVG holds a <{m.group(1)}> element")
        for name, value in _ATTR.findall(m.group(2)):
            if name not in _SVG_ATTRS or (name == "style" and ("url(" in value or "expression" in value)):
                raise ValueError(f"the SVG holds a {name} attribute")


@functools.lru_cache(maxsize=128)  # a pure function of its text; a rerun that did not change a figure asks again
def inline_svg(svg: str, *, stretch: bool, max_height: str) -> Markup:
    """A Graphviz SVG for inline display: sized by CSS (the whole figure scales down to fit),
    hover texts kept (``<a xlink:title>``), Graphviz's internal names dropped from the hovers.

    Every label in it was escaped as XML text by ``dot``; beyond that, a document with an element
    or attribute Graphviz does not write for our figures (a script, an event handler, a link) is
    refused, and markdown-active characters are made inert (Streamlit renders it as markdown)."""
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    _check_svg(svg[svg.find("<svg"):])
    m = _SVG_ROOT.search(svg)
    if not m:
        raise ValueError("not an SVG document")
    root = m.group(0)
    vb = re.search(r'viewBox="([^"]*)"', root)
    width = re.search(r'\bwidth="([\d.]+)pt"', root)
    size = "width:100%" if stretch else f"width:{float(width.group(1)) * 4 / 3:.0f}px" if width else "width:100%"
    new_root = (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
                f'{"viewBox=" + chr(34) + vb.group(1) + chr(34) if vb else ""} role="img" '
                f'style="{size};max-width:100%;height:auto;max-height:{html_text(max_height)};display:block;margin:0 auto">')
    body = svg[m.end():]
    body = re.sub(r'(<g id="graph0"[^>]*>)\s*<title>[^<]*</title>', r"\1", body, count=1)
    # Graphviz titles each node and edge with its internal name ("n3", "n3->nbonus"), which a browser
    # shows on hover: keep the name as a class (tests find nodes by it), drop the hover.
    body = re.sub(r'<g id="([^"]*)" class="((?:node|edge)[^"]*)">\s*<title>([^<]*)</title>',
                  lambda m: f'<g id="{m.group(1)}" class="{m.group(2)}' + (f' sv-{m.group(3)}"' if re.fullmatch(r"[\w-]+", m.group(3)) else '"') + ">",
                  body)
    return Markup(new_root + _markdown_inert(body))


# Streamlit's markdown reads inside the HTML it is handed: in text and attribute values, the
# characters it would act on become numeric character references (entities dot wrote are kept).
_MD_ACTIVE = re.compile(r"&#?\w+;|[\[\]()!*_`~\\#|$:]")


def _inert(text: str) -> str:
    return _MD_ACTIVE.sub(lambda m: m.group(0) if len(m.group(0)) > 1 else f"&#{ord(m.group(0))};", text)


def markdown_inert_reference(svg: str) -> str:
    """The readable ``_markdown_inert``: each tag's attribute values and each text between tags made inert."""
    out = []
    for part in re.split(r"(<[^>]*>)", svg.replace("\n", " ")):
        if part.startswith("<"):
            out.append(re.sub(r'="([^"]*)"', lambda m: '="' + _inert(m.group(1)) + '"', part))
        else:
            out.append(_inert(part))
    return "".join(out)


# The same without a Python call per character (a figure's SVG has hundreds of them: '#' in every
# colour): one str.replace per active character, '#' first (the references written after it hold one),
# then the two things this broke are put back. It relies on what dot writes and _check_svg has
# established: '&' only starts an entity (``&amp;``, ``&#45;``), whose '#' became ``&#35;``; outside
# attribute values a tag holds only its name and ``name="`` pieces, whose one active character is the ':'
# of `` xlink:title="`` / `` xmlns:xlink="``. Text and values hold no '"', so each name is matched with
# its whole value, and a value that ends like a name (a tooltip "... xlink:title=") is not taken for one.
# test_svg_inert pins it to markdown_inert_reference.
_ACTIVE = "#[]()!*_`~\\|$:"
_NAME_COLON = re.compile(r'(\s(?:xlink|xmlns))&#58;((?:title|xlink)="[^"]*")')  # the name and its whole value


def _markdown_inert(svg: str) -> str:
    body = svg.replace("\n", " ")
    for c in _ACTIVE:
        body = body.replace(c, f"&#{ord(c)};")
    return _NAME_COLON.sub(r"\1:\2", body.replace("&&#35;", "&#"))


def svg_figure(svg: str, *, stretch: bool = True, max_height: str = "calc(100vh - 140px)") -> None:
    """Draw a server-laid-out Graphviz figure in the page (no layout work left to the browser)."""
    show([Markup(f'<div class="sv-graph">{inline_svg(svg, stretch=stretch, max_height=max_height)}</div>')])
