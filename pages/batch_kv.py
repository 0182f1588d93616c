"""Batch and KV commit: requests flattened into rows b*n+i, accept_index in global rows, KV per request."""
import streamlit as st

from specviz.render.tables import flat_rows_table, kv_wrong_way
from specviz.render.tree import forest_dot
from specviz.base.limits import MAX_SEQ_LEN
from specviz.inputs.scenario import MAX_BATCH
from specviz.app.ui import common as ui
from specviz.inputs import edits
from specviz.app.ui import share_ui

SLOT = "batch"
KEY = "batch_kv"
share_ui.load_shared_state()  # a shared link (?s=...) sets the scenario, language and step before any widget
ui.page_setup(KEY, SLOT)
linked = share_ui.link_arrived(KEY)
if linked is not None:
    ui.set_value("sv_wrong::batch", bool(linked.get("wrong", False)))
s = ui.scenario(SLOT)
ver = ui.scenario_version(SLOT)

st.title(ui.tr("Batch and KV commit", "批处理与 KV 提交"))
st.caption(ui.tr(
    "SGLang flattens a batch request-major: request b's node i is global row b·n + i. accept_index holds global "
    "rows (never local node ids), padded with -1 past each request's accept_lens. The KV that is kept is the KV "
    "of those rows: the root and the accepted drafts, at positions seq_len, seq_len + 1, …",
    "SGLang 按请求优先展开批次：第 b 个请求的节点 i 是全局第 b·n + i 行。accept_index 存的是全局行号"
    "（不是局部节点号），每个请求在 accept_lens 之后用 -1 填充。保留的 KV 就是这些行的 KV："
    "根节点和被接受的草稿，位置为 seq_len、seq_len + 1、……"))

if s.algorithm != "greedy" or not s.is_tree:
    st.warning(ui.tr("This page shows greedy tree accept; the scenario in use is '{a}'.", "本页展示贪心树接受；当前场景是“{a}”。",
                     a=s.algorithm))
    if st.button(ui.tr("Load the two-request batch", "加载两请求批次"), key="w_load_batch"):
        ui.set_scenario(SLOT, ui.load_preset("batch_two_requests"))
        st.rerun()
    share_ui.sidebar_controls(KEY, s, slot=SLOT)
    st.stop()

bs, n = len(s.requests), s.n
trees = [s.tree(b) for b in range(bs)]
labels = [[s.label(t) for t in tr_.tokens] for tr_ in trees]


# -- edits ----------------------------------------------------------------------------------------
def on_add():
    data = s.model_dump(mode="json")
    data["requests"].append(dict(data["requests"][-1]))
    ui.try_update(SLOT, lambda: data)


def on_remove():
    data = s.model_dump(mode="json")
    data["requests"] = data["requests"][:-1]
    ui.try_update(SLOT, lambda: data)


def on_seq(b, key):
    def cb():
        data = s.model_dump(mode="json")
        data["requests"][b]["seq_len"] = int(st.session_state[key])
        ui.try_update(SLOT, lambda: data)
    return cb


with st.expander(ui.tr("Edit the batch", "编辑批次"), expanded=False):
    c = st.columns([1, 1, 3])
    c[0].button(ui.tr("➕ Add a request", "➕ 添加请求"), on_click=on_add, key="w_add_req", disabled=bs >= MAX_BATCH, width="stretch")
    c[1].button(ui.tr("➖ Remove the last", "➖ 删除最后一个"), on_click=on_remove, key="w_rm_req", disabled=bs <= 1, width="stretch")
    cols = st.columns(min(bs, 8))
    for b in range(bs):
        key = f"w_seq::{ver}::{b}"
        cols[b % len(cols)].number_input(ui.tr("seq_len of request {b}", "请求 {b} 的 seq_len", b=b), min_value=0, max_value=MAX_SEQ_LEN,
                                         value=int(s.requests[b].seq_len), step=1, key=key, on_change=on_seq(b, key))
    import pandas as pd

    tp = pd.DataFrame({f"r{b}": list(s.requests[b].target_predict) for b in range(bs)})
    tp.insert(0, "node", list(range(n)))
    edited = st.data_editor(tp, key=f"w_tp_batch::{ver}", hide_index=True, width="stretch", num_rows="fixed",
                            column_config={"node": st.column_config.NumberColumn(disabled=True),
                                           **{f"r{b}": st.column_config.SelectboxColumn(
                                               f"target_predict r{b}", options=s.vocab, required=True) for b in range(bs)}})
    changed = [b for b in range(bs) if list(edited[f"r{b}"]) != list(s.requests[b].target_predict)]
    if changed:
        data = s.model_dump(mode="json")
        for b in changed:
            data["requests"][b]["target_predict"] = list(edited[f"r{b}"])
        if ui.try_update(SLOT, lambda: data):
            st.rerun()
    st.caption(ui.tr("Trees come from the scenario (load one in the sidebar, or draw one in the Tree builder and save it).",
                     "树来自场景（在侧边栏加载，或在“构建验证树”页面绘制后保存）。"))

run = ui.run(s)
if run is None:
    share_ui.sidebar_controls(KEY, s, slot=SLOT)
    st.stop()
ui.backend_badge(s)
W = s.width
ai = run.result["accept_index"].reshape(bs, W)
pred = run.result["predicts"].reshape(-1)

# -- the batch as rows ----------------------------------------------------------------------------
trees_kw = []
for b, (tree, c) in enumerate(zip(trees, run.commits)):
    states = {i: "accepted" for i in c.accept_nodes}
    states.update({i: "discarded" for i in c.discarded_nodes})
    tips = {i: f"request {b}, node {i}: {labels[b][i]}\nglobal row {b * n + i}\ntarget_predict = {s.requests[b].target_predict[i]}"
            for i in range(n)}
    trees_kw.append({"parents": tree.parents, "labels": labels[b], "rows": [b * n + i for i in range(n)], "states": states,
                     "tooltips": tips, "bonus": (c.accept_nodes[-1], s.label(c.next_root)), "bonus_label": ui.term("bonus"),
                     "row_word": ui.term("row"), "cluster": ui.tr("request {b} · seq_len {sl}", "请求 {b} · seq_len {sl}", b=b,
                                                                   sl=c.seq_len)})
forest = forest_dot(trees_kw, rankdir="LR" if n > 16 else "TB")
ui.graph(forest, width="content" if n <= 16 else "stretch")
ui.legend()

left, right = st.columns([1.6, 1], gap="large")
with left:
    st.subheader(ui.tr("All verify rows, flattened (b·n + i)", "所有验证行（展开为 b·n + i）"))
    words = {"row": ui.tr("global row", "全局行"), "request": ui.tr("request", "请求"), "node": ui.term("node"),
             "token": ui.term("token"), "kv": "KV", "pos": ui.tr("position", "位置"), "discarded": ui.term("discarded")}
    table = flat_rows_table(run.commits, trees, labels, [r.target_predict for r in s.requests], pred, words, label_of=s.label)
    states = {}
    for b, c in enumerate(run.commits):
        for i in range(n):
            states[b * n + i] = "accepted" if i in c.accept_nodes else "discarded"
    ui.state_table(table, states)
with right:
    st.subheader("accept_index  [bs, W]")
    for b in range(bs):
        ui.chip_row(ui.tr("request {b}", "请求 {b}", b=b),
                    [ui.chip(int(r), "accepted" if r >= 0 else "pending",
                             title=(f"global row {int(r)} = request {b}, node {int(r) - b * n}" if r >= 0 else "-1: padding"))
                     for r in ai[b]])
    st.markdown(f"`accept_index = {ai.tolist()}`")
    st.subheader(ui.tr("KV per request", "每个请求的 KV"))
    for b, c in enumerate(run.commits):
        ui.chip_row(ui.tr("r{b} committed", "r{b} 提交", b=b),
                    [ui.chip(f"{labels[b][i]}@{p}", "accepted", title=f"global row {r}, position {p}")
                     for i, r, p in zip(c.accept_nodes, c.accept_rows, c.committed_positions)])
        ui.chip_row(ui.tr("r{b} discarded", "r{b} 丢弃", b=b),
                    [ui.chip(f"{labels[b][i]} ({ui.term('row')} {b * n + i})", "discarded") for i in c.discarded_nodes] or ["—"])
    st.markdown("`accept_lens = " + str([c.accept_len for c in run.commits]) + "` · `new_seq_lens = "
                + str([c.new_seq_len for c in run.commits]) + "`")

# -- the wrong way ------------------------------------------------------------------------------
st.subheader(ui.tr("Commit KV by rows, not by output tokens", "按行提交 KV，而不是按输出 token"))
wrong = ui.widget(st.toggle, ui.tr("Show the wrong way: commit KV by the output tokens", "显示错误做法：按输出 token 提交 KV"),
                  "sv_wrong::batch", False)
if wrong:
    words = {"row": ui.term("row"), "missing": ui.tr("no KV exists", "不存在 KV"), "position": ui.tr("position", "位置"),
             "right": ui.tr("right: KV of rows[accept_index]", "正确：rows[accept_index] 的 KV"),
             "wrong": ui.tr("wrong: KV keyed by output token", "错误：按输出 token 取 KV"), "problem": ui.tr("what breaks", "出了什么问题"),
             "root_dropped": ui.tr("root {tok}'s KV at position {pos} is dropped", "根 {tok} 在位置 {pos} 的 KV 被丢掉"),
             "no_kv": ui.tr("{tok} was never fed to the model: its KV is missing", "{tok} 从未送入模型：它的 KV 不存在"),
             "shifted": ui.tr("{tok}'s KV was computed one position later than {pos}", "{tok} 的 KV 是在比 {pos} 晚一个位置上计算的")}
    for b, c in enumerate(run.commits):
        st.markdown(ui.tr("**Request {b}**: outputs {o}; rows kept {k}", "**请求 {b}**：输出 {o}；保留的行 {k}", b=b,
                          o=" ".join(s.label(t) for t in c.output_tokens), k=" ".join(s.label(t) for t in c.committed_tokens)))
        df = kv_wrong_way(c, labels[b], s.label, words)
        ui.text_table(df.style.apply(lambda col: ["color: #D55E00; font-weight: 600" if v != "—" else "" for v in col],
                                subset=[words["problem"]]).hide(axis="index"))
    st.error(ui.tr("Keyed by outputs, every request loses its root's KV and asks for the bonus's KV, which no verify row "
                   "computed. The next round would attend to a cache with a hole and a shifted entry.",
                   "按输出 token 提交时，每个请求都会丢掉根的 KV，并去要 bonus 的 KV——没有任何验证行计算过它。"
                   "下一轮将在一个有空洞且错位的缓存上做注意力。"))
else:
    st.caption(ui.tr("The KV cache keeps rows[accept_index]: the root and the accepted drafts. Turn the toggle on to see "
                     "what goes wrong when the outputs are used instead.",
                     "KV 缓存保留 rows[accept_index]：根节点和被接受的草稿。打开开关，看看改用输出 token 会出什么错。"))

ui.raw_tensors({**ui.shaped(run.inputs), **ui.shaped(run.result),
                "accept_lens": ([c.accept_len for c in run.commits], "[bs]"),
                "new_seq_lens": ([c.new_seq_len for c in run.commits], "[bs]")})
share_ui.sidebar_controls(KEY, s, slot=SLOT, extra={"wrong": True} if wrong else None, dot=forest,
                          dot_what=ui.tr("The batch's trees", "批次中的树"))
ui.end_page()
