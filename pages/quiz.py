"""Quiz: predict accept_index, the outputs, the committed rows or correct_len before the reveal.

The answer is checked by the audit engine (specviz.rooms.audit.check_answer), which explains the
first difference in one sentence.
"""
import json

import pandas as pd
import streamlit as st

from specviz.rooms.audit import check_answer, expected_outputs, quiz_fields, quiz_scenario
from specviz.base.errors import SpecvizError
from specviz.rooms.pitfalls import display
from specviz.render.tree import tree_dot
from specviz.app.ui import common as ui
from specviz.app.ui import share_ui

KEY = "quiz"
SLOT = "quiz"
QUIZ_PRESETS = ["running_example", "sibling_match", "root_mismatch", "full_acceptance", "batch_two_requests",
                "target_only_sampling", "target_only_rejected_sibling", "semantics_disagree", "pq_example", "dspark_chain"]
# A deep link (e.g. a shared /quiz?s=...) can run this page without app.py on its first load:
# keep the wide projector layout either way.
st.set_page_config(layout="wide")
share_ui.load_shared_state()
ui.page_setup(KEY, slot=None)
share_ui.link_arrived(KEY)
s = ui.scenario(SLOT, default="running_example")
ver = ui.scenario_version(SLOT)
lang = ui.lang()

FIELD_TEXT = {
    "accept_index": (ui.tr("accept_index: the global rows of the root and the accepted drafts, -1 padded to width W",
                           "accept_index：root 与被接受 Draft 的全局行号，用 -1 填充到宽度 W")),
    "outputs": ui.tr("the output tokens of this round (accepted drafts + bonus), e.g. A C X",
                     "本轮输出的 token（被接受的 Draft + bonus），例如 A C X"),
    "committed_rows": ui.tr("the verify rows whose KV is kept (global rows), e.g. 0 1 3",
                            "保留 KV 的验证行（全局行号），例如 0 1 3"),
    "correct_len": ui.tr("correct_len: how many drafts are accepted (DSpark)", "correct_len：被接受的 Draft 数（DSpark）"),
}

st.title(ui.tr("Quiz: predict before the reveal", "测验：先预测，再揭晓"))
st.caption(ui.tr("Look at the inputs, type your prediction, press Check. Wrong? The app names the first difference and "
                 "the rule behind it. Reveal shows the full answer.",
                 "观察输入，写下你的预测，点击“检查”。答错时会指出第一个不同之处及其背后的规则。“揭晓”显示完整答案。"))


def new_question(scn):
    ui.set_scenario(SLOT, scn)
    st.session_state["sv_quiz_submitted"] = None
    st.session_state["sv_quiz_reveal"] = False
    ui.set_value("sv_quiz_answer", "")


def pick_preset():
    name = st.session_state.get(f"w_quiz_preset::{ver}::{lang}")
    if name:
        new_question(ui.load_preset(name))


def random_question():
    seed = int(st.session_state.get("sv_quiz_seed", 0)) + 1
    st.session_state["sv_quiz_seed"] = seed
    new_question(quiz_scenario(seed))


q1, q2, q3 = st.columns([2, 1, 2])
ALGO_TEXT = {"greedy": ("greedy tree", "贪心·树"), "target_only": ("target-only sampling", "Target-only 采样"),
             "chain_rejection": ("chain rejection sampling", "链式拒绝采样"), "dspark_greedy": ("DSpark greedy", "DSpark 贪心"),
             "dspark_sampling": ("DSpark sampling", "DSpark 采样")}


def question_label(name, _zh=(lang == "zh")):
    """No spoilers: a number and the algorithm, never the preset's name or title."""
    algo = ui.load_preset(name).algorithm
    return f"{'题目' if _zh else 'Question'} {QUIZ_PRESETS.index(name) + 1} · {ALGO_TEXT[algo][1 if _zh else 0]}"


q1.selectbox(ui.tr("Question", "题目"), QUIZ_PRESETS, index=QUIZ_PRESETS.index(s.name) if s.name in QUIZ_PRESETS else None,
             key=f"w_quiz_preset::{ver}::{lang}", on_change=pick_preset, format_func=question_label,
             placeholder=ui.tr("a random question", "随机题目"))
q2.markdown("&nbsp;")
q2.button(ui.tr("Random question", "随机题目"), key="w_quiz_random", on_click=random_question, width="stretch", icon=":material/casino:")
score = st.session_state.get("sv_quiz_score", [0, 0])
q3.metric(ui.tr("Correct this session", "本次答对"), f"{score[0]} / {score[1]}")

# -- the inputs (no results) ----------------------------------------------------------------------
st.subheader(ui.tr("The inputs", "输入"))
st.markdown(f"`{s.algorithm}` · bs = {len(s.requests)} · n = {s.n} · W = {s.width} · seq_len = "
            + ", ".join(str(r.seq_len) for r in s.requests)
            + (f" · semantics {s.semantics}" if s.semantics != "0.5.23" else ""))
reveal = bool(st.session_state.get("sv_quiz_reveal", False))
exp = expected_outputs(s)
cols = st.columns(min(len(s.requests), 2))
for b in range(len(s.requests)):
    tree = s.tree(b)
    n = s.n
    labels = [s.label(t) for t in tree.tokens]
    r = s.requests[b]
    with cols[b % len(cols)]:
        if len(s.requests) > 1:
            st.markdown(f"**{ui.tr('request', '请求')} {b}** · {ui.tr('rows', '行')} {b * n}..{b * n + n - 1}")
        states = {i: "pending" for i in range(n)}
        bonus = None
        if reveal:
            nodes = [row - b * n for row in exp["committed_rows"][b]]
            states = {i: ("accepted" if i in nodes else "discarded") for i in range(n)}
            bonus = (nodes[-1], s.label(exp["outputs"][b][-1]))
        tips = {i: f"{labels[i]} · {ui.term('row')} {b * n + i}" + (f" · target_predict = {r.target_predict[i]}" if r.target_predict else "")
                for i in range(n)}
        dot = tree_dot(tree.parents, labels, rows=[b * n + i for i in range(n)], states=states, tooltips=tips,
                       bonus=bonus, bonus_label=ui.term("bonus"), row_word=ui.term("row"))
        if not s.is_tree:  # a chain reads left to right
            dot = dot.replace("rankdir=TB", "rankdir=LR", 1)
        ui.graph(dot, width="content")
        if r.target_predict:
            ui.chip_row(ui.tr("target predicts after row", "各行之后目标模型预测"),
                        [ui.chip(f"{b * n + i}→{t}", "compared", title=f"target_predict[{b * n + i}] = {t}")
                         for i, t in enumerate(r.target_predict)])
        if r.target_probs:
            df = pd.DataFrame(r.target_probs, columns=s.vocab,
                              index=[f"p · {ui.term('row')} {b * n + i} ({labels[i]})" for i in range(len(r.target_probs))])
            st.dataframe(df, width="stretch")
        if r.draft_probs:
            df = pd.DataFrame(r.draft_probs, columns=s.vocab, index=[f"q · slot {i + 1}" for i in range(len(r.draft_probs))])
            st.dataframe(df, width="stretch")
        if r.coins:
            ui.chip_row(ui.tr("coins u", "coin u"), [ui.chip(f"{c:g}", "pending", title=f"u[{b}][{k}] = {c}") for k, c in enumerate(r.coins)]
                        + [ui.chip(f"u_final {r.coin_final:g}", "pending")])
        if s.threshold_acc < 1 or s.threshold_single < 1 or s.semantics != "0.5.23":
            st.caption(f"threshold_acc = {s.threshold_acc:g}, threshold_single = {s.threshold_single:g}, semantics = {s.semantics}")

# -- the answer --------------------------------------------------------------------------------------
st.subheader(ui.tr("Your prediction", "你的预测"))
fields = quiz_fields(s)
field = ui.widget(st.radio, ui.tr("What do you predict?", "你要预测什么？"), "sv_quiz_field", fields[0], options=list(fields),
                  horizontal=True, format_func=lambda f: ui.tr(f, "输出 token（outputs）") if f == "outputs" else f)
if field not in fields:
    field = fields[0]
    ui.set_value("sv_quiz_field", field)
st.caption(FIELD_TEXT[field] + (ui.tr(" · several requests: one list per request, e.g. [[0, 1, 3], [5, 6, 9]]",
                                      " · 多个请求时每个请求一个列表，例如 [[0, 1, 3], [5, 6, 9]]") if len(s.requests) > 1 else ""))
a1, a2, a3 = st.columns([3, 1, 1])
answer = ui.widget(a1.text_input, ui.tr("Answer", "答案"), "sv_quiz_answer", "",
                   placeholder=ui.tr("your answer, e.g. a list like [0, 2]", "你的答案，例如 [0, 2] 这样的列表")
                   if field != "outputs" else ui.tr("your answer: tokens separated by spaces", "你的答案：用空格分隔的 token"), label_visibility="collapsed")


def submit():
    ans = st.session_state.get("w_sv_quiz_answer", "")
    st.session_state["sv_quiz_submitted"] = (s.name, field, ans)
    try:
        ok = check_answer(s, field, ans).ok
    except SpecvizError:
        return  # shown below; a malformed answer does not count
    right, tried = st.session_state.get("sv_quiz_score", [0, 0])
    st.session_state["sv_quiz_score"] = [right + int(ok), tried + 1]


def do_reveal():
    st.session_state["sv_quiz_reveal"] = True


a2.button(ui.tr("Check", "检查"), key="w_quiz_check", on_click=submit, type="primary", width="stretch")
a3.button(ui.tr("Reveal", "揭晓"), key="w_quiz_reveal", on_click=do_reveal, width="stretch")

sub = st.session_state.get("sv_quiz_submitted")
if sub and sub[0] == s.name:
    _, f_sub, a_sub = sub
    try:
        rep = check_answer(s, f_sub, a_sub)
    except SpecvizError as exc:
        ui.show_error(exc)
    else:
        if rep.ok:
            st.success(ui.tr("Right: {f} = {a}.", "正确：{f} = {a}。", f=f_sub, a=a_sub), icon=":material/check_circle:")
        else:
            e = rep.first_error
            st.error(ui.tr("Not quite: {w} is {g}, the reference says {x}.", "还不对：{w} 是 {g}，参考答案为 {x}。",
                           w=e.where, g=json.dumps(e.got, ensure_ascii=False), x=json.dumps(e.expected, ensure_ascii=False)))
            st.markdown(f"**{ui.tr('Why', '原因')}:** " + e.rule_in(lang).replace("*", "\\*"))

if reveal:
    st.subheader(ui.tr("The answer", "答案"))
    rows = [{"field": f, ui.tr("value", "值"): display(s, f, exp[f])} for f in ("accept_index", "correct_len", "outputs",
                                                                                "committed_rows", "committed_tokens", "new_seq_lens")
            if f in exp]
    ui.text_table(pd.DataFrame(rows))

# The export box holds the answers (the pytest file's expectations): offered only after the reveal.
share_ui.sidebar_controls(KEY, s if reveal else None, slot=SLOT, key="quiz_export")
ui.end_page()
