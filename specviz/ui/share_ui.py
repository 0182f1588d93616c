"""Shareable links and export buttons for any page (Streamlit side of specviz.share / specviz.export).

    from specviz.ui import share_ui
    share_ui.load_shared_state()     # first thing on a page (before ui.page_setup): applies ?s=... once
    ...
    share_ui.share_controls("greedy", slot="tree", step_key="greedy")   # "copy link" box; keeps ?s= up to date
    share_ui.export_controls(s, dot=dot)                                # JSON / pytest / HTML animation / SVG / PNG

A link carries the whole scenario (of one slot), the page, the language and the animation step,
compressed into one query value (``specviz.share``). Loading a link validates it; a malformed or
oversized link is refused with st.error naming the problem, never a traceback.
"""
from __future__ import annotations

import streamlit as st

from specviz.errors import SpecvizError
from specviz.share import QUERY_KEY, ShareState, decode_state, encode_state
from specviz.ui import common as ui

APPLIED = "sv_share_applied"  # the last query value applied (or written) in this session
ERROR = "sv_share_error"


def _query_token() -> str | None:
    try:
        value = st.query_params.get(QUERY_KEY)
    except Exception:  # noqa: BLE001  no query params outside a browser session
        return None
    return value or None


def shared_extra(page: str) -> dict:
    """Page-specific values that arrived with a link (e.g. {"pitfall": "q_zero"}); {} if none."""
    return dict(st.session_state.get(f"sv_share_extra::{page}", {}))


def apply_state(state: ShareState) -> None:
    """Put a decoded state into the session (language, scenario slot, step, extras)."""
    ui.set_value("sv_lang", state.lang)
    if state.scenario is not None:
        ui.set_scenario(state.slot, state.scenario)
    if state.step_key:
        ui.set_step(state.step_key, state.step)
    st.session_state[f"sv_share_extra::{state.page}"] = dict(state.extra)


def load_shared_state() -> ShareState | None:
    """Apply the link in the URL once per distinct value. Returns the applied state, else None.

    Call it at the top of a page, before any widget: then the widgets start from the shared values.
    A bad link shows st.error (field "link") and leaves the session as it was.
    """
    token = _query_token()
    if token is None or st.session_state.get(APPLIED) == token:
        return None
    st.session_state[APPLIED] = token
    try:
        state = decode_state(token)
    except SpecvizError as exc:
        st.session_state[ERROR] = exc
        return None
    st.session_state.pop(ERROR, None)
    apply_state(state)
    return state


def show_link_error() -> None:
    """Show (once) why the link in the URL was refused."""
    exc = st.session_state.pop(ERROR, None)
    if exc is not None:
        st.error(ui.tr("This link could not be loaded: **{f}**: {d}. The page shows its default state instead.",
                       "无法加载此链接：**{f}**：{d}。页面改为显示默认状态。", f=exc.field, d=exc.detail), icon="🔗")


def _base_url() -> str:
    try:
        url = st.context.url or ""
    except Exception:  # noqa: BLE001
        url = ""
    if "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://{rest.split('/', 1)[0]}"
    return "http://localhost:8501"


def current_state(page: str, slot: str | None = None, step_key: str | None = None, extra: dict | None = None) -> ShareState:
    s = ui.scenario(slot) if slot else None
    return ShareState(page=page, lang=ui.lang(), slot=slot or "tree", scenario=s, step_key=step_key,
                      step=ui.step(step_key) if step_key else 0, extra=dict(extra or {}))


def share_controls(page: str, slot: str | None = None, step_key: str | None = None, extra: dict | None = None,
                   expanded: bool = False) -> str | None:
    """The "copy link" box for this view; also writes the link's value into the address bar.

    Returns the link (None when the state is too large for a link: then it says so).
    """
    if load_shared_state() is not None:
        st.rerun()  # a link arrived after the page's widgets were drawn: draw them again from it
    show_link_error()
    state = current_state(page, slot, step_key, extra)
    try:
        token = encode_state(state)
    except SpecvizError as exc:
        st.warning(ui.tr("No link for this view: {d}", "此视图无法生成链接：{d}", d=exc.detail))
        return None
    url = f"{_base_url()}/{page}?{QUERY_KEY}={token}"
    if _query_token() != token:
        st.session_state[APPLIED] = token
        try:
            st.query_params[QUERY_KEY] = token
        except Exception:  # noqa: BLE001  outside a browser session
            pass
    with st.expander(ui.tr("🔗 Share this view (copy link)", "🔗 分享此视图（复制链接）"), expanded=expanded):
        st.caption(ui.tr("The link holds the scenario, this page, the language and the animation step. "
                         "Click the copy icon at the right of the box.",
                         "链接包含场景、当前页面、语言与动画步骤。点击框右侧的复制图标即可复制。"))
        st.code(url, language=None, wrap_lines=True)
    return url


# -------------------------------------------------------------------------------------------
# Export buttons
# -------------------------------------------------------------------------------------------

@st.cache_data(show_spinner=False, max_entries=64)
def _pytest_text(scenario_json: str) -> str:
    from specviz.export import pytest_file
    from specviz.scenario import scenario_from_json

    return pytest_file(scenario_from_json(scenario_json))


@st.cache_data(show_spinner=False, max_entries=32)
def _animation(scenario_json: str, lang: str) -> str:
    from specviz.export import animation_html
    from specviz.scenario import scenario_from_json

    return animation_html(scenario_from_json(scenario_json), lang)


@st.cache_data(show_spinner=False, max_entries=64)
def _dot_bytes(dot: str, fmt: str) -> bytes:
    from specviz.export import dot_to_png, dot_to_svg

    return dot_to_svg(dot) if fmt == "svg" else dot_to_png(dot)


def export_controls(s, dot: str | None = None, key: str = "export", expanded: bool = False, fig=None) -> None:
    """Download buttons: scenario JSON, a ready-to-run pytest file, the animation as one offline HTML
    file, (given ``dot``) the tree figure as SVG / PNG, and (given a plotly ``fig``) that chart as
    offline HTML, plus PNG when kaleido is installed. Anything that cannot be made here says why."""
    from specviz.export import GRAPHVIZ_HINT, has_dot

    name = "".join(ch if ch.isalnum() else "_" for ch in s.name) or "scenario"
    text = s.to_json(indent=None)
    with st.expander(ui.tr("⬇ Export (JSON, pytest, HTML animation, SVG/PNG)", "⬇ 导出（JSON、pytest、HTML 动画、SVG/PNG）"),
                     expanded=expanded):
        cols = st.columns(3)
        cols[0].download_button(ui.tr("Scenario JSON", "场景 JSON"), s.to_json(), file_name=f"{name}.json",
                                mime="application/json", key=f"w_{key}_json", width="stretch")
        try:
            cols[1].download_button(ui.tr("pytest file", "pytest 测试文件"), _pytest_text(text), file_name=f"test_{name}.py",
                                    mime="text/x-python", key=f"w_{key}_pytest", width="stretch",
                                    help=ui.tr("Inputs, coins and expected accept_index / outputs, calling specviz.reference; "
                                               "run it with pytest.",
                                               "包含输入、coin 与期望的 accept_index / 输出，调用 specviz.reference；用 pytest 运行。"))
            cols[2].download_button(ui.tr("Animation (offline HTML)", "动画（离线 HTML）"), _animation(text, ui.lang()),
                                    file_name=f"{name}_walk.html", mime="text/html", key=f"w_{key}_html", width="stretch",
                                    help=ui.tr("One self-contained file: opens offline, arrow keys step, space plays.",
                                               "单个自包含文件：离线打开，方向键单步，空格播放。"))
        except SpecvizError as exc:
            ui.show_error(exc)
        if dot is not None:
            if has_dot():
                c1, c2 = st.columns(2)
                try:
                    c1.download_button(ui.tr("Figure as SVG", "图（SVG）"), _dot_bytes(dot, "svg"), file_name=f"{name}.svg",
                                       mime="image/svg+xml", key=f"w_{key}_svg", width="stretch")
                    c2.download_button(ui.tr("Figure as PNG", "图（PNG）"), _dot_bytes(dot, "png"), file_name=f"{name}.png",
                                       mime="image/png", key=f"w_{key}_png", width="stretch")
                except SpecvizError as exc:
                    ui.show_error(exc)
            else:
                st.info(ui.tr("SVG / PNG export {why}.", "SVG / PNG 导出需要 Graphviz 的 dot 程序（apt-get install -y graphviz）。",
                              why=GRAPHVIZ_HINT))
        if fig is not None:
            from specviz.export import figure_to_html, figure_to_png

            c1, c2 = st.columns(2)
            c1.download_button(ui.tr("Chart as HTML (offline)", "图表（离线 HTML）"), figure_to_html(fig), file_name=f"{name}_chart.html",
                               mime="text/html", key=f"w_{key}_chart_html", width="stretch")
            try:
                c2.download_button(ui.tr("Chart as PNG", "图表（PNG）"), figure_to_png(fig), file_name=f"{name}_chart.png",
                                   mime="image/png", key=f"w_{key}_chart_png", width="stretch")
            except SpecvizError as exc:
                c2.caption(ui.tr("PNG: {d}", "PNG：需要 kaleido 与 chromium（pip install kaleido）；也可以用图表右上角的相机图标保存。",
                                 d=exc.detail))
