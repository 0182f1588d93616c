"""Shareable links and export buttons for any page (Streamlit side of specviz.rooms.share / specviz.rooms.export).

Every page puts them in the same place, the bottom of the sidebar:

    from specviz.app.ui import share_ui
    share_ui.load_shared_state()          # first thing on a page (before ui.page_setup): applies ?s=... once
    ui.page_setup(KEY, SLOT)
    linked = share_ui.link_arrived(KEY)   # a refused link's st.error at the top; the link's extras (dict) if one just arrived
    ...
    share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=KEY, dot=dot, fig=fig)   # share box + export box

A link carries the whole scenario (of one slot), the page, the language and the animation step,
compressed into one query value (``specviz.rooms.share``). Loading a link validates it; a malformed or
oversized link is refused with st.error naming the problem, never a traceback.

Export files that cost more than a moment (the HTML animation, figures through Graphviz or
kaleido: ~2 s for a plotly PNG) are built only when their button is clicked (a callable given to
st.download_button), never on a rerun.
"""
from __future__ import annotations

import hashlib

import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache

from specviz.base.errors import SpecvizError
from specviz.base.safety import md_message, md_text
from specviz.rooms.share import QUERY_KEY, ShareState, decode_state, encode_state, page_path
from specviz.app.ui import common as ui

APPLIED = "sv_share_applied"  # the last query value applied (or written) in this session
SEEN = "sv_share_seen"  # digests of every query value this session applied or wrote: never applied again
SEEN_LIMIT = 512
ERROR = "sv_share_error"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:24]


def _seen(token: str) -> bool:
    return _digest(token) in st.session_state.get(SEEN, ())


def _remember(token: str) -> None:
    """Mark a query value as this session's own (applied or written), so that a later rerun still
    carrying it (a click racing the address-bar update, the browser's Back button) never re-applies it."""
    seen = list(st.session_state.get(SEEN, ()))
    d = _digest(token)
    if d in seen:
        return
    seen.append(d)
    st.session_state[SEEN] = tuple(seen[-SEEN_LIMIT:])


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
    # Presentation mode travels in every page's extras as {"present": true} (nothing else is read).
    ui.set_value("sv_present", state.extra.get("present") is True)
    st.session_state[f"sv_share_extra::{state.page}"] = dict(state.extra)
    st.session_state[f"sv_share_new::{state.page}"] = True


def load_shared_state() -> ShareState | None:
    """Apply the link in the URL once, when it arrives. Returns the applied state, else None.

    A query value this session has already applied or written itself (``SEEN``) is never applied
    again: a rerun that still carries an older ``?s=`` (the click raced the address-bar update, or
    the browser went Back) keeps the session's current state instead of jumping back.
    Call it at the top of a page, before any widget: then the widgets start from the shared values.
    A bad link shows st.error (field "link") and leaves the session as it was.
    """
    token = _query_token()
    if token is None or st.session_state.get(APPLIED) == token or _seen(token):
        return None
    st.session_state[APPLIED] = token
    _remember(token)
    try:
        state = decode_state(token)
        check_page_extras(state.extra)
    except SpecvizError as exc:
        st.session_state[ERROR] = exc
        return None
    st.session_state.pop(ERROR, None)
    apply_state(state)
    return state


def check_page_extras(extra: dict) -> None:
    """What specviz.rooms.share cannot check from its layer: a Three engines chain parses as the page's
    editor parses it, and a decoding-loop link names only mistakes the loop knows. Raises
    SpecvizError naming the field, so that nothing of a bad link is applied."""
    if "chain" in extra:
        from specviz.rooms.engines.chain import from_json

        try:
            from_json(extra["chain"])
        except SpecvizError as exc:
            raise SpecvizError(f"link.extra.chain.{exc.field}", exc.detail) from None
    mistakes = extra.get("loop", {}).get("mistakes", [])
    if mistakes:
        from specviz.rooms.loop.settings import MISTAKES

        unknown = [m for m in mistakes if m not in MISTAKES]
        if unknown:
            raise SpecvizError("link.extra.loop.mistakes", f"names {unknown[0]!r}; the mistakes are {', '.join(MISTAKES)}")


def show_link_error() -> None:
    """Show (once) why the link in the URL was refused."""
    exc = st.session_state.pop(ERROR, None)
    if exc is not None:
        st.error(ui.tr("This link could not be loaded: **{f}**: {d}. The page shows its default state instead.",
                       "无法加载此链接：**{f}**：{d}。页面改为显示默认状态。", f=md_message(exc.field), d=md_message(exc.detail)), icon=":material/link_off:")


def link_arrived(page: str) -> dict | None:
    """Call right after ``ui.page_setup``: shows why a link was refused (st.error at the top of the
    page), and returns the page-specific extras of a link applied in this run ({} when it had
    none), else None. A page uses it to let the link's step win over "new inputs: show the last step"."""
    show_link_error()
    if st.session_state.pop(f"sv_share_new::{page}", False):
        return shared_extra(page)
    return None


def base_url() -> str:
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
    extra = dict(extra or {})
    if ui.presenting():
        extra["present"] = True
    return ShareState(page=page, lang=ui.lang(), slot=slot or "tree", scenario=s, step_key=step_key,
                      step=ui.step(step_key) if step_key else 0, extra=extra)


def share_summary(state: ShareState) -> str:
    """What the link in the share box holds, in words derived from the state it encodes: the live
    scenario's name ("… (edited)" once its inputs differ from the preset of that name) and the step
    the link opens at, which is the step the page was drawn at (the in-browser player steps without
    telling the server, so the box never claims the step on screen)."""
    from specviz.inputs.naming import display_name

    what = [ui.tr("this page", "此页面"), ui.tr("the language", "语言")]
    if state.scenario is not None:
        what.insert(0, ui.tr("the scenario '{n}'", "场景“{n}”", n=md_text(display_name(state.scenario, ui.lang()))))
    text = ui.tr("Point at the box and click its copy icon. The link holds {w}.",
                 "指向下面的框并点击其复制图标。链接包含{w}。", w=ui.tr(", ", "、").join(what))
    if state.step_key:
        text += " " + ui.tr("It opens at step {k}, the step this page was drawn at: steps taken in the player are not in it "
                            "(the player's link button copies the step it shows).",
                            "链接打开在第 {k} 步，即本页面绘制时的步骤：在播放器中走过的步骤不会写入链接"
                            "（播放器的链接按钮会复制它当前显示的步骤）。", k=state.step)
    return text


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
        st.warning(ui.tr("No link for this view: {d}", "此视图无法生成链接：{d}", d=md_message(exc.detail)))
        return None
    url = f"{base_url()}{page_path(page)}?{QUERY_KEY}={token}"
    _remember(token)
    if _query_token() != token:
        st.session_state[APPLIED] = token
        try:
            st.query_params[QUERY_KEY] = token
        except Exception:  # noqa: BLE001  outside a browser session
            pass
    box, is_open = ui.lazy_expander(ui.tr("Share this view", "分享此视图"), "w_share_open", expanded=expanded,
                                 icon=":material/link:")
    if is_open:
        with box:
            # (no language name here: page texts such as "English" stay unique for the language toggle)
            st.caption(share_summary(state))
            st.code(url, language=None, wrap_lines=False)
    return url


# -------------------------------------------------------------------------------------------
# Export buttons
# -------------------------------------------------------------------------------------------

@bounded_cache()
def _pytest_text(scenario_json: str) -> str:
    from specviz.rooms.export import pytest_file
    from specviz.inputs.scenario import scenario_from_json

    return pytest_file(scenario_from_json(scenario_json))


def _animation_file(scenario_json: str, lang: str):
    """Deferred: the offline HTML animation, built when the button is clicked; a page saying why if it cannot be."""
    def build() -> str:
        import html as _html

        from specviz.rooms.export import animation_html
        from specviz.inputs.scenario import scenario_from_json

        try:
            return animation_html(scenario_from_json(scenario_json), lang)
        except SpecvizError as exc:
            return (f"<!DOCTYPE html><meta charset='utf-8'><title>specviz export</title>"
                    f"<p>No animation for this scenario: <b>{_html.escape(exc.field)}</b>: {_html.escape(exc.detail)}</p>")
    return build


def _dot_file(dot: str, fmt: str):
    def build() -> bytes:
        from specviz.rooms.export import dot_to_png, dot_to_svg

        return dot_to_svg(dot) if fmt == "svg" else dot_to_png(dot)
    return build


def _json_file(s):
    """The scenario file, written when the button is clicked (not stored with every rerun)."""
    def build():
        return s.to_json()
    return build


def _figure_file(fig, fmt: str):
    def build():
        from specviz.rooms.export import figure_to_html, figure_to_png, figure_to_svg

        figure = fig() if callable(fig) else fig  # a page may pass a builder: no plotly work until a click
        return {"png": figure_to_png, "svg": figure_to_svg, "html": figure_to_html}[fmt](figure)
    return build


def export_controls(s, dot: str | None = None, key: str = "export", expanded: bool = False, fig=None,
                    dot_what: str | None = None, fig_what: str | None = None) -> None:
    """Download buttons: scenario JSON, a ready-to-run pytest file, the animation as one offline HTML
    file; given ``dot``, that Graphviz figure as SVG / PNG; given a plotly ``fig`` (or a function
    that builds it, called only when a chart file is built), that chart as SVG / PNG (kaleido) and
    offline HTML. ``dot_what`` / ``fig_what`` name the figures on the
    buttons' captions (e.g. "the tree at step 3"). Anything that cannot be made here says why.

    One button per line (it lives in the narrow sidebar); files that take time are built on click.
    """
    from specviz.rooms.export import GRAPHVIZ_HINT, has_dot, kaleido_problem

    from specviz.inputs.naming import file_stem

    box, is_open = ui.lazy_expander(ui.tr("Export", "导出"), f"w_{key}_open", expanded=expanded, icon=":material/download:")
    if not is_open:
        return
    name = file_stem(s)  # "running_example_edited" once the inputs differ from the preset
    text = s.to_json(indent=None)
    with box:
        st.caption(ui.tr("**This example**", "**此示例**"))
        st.download_button(ui.tr("Scenario JSON", "场景 JSON"), _json_file(s), file_name=f"{name}.json",
                           mime="application/json", key=f"w_{key}_json", width="stretch", on_click="ignore",
                           icon=":material/data_object:")
        try:
            st.download_button(ui.tr("pytest file", "pytest 测试文件"), _pytest_text(text), file_name=f"test_{name}.py",
                               mime="text/x-python", key=f"w_{key}_pytest", width="stretch", on_click="ignore",
                               icon=":material/science:",
                               help=ui.tr("Inputs, coins and expected accept_index / outputs, calling specviz.reference; "
                                          "run it with pytest.",
                                          "包含输入、coin 与期望的 accept_index / 输出，调用 specviz.reference；用 pytest 运行。"))
        except SpecvizError as exc:
            ui.show_error(exc)
        st.download_button(ui.tr("Animation (offline HTML)", "动画（离线 HTML）"), _animation_file(text, ui.lang()),
                           file_name=f"{name}_walk.html", mime="text/html", key=f"w_{key}_html", width="stretch",
                           on_click="ignore", icon=":material/slideshow:",
                           help=ui.tr("One self-contained file for slides: opens offline, arrow keys step, space plays.",
                                      "用于幻灯片的单个自包含文件：离线打开，方向键单步，空格播放。"))
        if dot is not None:
            st.caption("**" + (dot_what or ui.tr("The figure", "图")) + "**")
            if has_dot():
                st.download_button(ui.tr("Figure as SVG", "图（SVG）"), _dot_file(dot, "svg"), file_name=f"{name}.svg",
                                   mime="image/svg+xml", key=f"w_{key}_svg", width="stretch", on_click="ignore",
                                   icon=":material/image:")
                st.download_button(ui.tr("Figure as PNG", "图（PNG）"), _dot_file(dot, "png"), file_name=f"{name}.png",
                                   mime="image/png", key=f"w_{key}_png", width="stretch", on_click="ignore",
                                   icon=":material/image:")
            else:
                st.info(ui.tr("SVG / PNG export {why}.", "SVG / PNG 导出需要 Graphviz 的 dot 程序（`apt-get install -y graphviz`）。",
                              why=GRAPHVIZ_HINT))
        if fig is not None:
            st.caption("**" + (fig_what or ui.tr("The chart", "图表")) + "**")
            why = kaleido_problem()
            slow = ui.tr("Drawn by kaleido when you click: the download starts after about 2 s.",
                         "点击后由 kaleido 绘制：约 2 秒后开始下载。")
            if why is None:
                st.download_button(ui.tr("Chart as SVG", "图表（SVG）"), _figure_file(fig, "svg"), file_name=f"{name}_chart.svg",
                                   mime="image/svg+xml", key=f"w_{key}_chart_svg", width="stretch", on_click="ignore",
                                   icon=":material/bar_chart:", help=slow)
                st.download_button(ui.tr("Chart as PNG", "图表（PNG）"), _figure_file(fig, "png"), file_name=f"{name}_chart.png",
                                   mime="image/png", key=f"w_{key}_chart_png", width="stretch", on_click="ignore",
                                   icon=":material/bar_chart:", help=slow)
            else:
                st.caption(ui.tr("SVG / PNG: {d}. The camera icon on the chart saves a PNG too.",
                                 "SVG / PNG 导出在此不可用：需要 kaleido 软件包（`pip install kaleido`）和 chromium 浏览器。"
                                 "也可以用图表右上角的相机图标保存 PNG。", d=why))
            st.download_button(ui.tr("Chart as HTML (offline)", "图表（离线 HTML）"), _figure_file(fig, "html"),
                               file_name=f"{name}_chart.html", mime="text/html", key=f"w_{key}_chart_html", width="stretch",
                               on_click="ignore", icon=":material/bar_chart:",
                               help=ui.tr("The interactive chart as one offline file.", "交互式图表，单个离线文件。"))


def sidebar_controls(page: str, s=None, slot: str | None = None, step_key: str | None = None, extra: dict | None = None,
                     dot: str | None = None, fig=None, dot_what: str | None = None, fig_what: str | None = None,
                     key: str | None = None) -> str | None:
    """The share box and (given a scenario ``s``) the export box, at the bottom of the sidebar: the
    same place on every page. Call it at the end of the page, when the step and figures are known.
    Returns the link (see ``share_controls``)."""
    with st.sidebar:
        url = share_controls(page, slot=slot, step_key=step_key, extra=extra)
        if s is not None:
            export_controls(s, dot=dot, fig=fig, key=key or f"{page}_export", dot_what=dot_what, fig_what=fig_what)
    return url
