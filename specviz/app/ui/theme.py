"""Page setup: the stylesheet, presentation mode, the sidebar (language, backend, scenario),
and routing a first request through app.py.
"""
from __future__ import annotations

import functools

import streamlit as st

from specviz.app.ui.backend_cache import backend_selector
from specviz.app.ui.i18n import LANGS, tr
from specviz.app.ui.scenarios import scenario_io
from specviz.app.ui.state import widget

# -------------------------------------------------------------------------------------------
# Page setup
# -------------------------------------------------------------------------------------------

# Streamlit's stylesheet forces one small font size on every graphviz <text>, which ignores the
# DOT fontsize (nodes are laid out for 18-26 pt text, then drawn at ~11 px). Give each text its
# own size back: one rule per size the renderers use (graphviz writes font-size="18.00").
_GRAPH_FONT_CSS = "".join(
    f'[data-testid="stGraphVizChart"] svg text[font-size="{k}.00"]{{font-size:{k}px !important}}' for k in range(6, 49))

CSS = "<style>" + _GRAPH_FONT_CSS + """
/* Projector-sized: larger base text, tables and code; little space above the title. */
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; }
/* A figure never grows past the window's height (a projector is 720 px tall): it scales down whole. */
[data-testid="stGraphVizChart"] svg { max-height: calc(100vh - 140px); width: auto; max-width: 100%; }
h1 { padding-top: 0.2rem !important; }
html, body, [data-testid="stAppViewContainer"] { font-size: 19px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.05rem; }
[data-testid="stDataFrame"] div, [data-testid="stTable"] td, [data-testid="stTable"] th { font-size: 1.0rem; }
[data-testid="stCode"] code { font-size: 0.9rem; }
.sv-chip { display: inline-block; min-width: 2.4em; padding: .15em .5em; margin: .1em; border-radius: .35em;
           text-align: center; font-weight: 600; font-family: ui-monospace, monospace; border: 2px solid transparent; }
.sv-row { display: flex; flex-wrap: wrap; align-items: center; gap: .2em; margin: .2em 0 .6em 0; }
.sv-label { font-weight: 600; margin-right: .6em; min-width: 9em; }
.sv-chips { display: flex; flex-wrap: wrap; align-items: center; gap: .2em; flex: 1 1 max-content; min-width: 0; }
.sv-grey { color: #777; text-decoration: line-through; }
.sv-big { font-size: 1.25rem; }
[data-testid="stTable"] table { font-size: 1.0rem; }
.sv-table-wrap { overflow-x: auto; margin-bottom: .6em; }
.sv-table { border-collapse: collapse; font-size: 1.0rem; width: 100%; }
.sv-table th, .sv-table td { border: 1px solid rgba(128, 128, 128, .35); padding: .25em .5em; text-align: left; }
.sv-table th { font-weight: 600; }
/* A label is never cut ("Add sibl…" at 1280x720): a long button, toggle, radio or page-link label wraps
   onto a second line instead of ending in an ellipsis, in either language. */
.stMarkdownEllipsis, .stMarkdownEllipsis p { white-space: normal !important; overflow: visible !important;
                                             text-overflow: clip !important; }
[data-testid="stButton"] button p, [data-testid="stDownloadButton"] button p,
[data-testid="stFormSubmitButton"] button p { line-height: 1.2; }
/* ...and wraps between words only ("random ise coins", ".4 accep t" in the chain page's coin column at 1280 px
   with the sidebar open): a button in a column keeps whole words, with less side padding to make room. */
[data-testid="stColumn"] [data-testid="stButton"] button { padding-left: .45rem; padding-right: .45rem; }
[data-testid="stColumn"] [data-testid="stButton"] button p { word-break: normal; overflow-wrap: normal; }
[data-testid="stSidebarNavLink"] span { white-space: normal !important; overflow: visible !important;
                                         text-overflow: clip !important; line-height: 1.25; }
</style>
"""


# Presentation mode: larger text everywhere (the step player enlarges its own caption).
PRESENT_CSS = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 24px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.1rem; }
h1 { font-size: 2.2rem !important; padding-top: 0 !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { display: none; }
/* The key picture and its narration start on the first screen: less space above the title, and the
   wide layout's side margins (5rem of 24 px text each) given back to the picture, its chips and tables. */
[data-testid="stMainBlockContainer"] { padding: 0.6rem 1.2rem 2rem 1.2rem !important; max-width: none !important; }
[data-testid="stMain"] h1 { font-size: 1.9rem !important; line-height: 1.15 !important; }
[data-testid="stMain"] h2 { font-size: 1.3rem !important; padding: 0.2rem 0 !important; }
/* The sidebar starts collapsed (page_setup); opened, it is narrow. */
[data-testid="stSidebar"][data-collapsed="false"] { width: 240px !important; min-width: 240px !important;
                                                     max-width: 240px !important; }
[data-testid="stSidebar"] [data-testid="stSidebarContent"] { font-size: 17px; }
</style>"""


def presenting() -> bool:
    """True in presentation mode (sidebar toggle, or ``present`` in a shared link's extras)."""
    return bool(st.session_state.get("sv_present", False))


def editing_area(title: str):
    """A container for a page's editing controls: folded into a closed expander in presentation
    mode (the key picture stays on screen), a plain container otherwise."""
    return st.expander(title, expanded=False, icon=":material/edit:") if presenting() else st.container()


def route_through_app() -> None:
    """Send a deep link (e.g. /greedy opened in a fresh server) through app.py's router.

    Streamlit runs a file of ``pages/`` on its own (its old multipage mode) while no script has
    called ``st.navigation`` yet in this server process, which happens when the very first
    request is a deep link: the page then has no router, no titles and no Triton set-up. Switching
    that mode off and rerunning runs app.py, whose st.navigation resolves the same URL path.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


@functools.cache
def favicon_url() -> str:
    """The tab icon, drawn here once per process as a PNG data URL: a ":material/..." icon makes every browser
    fetch it from fonts.gstatic.com (the app must work offline), and an image handed to set_page_config is
    encoded to PNG again on every rerun (4% of a class's server CPU)."""
    import base64
    import io

    from PIL import Image, ImageDraw

    img = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    draw.ellipse((2, 2, 62, 62), fill=(0, 158, 115, 255))  # the palette's "accepted" green
    draw.line([(17, 33), (28, 44), (48, 22)], fill=(255, 255, 255, 255), width=7)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")


_PAGE_LISTS: dict = {}  # (language, page files) -> st.Page list; app.py is re-executed every run, this module is not


def page_objects(key, build) -> list:
    """Fresh st.Page objects for this run (st.navigation marks the one it runs, so a run never shares
    them), copied from the list ``build()`` made once per ``key``: making an st.Page resolves its file
    on disk, and 13 of them a rerun were 10% of a class's server CPU (benchmarks/README.md)."""
    import copy

    built = _PAGE_LISTS.get(key)
    if built is None:
        if len(_PAGE_LISTS) > 8:
            _PAGE_LISTS.clear()
        built = _PAGE_LISTS[key] = build()
    return [copy.copy(p) for p in built]


def page_setup(page: str, slot: str | None = "tree") -> None:
    """Per page: CSS, and the sidebar with the language toggle, backend selector and scenario I/O."""
    route_through_app()
    from specviz.app.ui import markup

    markup.fixed_markup(CSS)
    st.session_state["sv_page"] = page
    st.session_state["sv_playing_keys"] = set()
    widget(st.sidebar.radio, "Language / 语言", "sv_lang", "en", options=list(LANGS), format_func=LANGS.get, horizontal=True)
    widget(st.sidebar.toggle, tr("Presentation mode", "演示模式"), "sv_present", False,
           help=tr("Large text, editing controls folded away, ← → and space step the walk.",
                   "大字号，收起编辑控件，← → 和空格键单步或播放。"))
    if presenting():
        markup.fixed_markup(PRESENT_CSS)
    # Presentation mode starts with the sidebar folded away (the picture gets the whole 1280 px; the sidebar's
    # arrow opens it again): public page config, which Streamlit applies whenever the value changes.
    st.set_page_config(initial_sidebar_state="collapsed" if presenting() else "auto")
    backend_selector()
    if slot is not None:
        scenario_io(slot)
