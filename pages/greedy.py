"""Greedy accept: set the target's prediction at each node, then step through the walk.

The animation replays the numpy reference's trace (specviz.base.trace / specviz.replay.frames); the final
tables come from the chosen backend's result (engine.run_scenario).
"""
import streamlit as st

from specviz.replay import captions
from specviz.inputs import edits
from specviz.replay.frames import replay
from specviz.render.tables import path_states, shift_records
from specviz.app.ui import common as ui
from specviz.app.ui import player
from specviz.app.ui import share_ui
from specviz.base.safety import md_text as md

SLOT = "tree"
KEY = "greedy"
share_ui.load_shared_state()  # a shared link (?s=...) sets the scenario, language and step before any widget
ui.page_setup(KEY, SLOT)
linked = share_ui.link_arrived(KEY)
if linked is not None and isinstance(linked.get("req"), int):
    ui.set_value("sv_req::tree", linked["req"])
st.title(ui.tr("Greedy accept", "贪心接受"))
st.caption(ui.tr(
    "From the root, compare each child's token with target_predict at the last accepted row; on a match "
    "accept it and go down, on a miss move to the next sibling. The accepted rows keep their KV; predicts at "
    "those rows are the output (shifted by one position); the last one is the bonus, the next root.",
    "从根开始，把每个子节点的 token 与上一个被接受行的 target_predict 比较：一致就接受并向下走，"
    "不一致就移到下一个兄弟节点。被接受的行保留 KV；这些行的 predicts 就是输出（错开一个位置），"
    "最后一个是 bonus，也是下一轮的根。"))

# Everything that depends on the scenario is one fragment: an edit made in it (a target cell, a
# quick pick, the request) reruns this function, not the page (router, sidebar widgets, CSS). Its sidebar
# boxes (share, export) are drawn from here too, so they follow each edit.
@st.fragment
def scenario_view():
    s = ui.scenario(SLOT)
    ver = ui.scenario_version(SLOT)
    if s.algorithm != "greedy":
        st.warning(ui.tr("This page runs greedy accept; the scenario in use is '{a}'. Load a greedy preset from the sidebar.",
                         "本页运行贪心接受；当前场景是“{a}”。请在侧边栏加载一个贪心预设。", a=s.algorithm))
        if st.button(ui.tr("Load the running example", "加载示例"), key="w_load_running"):
            ui.set_scenario(SLOT, ui.load_preset("running_example"))
            ui.rerun_view()
        share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=KEY)
        return

    b = 0
    if len(s.requests) > 1:
        b = min(ui.widget(st.selectbox, ui.tr("Request", "请求"), "sv_req::tree", 0, options=list(range(len(s.requests)))),
                len(s.requests) - 1)
    tree = s.tree(b)
    n = tree.n
    labels = [s.label(t) for t in tree.tokens]
    tp_labels = list(s.requests[b].target_predict)

    walk_box = st.container()  # the key picture first (filled once the run is known); editing below it
    ui.backend_badge(s)
    W = s.width
    deepest = max(tree.depths()) + 1
    st.caption(ui.tr("num_speculative_tokens W = {w}: accept_index has W slots per request, the root plus at most W − 1 "
                     "accepted drafts. {why}",
                     "num_speculative_tokens W = {w}：每个请求的 accept_index 有 W 个位置，即 root 加上最多 W − 1 个被接受的 Draft。{why}",
                     w=W, why=ui.tr("Here W = the tree's deepest path + 1 = {d}, so every path of the tree can be accepted.",
                                    "这里 W = 树的最深路径 + 1 = {d}，所以树中的每条路径都可以被接受。", d=deepest)
                     if W >= deepest else ""))
    if W < deepest:
        st.warning(ui.tr("num_speculative_tokens = {w} is less than the deepest path + 1 = {d}: the walk stops after {k} drafts "
                         "even where the tree goes deeper (the depth limit).",
                         "num_speculative_tokens = {w} 小于最深路径 + 1 = {d}：即使树更深，遍历也会在 {k} 个 Draft 后停止（深度上限）。",
                         w=W, d=deepest, k=W - 1))

    # -- target predictions -------------------------------------------------------------------------
    edit_box = ui.editing_area(ui.tr("Target prediction at each node", "每个节点处目标模型的预测"))
    with edit_box:
        st.subheader(ui.tr("Target prediction at each node", "每个节点处目标模型的预测"))


        # Callbacks read the scenario as it is now, never this run's `s` / `tp_labels`: a click that
        # interrupts a rerun runs a callback registered by an earlier run, one edit behind, which would
        # overwrite that edit (a lost click; benchmarks/README.md, "No lost click").
        def set_tp(kind):
            def cb():
                cur = ui.scenario(SLOT)
                new = edits.root_mismatch(cur, b) if kind == "root" else edits.agree_along(cur, kind, b)
                ui.try_update(SLOT, lambda: edits.set_target_predict(cur, new, b))
                ui.set_step(KEY, 0)
            return cb


        def on_tp(i, key):
            def cb():
                cur = ui.scenario(SLOT)
                new = list(cur.requests[b].target_predict)
                new[i] = st.session_state[key]
                ui.try_update(SLOT, lambda: edits.set_target_predict(cur, new, b))
            return cb


        def tp_key(i):
            """A stable key per cell (a key that changed with every edit dropped a change made to another
            cell during the rerun: its widget was gone), refilled from the scenario when it was replaced."""
            return ui.synced_key(f"w_tp::{b}::{i}", tp_labels[i], ver)


        q = st.container(horizontal=True)  # one block for the quick picks, not a row of 3 columns (4 blocks; issue 31)
        first_path = edits.branch_text(s, "first", b)
        last_path = edits.branch_text(s, "last", b)
        q.button(ui.tr("Target agrees along {p}", "目标模型沿 {p} 一致", p=md(first_path)), key="w_q_first",
                 on_click=set_tp("first"), width="stretch")
        if last_path != first_path:
            q.button(ui.tr("Target agrees along {p}", "目标模型沿 {p} 一致", p=md(last_path)), key="w_q_last",
                     on_click=set_tp("last"), width="stretch")
        q.button(ui.tr("Root mismatch", "根处不一致"), key="w_q_root", on_click=set_tp("root"), width="stretch")

        if n <= 16:
            per_row = 8 if n > 5 else n
            for start in range(0, n, per_row):
                cols = st.columns(per_row)
                for i in range(start, min(n, start + per_row)):
                    key = tp_key(i)
                    cols[i - start].selectbox(f"Target({md(labels[i])}) · {ui.term('row')} {b * n + i}", s.vocab,
                                              key=key, on_change=on_tp(i, key),
                                              help=ui.tr("target_predict[{r}]: the target's greedy token after row {r}",
                                                         "target_predict[{r}]：目标模型在第 {r} 行之后的贪心 token", r=b * n + i))
        else:
            import pandas as pd

            df = pd.DataFrame({"node": list(range(n)), "token": labels, "target_predict": tp_labels})
            edited = st.data_editor(df, key=f"w_tp_table::{ver}::{b}", hide_index=True, width="stretch", num_rows="fixed", height=300,
                                    column_config={"node": st.column_config.NumberColumn(disabled=True),
                                                   "token": st.column_config.TextColumn(disabled=True),
                                                   "target_predict": st.column_config.SelectboxColumn(options=s.vocab, required=True)})
            if list(edited["target_predict"]) != tp_labels:
                if ui.try_update(SLOT, lambda: edits.set_target_predict(s, list(edited["target_predict"]), b)):
                    ui.rerun_view()

    run = ui.run(s)
    if run is None:
        share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=KEY)
        return

    # -- the walk, step by step (in the browser: every frame is sent at once) ---------------------------
    # Every frame and caption is a pure function of the one replay (specviz.replay.playframes).
    all_events = run.trace.events
    events = [e for e in all_events if e.request == b]
    global_idx = [0] + [k + 1 for k, e in enumerate(all_events) if e.request == b]
    frames = replay(run.trace)
    step = min(ui.step(KEY), len(events))
    ui.mark_last(KEY, len(events) + 1)
    views = ui.greedy_frames(s, ui.lang(), b)  # playframes.greedy_frames(s, run, ...), cached with the run

    with walk_box:
        st.subheader(ui.tr("The walk", "遍历过程"))
        player.show(views, key=KEY, start=step, content_key=ui.greedy_frames_key(s, ui.lang(), b),
                    links=player.step_links(KEY, SLOT, KEY, len(views), extra={"req": b} if b else None))
        ui.legend()
    dot = views[step].dot
    frame = frames[global_idx[step]]

    # -- after the walk -------------------------------------------------------------------------------
    commit = run.commits[b]
    st.subheader(ui.tr("After the walk: one decision, three consumers", "遍历之后：一个决定，三处使用"))
    st.caption(ui.tr("The end state, after the walk's last step: which rows keep KV, the outputs and the next root.",
                     "这是遍历最后一步之后的最终结果：哪些行保留 KV、输出以及下一轮的根。"))
    words = {"row": ui.tr("verify row", "验证行"), "input": ui.tr("input", "输入"),
             "output": ui.tr("prediction = output", "预测 = 输出"), "kv": ui.tr("KV this round", "本轮 KV"),
             "pos": ui.tr("position", "位置"), "discarded": ui.term("discarded")}
    positions = [commit.seq_len + d for d in tree.depths()]
    table = shift_records(n, labels, [b * n + i for i in range(n)], run.result["predicts"].reshape(-1), commit.accept_nodes, positions,
                        words, label_of=s.label)
    t_col, g_col2 = st.columns([1.1, 1], gap="large")
    with t_col:
        ui.state_table(table, path_states(n, commit.accept_nodes))
        st.caption(captions.shift_sentence(s, commit, ui.lang(), esc=md))
    with g_col2:
        ai_final = [int(x) for x in run.result["accept_index"].reshape(-1, W)[b]]
        outs = commit.output_tokens
        ui.chip_rows([
            ("accept_index", [ui.chip(r, "accepted" if r >= 0 else "pending", title=f"slot {j}") for j, r in enumerate(ai_final)]),
            ("predicts[accept_index] →",
             [ui.chip(s.label(t), "bonus" if k == len(outs) - 1 else "accepted", title=f"predicts[{commit.accept_rows[k]}] = {t}")
              for k, t in enumerate(outs)]),
            (ui.tr("rows[accept_index] →", "rows[accept_index] →"),
             [ui.chip(s.label(t), "accepted", title=f"candidates row {commit.accept_rows[k]} = {t}")
              for k, t in enumerate(commit.committed_tokens)]),
            (ui.tr("output tokens", "输出 token"), [ui.chip(s.label(t), "bonus" if k == len(outs) - 1 else "accepted")
                                                  for k, t in enumerate(outs)]),
            (ui.tr("KV kept for", "保留 KV 的"), [ui.chip(f"{s.label(t)}@{p}", "accepted", title=f"position {p}")
                                               for t, p in zip(commit.committed_tokens, commit.committed_positions)]),
            (ui.term("next_root"), [ui.chip(s.label(commit.next_root), "bonus",
                                            title=ui.tr("no KV yet: it is the next round's root", "还没有 KV：它是下一轮的根"))]),
            (ui.tr("discarded", "被丢弃"), [ui.chip(f"{labels[i]} ({ui.term('row')} {b * n + i})", "discarded")
                                          for i in commit.discarded_nodes] or ["—"]),
        ])
        if commit.pad_slots:
            st.warning(ui.tr("accept_index slots {slots} hold -1 (padding). A raw gather predicts[accept_index] would read "
                             "predicts[-1] there ({raw}): never a token. SGLang uses only the first accept_lens entries.",
                             "accept_index 的第 {slots} 个位置是 -1（填充）。直接 gather predicts[accept_index] 会在那里读到 "
                             "predicts[-1]（{raw}）：那不是 token。SGLang 只使用前 accept_lens 个。",
                             slots=commit.pad_slots, raw=commit.raw_gather))
        st.markdown(f"`num_correct_drafts = {commit.num_correct_drafts}` · `accept_lens = {commit.accept_len}` · "
                    f"`new_seq_len = {commit.seq_len} + {commit.accept_len} = {commit.new_seq_len}`")

    arrays = {k: v for k, v in run.inputs.items()}
    ui.raw_tensors({**ui.shaped(arrays),
                    **{f"{k} (step {step})": (v, ui.SGLANG_SHAPES.get(k, "")) for k, v in frame.arrays.items()},
                    **{f"{k} (result, {ui.backend_label(run.backend)})": (v, ui.SGLANG_SHAPES.get(k, "")) for k, v in run.result.items()}})
    share_ui.sidebar_controls(KEY, s, slot=SLOT, step_key=KEY, extra={"req": b} if b else None, dot=dot,
                              dot_what=ui.tr("The tree at step {k}", "第 {k} 步的树", k=step))


scenario_view()
ui.end_page()
