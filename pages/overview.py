"""Overview: the speculative decoding loop, the running example live, and where each page goes deeper."""
import streamlit as st

from specviz.replay import captions
from specviz.inputs import edits, naming
from specviz.render.tree import loop_dot, tree_dot
from specviz.app.ui import common as ui
from specviz.app.ui import share_ui
from specviz.base.safety import md_text as md, md_prose

SLOT = "tree"
KEY = "overview"
share_ui.load_shared_state()  # a shared link (?s=...) sets the scenario, language and step before any widget
ui.page_setup(KEY, SLOT)
share_ui.link_arrived(KEY)
s = ui.scenario(SLOT)

st.title(ui.tr("The Accept stage of speculative decoding", "投机解码中的 Accept 阶段"))
st.markdown(ui.tr(
    "A **Draft** model proposes a tree of candidate tokens; the **Target** model verifies every row of the tree in "
    "one pass; **Accept** picks one path. That one decision feeds three consumers: the **output** tokens, the "
    "**KV** rows that are kept, and the root of the **next Draft** round.",
    "**Draft** 模型提出一棵候选 token 树；**Target** 模型一次前向验证树的每一行；**Accept** 选出一条路径。"
    "这个决定同时交给三处：**输出** token、保留的 **KV** 行，以及**下一轮 Draft** 的根。"))

run = ui.run(s)
commit = run.commits[0] if run is not None else None

# -- why: a minute for someone who has never heard of speculative decoding -----------------------
with st.container(border=True):
    st.markdown(ui.tr(
        "**Why bother?** A big model writes one token per forward pass, and each pass is slow (it reads all of "
        "its weights). A **cheap Draft** model guesses the next few tokens; **one expensive Target pass** then "
        "checks all the guesses at once (one row each). **Accept** decides how many guesses survive, so it decides "
        "the speed-up: **tokens per Target pass**. Without a draft that number is 1.",
        "**为什么要这样做？** 大模型每次前向只生成一个 token，而每次前向都很慢（要读取全部权重）。"
        "**便宜的 Draft** 模型先猜接下来的几个 token；**昂贵的 Target 只前向一次**，同时检查所有猜测（每个一行）。"
        "**Accept** 决定有多少猜测保留下来，也就决定了加速比：**每次 Target 前向产生的 token 数**。"
        "没有 Draft 时这个数是 1。"))
    if commit is not None:
        drafted = s.tree(0).n - 1
        n_out = len(commit.output_tokens)
        c1, c2, c3 = st.columns(3)
        c1.metric(ui.tr("Draft guesses (one cheap model)", "Draft 猜测数（便宜模型）"), drafted)
        c2.metric(ui.tr("Target passes this round", "本轮 Target 前向次数"), 1)
        c3.metric(ui.tr("Tokens this round per Target pass", "本轮每次 Target 前向产生的 token"), n_out,
                  delta=ui.tr("+{k} vs. no draft", "比不用 Draft 多 {k}", k=n_out - 1), delta_color="normal")
        st.caption(ui.tr("Live for the example below: {k} accepted drafts + 1 bonus token = {n} tokens from one Target pass.",
                         "下方示例（实时）：{k} 个被接受的草稿 + 1 个 bonus token = 一次 Target 前向得到 {n} 个 token。",
                         k=commit.num_correct_drafts, n=n_out))
outs = " ".join(s.label(t) for t in commit.output_tokens) if commit else "…"
kv = " ".join(s.label(t) for t in commit.committed_tokens) if commit else "…"
nxt = s.label(commit.next_root) if commit else "…"
words = {
    "draft": ui.tr("Draft\nproposes a verify tree", "Draft\n提出验证树"),
    "verify": ui.tr("Target Verify\none pass, every row", "Target Verify\n一次前向，所有行"),
    "accept": ui.tr("Accept\naccept_index = one path", "Accept\naccept_index = 一条路径"),
    "output": ui.tr("Output\n{o}", "输出\n{o}", o=outs),
    "kv": ui.tr("KV kept\nrows {k}", "保留 KV\n行 {k}", k=kv),
    "e_tree": ui.tr("tree + mask", "树 + 掩码"),
    "e_predict": "target_predict",
    "e_output": "predicts[accept_index]",
    "e_kv": "rows[accept_index]",
    "next": ui.tr("next root {x}", "下一轮的根 {x}", x=nxt),
}
ui.graph(loop_dot(words, highlight="accept"), width="stretch")

preset = ui.load_preset("running_example")
running = edits.same_inputs(s, preset)  # derived on every run: is this still the running example?
if running:
    st.subheader(ui.tr("The running example, live", "示例（实时）"))
else:  # another tree: never the running example's name beside it
    st.subheader(ui.tr("The scenario '{n}', live", "场景“{n}”（实时）", n=md(naming.display_name(s, ui.lang()))))
if not running:
    c = st.columns([3, 1])
    c[0].caption(ui.tr("Showing your edited scenario (shared with the tree builder and greedy pages).",
                       "正在显示你编辑过的场景（与构建树、贪心接受页面共享）。"))
    c[1].button(ui.tr("Reset to the running example", "恢复示例"), key="w_reset_running",
                on_click=lambda: ui.set_scenario(SLOT, ui.load_preset("running_example")))
else:
    st.caption(md_prose(s.describe(ui.lang())))
if commit is not None:
    st.caption(captions.outcome_sentence(s, commit, ui.lang(), esc=md))

tree_fig = None
if commit is not None:
    tree = s.tree(0)
    labels = [s.label(t) for t in tree.tokens]
    states = {i: "accepted" for i in commit.accept_nodes}
    states.update({i: "discarded" for i in commit.discarded_nodes})
    tips = {i: f"node {i}: {labels[i]}, row {i}, target_predict = {s.requests[0].target_predict[i]}" for i in range(tree.n)}
    left, right = st.columns([1, 1], gap="large")
    with left:
        tree_fig = tree_dot(tree.parents, labels, states=states, tooltips=tips, row_word=ui.term("row"),
                            bonus=(commit.accept_nodes[-1], s.label(commit.next_root)), bonus_label=ui.term("bonus"))
        ui.graph(tree_fig, width="content")
    with right:
        ui.chip_row("accept_index", [ui.chip(r, "accepted" if r >= 0 else "pending")
                                     for r in run.result["accept_index"].reshape(len(s.requests), -1)[0]])
        ui.chip_row(ui.tr("Output", "输出"), [ui.chip(s.label(t), "bonus" if k == len(commit.output_tokens) - 1 else "accepted",
                                                     title=f"predicts[{commit.accept_rows[k]}]")
                                             for k, t in enumerate(commit.output_tokens)])
        ui.chip_row(ui.tr("KV rows kept", "保留的 KV 行"), [ui.chip(s.label(t), "accepted", title=f"row {r}, position {p}")
                                                          for t, r, p in zip(commit.committed_tokens, commit.accept_rows,
                                                                             commit.committed_positions)])
        ui.chip_row(ui.term("next_root"), [ui.chip(s.label(commit.next_root), "bonus")])
        ui.chip_row(ui.term("discarded"), [ui.chip(labels[i], "discarded") for i in commit.discarded_nodes] or ["—"])
        ui.legend()
        st.markdown(ui.tr(
            "Outputs **{o}** come from input rows **{k}**: each row's prediction is the *next* token "
            "(the one-position shift). The bonus **{x}** was never an input, so it has no KV yet: it is the next root.",
            "输出 **{o}** 来自输入行 **{k}**：每一行的预测是*下一个* token（错开一个位置）。"
            "bonus **{x}** 从未作为输入，所以还没有 KV：它是下一轮的根。", o=md(outs), k=md(kv), x=md(nxt)))
    ui.backend_badge(s)
    ui.raw_tensors(ui.shaped({**run.inputs, **run.result}))

st.subheader(ui.tr("Where each page goes deeper", "各页面深入讲什么"))
LINKS = [
    ("pages/tree_builder.py", ui.tr("Tree builder", "构建验证树"), ":material/account_tree:",
     ui.tr("Draw the verify tree; see retrieve_index / next_token / next_sibling, positions and the tree mask.",
           "绘制验证树；查看 retrieve_index / next_token / next_sibling、positions 与树掩码。")),
    ("pages/greedy.py", ui.tr("Greedy accept", "贪心接受"), ":material/check_circle:",
     ui.tr("Step through the walk; accept_index, predicts and the one-position shift.",
           "逐步观看遍历；accept_index、predicts 与错开一个位置。")),
    (("pages/chain_sampling.py", "pages/chain_rejection.py"), ui.tr("Chain rejection sampling", "链式拒绝采样"), ":material/casino:",
     ui.tr("u·q < p, the residual max(p − q, 0), and why the output follows p.", "u·q < p、残差 max(p − q, 0)，以及为何输出服从 p。")),
    (("pages/target_only.py", "pages/target_only_sampling.py", "pages/tree_sampling.py"), ui.tr("Target-only tree sampling", "仅目标模型的树采样"), ":material/forest:",
     ui.tr("The sibling scan with running sums and the work buffer (not q).", "带累积和与工作缓冲（不是 q）的兄弟扫描。")),
    (("pages/dspark.py", "pages/dspark_chain.py"), ui.tr("DSpark chain", "DSpark 链"), ":material/linear_scale:",
     ui.tr("correct_len, commit_lens = correct_len + 1, the output buffer.", "correct_len、commit_lens = correct_len + 1、输出缓冲。")),
    ("pages/batch_kv.py", ui.tr("Batch and KV commit", "批处理与 KV 提交"), ":material/view_list:",
     ui.tr("Rows b·n+i, -1 padding, KV committed by rows (and the wrong way, by output tokens).",
           "行号 b·n+i、-1 填充、按行提交 KV（以及错误做法：按输出 token 提交）。")),
]
cols = st.columns(2)
k = 0
for paths, label, icon, what in LINKS:
    paths = (paths,) if isinstance(paths, str) else paths
    path = next((p for p in paths if (ui.ROOT / p).exists()), None)
    if path is None:
        continue
    with cols[k % 2]:
        if ui.page_link(path, label, icon=icon):
            st.caption(what)
            k += 1
share_ui.sidebar_controls(KEY, s, slot=SLOT, dot=tree_fig, dot_what=ui.tr("The accepted path in the tree", "树中被接受的路径"))
ui.end_page()
