"""Server-side step controls (first / back / next / last / play / scrub) and the end-of-page play driver.
Pages with the client-side player (``specviz.app.ui.player``) only pass the start step.
"""
from __future__ import annotations

import time

import streamlit as st

from specviz.app.ui.i18n import tr
from specviz.app.ui.state import persist_key, set_value, widget

# -------------------------------------------------------------------------------------------
# Step controls (the animation)
# -------------------------------------------------------------------------------------------

SPEEDS = (0.5, 1.0, 2.0, 4.0)  # steps per second


def step(key: str) -> int:
    return int(st.session_state.get(f"sv_step::{key}", 0))


def set_step(key: str, value: int) -> None:
    set_value(f"sv_step::{key}", int(value))


def step_controls(key: str, num_frames: int, start: int = 0) -> int:
    """First / back / next / last / play-pause buttons, a speed and a scrub slider.

    ``num_frames`` frames are numbered 0..num_frames-1. Returns the current frame. Call
    ``end_page()`` at the end of the page so that "play" advances.
    """
    mark_last(key, num_frames)
    last = max(0, num_frames - 1)
    skey, pkey = f"sv_step::{key}", f"sv_play::{key}"
    cur = persist_key(skey, start)
    if cur > last:
        set_value(skey, last)
    playing = bool(st.session_state.get(pkey, False))

    def go(v):
        def cb():
            set_value(skey, max(0, min(last, v() if callable(v) else v)))
            st.session_state[pkey] = False
        return cb

    def toggle():
        now = not st.session_state.get(pkey, False)
        if now and step(key) >= last:
            set_value(skey, 0)
        st.session_state[pkey] = now

    cols = st.columns([1, 1, 1, 1, 1.4, 2.2])
    # Material icons (a font Streamlit ships), never glyphs such as ⏮ ⏭ that a classroom PC may lack.
    cols[0].button(tr("first", "第一步"), key=f"w_first::{key}", on_click=go(0), help=tr("first step", "第一步"), width="stretch",
                   icon=":material/first_page:")
    cols[1].button(tr("back", "上一步"), key=f"w_back::{key}", on_click=go(lambda: step(key) - 1), help=tr("back", "上一步"),
                   width="stretch", icon=":material/chevron_left:")
    cols[2].button(tr("next", "下一步"), key=f"w_next::{key}", on_click=go(lambda: step(key) + 1), help=tr("next", "下一步"),
                   width="stretch", icon=":material/chevron_right:")
    cols[3].button(tr("last", "最后一步"), key=f"w_last::{key}", on_click=go(last), help=tr("last step", "最后一步"), width="stretch",
                   icon=":material/last_page:")
    cols[4].button(tr("pause", "暂停") if playing else tr("play", "播放"), key=f"w_play::{key}", on_click=toggle,
                   icon=":material/pause:" if playing else ":material/play_arrow:", width="stretch")
    with cols[5]:
        widget(st.select_slider, tr("speed (steps/s)", "速度（步/秒）"), f"sv_speed::{key}", 1.0, options=list(SPEEDS),
               label_visibility="collapsed", format_func=lambda v: f"{v:g} /s")  # language-neutral options
    if last > 0:
        widget(st.slider, tr("step", "步骤"), skey, start, min_value=0, max_value=last)
    st.session_state.setdefault("sv_playing_keys", set()).add(key)
    return step(key)


def end_page() -> None:
    """Advance any playing animation by one step after a pause, then rerun the page. Schedules
    loading the torch / Triton backends (in the background) for shortly after the first page is drawn."""
    from specviz.app.ui.backend_cache import IDLE_DELAY_S, start_loading_backends

    start_loading_backends(IDLE_DELAY_S)
    for key in list(st.session_state.get("sv_playing_keys", ())):
        if not st.session_state.get(f"sv_play::{key}"):
            continue
        speed = float(st.session_state.get(f"sv_speed::{key}", 1.0))
        time.sleep(1.0 / max(speed, 0.1))
        nxt = step(key) + 1
        last = st.session_state.get(f"sv_last::{key}")
        set_value(f"sv_step::{key}", nxt)
        if last is not None and nxt >= last:
            st.session_state[f"sv_play::{key}"] = False
        st.rerun()


def mark_last(key: str, num_frames: int) -> None:
    """Tell ``end_page`` where the animation ends (``step_controls`` does it for you)."""
    st.session_state[f"sv_last::{key}"] = max(0, num_frames - 1)
