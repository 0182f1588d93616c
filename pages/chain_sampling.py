"""Chain rejection sampling (SEMANTICS.md §7): p/q tables, coins, the test u*q < p per slot, the
residual on rejection, the bonus from p after full acceptance, the article's mass check and a
Monte Carlo run on the chosen backend. Widgets only: the maths lives in specviz."""
from __future__ import annotations

import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache  # noqa: E402

from specviz.inputs import edits
from specviz.replay import wording
from specviz.algorithms import distributions as dist
from specviz.replay.engine import scenario_inputs, scenario_key
from specviz.base.errors import SpecvizError
from specviz.base.limits import COIN_FORMAT, COIN_STEP, MAX_COIN
from specviz.render import sampling_charts as sc
from specviz.render import sampling_svg
from specviz.inputs.scenario import scenario_from_json
from specviz.app.ui import common as ui
from specviz.replay import playframes
from specviz.app.ui import heavy, i18n, markup, prob_tables, sampling_page, share_ui
from specviz.base.safety import md_text as md

SLOT = "chain"
KEY = "chain_sampling"
STEP = "chain"  # the animation's step key
PRESETS = ["pq_example"]
tr = ui.tr
RENDER = sampling_svg


def _fig(name: str, *args, **kwargs):
    return sampling_page.figure(RENDER, name, *args, **kwargs)


s = sampling_page.start(KEY, SLOT, PRESETS, step_version_key="sv_chain_step_ver")

st.title(tr("Chain rejection sampling: u·q < p", "链式拒绝采样（Classic Rejection Sampling）：u·q < p"))


@bounded_cache()
def _monte_carlo(text: str, backend: str, trials: int, seed: int, from_q: bool):
    from specviz.algorithms.backends import get_backend

    sc_ = scenario_from_json(text)
    inputs = {k: v for k, v in scenario_inputs(sc_).items() if not k.startswith("uniform_samples")}
    inputs["num_speculative_tokens"] = sc_.width
    return dist.chain_monte_carlo(get_backend(backend).sample_many, inputs, num_trials=trials, seed=seed,
                                  draft_from_q=from_q, semantics=sc_.semantics)


# Everything that depends on the scenario is one fragment: an edit made in it reruns this function,
# not the page (router, sidebar widgets, CSS). Its sidebar boxes (share, export) are drawn from here
# too (Streamlit redraws a fragment's writes to the sidebar in place), so they follow each edit.
@st.fragment
def scenario_view():
    s = ui.scenario(SLOT)
    sampling_page.require_algorithm(s, KEY, SLOT, STEP, ("chain_rejection",), "pq_example",
                                   ("Load the p/q example", "加载 p/q 示例"), "w_chain_reset")

    def _p_rows(sc_) -> list[list[float]]:
        """p as given, or derived from target_logits (temperature, top-k, top-p) when the scenario gives logits."""
        r = sc_.requests[0]
        return [list(map(float, row)) for row in (r.target_probs if r.target_probs is not None else sc_.target_probs(0).tolist())]

    req = s.requests[0]
    vocab = list(s.vocab)
    N = len(req.chain)
    VER = ui.scenario_version(SLOT)
    # The p/q tables and text boxes are rebuilt from the scenario when p or q change, not on every
    # scenario version: a coin edit reruns only coin_view below, so VER moves on without this part.
    PQ = sampling_page.content_version("chain_pq", _p_rows(s), req.draft_probs)
    walk_box = st.container()  # the key picture first (filled once the run is known); editing below it
    # The page's explanation under the key picture (a projector has 720 px: the picture comes first).
    st.caption(tr(
        "The Draft proposed each token from **q**; the Target gives **p**. Slot *s* is accepted when "
        "**u·q < p** (probability min(1, p/q)); SGLang 0.5.23 also requires **0 < q ≤ 1**, so a proposal with q = 0 is "
        "always rejected. The first rejection stops the chain: the correction token is "
        "drawn from **max(p − q, 0)**, normalised. If every draft is accepted, the **bonus** is drawn from plain p.",
        "Draft 按 **q** 提出每个 token，Target 给出 **p**。当 **u·q < p**（概率 min(1, p/q)）时接受该位置；"
        "SGLang 0.5.23 还要求 **0 < q ≤ 1**，所以 q = 0 的候选总被拒绝。"
        "第一次拒绝即停止：从归一化的 **max(p − q, 0)**（residual）采样修正 token。若全部 Draft 被接受，"
        "**bonus** 直接从 Target 分布 p 采样。"))

    p_rows = _p_rows(s)

    def _update_request(**changes) -> bool:
        """Replace fields of request 0; a bad value shows st.error naming the field, the scenario is kept."""
        return ui.try_update(SLOT, lambda: edits.set_fields(s, 0, **changes))

    def _synced(wkey: str, current):
        return ui.synced_key(wkey, current, VER)

    def _store(build, err_key="sv_chain_err"):
        """Callback body: store the edited scenario, or the error to show on the next run."""
        try:
            ui.set_scenario(SLOT, build(ui.scenario(SLOT)))
        except SpecvizError as exc:
            ui.defer_error(err_key, exc)

    def _on_coin(i: int):
        def cb():
            value = st.session_state["w_chain_coin_final"] if i < 0 else st.session_state[f"w_chain_coin{i}"]
            _store(lambda cur: edits.set_coin(cur, i, float(value)))
        return cb

    def _randomise():
        def build(cur):
            coins, final = dist.random_coins(int(st.session_state.get("w_chain_seed", 0)), len(cur.requests[0].coins))
            return edits.set_coins(cur, coins, final)
        _store(build)


    TEXT_ERR = "sv_chain_text_err"  # the "Apply the text" button's own error, drawn right under the button
    TEXT_OK = "sv_chain_text_ok"

    def _apply_text(ver: int):
        """on_click (a callback, so the click is never lost to a rerun): the typed p and q rows.

        Both rows are applied together or not at all; a refusal is kept for the next run and shown
        under the button that caused it (the typed text stays in the boxes to be fixed)."""
        def build(cur):
            V = len(cur.vocab)
            rows_p = dist.rows_from_text("requests[0].target_probs", st.session_state.get(f"w_chain_ptext::{ver}", ""), V)
            rows_q = dist.rows_from_text("requests[0].draft_probs", st.session_state.get(f"w_chain_qtext::{ver}", ""), V)
            return edits.set_fields(cur, 0, target_probs=rows_p, draft_probs=rows_q)
        before = ui.scenario_version(SLOT)
        _store(build, err_key=TEXT_ERR)
        after = ui.scenario_version(SLOT)
        if after != before:  # the version the note answers: it stays while the page shows that scenario
            st.session_state[TEXT_OK] = after
        else:
            st.session_state.pop(TEXT_OK, None)

    # Structural edits are callbacks (on_change / on_click): the click's one fragment run draws the
    # edited scenario; a value read after the widget and a rerun_view() cost a second run (issue 31).
    def _on_token(sl: int, wkey: str):
        def cb():
            value = st.session_state[wkey]
            _store(lambda cur: edits.set_fields(cur, 0, chain=[*cur.requests[0].chain[:sl], value, *cur.requests[0].chain[sl + 1:]]))
        return cb

    def _add_slot(cur):
        """One more draft slot: it proposes the first token, its q copies the last p row, its own p row is uniform."""
        r, V = cur.requests[0], len(cur.vocab)
        rows = _p_rows(cur)
        uni = [round(1.0 / V, 6)] * V
        return edits.set_fields(cur, 0, chain=list(r.chain) + [cur.vocab[0]], target_probs=rows + [uni],
                                draft_probs=[list(x) for x in r.draft_probs] + [list(rows[-1])], coins=list(r.coins) + [0.5])

    def _drop_slot(cur):
        r = cur.requests[0]
        return edits.set_fields(cur, 0, chain=list(r.chain)[:-1], target_probs=_p_rows(cur)[:-1],
                                draft_probs=[list(x) for x in r.draft_probs][:-1], coins=list(r.coins)[:-1])

    def _set_coin0(value: float):
        def cb():
            _store(lambda cur: edits.set_coin(cur, 0, value))
        return cb

    # Everything that depends on the coins is this inner fragment: a coin edit reruns it alone (the player,
    # the end state, the share link), not the slot boxes, the p/q tables, the mass check or the Monte Carlo
    # (coins are not among their inputs). It writes into containers of the outer fragment (Streamlit keeps
    # such writes in place on its reruns); an edit in the outer fragment reruns both.
    @st.fragment
    def coin_view(coins_box, walk_box, end_box):
        s = ui.scenario(SLOT)
        req = s.requests[0]
        N = len(req.chain)
        VER = ui.scenario_version(SLOT)
        p_rows = _p_rows(s)

        def _synced(wkey: str, current):
            return ui.synced_key(wkey, current, VER)

        with coins_box:
            st.markdown(tr("**Coins** u ∈ [0, {m}] — one per draft slot, plus u_final for the terminal draw",
                           "**随机数** u ∈ [0, {m}]：每个 Draft 位置一个，另有终止采样用的 u_final", m=MAX_COIN))
            for i in range(N - 1):
                k = _synced(f"w_chain_coin{i}", float(req.coins[i]))
                st.slider(tr("u[{i}]  (slot {s})", "u[{i}]  （位置 {s}）", i=i, s=i + 1), 0.0, MAX_COIN, step=COIN_STEP, key=k, on_change=_on_coin(i), format=COIN_FORMAT)
            k = _synced("w_chain_coin_final", float(req.coin_final))
            st.slider("u_final", 0.0, MAX_COIN, step=COIN_STEP, key=k, on_change=_on_coin(-1), format=COIN_FORMAT)
            # Rows of widgets side by side are one horizontal container each, not st.columns: a row of k
            # columns is k + 1 blocks sent and drawn on every coin edit (issue 31: elements per edit).
            with st.container(horizontal=True, vertical_alignment="bottom", wrap=False):
                st.number_input(tr("seed", "种子"), 0, 10**6, 0, key="w_chain_seed")
                st.button(tr("randomise coins", "随机生成"), key="w_chain_rand", on_click=_randomise, width="content", icon=":material/casino:")
            st.caption(tr("Try u[0]:", "试试 u[0]："))
            with st.container(horizontal=True):
                st.button(tr(".4 accept", ".4 接受"), key="w_chain_q1", on_click=_set_coin0(0.4), width="stretch",
                          help=tr(".4 × .6 = .24 < .3", ".4 × .6 = .24 < .3"))
                st.button(tr(".5 edge", ".5 边界"), key="w_chain_q2", on_click=_set_coin0(0.5), width="stretch",
                          help=tr(".5 × .6 = .3 is not < .3: the test is strict", ".5 × .6 = .3 不小于 .3：严格不等式"))
                st.button(tr(".7 reject", ".7 拒绝"), key="w_chain_q3", on_click=_set_coin0(0.7), width="stretch",
                          help=tr(".7 × .6 = .42 ≥ .3", ".7 × .6 = .42 ≥ .3"))
            ui.show_deferred_error("sv_chain_err")

        # ---------------------------------------------------------------------------------------------
        # The run, step by step
        # ---------------------------------------------------------------------------------------------
        run = sampling_page.replay(s, KEY, SLOT, STEP)
        if run is None:
            return

        # Every frame and caption of the player is a pure function of the one replay (specviz.replay.playframes).
        views = playframes.chain_frames(s, run, ui.lang())
        cur = sampling_page.step_player(views, walk_box, ("The Accept, step by step", "逐步执行 Accept"), key=KEY,
                                        slot=SLOT, step_key=STEP, version_key="sv_chain_step_ver", s=s)
        events = run.trace.events
        test_of = {e.node: e.data for e in events if e.kind == "accept_test"}
        res_ev = next((e for e in events if e.kind == "residual"), None)
        term_ev = next((e for e in events if e.kind == "terminal"), None)
        chain_dot = views[cur].dot

        with end_box:
            st.header(tr("2. The end state: every slot at once", "2. 最终结果：所有位置一览"))
            sampling_page.end_state_note()
            step_fig = step_fig_what = None  # the terminal draw, for the export box
            if res_ev is not None and term_ev is not None:
                k = res_ev.node
                full = res_ev.data.get("q") is None
                src = wording.residual_source(res_ev.data.get("source_code"), ui.lang(), fallback=md(res_ev.data["source"]))
                st.markdown(tr("**Terminal draw at row {k}** ({src})", "**第 {k} 行的终止采样**：{src}", k=k, src=src))
                res_args = (vocab, p_rows[k], None if full else req.draft_probs[k])
                res_kw = dict(coin_final=req.coin_final, chosen=term_ev.data["token"], bonus_from_p=full,
                              text={"norm": tr("normalised", "归一化"), "cdf": tr("terminal draw", "终止采样"),
                                    "p": tr("p (target)", "p（Target）"), "q": tr("q (draft)", "q（Draft）")})
                step_fig = lambda: sc.residual_figure(*res_args, **res_kw)  # noqa: E731  (built only for a chart export)
                step_fig_what = tr("The terminal draw at row {k}", "第 {k} 行的终止采样", k=k)
                ui.chart(_fig("residual_svg", *res_args, **res_kw))

            sampling_page.chain_end_table(req, test_of)  # every slot at once, coloured by verdict
            c = run.commit
            st.success(tr("Output this round: **{o}** — accept_index {ai}, accept_lens = {al}; next root **{nr}**.",
                          "本轮输出：**{o}** — accept_index {ai}，accept_lens = {al}；下一轮 root 为 **{nr}**。",
                          o=md(" ".join(vocab[t] for t in c.output_tokens)), ai=run.result["accept_index"][0].tolist(), al=c.accept_len,
                          nr=md(vocab[c.next_root])))
        ui.raw_tensors(ui.shaped({k: v for k, v in run.inputs.items()} | {k: v for k, v in run.result.items()}))
        share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=STEP, dot=chain_dot, fig=step_fig,
                                  dot_what=tr("The chain at step {c}", "第 {c} 步的链", c=cur), fig_what=step_fig_what)

    # ---------------------------------------------------------------------------------------------
    # Inputs
    # ---------------------------------------------------------------------------------------------
    edit_box = ui.editing_area(tr("1. Inputs", "1. 输入"))
    with edit_box:
        st.header(tr("1. Inputs", "1. 输入"))
        col_chain, col_coins = st.columns([3, 2], gap="large")
        with col_chain:
            st.markdown(tr("**Draft chain** (root R first; slot *s* holds draft *s*)", "**Draft 链**（首位是 root R；位置 *s* 是第 *s* 个 Draft）"))
            # Root and slots flow in one wrapping row: one block (4 columns were 5 blocks per 4 slots; issue 31).
            SLOT_W = 110  # px: a select box narrower than this cannot show its token
            with st.container(horizontal=True, wrap=True):
                with st.container(width=SLOT_W):
                    markup.big_cell(tr("root", "根节点"), req.chain[0])
                for sl in range(1, N):
                    k = _synced(f"w_chain_tok{sl}", req.chain[sl])
                    st.selectbox(tr("slot {s}", "位置 {s}", s=sl), vocab, key=k, on_change=_on_token(sl, k), width=SLOT_W)
            with st.container(horizontal=True):
                st.button(tr("+ slot", "+ 位置"), key="w_chain_add", disabled=N >= 8, on_click=_store, args=(_add_slot,))
                st.button(tr("− slot", "− 位置"), key="w_chain_del", disabled=N <= 2, on_click=_store, args=(_drop_slot,))

        # p / q tables: one element (specviz.app.ui.prob_tables: numbers in, one cell edit out), not a heading
        # and an st.data_editor each (a pandas frame and its Arrow bytes per draw; issue 31). A cell edit is
        # stored by its callback before the run that draws it (one run per edit); a refused one (a row left
        # unnormalised, text that is no number) stays on screen as typed cells and the check below names the field.
        pending = prob_tables.Pending("sv_chain_pending", ("p", "q"))

        def _on_cell():
            cur = ui.scenario(SLOT)
            ver = sampling_page.content_version("chain_pq", _p_rows(cur), cur.requests[0].draft_probs)
            pending.on_edit("w_chain_pq", ver, {"p": _p_rows(cur), "q": cur.requests[0].draft_probs},
                            lambda new: ui.set_scenario(SLOT, edits.set_fields(cur, 0, target_probs=new["p"], draft_probs=new["q"])))

        held_tables = pending.tables(PQ)
        if held_tables is None:  # refused cells of other p/q: gone with them
            pending.clear()
        held = held_tables is not None
        new_p, new_q = (held_tables["p"], held_tables["q"]) if held else (p_rows, req.draft_probs)
        typed = pending.cells()
        p_labels = [tr("row {i}: after {t}", "第 {i} 行：{t} 之后", i=i, t=req.chain[i]) for i in range(N)]
        q_labels = [tr("slot {i}: proposed {t}", "位置 {i}：提出 {t}", i=i + 1, t=req.chain[i + 1]) for i in range(N - 1)]
        prob_tables.show([
            prob_tables.table("p", tr("**p = target_probs** `[bs, N, V]` (Target distribution after each row)",
                                      "**p = target_probs** `[bs, N, V]`（每行之后的 Target 分布）"),
                              vocab, p_labels, new_p, [(r, c, *text) for t, r, c, *text in typed if t == "p"]),
            prob_tables.table("q", tr("**q = draft_probs** `[bs, N−1, V]` (the distribution the Draft sampled slot s from)",
                                      "**q = draft_probs** `[bs, N−1, V]`（Draft 提出位置 s 时所用的分布）"),
                              vocab, q_labels, new_q, [(r, c, *text) for t, r, c, *text in typed if t == "q"]),
        ], key="w_chain_pq", ver=PQ, on_edit=_on_cell)

        def _normalise():
            typed_now = pending.pop()
            if typed_now is None:  # a cell holds no number: kept as typed, named by the run
                return
            _store(lambda cur: edits.normalised(cur, typed_now["p"], typed_now["q"]))

        not_number = prob_tables.not_a_number(typed, {"p": "requests[0].target_probs", "q": "requests[0].draft_probs"})
        if not_number is not None:  # "abc" in a cell: say so (the check below would only see NaN), the text kept
            ui.show_error(not_number)
        elif held and _update_request(target_probs=new_p, draft_probs=new_q):  # refused: st.error naming the field
            pending.clear()
            ui.rerun_view()
        def _on_semantics():
            cur = ui.scenario(SLOT)
            ui.set_scenario(SLOT, cur.replace(semantics=st.session_state["w_chain_sem"]))


        row = st.container(horizontal=True)
        row.button(tr("Normalise rows (divide each row by its sum)", "归一化（每行除以其和）"), key="w_chain_norm", on_click=_normalise)
        row.radio(tr("semantics", "语义版本"), ["0.5.23", "earlier"], key=_synced("w_chain_sem", s.semantics), horizontal=True,
                 format_func=i18n.semantics_label, on_change=_on_semantics,
                 help=tr("0.5.23 accepts only when 0 < q ≤ 1 and u·q < p, and zeroes q outside [0, 1] in the residual; earlier releases "
                         "test u·q < p alone, so a proposal with q = 0 and p > 0 is accepted.",
                         "0.5.23 仅在 0 < q ≤ 1 且 u·q < p 时接受，并在 residual 中把 [0, 1] 之外的 q 置 0；更早版本只检验 u·q < p，"
                         "因此 q = 0 且 p > 0 的候选会被接受。"))
        # Its two text boxes and button are drawn only while the box is open (a keyed expander that reruns on
        # toggle): closed, they were 5 of a chain edit's ~75 messages. Closing it drops the typed text and any
        # answer to an earlier click; reopened, the boxes hold the current p and q.
        text_box, text_open = ui.lazy_expander(tr("Edit p and q as text (paste rows: one row per line)", "以文本编辑 p 与 q（每行一个分布）"),
                                               "w_chain_text_open")
        if not text_open:
            st.session_state.pop(TEXT_ERR, None)
            st.session_state.pop(TEXT_OK, None)
        else:
            with text_box:
                drawn = {f"w_chain_ptext::{PQ}": dist.rows_to_text(p_rows), f"w_chain_qtext::{PQ}": dist.rows_to_text(req.draft_probs)}
                with st.container(horizontal=True):
                    for (k, text), label in zip(drawn.items(), ("target_probs (p)", "draft_probs (q)")):
                        st.text_area(label, text, key=k, height=130)
                st.button(tr("Apply the text", "应用文本"), key="w_chain_apply", on_click=_apply_text, args=(PQ,))
                if TEXT_ERR in st.session_state:  # this click's answer, next to the button (never in another column)
                    ui.show_deferred_error(TEXT_ERR)
                    st.caption(tr("Nothing was applied: p and q are unchanged, and your text is kept above to fix.",
                                  "未应用任何修改：p 与 q 保持不变，你输入的文本仍保留在上方，可修改后再试。"))
                # The note answers the click until something changes: another edit (a new scenario version) or new
                # typing in the boxes. Not once only: a rerun of the same scenario (the backend badge's, when its
                # comparison of the new scenario lands) had taken it off the screen within a second or two.
                elif (st.session_state.get(TEXT_OK) == ui.scenario_version(SLOT)
                      and all(st.session_state.get(k, text) == text for k, text in drawn.items())):
                    st.success(tr("Applied: p and q now come from the text.", "已应用：p 与 q 现在来自上面的文本。"),
                               icon=":material/check:")

    end_box = st.container()  # section 2 (the end state), drawn by coin_view
    # Called here, at a place that does not move (its identity is its position on the page: called after
    # the mass check, whose slot box comes and goes with N, an edit of N gave it a new identity and its
    # writes to the sidebar failed); its own elements (the raw tensors) follow section 2.
    coin_view(col_coins, walk_box, end_box)

    # ---------------------------------------------------------------------------------------------
    # The mass check
    # ---------------------------------------------------------------------------------------------
    st.header(tr("3. Why the output is distributed as p", "3. 为什么输出分布恰好是 p"))
    slot = 1
    if N > 2:
        slot = st.selectbox(tr("position", "位置"), list(range(1, N)), key="w_chain_decomp_slot", format_func=lambda j: f"slot {j}")
    with ui.guard():
        accepted, redistributed, total = dist.decomposition(p_rows[slot - 1], req.draft_probs[slot - 1])
        dcol, tcol = st.columns([3, 2], gap="large")
        with dcol:
            ui.chart(_fig("decomposition_svg", vocab, accepted, redistributed, p_rows[slot - 1],
                          text={"acc": tr("accepted: min(p, q)", "接受分支：min(p, q)"),
                                "red": tr("rejected mass, redistributed", "拒绝质量再分配"), "p": "p (Target)"},
                          width=540))  # a narrow column: a narrower drawing keeps the text large
        with tcol:
            fmt = lambda xs: "(" + " ".join(f"{x:.3g}" for x in xs) + ")"  # noqa: E731
            st.markdown(tr(
                "If the Draft draws x ~ q and keeps it with min(1, p/q), token x is emitted by the accept branch with "
                "probability q(x)·min(1, p(x)/q(x)) = **min(p, q)** = {a}. The rejected mass {r:.3g} is re-drawn from the "
                "residual: {d}. Sum: {t} = **p**.",
                "若 Draft 按 q 抽出 x 并以 min(1, p/q) 保留，接受分支给出 x 的概率为 q(x)·min(1, p(x)/q(x)) = **min(p, q)** = {a}。"
                "拒绝质量 {r:.3g} 按 residual 重新分配：{d}。合计：{t} = **p**。",
                a=fmt(accepted), r=1 - float(sum(accepted)), d=fmt(redistributed), t=fmt(total)))
            st.caption(tr("This needs q to be the distribution the Draft really sampled from, over the same vocabulary and context.",
                          "前提：q 必须真是 Draft 提出候选时使用的分布，并与 p 对齐到同一上下文、同一词表。"))

    # ---------------------------------------------------------------------------------------------
    # Monte Carlo
    # ---------------------------------------------------------------------------------------------
    st.header(tr("4. Monte Carlo: many rounds on the chosen backend", "4. Monte Carlo：在所选后端上重复多轮"))

    def monte_carlo_view():
        """Drawn only while its box is open (``sampling_page.monte_carlo_section``)."""
        m1, m2, m3 = st.columns([1, 1, 2])
        trials, mc_seed = sampling_page.monte_carlo_size(m1, m2, s, "chain")
        from_q = m3.toggle(tr("the Draft samples its first token from q (as a real Draft does)", "Draft 按 q 抽取第一个 token（真实 Draft 的做法）"),
                           value=True, key="w_chain_mc_fromq")
        # Keyed without the coins (Monte Carlo draws its own): moving a coin slider keeps the result.
        mc_args = sampling_page.monte_carlo_gate(
            (scenario_key(s, zero_coins=True), ui.backend(), int(trials), int(mc_seed), bool(from_q)), trials, "chain")
        if mc_args is not None:
            with ui.guard():
                mc = heavy.cached("Monte Carlo", _monte_carlo, *mc_args)  # a hit at once; a miss: per-tab budget + slots
                sampling_page.monte_carlo_results(
                    mc, vocab, exact=from_q, p_words=("p (Target, row 0)", "p（Target，第 0 行）"),
                    exact_words=("exact for a fixed draft token", "固定 Draft token 时的精确分布"),
                    metrics=() if from_q else [(tr("TV to the exact conditional", "与精确条件分布的 TV 距离"), f"{mc.tv_to_expected:.4f}")])
                if not from_q:
                    st.info(tr("With the draft token fixed to **{t}**, the output is *not* p: rejection sampling is exact only when the "
                               "proposed token itself was drawn from q.",
                               "若 Draft token 固定为 **{t}**，输出分布*不是* p：只有当候选 token 本身按 q 抽取时，拒绝采样才精确。",
                               t=req.chain[1]))

    mc_box, mc_open = sampling_page.monte_carlo_section("chain")
    if mc_open:
        with mc_box:
            monte_carlo_view()


scenario_view()
ui.end_page()
