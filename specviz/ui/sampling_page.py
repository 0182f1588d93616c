"""The opening every sampling page shares (chain rejection, target-only, DSpark).

    from specviz.ui import markup, sampling_page
    s = sampling_page.start(KEY, SLOT, PRESETS, step_version_key="sv_chain_step_ver")
    fig = sampling_page.figure(sc, "residual_figure", ...)
"""
from __future__ import annotations

import importlib
from types import ModuleType

import streamlit as st

from specviz.ui import common as ui
from specviz.ui import markup, share_ui

# The key numbers (correct_len, TV distance, ...) must read from the back of a room.
METRIC_CSS = ("<style>[data-testid='stMetricValue'], [data-testid='stMetricValue'] * {font-size: 2.4rem !important; "
              "font-weight: 700 !important; line-height: 1.2 !important;}</style>")


@st.cache_resource(show_spinner=False, max_entries=768)
def _cached_figure(module: str, name: str, *args, **kwargs):
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def figure(render: ModuleType, name: str, *args, **kwargs):
    """A renderer's plotly figure, built once per distinct input and shared (never mutated after
    building): building a figure costs tens of ms, which a rerun with unchanged inputs should not pay."""
    return _cached_figure(render.__name__, name, *args, **kwargs)


def start(key: str, slot: str, presets: list, step_version_key: str):
    """Layout, shared link, sidebar, scenario I/O; returns the page's scenario."""
    # Wide even when opened by a deep link (Streamlit then first runs this file without app.py's router).
    st.set_page_config(layout="wide")
    share_ui.load_shared_state()  # a shared link (?s=...) sets the scenario, language and step before any widget
    ui.page_setup(key, slot=None)
    if share_ui.link_arrived(key) is not None:  # keep the link's step (new inputs otherwise jump to the last step)
        st.session_state[step_version_key] = ui.scenario_version(slot)
    markup.fixed_markup(METRIC_CSS)
    ui.scenario_io(slot, presets=presets)
    return ui.scenario(slot)


def require_algorithm(s, key: str, slot: str, step_key: str, algorithms: tuple, preset: str,
                      button: tuple, button_key: str) -> None:
    """Stop the page with an error (and a button that loads ``preset``) unless s.algorithm fits."""
    if s.algorithm in algorithms:
        return
    need = " or ".join(algorithms)
    need_zh = " 或 ".join(algorithms)
    st.error(ui.tr("The scenario in this page's slot uses algorithm **{a}**; this page needs **{n}**.",
                   "本页的场景使用算法 **{a}**，本页需要 **{nz}**。", a=s.algorithm, n=need, nz=need_zh))
    if st.button(ui.tr(*button), key=button_key):
        ui.set_scenario(slot, ui.load_preset(preset))
        st.rerun()
    share_ui.sidebar_controls(key, s, slot=slot, step_key=step_key)
    st.stop()


# -- the step player's frames (every step goes to the browser at once) ------------------------------

def array_rows(arrays: dict, seen, vocab: list, compact: bool = False) -> list:
    """accept_index and predicts after the events ``seen``, as the player's chip rows.

    ``compact``: list only the predicts rows written so far (a big tree's 64 chips would bury them)."""
    from specviz.ui import player

    ai = arrays["accept_index"].reshape(-1).tolist()
    pr = arrays["predicts"].reshape(-1).tolist()
    last = {(name, i) for e in seen[-1:] for (name, i, _) in e.writes}
    rows = [player.Row("accept_index", [(v, "current" if ("accept_index", j) in last else ("accepted" if v >= 0 else "pending"),
                                         f"accept_index[0][{j}] = {v}") for j, v in enumerate(ai)])]
    written = {i for e in seen for (name, i, _) in e.writes if name == "predicts"}

    def word(v):
        return vocab[v] if 0 <= v < len(vocab) else str(v)

    if compact:
        rows.append(player.Row(ui.tr("predicts (rows written)", "predicts（已写入的行）"),
                               [(f"{j}→{word(pr[j])}", "current" if ("predicts", j) in last else "accepted", f"predicts[{j}] = {pr[j]}")
                                for j in sorted(written)] or [("·", "pending", ui.tr("nothing written yet", "尚未写入"))]))
    else:
        rows.append(player.Row("predicts", [(word(v), "current" if ("predicts", j) in last else "accepted", f"predicts[{j}] = {v} ({word(v)})")
                                            if j in written else ("·", "pending", f"predicts[{j}]: not written (init {v})")
                                            for j, v in enumerate(pr)]))
    return rows


def dist_chips(vocab: list, values, chosen: int | None = None, fmt: str = "{:.3g}", skip_zero: bool = False) -> list:
    """One chip per token: ``A .25`` (the chosen token marked as the bonus); ``skip_zero``: only tokens with mass."""
    out = [(f"{t} {fmt.format(float(v))}", "bonus" if chosen == i else ("pending" if float(v) <= 0 else "compared"),
            f"{t}: {float(v):.4g}") for i, (t, v) in enumerate(zip(vocab, values)) if not skip_zero or float(v) > 0 or chosen == i]
    return out or ["0"]


def terminal_draw_rows(label: str, vocab: list, values, chosen: int | None, coin: float, skip_zero: bool = False) -> list:
    """The terminal draw as two player rows: the normalised distribution (chosen token marked) and
    u_final -> the token, once drawn. ``values``: the unnormalised terminal distribution."""
    from specviz.ui import player

    values = [float(x) for x in values]
    total = sum(values)
    hint = ui.tr("the inverse-CDF draw picks the first token whose cumulative mass exceeds u_final",
                 "逆 CDF 采样：选出累计质量首次超过 u_final 的 token")
    return [player.Row(label, dist_chips(vocab, [v / total if total > 0 else 0.0 for v in values], chosen, skip_zero=skip_zero)),
            player.Row("u_final", [(f"{coin:.3f}", "compared" if chosen is None else "bonus", hint)]
                       + ([f"→ {vocab[chosen]}"] if chosen is not None else []))]


def end_state_note() -> None:
    """Under the player: what follows is the end state, whatever step the player shows."""
    st.caption(ui.tr("Below: the end state, after the walk's last step (the player above steps in your browser; "
                     "the panels below do not follow it).",
                     "下面是最终结果，即最后一步之后的状态（上面的播放器在浏览器中单步；下面的面板不随之变化）。"))
