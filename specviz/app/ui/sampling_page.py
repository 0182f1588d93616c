"""The opening every sampling page shares (chain rejection, target-only, DSpark).

    from specviz.app.ui import markup, sampling_page
    s = sampling_page.start(KEY, SLOT, PRESETS, step_version_key="sv_chain_step_ver")
    fig = sampling_page.figure(sc, "residual_figure", ...)
"""
from __future__ import annotations

import importlib
from types import ModuleType

import streamlit as st

from specviz.replay import wording
from specviz.base.safety import md_text as md
from specviz.app.ui import common as ui
from specviz.app.ui import markup, player, share_ui
from specviz.app.ui.bounded_cache import bounded_cache

# The key numbers (correct_len, TV distance, ...) must read from the back of a room.
METRIC_CSS = ("<style>[data-testid='stMetricValue'], [data-testid='stMetricValue'] * {font-size: 2.4rem !important; "
              "font-weight: 700 !important; line-height: 1.2 !important;}</style>")


# In the byte budget of every result cache (ui/bounded_cache.py), no longer an st.cache_resource of 768
# entries beside it (one 1024-token residual figure is ~0.5 MB: up to ~400 MB outside any budget; issue 35).
@bounded_cache(share=0.25, copies=False)
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

def replay(s, key: str, slot: str, step_key: str):
    """The scenario's replay (``ui.run``), its warnings (worded from the trace, in the page's language)
    and the backend badge drawn; None when it could not run: the sidebar's share controls are drawn
    instead and the page's fragment ends there."""
    run = ui.run(s)
    if run is None:
        share_ui.sidebar_controls(key, s, slot=slot, step_key=step_key)
        return None
    for w in wording.run_warnings(run, ui.lang(), esc=md):
        st.warning(w)
    ui.backend_badge(s)
    return run


def step_player(views: list, box, title: tuple, *, key: str, slot: str, step_key: str, version_key: str, s) -> int:
    """The step player drawn into ``box`` under ``title`` (en, zh), with the legend. New inputs (a new
    scenario version, kept under ``version_key``) open at their outcome, the last frame; returns the frame shown.
    ``s``: the scenario ``views`` were made from (their key, ``frames_key``)."""
    last = len(views) - 1
    version = ui.scenario_version(slot)
    if st.session_state.get(version_key) != version:
        st.session_state[version_key] = version
        ui.set_step(step_key, last)
    cur = min(ui.step(step_key), last)
    ui.mark_last(step_key, len(views))
    with box:
        st.subheader(ui.tr(*title))
        player.show(views, key=step_key, start=cur, links=player.step_links(key, slot, step_key, len(views)),
                    content_key=frames_key(key, s))
        ui.legend()
    return cur


def frames_key(page: str, s) -> tuple:
    """A sampling page's player frames key (``ui.frames_key``): a rerun that did not change the scenario,
    backend or language (the player stopping on a step, the mass check's position, the Monte Carlo's
    controls) reuses the packed frames instead of laying out, serialising and compressing them again (issue 31)."""
    return ui.frames_key(("sampling", page), s, ui.lang())


def array_rows(arrays: dict, seen, vocab: list, compact: bool = False) -> list:
    """accept_index and predicts after the events ``seen`` (``playframes.array_rows`` in the page's language)."""
    from specviz.replay import playframes

    return playframes.array_rows(arrays, seen, vocab, ui.lang(), compact=compact)


def dist_chips(vocab: list, values, chosen: int | None = None, fmt: str = "{:.3g}", skip_zero: bool = False) -> list:
    """One chip per token (``playframes.dist_chips``)."""
    from specviz.replay import playframes

    return playframes.dist_chips(vocab, values, chosen, fmt, skip_zero)


def terminal_draw_rows(label: str, vocab: list, values, chosen: int | None, coin: float, skip_zero: bool = False) -> list:
    """The terminal draw as two player rows (``playframes.terminal_draw_rows`` in the page's language)."""
    from specviz.replay import playframes

    return playframes.terminal_draw_rows(label, vocab, values, chosen, coin, ui.lang(), skip_zero=skip_zero)


def end_state_note() -> None:
    """Under the player: what follows is the end state, whatever step the player shows."""
    st.caption(ui.tr("Below: the end state, after the walk's last step (the player above steps in your browser; "
                     "the panels below do not follow it).",
                     "下面是最终结果，即最后一步之后的状态（上面的播放器在浏览器中单步；下面的面板不随之变化）。"))


# -- the Monte Carlo section's controls (chain and target-only) ------------------------------------

def monte_carlo_size(col_n, col_seed, s, prefix: str) -> tuple[int, int]:
    """The trials-N and seed widgets (keys ``w_{prefix}_mc_n::<slow>``, ``w_{prefix}_mc_seed``). Triton
    under the CPU interpreter draws ~30 trials a second: it is offered small N."""
    from specviz.app.ui import heavy

    slow = ui.interpreted(ui.backend())
    choices = [50, 100, 200, 500] if slow else [1000, 4000, 10000, 40000]
    trials = col_n.select_slider(ui.tr("trials N", "试验次数 N"), choices, value=choices[1], key=f"w_{prefix}_mc_n::{slow}")
    trials = heavy.cap_trials(trials, s.n, s.vocab_size)  # at most MAX_TRIAL_CELLS cells per click
    seed = col_seed.number_input(ui.tr("seed", "种子"), 0, 10**6, 1, key=f"w_{prefix}_mc_seed")
    return trials, seed


def monte_carlo_gate(mc_args: tuple, trials: int, prefix: str) -> tuple | None:
    """``mc_args``, or None (with a "Run N trials" button) while an interpreted backend has not been
    asked to run these arguments: there the run waits for the click."""
    ran = f"sv_{prefix}_mc_ran"
    if not ui.interpreted(ui.backend()) or st.session_state.get(ran) == mc_args:
        return mc_args
    st.info(ui.tr("{b} runs the kernels one program at a time (about 30 trials per second here): press the button to run.",
                  "{b} 逐个程序解释执行内核（此处约每秒 30 次试验）：请按按钮运行。", b=ui.backend_label(ui.backend())))
    if st.button(ui.tr("Run {n} trials", "运行 {n} 次试验", n=trials), key=f"w_{prefix}_mc_go"):
        st.session_state[ran] = mc_args
        st.rerun()
    return None


def monte_carlo_section(prefix: str):
    """The Monte Carlo's box (key ``w_{prefix}_mc_open``): ``(box, open)``. Closed by default: nothing is
    computed while it is closed (it was a third of a chain edit's server CPU, issue 31), and the caption
    under it says so (no stale figure). One click opens it and runs the trials; open, it stays open, and
    an edit that cannot change the result (a coin: not in the key) is a cache hit."""
    box, is_open = ui.lazy_expander(ui.tr("Run the Monte Carlo and show its histogram", "运行 Monte Carlo 并显示直方图"),
                                    f"w_{prefix}_mc_open", icon=":material/casino:")
    if not is_open:
        st.caption(ui.tr("Not computed yet: open the box above to run it on {b} with the current inputs "
                         "(while it stays open, it follows every later edit).",
                         "尚未计算：展开上面的框，即在 {b} 上按当前输入运行（保持展开时，之后的每次修改都会重新计算）。",
                         b=ui.backend_label(ui.backend())))
    return box, is_open


_NOISE_WORDS = ("{n} trials on {b}. An exact sampler still shows TV ≈ {e:.3f} from sampling noise alone.",
                "{b} 上 {n} 次试验。即使采样精确，仅采样噪声也会带来约 {e:.3f} 的 TV 距离。")


def monte_carlo_results(mc, vocab: list, *, exact: bool, p_words: tuple, exact_words: tuple, metrics=(),
                        noise_words: tuple = _NOISE_WORDS) -> None:
    """The Monte Carlo's histogram beside its numbers (chain and target-only): the first emitted token's
    counts against p and, unless ``exact``, against the exact distribution; then the TV distance to p, the
    page's own ``metrics`` ((label, value) pairs in the page's language) and a caption of the trials, the
    backend and the noise floor (``noise_words`` with {n}, {b}, {e}). ``p_words`` and ``exact_words`` name
    the chart's p and exact series. Words are (en, zh) pairs."""
    from specviz.algorithms import distributions as dist
    from specviz.render import sampling_svg

    hc, mcol = st.columns([3, 1], gap="large")
    with hc:
        ui.chart(figure(sampling_svg, "monte_carlo_svg", vocab, mc.empirical, mc.target,
                        expected=None if exact else mc.expected, counts=mc.counts,
                        text={"emp": ui.tr("Monte Carlo (first emitted token)", "Monte Carlo（首个输出 token）"),
                              "trials": ui.tr("trials", "次试验"), "p": ui.tr(*p_words), "exp": ui.tr(*exact_words)},
                        width=660))
    with mcol:
        st.metric(ui.tr("TV distance to p", "与 p 的 TV 距离"), f"{mc.tv_to_target:.4f}")
        for label, value in metrics:
            st.metric(label, value)
        st.caption(ui.tr(*noise_words, n=mc.num_trials, b=ui.backend_label(ui.backend()),
                         e=dist.expected_tv_noise(mc.expected, mc.num_trials)))


def content_version(name: str, *content) -> int:
    """A number that moves on only when ``content`` changes (kept in ``sv_cv::<name>``): the key suffix of
    widgets rebuilt from that content alone. ``ui.scenario_version`` moves on with every edit, also those
    that rerun only an inner fragment; a widget keyed by it would be rebuilt (and a value typed into it
    lost) on the next run of the part that draws it."""
    import hashlib

    digest = hashlib.blake2b(repr(content).encode(), digest_size=8).hexdigest()
    key = f"sv_cv::{name}"
    seen, n = st.session_state.get(key, (None, 0))
    if seen != digest:
        n += 1
        st.session_state[key] = (digest, n)
    return n


def chain_end_table(req, test_of: dict) -> None:
    """The chain's end state, one row per draft slot (draft, p(x), q(x), accept probability, u, u·q,
    verdict), as one escaped HTML table whose rows are coloured by verdict (``ui.state_table``).

    ``test_of``: slot -> the accept test's data (the run's ``accept_test`` events). It was a pandas
    frame through ``st.dataframe``: an Arrow conversion on every chain edit (7.5% of the chain page's
    fragment, issue 31). u·q and p are printed apart (``captions.apart``): never equal-looking when they differ."""
    from specviz.replay.captions import apart

    def num(x) -> str:
        return "" if x is None else f"{float(x):.4g}"

    slot, verdict, prob = ui.tr("slot", "位置"), ui.tr("verdict", "结果"), ui.tr("accept probability", "接受概率")
    rows, states = [], {}
    for j in range(1, len(req.chain)):
        d = test_of.get(j)
        if d is None:
            rows.append({slot: str(j), "draft": req.chain[j], "p(x)": "", "q(x)": "", prob: "", "u": num(req.coins[j - 1]),
                         "u·q": "", verdict: ui.tr("not reached", "未到达")})
            states[j - 1] = "discarded"
            continue
        uq, p = apart(float(d["u_times_q"]), float(d["p"]), 4, "g")
        rows.append({slot: str(j), "draft": req.chain[j], "p(x)": p, "q(x)": num(d["q"]), prob: num(d["accept_prob"]),
                     "u": num(d["coin"]), "u·q": uq,
                     verdict: ("✔ " + ui.term("accepted")) if d["accepted"] else ("✘ " + ui.term("rejected"))})
        states[j - 1] = "accepted" if d["accepted"] else "rejected"
    ui.state_table(rows, states)


def edited_rows(rows, key: str, columns: list) -> list[list[float]]:
    """``rows`` (one list of numbers a row) with the cell edits a data editor keyed ``key`` holds in its state
    (``edited_rows``: {row: {column: value}}); a cleared cell reads NaN. For a table's on_change callback,
    which stores a valid edit before the run that draws it."""
    out = [list(map(float, r)) for r in rows]
    for r, cells in ((st.session_state.get(key) or {}).get("edited_rows") or {}).items():
        for col, v in cells.items():
            if col in columns and 0 <= int(r) < len(out):
                out[int(r)][columns.index(col)] = float("nan") if v is None else float(v)
    return out
