"""Guided tour: the article's six sections as a step-by-step walkthrough over the live pages.

Each stop says what to look at, opens the live page with the right preset, and gives "what to
try" prompts; a prompt with a check turns green when the scenario on that page satisfies it
(the check runs the reference through specviz.replay.engine).
"""
from pathlib import Path

import streamlit as st

from specviz.replay.engine import run_scenario
from specviz.inputs.naming import display_name
from specviz.render.tree import tree_dot
from specviz.app.ui import common as ui
from specviz.app.ui import markup, share_ui
from specviz.base.safety import md_text as md

KEY = "tour"
ROOT = Path(__file__).resolve().parents[1]
# A deep link (e.g. a shared /tour?s=...) can run this page without app.py on its first load:
# keep the wide projector layout either way.
st.set_page_config(layout="wide")
share_ui.load_shared_state()
ui.page_setup(KEY, slot=None)
share_ui.link_arrived(KEY)


# -- checks on the live pages' scenarios (inputs in session state -> reference run) ----------------

def _commit(slot, b=0):
    s = ui.scenario(slot)
    return s, run_scenario(s, with_trace=False).commits[b]


def chk_root_miss():
    s, c = _commit("tree")
    return s.algorithm == "greedy" and c.num_correct_drafts == 0


def chk_sibling_d():
    s, c = _commit("tree")
    return s.algorithm == "greedy" and [s.label(t) for t in c.committed_tokens] == ["R", "A", "D"]


def chk_via_b():
    s, c = _commit("tree")
    return s.algorithm == "greedy" and [s.label(t) for t in c.committed_tokens] == ["R", "B"]


def chk_tree_grown():
    s = ui.scenario("tree")
    return s.n > 5


def chk_chain_accept():
    s, c = _commit("chain")
    return s.algorithm == "chain_rejection" and c.num_correct_drafts >= 1


def chk_target_only_sibling():
    s, c = _commit("target_only")
    return s.algorithm == "target_only" and len(c.accept_nodes) > 1 and c.accept_nodes[1] != 1


def chk_dspark_later_match():
    s, c = _commit("dspark")
    if not s.algorithm.startswith("dspark") or not s.requests[0].target_predict:
        return False
    chain, tp = s.requests[0].chain, s.requests[0].target_predict
    k = c.num_correct_drafts
    return any(chain[t + 1] == tp[t] for t in range(k + 1, len(chain) - 1))


def chk_batch_root_miss():
    s = ui.scenario("batch")
    if len(s.requests) < 2:
        return False
    return run_scenario(s, with_trace=False).commits[1].num_correct_drafts == 0


def live_summary(slot) -> str:
    """What the live page's current inputs give right now (reference run), in one line."""
    s = ui.scenario(slot)
    parts = []
    for c in run_scenario(s, with_trace=False).commits:
        outs = " ".join(s.label(t) for t in c.output_tokens)
        if s.algorithm.startswith("dspark"):
            parts.append(f"correct_len {c.num_correct_drafts} → {outs}")
        else:
            parts.append(f"{ui.tr('rows', '行')} {c.accept_rows} → {outs}")
    return md(display_name(s, ui.lang())) + " · " + md("; ".join(parts))


# -- the six stops ------------------------------------------------------------------------------------
# (title, what to look at, [(prompt, check or None)], [(page file, slot, preset, button text)])
STOPS = [
    dict(
        title=("1 · How the target confirms a candidate prefix", "一 · Target 怎样确认候选前缀"),
        look=("Why: a cheap Draft model guesses several tokens, and one expensive Target pass checks them all, so the "
              "number of tokens each Target pass yields (accepted drafts + 1 bonus) is the speed-up; Accept decides it. "
              "One verify pass scores every branch of the draft tree at once, but the request continues along ONE "
              "history. In the running example the rows R, A, C produce the outputs A, C, X: inputs and outputs are "
              "shifted by one position. X, the bonus, comes from row C's prediction and becomes the next root.",
              "为什么：便宜的 Draft 模型先猜几个 token，昂贵的 Target 只前向一次就全部检查，所以每次 Target 前向产生的 "
              "token 数（被接受的草稿 + 1 个 bonus）就是加速比；它由 Accept 决定。"
              "一次 Target Verify 同时给 Draft 树的所有分支打分，但请求只能沿一条历史继续。在贯穿全文的例子里，"
              "输入行 R、A、C 产生输出 A、C、X：输入与输出相差一位。X 是 bonus，来自 C 行的预测，并成为下一轮的 root。"),
        tries=[(("On the Greedy page, make the root's prediction miss both children (e.g. the target predicts X after R). "
                 "What is the output now?",
                 "在贪心接受页面，让 root 的预测与两个子节点都不一致（例如 Target 在 R 之后预测 X）。现在输出是什么？"),
                chk_root_miss)],
        pages=[("pages/overview.py", "tree", "running_example", ("Open the overview", "打开概览")),
               ("pages/greedy.py", "tree", "running_example", ("Open Greedy accept with the running example", "用示例打开贪心接受"))],
    ),
    dict(
        title=("2 · Turning parent links into a walkable tree", "二 · 接受前先把父节点关系变成可遍历结构"),
        look=("The draft's parent_list and selected_index are rebuilt into retrieve_index, retrieve_next_token (first child) "
              "and retrieve_next_sibling (next sibling). Accept walks these links; it never looks at draft scores again.",
              "Draft 的 parent_list 与 selected_index 被重建为 retrieve_index、retrieve_next_token（第一个子节点）和 "
              "retrieve_next_sibling（下一个兄弟节点）。Accept 沿这些链接遍历，不再查看 Draft 的分数。"),
        tries=[(("In the tree builder, add a child under B. Which retrieve_next_token entry changes, and which new row appears?",
                 "在构建验证树页面，给 B 添加一个子节点。哪一个 retrieve_next_token 发生了变化？出现了哪个新行？"),
                chk_tree_grown),
               (("Swap A and B (move a sibling). Why do the node numbers change?",
                 "交换 A 与 B（移动兄弟节点）。为什么节点编号变了？"), None)],
        pages=[("pages/tree_builder.py", "tree", "running_example", ("Open the tree builder", "打开构建验证树"))],
    ),
    dict(
        title=("3 · Greedy accept: row indices and outputs", "三 · Greedy Accept 的行索引与输出"),
        look=("accept_index records the verify INPUT rows that produced this round's outputs: [0, 1, 3], root first, "
              "not the draft rows [1, 3]. predicts[accept_index] gives A, C, X; accept_lens = num_correct_drafts + 1.",
              "accept_index 记录产生本轮输出的 Verify 输入行：[0, 1, 3]，root 在前，而不是只有 Draft 行的 [1, 3]。"
              "predicts[accept_index] 得到 A、C、X；accept_lens = num_correct_drafts + 1。"),
        tries=[(("Make the target predict D after A. accept_index should become [0, 1, 4]: the scan moves to the sibling.",
                 "让 Target 在 A 之后预测 D。accept_index 应变为 [0, 1, 4]：扫描移到了兄弟节点。"), chk_sibling_d),
               (("Make the target predict B after R. B has no children: what are accept_index, accept_lens and the output?",
                 "让 Target 在 R 之后预测 B。B 没有子节点：accept_index、accept_lens 与输出分别是什么？"), chk_via_b)],
        pages=[("pages/greedy.py", "tree", "running_example", ("Open Greedy accept", "打开贪心接受")),
               ("pages/pitfalls.py", None, None, ("See the pitfall: accept_index without the root", "查看常见错误：漏掉 root 行"))],
    ),
    dict(
        title=("4 · Two kinds of sampling accept", "四 · 区分两类 Sampling 接受规则"),
        look=("Chain rejection sampling accepts a draft token with probability min(1, p/q) (test u*q < p) and on rejection "
              "samples from relu(p − q). The target-only tree sampler has no q: it compares the coin with the running sum "
              "of target mass over siblings, and its draft_probs buffer only collects rejected mass.",
              "经典链式拒绝采样以 min(1, p/q) 的概率接受 Draft token（检验 u*q < p），拒绝时从 relu(p − q) 采样。"
              "Target-only 树采样没有 q：它把 coin 与各 sibling 的 Target 累计概率比较，draft_probs 缓冲区只收集被拒绝的质量。"),
        tries=[(("On the chain page, lower u[0] below 0.5 so that A is accepted. Where does the bonus come from now?",
                 "在链式采样页面，把 u[0] 调到 0.5 以下，使 A 被接受。现在 bonus 来自哪里？"), chk_chain_accept),
               (("On the target-only page, pick a coin that rejects A but accepts its sibling B.",
                 "在 Target-only 页面，选一个 coin，使 A 被拒绝、兄弟节点 B 被接受。"), chk_target_only_sibling),
               (("On the target-only page, switch semantics between 0.5.23 and earlier (preset semantics_disagree): why "
                 "do they disagree? (The chain test u·q < p is strict in both releases; only target-only sampling "
                 "changed.)",
                 "在 Target-only 页面（预设 semantics_disagree），在 0.5.23 与早期版本语义之间切换：它们为什么结果不同？"
                 "（链式检验 u·q < p 在两个版本中都是严格小于；只有 target-only 采样改变了。）"), None)],
        pages=[("pages/chain_sampling.py", "chain", "pq_example", ("Open chain rejection sampling", "打开链式拒绝采样")),
               ("pages/target_only.py", "target_only", "target_only_sampling", ("Open target-only tree sampling", "打开 Target-only 树采样"))],
    ),
    dict(
        title=("5 · DSpark chain accept: correct_len", "五 · DSpark 链式接受的 correct_len"),
        look=("DSpark compares each draft with the target's prediction at the previous row; correct_len is the LEADING run "
              "of matches. The bonus is target_predict[correct_len], commit_lens = correct_len + 1, and only the first "
              "commit_lens entries of out_tokens are output.",
              "DSpark 把每个 Draft 与上一行的 Target 预测比较；correct_len 是从头开始连续匹配的长度。bonus = "
              "target_predict[correct_len]，commit_lens = correct_len + 1，out_tokens 只有前 commit_lens 个是输出。"),
        tries=[(("Make a LATER draft match after the first mismatch. Does correct_len change? (It must not.)",
                 "让第一个不匹配之后的某个 Draft 恰好匹配。correct_len 会变吗？（不应该变。）"), chk_dspark_later_match)],
        pages=[("pages/dspark.py", "dspark", "dspark_chain", ("Open the DSpark chain", "打开 DSpark 链"))],
    ),
    dict(
        title=("6 · Handing the result to the output and the cache", "六 · 接受结果怎样交给输出与缓存"),
        look=("One decision, three consumers: predicts[accept_index] gives the new outputs; rows[accept_index] gives the "
              "inputs whose KV is kept (R, A, C at positions 10, 11, 12); the bonus X has no KV yet and becomes the next root. "
              "In a batch, accept_index holds global rows b*n + i, padded with -1: only the first accept_lens slots are valid.",
              "一个决定，三处使用：predicts[accept_index] 得到新输出；rows[accept_index] 得到保留 KV 的输入（R、A、C，位置 10、11、12）；"
              "bonus X 还没有 KV，将成为下一轮的 root。batch 中 accept_index 存全局行号 b*n + i，并以 -1 填充：只有前 accept_lens 个有效。"),
        tries=[(("On the batch page, make request 1's root miss. Its accept_index row becomes [5, -1, -1]: what would a raw "
                 "gather read at the -1 slots?",
                 "在批处理页面，让请求 1 的 root 不匹配。它的 accept_index 变为 [5, -1, -1]：直接 gather 时 -1 位置会读到什么？"),
                chk_batch_root_miss)],
        pages=[("pages/batch_kv.py", "batch", "batch_two_requests", ("Open batch and KV commit", "打开批处理与 KV 提交")),
               ("pages/quiz.py", None, None, ("Test yourself: the quiz", "自测：测验"))],
    ),
]

extra = share_ui.shared_extra(KEY)
if isinstance(extra.get("stop"), int) and st.session_state.get("sv_tour_from_link") != extra["stop"]:
    st.session_state["sv_tour_from_link"] = extra["stop"]
    st.session_state["sv_tour_step"] = extra["stop"]
step = int(ui.persist_key("sv_tour_step", 0))
step = max(0, min(len(STOPS) - 1, step))
SLIDER = f"w_tour_stop::{ui.lang()}"  # option texts change with the language: one widget per language
if st.session_state.get(SLIDER) != step:
    st.session_state[SLIDER] = step
stop = STOPS[step]
lang_i = 1 if ui.lang() == "zh" else 0

st.title(ui.tr("Guided tour", "导览"))
st.caption(ui.tr("The article's six sections, one stop each. Read what to look at, open the live page, try the prompts, "
                 "then come back here (the sidebar lists this tour) and go on.",
                 "文章的六个部分，每部分一站。先读“看什么”，再打开对应页面尝试提示，然后回到这里（侧边栏中的导览）继续下一站。"))


def go(k):
    def cb():
        st.session_state["sv_tour_step"] = k
        st.session_state[SLIDER] = k
    return cb


def on_slider():
    st.session_state["sv_tour_step"] = st.session_state[SLIDER]


nav = st.columns([1, 1, 5])
nav[0].button(ui.tr("Back", "上一站"), icon=":material/arrow_back:", key="w_tour_back", on_click=go(max(0, step - 1)), disabled=step == 0, width="stretch")
nav[1].button(ui.tr("Next", "下一站"), icon=":material/arrow_forward:", key="w_tour_next", on_click=go(min(len(STOPS) - 1, step + 1)),
              disabled=step == len(STOPS) - 1, width="stretch", type="primary")
with nav[2]:
    st.select_slider(ui.tr("Stop", "站点"), options=list(range(len(STOPS))), key=SLIDER, on_change=on_slider,
                     format_func=lambda k: STOPS[k]["title"][lang_i].split("·")[0].strip(), label_visibility="collapsed")

st.header(stop["title"][lang_i])
look_col, fig_col = st.columns([1.4, 1], gap="large")
with look_col:
    st.markdown(f"### {ui.tr('What to look at', '看什么')}")
    markup.fixed_markup(f"<div style='font-size:1.25rem;line-height:1.6'>{stop['look'][lang_i]}</div>")  # fixed prose of STOPS
live_slot = next((slot for _, slot, _, _ in stop["pages"] if slot), None)
if live_slot:
    with fig_col:
        try:
            fig_s = ui.scenario(live_slot)
            commit = run_scenario(fig_s, with_trace=False).commits[0]
            tree = fig_s.tree(0)
            n0 = fig_s.n
            dot = tree_dot(tree.parents, [fig_s.label(t) for t in tree.tokens], rows=list(range(n0)),
                           states={i: ("accepted" if i in commit.accept_nodes else "discarded") for i in range(n0)},
                           bonus=(commit.accept_nodes[-1], fig_s.label(commit.next_root)), bonus_label=ui.term("bonus"),
                           row_word=ui.term("row"))
            if not fig_s.is_tree:
                dot = dot.replace("rankdir=TB", "rankdir=LR", 1)
            st.caption(ui.tr("Live: the inputs on that page now ({name}, request 0)", "实时：该页面当前的输入（{name}，请求 0）",
                             name=md(display_name(fig_s, ui.lang()))))
            ui.graph(dot, width="content")
        except Exception:  # noqa: BLE001  the picture never breaks the tour
            pass

st.markdown(f"### {ui.tr('Open the live page', '打开对应页面')}")
pcols = st.columns(max(1, len(stop["pages"])))
for k, (page, slot, preset_name, text) in enumerate(stop["pages"]):
    if not (ROOT / page).exists():
        pcols[k].button(f"{text[lang_i]} ({ui.tr('page not available yet', '页面暂不可用')})", key=f"w_tour_page::{step}::{k}",
                        disabled=True, width="stretch")
        continue

    def prepare(slot=slot, preset_name=preset_name):
        if slot and preset_name:
            ui.set_scenario(slot, ui.load_preset(preset_name))

    if pcols[k].button(text[lang_i], key=f"w_tour_page::{step}::{k}", on_click=prepare, width="stretch"):
        st.switch_page(page)
    if slot:
        try:
            pcols[k].caption(ui.tr("Live inputs there now: ", "该页面当前输入：") + live_summary(slot))
        except Exception:  # noqa: BLE001  a summary never breaks the tour
            pass

st.markdown(f"### {ui.tr('What to try', '试一试')}")
for k, (prompt, check) in enumerate(stop["tries"]):
    done = None
    if check is not None:
        try:
            done = bool(check())
        except Exception:  # noqa: BLE001  a prompt check never breaks the tour
            done = False
    mark = (markup.icon("done", ui.tr("done", "已完成")) if done else
            markup.icon("todo", ui.tr("not yet", "尚未完成")) if done is False else markup.icon("talk", ui.tr("for discussion", "讨论题")))
    status = (ui.tr(" — done ✔", " —— 已完成 ✔") if done else (ui.tr(" — not yet", " —— 尚未完成") if done is False else ""))
    markup.fixed_markup(f"<div style='font-size:1.2rem;margin:.4em 0'>{mark} {prompt[lang_i]}<span style='color:#555'>{status}</span></div>")

markup.show([markup.Markup("<div style='font-size:.9rem;color:#555'>"), markup.icon("todo", ui.tr("not yet", "尚未完成")), " / ",
             markup.icon("done", ui.tr("done", "已完成")),
             ui.tr("prompts are checked against the live page's current inputs; ", "的提示会根据对应页面当前的输入自动检查；"),
             markup.icon("talk", ui.tr("for discussion", "讨论题")),
             ui.tr("prompts are for discussion.", "的提示用于讨论。"), markup.Markup("</div>")])
st.progress((step + 1) / len(STOPS), text=ui.tr("Stop {k} of {n}", "第 {k} 站，共 {n} 站", k=step + 1, n=len(STOPS)))
share_ui.sidebar_controls(KEY, extra={"stop": step})
ui.end_page()
