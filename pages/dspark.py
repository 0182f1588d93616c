"""DSpark chain accept (SEMANTICS.md §8): the draft chain against the target, correct_len as the
leading run (a later match is ignored), the bonus, commit_lens = correct_len + 1, new_seq_lens,
the verify-window cap, the fixed-width BuildOutTokens buffer and the KV-inject columns; the
article's EAGLE tree vs DSpark chain alignment. Widgets only: the maths lives in specviz."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from specviz.inputs import edits
from specviz.replay import steps
from specviz.algorithms import distributions as dist
from specviz.base.errors import SpecvizError
from specviz.base.limits import COIN_FORMAT, COIN_STEP, MAX_COIN, MAX_SEQ_LEN
from specviz.render import dspark_charts as dc
from specviz.app.ui import common as ui
from specviz.replay import playframes
from specviz.app.ui import markup, sampling_page, share_ui
from specviz.base.safety import md_text as md

SLOT = "dspark"
KEY = STEP = "dspark"  # page name and the animation's step key
PRESETS = ["dspark_chain", "dspark_sampling"]
tr = ui.tr
RENDER = dc


def _fig(name: str, *args, **kwargs):
    return sampling_page.figure(RENDER, name, *args, **kwargs)


s = sampling_page.start(KEY, SLOT, PRESETS, step_version_key="sv_dspark_step_ver")

st.title(tr("DSpark chain: correct_len", "DSpark 链式接受：correct_len"))

# Everything that depends on the scenario is one fragment: an edit made in it reruns this function,
# not the page (router, sidebar widgets, CSS). Its sidebar boxes (share, export) are drawn from here
# too (Streamlit redraws a fragment's writes to the sidebar in place), so they follow each edit.
@st.fragment
def scenario_view():
    s = ui.scenario(SLOT)
    sampling_page.require_algorithm(s, KEY, SLOT, STEP, ("dspark_greedy", "dspark_sampling"), "dspark_chain",
                                   ("Load the DSpark example", "加载 DSpark 示例"), "w_ds_reset")

    VER = ui.scenario_version(SLOT)
    req = s.requests[0]
    vocab = list(s.vocab)
    T = len(req.chain)
    greedy = s.algorithm == "dspark_greedy"
    walk_box = st.container()  # the key picture first (filled once the run is known); editing below it
    # The page's explanation under the key picture (a projector has 720 px: the picture comes first).
    st.caption(tr(
        "DSpark verifies a **chain**: the anchor (last round's bonus) and γ drafts, T = γ + 1 rows. On a chain a prefix is "
        "fixed by its length, so the Accept result is one number, **correct_len** = the leading run of drafts that match "
        "the Target; **commit_lens = correct_len + 1** rows keep their KV and the same number of tokens are emitted "
        "(accepted drafts + bonus).",
        "DSpark 验证的是一条**链**：anchor（上一轮的 bonus）加 γ 个 Draft，共 T = γ + 1 行。链的前缀只用长度就能唯一确定，"
        "所以 Accept 的结果就是一个数 **correct_len**：与 Target 一致的 Draft 前缀长度；"
        "**commit_lens = correct_len + 1** 行保留 KV，同时输出同样数量的 token（被接受的 Draft + bonus）。"))

    def _synced(wkey: str, current):
        return ui.synced_key(wkey, current, VER)

    def _update(**changes) -> bool:
        return ui.try_update(SLOT, lambda: edits.set_fields(ui.scenario(SLOT), 0, **changes))

    def _cb(field: str, wkey: str, index: int | None = None, cast=None):
        def cb():
            v = st.session_state[wkey]
            v = cast(v) if cast else v
            try:
                ui.set_scenario(SLOT, edits.set_slot(ui.scenario(SLOT), field, index, v))
            except SpecvizError as exc:
                ui.defer_error("sv_ds_err", exc)
        return cb

    def _mode():
        want = st.session_state["w_ds_mode"]
        ui.set_scenario(SLOT, ui.load_preset("dspark_chain" if want == "greedy" else "dspark_sampling"))

    # ---------------------------------------------------------------------------------------------
    # Inputs
    # ---------------------------------------------------------------------------------------------
    edit_box = ui.editing_area(tr("1. Inputs", "1. 输入"))
    with edit_box:
        st.header(tr("1. Inputs", "1. 输入"))
        ui.show_deferred_error("sv_ds_err")
        k = _synced("w_ds_mode", "greedy" if greedy else "sampling")
        st.radio(tr("Accept rule", "接受规则"), ["greedy", "sampling"], key=k, horizontal=True, on_change=_mode,
                 # option texts do not depend on the language (a widget's options stay stable when it switches)
                 format_func=lambda m: "greedy · target_predict" if m == "greedy" else "chain_rejection_sampling · p/q",
                 help=tr("greedy compares each draft with target_predict; sampling reuses the chain rejection sampler (p/q)",
                         "Greedy 把每个 Draft 与 target_predict 比较；Sampling 复用链式拒绝采样（p/q）"))

        c1, c2 = st.columns([3, 1], gap="large")
        with c1:
            if greedy:
                st.markdown(tr("**Draft chain** (anchor first) and, under each row t, the **Target's prediction after row t**",
                               "**Draft 链**（首位为 anchor），每行 t 下方是 **Target 在第 t 行之后的预测**"))
            else:
                st.markdown(tr("**Draft chain** (anchor first); the Target's p and the Draft's q per row are below",
                               "**Draft 链**（首位为 anchor）；每行的 Target p 与 Draft q 见下方"))
            tp_labels = [vocab[t] for t in s.target_predict(0)] if greedy else None
            PER_ROW = 5  # a select box narrower than this cannot show its token
            for t in range(T):
                if t % PER_ROW == 0:
                    cols = st.columns(PER_ROW)
                with cols[t % PER_ROW]:
                    if t == 0:
                        markup.big_cell("t=0 anchor", req.chain[0])
                    else:
                        k = _synced(f"w_ds_draft{t}", req.chain[t])
                        st.selectbox(tr("t={t} draft", "t={t} Draft", t=t), vocab, key=k, on_change=_cb("chain", k, t))
                    if greedy:
                        k = _synced(f"w_ds_tp{t}", tp_labels[t])
                        st.selectbox(tr("target after t={t}", "t={t} 之后的 Target", t=t), vocab, key=k, on_change=_cb("target_predict", k, t))
            row = st.container(horizontal=True)  # one block, not a row of 3 columns (4 blocks; issue 31)
            if greedy:
                if row.button(tr("+ draft", "+ Draft"), key="w_ds_add", disabled=T >= 10):
                    if _update(chain=list(req.chain) + [vocab[0]], target_predict=list(tp_labels) + [vocab[0]], verify_len=None):
                        ui.rerun_view()
                if row.button(tr("− draft", "− Draft"), key="w_ds_del", disabled=T <= 2):
                    if _update(chain=list(req.chain)[:-1], target_predict=list(tp_labels)[:-1], verify_len=None):
                        ui.rerun_view()
            else:
                sp = [list(map(float, r)) for r in (req.target_probs if req.target_probs is not None else s.target_probs(0).tolist())]
                if row.button(tr("+ draft", "+ Draft"), key="w_ds_add", disabled=T >= 8):
                    # The new draft proposes the first token; its q copies the previous last p row, its own p row is uniform.
                    uni = [1.0 / len(vocab)] * len(vocab)
                    if _update(chain=list(req.chain) + [vocab[0]], target_probs=sp + [uni], draft_probs=[list(r) for r in req.draft_probs] + [sp[-1]],
                               coins=list(req.coins) + [0.5], verify_len=None):
                        ui.rerun_view()
                if row.button(tr("− draft", "− Draft"), key="w_ds_del", disabled=T <= 2):
                    if _update(chain=list(req.chain)[:-1], target_probs=sp[:-1], draft_probs=[list(r) for r in req.draft_probs][:-1],
                               coins=list(req.coins)[:-1], verify_len=None):
                        ui.rerun_view()
        with c2:
            k = _synced("w_ds_prefix", int(req.seq_len))
            st.number_input(tr("prefix_lens (tokens already in KV)", "prefix_lens（已在 KV 中的 token 数）"), 0, MAX_SEQ_LEN, key=k,
                            on_change=_cb("seq_len", k, cast=int))
            k = _synced("w_ds_vlen", int(req.verify_len) if req.verify_len is not None else T)
            st.slider(tr("verify_len (window cap; T = no cap)", "verify_len（验证窗口上限；T 表示不裁剪）"), 1, T, key=k,
                      on_change=_cb("verify_len", k, cast=lambda v: None if int(v) >= T else int(v)))

        if not greedy:
            p_rows = [list(map(float, r)) for r in (req.target_probs if req.target_probs is not None else s.target_probs(0).tolist())]
            pc, qc, uc = st.columns([2, 2, 1.3], gap="medium")
            with pc:
                st.markdown("**p = target_probs** `[bs, T, V]`")
                dfp = st.data_editor(pd.DataFrame(p_rows, columns=vocab, index=[f"t={i}: {req.chain[i]}" for i in range(T)]),
                                     key=f"w_ds_p::{VER}", width="stretch")
            with qc:
                st.markdown("**q = draft_probs** `[bs, γ, V]`")
                dfq = st.data_editor(pd.DataFrame([list(map(float, r)) for r in req.draft_probs], columns=vocab,
                                                  index=[f"t={i + 1}: {req.chain[i + 1]}" for i in range(T - 1)]),
                                     key=f"w_ds_q::{VER}", width="stretch")
            with uc:
                for i in range(T - 1):
                    k = _synced(f"w_ds_coin{i}", float(req.coins[i]))
                    st.slider(f"u[{i}]", 0.0, MAX_COIN, step=COIN_STEP, key=k, format=COIN_FORMAT, on_change=_cb("coins", k, i, float))
                k = _synced("w_ds_coin_final", float(req.coin_final))
                st.slider("u_final", 0.0, MAX_COIN, step=COIN_STEP, key=k, format=COIN_FORMAT, on_change=_cb("coin_final", k, cast=float))
            new_p = [[float(v) for v in r] for r in dfp.to_numpy().tolist()]
            new_q = [[float(v) for v in r] for r in dfq.to_numpy().tolist()]
            if new_p != p_rows or new_q != [list(map(float, r)) for r in req.draft_probs]:
                if _update(target_probs=new_p, draft_probs=new_q):
                    ui.rerun_view()
            if st.button(tr("Normalise rows", "归一化"), key="w_ds_norm"):
                if _update(target_probs=dist.normalise_rows(new_p), draft_probs=dist.normalise_rows(new_q)):
                    ui.rerun_view()

    # ---------------------------------------------------------------------------------------------
    # The accept, step by step
    # ---------------------------------------------------------------------------------------------
    s = ui.scenario(SLOT)
    req = s.requests[0]
    T = len(req.chain)
    run = sampling_page.replay(s, KEY, SLOT, STEP)
    if run is None:
        return
    res = run.result
    correct_len = int(res["correct_len"][0])
    raw_len = int(res["raw_correct_len"][0])
    bonus = vocab[int(res["bonus"][0])]
    commit_lens = int(res["commit_lens"][0])
    vlen = int(run.inputs["verify_lens"][0])

    # Every frame and caption of the player is a pure function of the one replay (specviz.replay.playframes).
    views = playframes.dspark_frames(s, run, ui.lang())
    cur = sampling_page.step_player(views, walk_box, ("The Accept, step by step", "逐步执行 Accept"), key=KEY,
                                    slot=SLOT, step_key=STEP, version_key="sv_dspark_step_ver", s=s)
    events = run.trace.events
    matches = steps.dspark_matches(events) if greedy else None  # read from the replay's compare events
    tp_ids = s.target_predict(0) if greedy else None
    step_dot = views[cur].dot
    sampling_page.end_state_note()
    step_fig = None
    if greedy:
        match_args = ((list(req.chain), [vocab[x] for x in tp_ids], matches, correct_len),
                      dict(raw_correct_len=raw_len, verify_len=vlen if vlen < T else None, compared=T - 1, show_result=True,
                           text={"row": tr("verify row (input)", "Verify 输入行"), "target": tr("Target predicts after it", "Target 在其后的预测"),
                                 "draft": tr("next draft", "下一个 Draft"), "match": tr("match?", "匹配？"),
                                 "ignored": tr("ignored: after a mismatch", "分歧之后：忽略"), "capped": tr("beyond verify_len", "超出 verify_len"),
                                 "bonus": ui.term("bonus"), "h_row": tr("row", "行"), "h_anchor": "anchor", "h_draft": tr("draft", "Draft"),
                                 "h_draft_at": tr("draft at row", "Draft 位于行"), "h_true": tr("True", "是"), "h_false": tr("False", "否"),
                                 "title": tr("The match grid", "匹配表")}))
        # The page shows the grid as SVG drawn here; the plotly twin is built only for the sidebar's chart export.
        markup.svg_figure(dc.match_svg(*match_args[0], **match_args[1]), stretch=False, max_height="calc(100vh - 160px)")
        step_fig = lambda: dc.match_figure(*match_args[0], **match_args[1])  # noqa: E731  (built only for a chart export)
        ignored = [t + 1 for t in range(T - 1) if matches[t] and t >= raw_len + 1]
        if ignored:
            st.caption(tr("Draft(s) at row {r} match the target but come after the first mismatch: (✔) ignored — the leading run stops at the first ✘.",
                          "第 {r} 行的 Draft 虽与 Target 一致，但位于第一次分歧之后：(✔) 被忽略——前缀计数在第一个 ✘ 处停止。",
                          r=", ".join(map(str, ignored))))

    st.header(tr("2. Lengths, the out-token buffer and the KV commit", "2. 长度、输出 buffer 与 KV 提交"))
    row = st.container(horizontal=True)  # one block for the five numbers, not a row of 5 columns (6 blocks; issue 31)
    row.metric("correct_len", correct_len, delta=(f"−{raw_len - correct_len} (cap)" if raw_len != correct_len else None), delta_color="off")
    row.metric("bonus", md(bonus))  # a metric value renders markdown: the label stays text
    row.metric("commit_lens", commit_lens, help="correct_len + 1")
    row.metric("new_seq_lens", int(res["new_seq_lens"][0]), help=f"prefix {req.seq_len} + commit_lens {commit_lens}")
    row.metric("cap_trim_lens", int(res["cap_trim_lens"][0]), help=tr("drafts trimmed by the verify window", "被验证窗口裁掉的 Draft 数"))
    if raw_len != correct_len:
        st.warning(tr("The verify window holds only verify_len = {v} rows: the leading run {r} is capped to min({r}, {v} − 1) = {c}, "
                      "and the bonus is re-read at the capped length.",
                      "验证窗口只有 verify_len = {v} 行：前缀长度 {r} 被裁剪为 min({r}, {v} − 1) = {c}，bonus 在裁剪后的位置重新读取。",
                      v=vlen, r=raw_len, c=correct_len))
    out = [vocab[int(x)] if int(x) < len(vocab) and (j < commit_lens or j < T - 1) else str(int(x))
           for j, x in enumerate(res["out_tokens"][0])]
    drafts = list(req.chain[1:])
    # One grid per row: side by side, a half column would scale the grids' text below what a projector shows.
    st.markdown(tr("**BuildOutTokens**: `out [bs, T]` = drafts, then 0; the bonus is scattered into column correct_len. "
                   "Only the first commit_lens entries are output; the rest are stale (grey).",
                   "**BuildOutTokens**：`out [bs, T]` 先放 Draft，再放 0；bonus scatter 到第 correct_len 列。"
                   "只有前 commit_lens 格是有效输出，其余为旧值（灰色）。"))
    markup.svg_figure(dc.out_tokens_svg(drafts, out, correct_len,
                                        text={"before": tr("drafts, then 0", "Draft，末位 0"), "after": tr("after the bonus scatter", "scatter bonus 之后"),
                                              "stale": tr("stale", "旧值"), "valid": tr("output", "输出"), "title": tr("BuildOutTokens: the out-token buffer", "BuildOutTokens：输出 buffer"),
                                              "h_initial": tr("initial", "初始值"),
                                              "h_scattered": tr("bonus scattered at correct_len", "bonus scatter 到 correct_len"),
                                              "h_accepted": tr("accepted draft", "被接受的 Draft"), "h_column": tr("column", "列")}),
                      stretch=False, max_height="calc(100vh - 160px)")
    st.markdown(tr("**KV inject**: verify row c keeps its KV (location prefix + c) iff c < commit_lens; the bonus {b} has no KV yet.",
                   "**KV 注入**：当 c < commit_lens 时第 c 行保留 KV（位置 prefix + c）；bonus {b} 此时还没有 KV。", b=md(bonus)))
    markup.svg_figure(dc.kv_columns_svg(list(req.chain), [int(x) for x in res["kv_columns"][0]],
                                        text={"row": tr("verify row", "Verify 行"), "loc": tr("KV location", "KV 位置"),
                                              "title": tr("KV inject", "KV 注入"), "h_row": tr("row", "行"), "h_column": tr("column", "列"),
                                              "h_kept": tr("kept at position", "保留在位置"),
                                              "h_dropped": tr("location -1: not committed", "位置 -1：不提交")}),
                      stretch=False, max_height="calc(100vh - 160px)")
    st.success(tr("Output this round: **{o}**; next anchor **{b}** at position {p}.", "本轮输出：**{o}**；下一轮 anchor 为 **{b}**，位置 {p}。",
                  o=md(" ".join(out[:commit_lens])), b=md(bonus), p=int(res["new_seq_lens"][0])))

    st.header(tr("3. EAGLE tree vs DSpark chain", "3. EAGLE Tree 与 DSpark Chain 对照"))
    # A fixed table (words only): one escaped HTML table, not a frame through st.table (an Arrow conversion,
    # ~3 ms of CPU on every DSpark edit, issue 31).
    compare = {
        "": [tr("topology", "拓扑"), tr("how the path is found", "如何确定路径"), tr("Accept result", "Accept 结果"),
             tr("tokens emitted", "输出 token 数"), tr("rows whose KV is kept", "保留 KV 的行"), tr("the +1", "+1 的含义")],
        "EAGLE Tree": [tr("tree (topk > 1)", "树（topk > 1）"), tr("Target-guided traversal: first child → next sibling", "Target 引导的遍历：first child → next sibling"),
                       "accept_index [bs, W]", "accept_lens = num_correct_drafts + 1", tr("rows in accept_index", "accept_index 中的行"),
                       tr("one terminal Target token (bonus)", "一个末尾 Target token（bonus）")],
        "DSpark Chain": [tr("linear chain", "线性链"), tr("prefix verification: the leading run", "前缀验证：连续匹配的前缀"),
                         "correct_len [bs]", "commit_lens = correct_len + 1", tr("columns 0 .. commit_lens − 1", "第 0 .. commit_lens − 1 列"),
                         tr("one terminal Target token (bonus)", "一个末尾 Target token（bonus）")],
    }
    ui.state_table([dict(zip(compare, row)) for row in zip(*compare.values())], {})
    st.caption(tr("A tree must say which rows were chosen (accept_index); on a chain the length alone recovers them.",
                  "树需要告诉后续模块具体选中了哪些行（accept_index）；链只需长度即可还原这些行。"))

    ui.raw_tensors(ui.shaped(dict(run.inputs) | dict(run.result)))
    share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=STEP, dot=step_dot, fig=step_fig,
                              dot_what=tr("The chain at step {c}", "第 {c} 步的链", c=cur),
                              fig_what=tr("The match chart (end state)", "匹配图（最终结果）"))


scenario_view()
ui.end_page()
