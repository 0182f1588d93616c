"""The only place the app builds HTML: small fixed templates, every value escaped.

``st.markdown(..., unsafe_allow_html=True)`` is called from here only (plus fixed CSS). Values
(token labels, field names, numbers, titles) go through ``specviz.safety.html_text``; a piece
this module built is a ``Markup`` string and is not escaped twice. Anything else handed to
``row`` is escaped, so a caller cannot pass raw text through by mistake.
"""
from __future__ import annotations

import streamlit as st

from specviz.safety import html_text


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
    """A labelled row of chips (non-chip items are escaped as text)."""
    return Markup(f'<div class="sv-row"><span class="sv-label">{html_text(label)}</span>{"".join(_esc(c) for c in chips)}</div>')


def show(pieces) -> None:
    """Draw pieces built here (others escaped as text) in one markdown element."""
    st.markdown("".join(_esc(p) for p in pieces), unsafe_allow_html=True)


def row(label, chips) -> None:
    show([row_html(label, chips)])


def big_cell(caption, text) -> None:
    """A bold caption over one large value (e.g. the root / anchor token of a chain)."""
    show([Markup(f"<b>{html_text(caption)}</b><br><span style='font-size:1.6rem'>{html_text(text)}</span>")])


def fixed_markup(source_html: str) -> None:
    """Markup written in the source code (CSS, the tour's prose), never built from data."""
    st.markdown(source_html, unsafe_allow_html=True)
