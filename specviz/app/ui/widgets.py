"""Small pieces of fixed markup: coloured chips with exact-value hovers, state tables, the legend,
page links. Every user-controlled text goes through ``specviz.app.ui.markup`` escaping.
"""
from __future__ import annotations

import functools

import streamlit as st

from specviz.app.ui.i18n import term, tr
from specviz.app.ui.scenarios import ROOT

# -------------------------------------------------------------------------------------------
# Small HTML pieces (chips: a value with a state colour and an exact-value hover)
# -------------------------------------------------------------------------------------------

def chip(text, state: str = "pending", title: str = "") -> str:
    """A chip's HTML (text and title escaped): see specviz.app.ui.markup."""
    from specviz.app.ui import markup

    return markup.chip(text, state, title)


def chip_row(label: str, chips: list[str]) -> None:
    """A labelled row of chips (label and any non-chip item escaped): see specviz.app.ui.markup."""
    from specviz.app.ui import markup

    markup.row(label, chips)


def chip_rows(rows) -> None:
    """Several labelled rows of chips, ``[(label, chips), ...]``, drawn as one element (each element a
    rerun sends costs the server a message: a block of rows is one)."""
    from specviz.app.ui import markup

    markup.show([markup.row_html(label, chips) for label, chips in rows])


STYLED_ROWS_LIMIT = 40  # beyond this a long static table pushes the page down; text marks carry the state


def state_table(table, states: dict) -> None:
    """A table (a DataFrame, or a list of records: dicts with the same keys) whose rows are coloured by
    state (``{row position: state}``); every cell also carries its text mark. Up to STYLED_ROWS_LIMIT rows:
    a static coloured table (HTML built by ``markup.table_html``, every cell escaped); beyond: a plain
    scrollable dataframe (the ✓ / ✗ marks in the cells still say the state)."""
    from specviz.app.ui import markup

    if len(table) > STYLED_ROWS_LIMIT:
        import pandas as pd

        st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", height=420)
    elif isinstance(table, list):  # records: no DataFrame built at all
        markup.show([markup.table_html(list(table[0]) if table else [], [list(r.values()) for r in table], states)])
    else:
        markup.show([markup.table_html(list(table.columns), table.itertuples(index=False, name=None), states)])


@functools.cache
def _python_string_storage() -> None:
    """Streamlit marshals a Styler by casting the frame to strings and writing the shown text back cell by
    cell; with pandas' default Arrow string storage those writes are slow (2.7 vs 1.7 ms for two columns
    measured here; benchmarks/profile_rerun.py). Python storage holds the same strings, so the app
    switches to it once."""
    import pandas as pd

    pd.set_option("mode.string_storage", "python")


def text_table(data) -> None:
    """``st.table`` with every cell as text. Streamlit renders st.table cells (and headers) as
    markdown, so a token label ``![i](http://host/p)`` would become an image: each string cell goes
    through ``safety.table_cell`` (markdown escaped, no autolink). ``data``: a DataFrame or a Styler
    of one (its styles are kept; only the shown text is escaped)."""
    import pandas as pd

    from specviz.base.safety import table_cell

    _python_string_storage()
    if isinstance(data, pd.DataFrame):
        data = data.rename(columns=table_cell).map(table_cell)
    else:  # a pandas Styler: escape what it shows, keep its colours
        data = data.format(table_cell).format_index(table_cell, axis=1)
    st.table(data)


def legend() -> None:
    """The colour legend (accepted / rejected / pending / bonus / discarded)."""
    chip_row(tr("Legend", "图例"), [chip(term(k), k) for k in ("accepted", "rejected", "pending")]
             + [chip(term("bonus"), "bonus"), chip(tr("current", "当前"), "current"), chip(term("discarded"), "discarded")])


def page_link(path: str, label: str, icon: str | None = None, help: str | None = None) -> bool:
    """st.page_link to ``path`` (relative to the repository root) when that page file exists.

    Returns False (and draws nothing) when the file is missing; outside the router (a page run on
    its own, e.g. by AppTest) the label is shown as plain text instead.
    """
    if not (ROOT / path).exists():
        return False
    try:
        st.page_link(str(ROOT / path), label=label, icon=icon, help=help)
    except Exception:  # noqa: BLE001  not registered with st.navigation: plain text
        st.markdown(f"{icon or '→'} **{label}**")
    return True


def graph(dot: str, width: str = "content", max_height: str = "calc(100vh - 140px)") -> None:
    """A Graphviz figure, laid out on the server by ``dot`` (cached by the DOT text) and drawn
    inline: an edit costs the browser no layout and no transition animation. Without ``dot`` on
    the server, the browser lays it out (``st.graphviz_chart``)."""
    import subprocess

    from specviz.render.svg import dot_to_svg
    from specviz.app.ui import markup

    try:
        markup.svg_figure(dot_to_svg(dot), stretch=width == "stretch", max_height=max_height)
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError):
        st.graphviz_chart(dot, width=width)


def chart(svg: str, stretch: bool = True, max_height: str = "calc(100vh - 160px)") -> None:
    """A chart drawn on the server (``specviz.render.svgchart``), shown inline: no chart script in the browser."""
    from specviz.app.ui import markup

    markup.svg_figure(svg, stretch=stretch, max_height=max_height)
