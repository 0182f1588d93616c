"""Target-only tree sampling (SEMANTICS.md §6): p per node, the two thresholds, the coins; the sibling
scan animated as buckets on a 0..1 coin bar, the work buffer (``draft_probs``) filling with rejected
siblings' target mass, the terminal draw from relu(p − buffer), and a Monte Carlo run that is exact
at thresholds 1 and biased below. Widgets only: the maths lives in specviz."""
from __future__ import annotations

import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache  # noqa: E402

from specviz.inputs import edits
from specviz.replay import steps
from specviz.algorithms import distributions as dist
from specviz.replay.engine import scenario_inputs, scenario_key
from specviz.base.errors import SpecvizError
from specviz.base.limits import COIN_FORMAT, COIN_STEP, MAX_COIN, MAX_THRESHOLD, MIN_THRESHOLD, THRESHOLD_STEP
from specviz.render import sampling_charts as sc
from specviz.render import sampling_svg
from specviz.inputs.scenario import scenario_from_json
from specviz.app.ui import common as ui
from specviz.replay import playframes
from specviz.app.ui import heavy, i18n, prob_tables, sampling_page, share_ui
from specviz.base.safety import md_text as md

SLOT = "target_only"
KEY = STEP = "target_only"  # page name and the animation's step key
PRESETS = ["target_only_sampling", "target_only_rejected_sibling", "thresholds_below_1", "semantics_disagree"]
tr = ui.tr
RENDER = sampling_svg


def _fig(name: str, *args, **kwargs):
    return sampling_page.figure(RENDER, name, *args, **kwargs)


s = sampling_page.start(KEY, SLOT, PRESETS, step_version_key="sv_to_step_ver")

st.title(tr("Target-only tree sampling", "Target-only Tree Sampling（仅用 Target 分布的树采样）"))


@bounded_cache()
def _monte_carlo(text: str, backend: str, trials: int, seed: int):
    from specviz.algorithms.backends import get_backend

    sc_ = scenario_from_json(text)
    t = sc_.tree(0)
    inputs = {k: v for k, v in scenario_inputs(sc_).items() if not k.startswith("uniform_samples")}
    inputs["num_speculative_tokens"] = sc_.width
    return dist.target_only_monte_carlo(get_backend(backend).sample_many, inputs, num_trials=trials, seed=seed,
                                        root_children_tokens=[t.tokens[c] for c in t.children(0)],
                                        threshold_single=sc_.threshold_single, threshold_acc=sc_.threshold_acc,
                                        semantics=sc_.semantics)


# Everything that depends on the scenario is one fragment: an edit made in it reruns this function,
# not the page (router, sidebar widgets, CSS). Its sidebar boxes (share, export) are drawn from here
# too (Streamlit redraws a fragment's writes to the sidebar in place), so they follow each edit.
@st.fragment
def scenario_view():
    s = ui.scenario(SLOT)
    sampling_page.require_algorithm(s, KEY, SLOT, STEP, ("target_only",), "target_only_sampling",
                                   ("Load the running example with p", "加载带 p 的教学例子"), "w_to_reset")

    req = s.requests[0]
    vocab = list(s.vocab)
    tree = s.tree(0)
    n = len(tree.parents)
    VER = ui.scenario_version(SLOT)
    p_rows = [list(map(float, r)) for r in (req.target_probs if req.target_probs is not None else s.target_probs(0).tolist())]
    # The p table is rebuilt from the scenario when p changes, not on every scenario version: a coin edit
    # reruns only coin_view below, so VER moves on without this part.
    PV = sampling_page.content_version("to_p", p_rows)
    pending = prob_tables.Pending("sv_to_pending", ("p",))  # refused cells of the p table, held until fixed
    labels = [vocab[t] for t in tree.tokens]
    walk_box = st.container()  # the key picture first (filled once the run is known); editing below it
    # The page's explanation under the key picture (a projector has 720 px: the picture comes first).
    st.caption(tr(
        "The walk scans each level's siblings (first child → next sibling) and adds up their **target** mass: "
        "sibling *j* is accepted when **coin < prob_acc / threshold_acc** (or p ≥ threshold_single). One coin per level, "
        "so the siblings split the 0..1 coin bar into buckets. A rejected sibling's p goes into the work buffer "
        "`draft_probs`; if every sibling fails, the terminal token comes from **relu(p − buffer)**. No q anywhere.",
        "遍历沿 first child → next sibling 扫描每层的兄弟节点，并累加它们的 **Target** 概率质量："
        "当 **coin < prob_acc / threshold_acc**（或 p ≥ threshold_single）时接受第 *j* 个兄弟。每层只用一个随机数，"
        "所以兄弟节点把 0..1 区间切成若干桶。被拒绝的兄弟把其 p 写入工作缓冲区 `draft_probs`；"
        "若全部被拒，终止 token 从 **relu(p − buffer)** 采样。全程不使用 q。"))

    def _update(top: dict | None = None, **changes) -> bool:
        """Replace scenario fields (top-level ``top``, request-0 ``changes``); bad input -> st.error naming the field."""
        return ui.try_update(SLOT, lambda: edits.set_fields(ui.scenario(SLOT), 0, top=top, **changes))

    def _synced(wkey: str, current):
        return ui.synced_key(wkey, current, VER)

    def _store(build):
        """Callback body: store the edited scenario, or the error to show on the next run."""
        try:
            ui.set_scenario(SLOT, build(ui.scenario(SLOT)))
        except SpecvizError as exc:
            ui.defer_error("sv_to_err", exc)

    def _cb_set(path: tuple, wkey: str):
        """on_change: write the widget's value into the scenario (top-level field or requests[0] field[index])."""
        def cb():
            value = st.session_state[wkey]
            if path[0] == "top":
                _store(lambda cur: edits.set_fields(cur, 0, top={path[1]: value}))
            elif len(path) == 2:
                _store(lambda cur: edits.set_fields(cur, 0, **{path[1]: value}))
            else:
                _store(lambda cur: edits.set_slot(cur, path[1], path[2], float(value)))
        return cb

    def _randomise():
        def build(cur):
            coins, final = dist.random_coins(int(st.session_state.get("w_to_seed", 0)), len(cur.requests[0].coins))
            return edits.set_coins(cur, coins, final)
        _store(build)

    def _normalise():
        typed_now = pending.pop()
        if typed_now is None:  # a cell holds no number: kept as typed, named by the run
            return
        src = typed_now["p"] or p_rows
        _store(lambda cur: edits.normalised(cur, src))

    def _use_builder_tree():
        """Take the Tree builder's tree (slot "tree"); keep p rows / coins of nodes that still exist, uniform rows for new ones."""
        _store(lambda cur: edits.adopt_tree(cur, ui.scenario("tree")))

    # Everything that depends on the coins is this inner fragment: a coin edit reruns it alone (the player,
    # the end state, the share link), not the thresholds, the p table or the Monte Carlo (coins are not among
    # their inputs). It writes into containers of the outer fragment (Streamlit keeps such writes in place on
    # its reruns); an edit in the outer fragment reruns both.
    @st.fragment
    def coin_view(coins_box, walk_box, end_box):
        s = ui.scenario(SLOT)
        req = s.requests[0]
        tree = s.tree(0)
        n = len(tree.parents)
        VER = ui.scenario_version(SLOT)
        p_rows = [list(map(float, r)) for r in (req.target_probs if req.target_probs is not None else s.target_probs(0).tolist())]
        labels = [vocab[t] for t in tree.tokens]
        children = [tree.children(i) for i in range(n)]

        def _synced(wkey: str, current):
            return ui.synced_key(wkey, current, VER)

        with coins_box:
            inner = [i for i in range(n) if children[i]]
            st.markdown(tr("**Coins**: u[i] is used for the children of node i (after node i is accepted); u_final for the terminal draw",
                           "**随机数**：u[i] 用于节点 i 被接受后扫描其子节点；u_final 用于终止采样"))
            with st.container(height=330 if len(inner) > 4 else "content", border=False):
                for i in inner:
                    k = _synced(f"w_to_coin{i}", float(req.coins[i]))
                    st.slider(tr("u[{i}] — children of node {i} ({t})", "u[{i}] — 节点 {i}（{t}）的子节点", i=i, t=md(labels[i])), 0.0, MAX_COIN,
                              step=COIN_STEP, key=k, format=COIN_FORMAT, on_change=_cb_set(("req", "coins", i), k))
            k = _synced("w_to_coin_final", float(req.coin_final))
            st.slider("u_final", 0.0, MAX_COIN, step=COIN_STEP, key=k, format=COIN_FORMAT, on_change=_cb_set(("req", "coin_final"), k))
            with st.container(horizontal=True, vertical_alignment="bottom", wrap=False):  # one block, not 3 (issue 31)
                st.number_input(tr("seed", "种子"), 0, 10**6, 0, key="w_to_seed")
                st.button(tr("randomise coins", "随机生成"), key="w_to_rand", on_click=_randomise, width="content", icon=":material/casino:")
            ui.show_deferred_error("sv_to_err")  # a coin edit's refusal (this fragment may rerun alone)

        # ---------------------------------------------------------------------------------------------
        # The walk
        # ---------------------------------------------------------------------------------------------
        run = sampling_page.replay(s, KEY, SLOT, STEP)
        if run is None:
            return

        # Every frame and caption of the player is a pure function of the one replay (specviz.replay.playframes).
        views = playframes.target_only_frames(s, run, ui.lang())
        cur = sampling_page.step_player(views, walk_box, ("The sibling scan, step by step", "逐步查看兄弟节点扫描"),
                                        key=KEY, slot=SLOT, step_key=STEP, version_key="sv_to_step_ver", s=s)
        events = run.trace.events
        typed = steps.typed_events(events)
        res_ev = next((e for e in events if e.kind == "residual"), None)
        term_ev = next((e for e in events if e.kind == "terminal"), None)
        tree_dot = views[cur].dot

        with end_box:
            st.header(tr("2. The end state", "2. 最终结果"))
            sampling_page.end_state_note()
            final = steps.scan_view(typed, n, parents=tree.parents)
            step_fig = step_fig_what = None  # the terminal draw, for the export box
            if res_ev is not None:
                row = final.parent
                buf_args = (vocab, p_rows[row], run.result["draft_probs"].reshape(n, -1)[row])
                buf_kw = dict(dist=res_ev.data["dist"], coin_final=req.coin_final if term_ev else None,
                              chosen=term_ev.data["token"] if term_ev else None,
                              text={"p": tr("p (Target row)", "p（Target 行）"), "buf": tr("work buffer draft_probs", "工作缓冲区 draft_probs"),
                                    "cdf": tr("terminal draw", "终止采样")})
                step_fig = lambda: sc.buffer_figure(*buf_args, **buf_kw)  # noqa: E731  (built only for a chart export)
                step_fig_what = tr("Row {p}: p, the work buffer, relu(p − buffer)", "第 {p} 行：p、工作缓冲区、relu(p − buffer)", p=row)
                st.markdown(f"**{step_fig_what}**")
                ui.chart(_fig("buffer_svg", *buf_args, **buf_kw))

            c = run.commit
            st.success(tr("Output this round: **{o}** — accept_index {ai}, accept_lens = {al}; next root **{nr}**.",
                          "本轮输出：**{o}** — accept_index {ai}，accept_lens = {al}；下一轮 root 为 **{nr}**。",
                          o=md(" ".join(vocab[t] for t in c.output_tokens)), ai=run.result["accept_index"][0].tolist(), al=c.accept_len,
                          nr=md(vocab[c.next_root])))
        ui.raw_tensors(ui.shaped(dict(run.inputs) | dict(run.result)))
        share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=STEP, dot=tree_dot, fig=step_fig,
                                  dot_what=tr("The tree at step {c}", "第 {c} 步的树", c=cur), fig_what=step_fig_what)

    # ---------------------------------------------------------------------------------------------
    # Inputs
    # ---------------------------------------------------------------------------------------------
    edit_box = ui.editing_area(tr("1. Inputs", "1. 输入"))
    with edit_box:
        st.header(tr("1. Inputs", "1. 输入"))
        ui.show_deferred_error("sv_to_err")
        c_thr, c_coins = st.columns([1, 1], gap="large")
        with c_thr:
            st.markdown(tr("**Thresholds** (server args; 1 = exact sampling)", "**阈值**（服务器参数；1 = 精确采样）"))
            k = _synced("w_to_tacc", float(s.threshold_acc))
            st.slider("threshold_acc", MIN_THRESHOLD, MAX_THRESHOLD, step=THRESHOLD_STEP, key=k, on_change=_cb_set(("top", "threshold_acc"), k))
            k = _synced("w_to_tsingle", float(s.threshold_single))
            st.slider("threshold_single", MIN_THRESHOLD, MAX_THRESHOLD, step=THRESHOLD_STEP, key=k, on_change=_cb_set(("top", "threshold_single"), k))
            k = _synced("w_to_sem", s.semantics)
            st.radio(tr("semantics", "语义版本"), ["0.5.23", "earlier"], key=k, horizontal=True, format_func=i18n.semantics_label,
                     on_change=_cb_set(("top", "semantics"), k),
                     help=tr("0.5.23: accept iff p > 0 and (coin < prob_acc/t_acc or p ≥ t_single); earlier releases use <= and no p > 0 guard.",
                             "0.5.23：当 p > 0 且 (coin < prob_acc/t_acc 或 p ≥ t_single) 时接受；更早版本用 <=，且没有 p > 0 保护。"))
            st.button(tr("Use the tree from the Tree builder", "使用“构建验证树”页面的树"), key="w_to_usetree", on_click=_use_builder_tree)

        # The p table: one element (specviz.app.ui.prob_tables: numbers in, one cell edit out), not a heading and an
        # st.data_editor (a pandas frame and its Arrow bytes on every threshold edit; issue 31). A cell edit is stored
        # by its callback before the run that draws it; a refused one stays on screen as typed cells, the field named.
        def _on_cell():
            cur = ui.scenario(SLOT)
            r0 = cur.requests[0]
            rows = [list(map(float, r)) for r in (r0.target_probs if r0.target_probs is not None else cur.target_probs(0).tolist())]
            pending.on_edit("w_to_pq", sampling_page.content_version("to_p", rows), {"p": rows},
                            lambda new: ui.set_scenario(SLOT, edits.set_fields(cur, 0, target_probs=new["p"])))

        held_tables = pending.tables(PV)
        if held_tables is None:  # refused cells of another p: gone with it
            pending.clear()
        held = held_tables is not None
        new_p = held_tables["p"] if held else p_rows
        typed = pending.cells()
        row_labels = [tr("node {i}: after {t}", "节点 {i}：{t} 之后", i=i, t=labels[i]) for i in range(n)]
        prob_tables.show([prob_tables.table(
            "p", tr("**p = target_probs** `[bs, n, V]`: row i is the Target distribution after node i",
                    "**p = target_probs** `[bs, n, V]`：第 i 行是节点 i 之后的 Target 分布"),
            vocab, row_labels, new_p, [(r, c, *text) for _, r, c, *text in typed])],
            key="w_to_pq", ver=PV, on_edit=_on_cell)
        not_number = prob_tables.not_a_number(typed, {"p": "requests[0].target_probs"})
        if not_number is not None:  # "abc" in a cell: say so (the check below would only see NaN), the text kept
            ui.show_error(not_number)
        elif held and _update(target_probs=new_p):  # refused: st.error naming the field, the typed cells kept
            pending.clear()
            ui.rerun_view()
        st.button(tr("Normalise rows (divide each row by its sum)", "归一化（每行除以其和）"), key="w_to_norm", on_click=_normalise)

    end_box = st.container()  # section 2 (the end state), drawn by coin_view
    # Called here, at a place that does not move (a fragment's identity is its position on the page);
    # its own elements (the raw tensors) follow section 2.
    coin_view(c_coins, walk_box, end_box)

    # ---------------------------------------------------------------------------------------------
    # Monte Carlo
    # ---------------------------------------------------------------------------------------------
    st.header(tr("3. Monte Carlo: exact at thresholds 1, biased below", "3. Monte Carlo：阈值为 1 时精确，低于 1 时有偏"))

    def monte_carlo_view():
        """Drawn only while its box is open (``sampling_page.monte_carlo_section``)."""
        m1, m2, _ = st.columns([1, 1, 2])
        trials, mc_seed = sampling_page.monte_carlo_size(m1, m2, s, "to")
        # Keyed without the coins (Monte Carlo draws its own): moving a coin slider keeps the result.
        mc_args = sampling_page.monte_carlo_gate((scenario_key(s, zero_coins=True), ui.backend(), int(trials), int(mc_seed)),
                                                 trials, "to")
        if mc_args is not None:
            with ui.guard():
                mc = heavy.cached("Monte Carlo", _monte_carlo, *mc_args)  # a hit at once; a miss: per-tab budget + slots
                exact = s.threshold_acc >= 1.0 and s.threshold_single >= 1.0
                sampling_page.monte_carlo_results(
                    mc, vocab, exact=exact, p_words=("p (Target, root row)", "p（Target，root 行）"),
                    exact_words=("exact for these thresholds", "此阈值下的精确分布"),
                    metrics=[(tr("exact TV (closed form)", "精确 TV（闭式解）"), f"{dist.total_variation(mc.expected, mc.target):.4f}")],
                    noise_words=("{n} trials on {b}. Sampling noise alone gives TV ≈ {e:.3f}.", "{b} 上 {n} 次试验。仅采样噪声约带来 {e:.3f} 的 TV 距离。"))
                if exact:
                    st.info(tr("Thresholds are 1: the scan is an inverse-CDF draw over the siblings, and the rest of the mass comes from "
                               "relu(p − buffer), so the first token follows p exactly.",
                               "阈值为 1：扫描相当于在兄弟节点上做逆 CDF 采样，其余质量来自 relu(p − buffer)，因此首个 token 精确服从 p。"))
                else:
                    st.warning(tr("threshold_acc = {a:g}, threshold_single = {s:g}: the buckets are stretched, Draft tokens win more often, "
                                  "and the output is biased away from p.",
                                  "threshold_acc = {a:g}，threshold_single = {s:g}：桶被拉长，Draft token 更容易被接受，输出偏离 p。",
                                  a=s.threshold_acc, s=s.threshold_single))

    mc_box, mc_open = sampling_page.monte_carlo_section("to")
    if mc_open:
        with mc_box:
            monte_carlo_view()


# Section 4 is fixed text (only the language changes it, and a language switch reruns the page): drawn by
# the page after the fragment, not by the fragment, so an edit's fragment rerun keeps it in place instead
# of sending its 8 elements again (issue 31).
def not_classic():
    st.header(tr("4. Why this is not classic p/q rejection", "4. 为什么这不是 classic p/q rejection"))
    a, b = st.columns(2, gap="large")
    with a:
        st.subheader(tr("Classic (chain) rejection sampling", "Classic（链式）拒绝采样"))
        st.markdown(tr(
            "- needs **q**, the distribution the Draft sampled from\n- accept x with **min(1, p/q)**: test u·q < p\n"
            "- one coin per slot\n- on rejection draw from **max(p − q, 0)**\n- exact for any valid q",
            "- 需要 **q**：Draft 提出候选时使用的分布\n- 以 **min(1, p/q)** 接受 x：检验 u·q < p\n"
            "- 每个位置一个随机数\n- 拒绝后从 **max(p − q, 0)** 采样\n- 对任何合法的 q 都精确"))
    with b:
        st.subheader(tr("Target-only tree sampling", "Target-only 树采样"))
        st.markdown(tr(
            "- never sees q: `draft_probs` enters as **zeros** and is a work buffer\n"
            "- accept by the **running sum of target mass**: coin < prob_acc / threshold_acc\n"
            "- one coin per level, shared by the siblings\n- on failure draw from **relu(p − buffer)**, buffer = rejected siblings' p\n"
            "- exact only at thresholds 1; the buffer is **not q**",
            "- 从不使用 q：`draft_probs` 以**全零**传入，只是工作缓冲区\n"
            "- 按 **Target mass 的累加和** 接受：coin < prob_acc / threshold_acc\n"
            "- 每层一个随机数，由兄弟节点共享\n- 全部失败时从 **relu(p − buffer)** 采样，buffer = 被拒兄弟的 p\n"
            "- 只有阈值为 1 时精确；buffer **不是 q**"))


scenario_view()
not_classic()
ui.end_page()
