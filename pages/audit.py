"""Audit: paste the arrays your implementation (or a real SGLang run) produced for these inputs;
the reference recomputes them and names the first wrong value, with the rule it breaks.

The same engine as ``python -m specviz audit FILE`` (specviz.rooms.audit).
"""
import json

import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache  # noqa: E402

from specviz.inputs import naming
from specviz.rooms.audit import audit, auditable_fields, expected_outputs, parse_claimed_text, row_outputs
from specviz.base.errors import SpecvizError
from specviz.rooms.pitfalls import display
from specviz.render.tables import highlight_rows, shift_table
from specviz.render.tree import tree_dot
from specviz.inputs.scenario import scenario_from_json
from specviz.app.ui import common as ui
from specviz.app.ui import heavy, share_ui
from specviz.base.safety import md_prose, md_text

KEY = "audit"


def md(text: str) -> str:
    """Plain text inside markdown: b*n + i must not turn into italics, and a token label in a
    rule must not become a link, an image or a tag (safety.md_prose)."""
    return md_prose(text).replace("*", "\\*")

SLOT = "audit"
TEXT = "sv_audit_text"
# A deep link (e.g. a shared /audit?s=...) can run this page without app.py on its first load:
# keep the wide projector layout either way.
st.set_page_config(layout="wide")
share_ui.load_shared_state()
ui.page_setup(KEY, SLOT)
share_ui.link_arrived(KEY)
extra = share_ui.shared_extra(KEY)
if "text" in extra and st.session_state.get("sv_audit_text_from_link") != extra["text"]:
    st.session_state["sv_audit_text_from_link"] = extra["text"]
    ui.set_value(TEXT, str(extra["text"]))
s = ui.scenario(SLOT, default="running_example")
ver = ui.scenario_version(SLOT)

st.title(ui.tr("Audit your Accept outputs", "审计你的 Accept 输出"))
st.caption(ui.tr("Set the inputs (a preset, or paste a scenario JSON), paste the arrays your implementation or a real "
                 "SGLang run produced for them (JSON, Python lists or a torch tensor print), then read the verdict: the first "
                 "wrong value is named with the rule it breaks, and highlighted in the tree and the shift table.",
                 "设置输入（预设，或粘贴场景 JSON），粘贴你的实现或真实 SGLang 运行针对这些输入得到的数组"
                 "（JSON、Python 列表或 torch 张量的打印结果均可），再查看结论：第一个错误值会被指出并说明违反的规则，"
                 "同时在树和错位表中高亮。"))


@bounded_cache()
def _audit(scenario_json: str, text: str, lang: str):
    sc = scenario_from_json(scenario_json)
    claimed = parse_claimed_text(text)
    rep = audit(sc, claimed)
    findings = [dict(field=f.field, where=f.where, expected=f.expected, got=f.got, rule=f.rule_in(lang), request=f.request,
                     node=f.shown_node, row=f.claimed_row if f.claimed_row is not None else f.row,
                     sentence=f.sentence(lang)) for f in rep.findings]
    return rep.ok, rep.checked, findings, rep.notes


@bounded_cache()
def _expected_text(scenario_json: str) -> str:
    sc = scenario_from_json(scenario_json)
    exp = expected_outputs(sc)
    return "\n".join(f"{k} = {display(sc, k, v) if k in ('outputs', 'committed_tokens', 'bonus', 'accept_tokens', 'out_tokens', 'predicts') else json.dumps(v)}"
                     for k, v in exp.items())


@bounded_cache()
def _run(scenario_json: str):
    from specviz.replay.engine import run_scenario

    return run_scenario(scenario_from_json(scenario_json), "numpy", with_trace=False)


# -- 1. inputs ------------------------------------------------------------------------------------
c1, c2 = st.columns([1, 2], gap="large")
with c1:
    st.subheader(ui.tr("1 · Inputs", "1 · 输入"))
    names = ui.preset_names()

    def pick_preset():
        choice = st.session_state.get(f"w_audit_preset::{ver}")
        if choice:
            ui.set_scenario(SLOT, ui.load_preset(choice))

    edited = naming.is_edited(s)  # an edited preset is not that preset: no preset shows as chosen
    st.selectbox(ui.tr("Preset", "预设"), names, index=names.index(s.name) if s.name in names and not edited else None,
                 key=f"w_audit_preset::{ver}", on_change=pick_preset,
                 placeholder=(ui.tr("edited: {n} (pick a preset to reload it)", "已修改：{n}（选择预设可重新加载）", n=s.name)
                              if edited else ui.tr("choose a preset", "选择预设")))
    st.markdown(f"`{s.algorithm}` · bs = {len(s.requests)} · n = {s.n} · W = {s.width}")
    if s.describe(ui.lang()):
        st.caption(md_prose(s.describe(ui.lang())))
    with st.expander(ui.tr("Edit the inputs as JSON", "以 JSON 编辑输入"), expanded=False):
        jkey = f"w_audit_json::{ver}"
        st.text_area(ui.tr("Scenario JSON", "场景 JSON"), s.to_json(), key=jkey, height=260)

        def apply_json():
            ui.try_update(SLOT, lambda: scenario_from_json(st.session_state[jkey]))

        st.button(ui.tr("Apply", "应用"), key="w_audit_apply", on_click=apply_json)
        err = None
        try:
            if st.session_state.get(jkey) and st.session_state[jkey] != s.to_json():
                scenario_from_json(st.session_state[jkey])
        except SpecvizError as exc:
            err = exc
        if err is not None:
            ui.show_error(err)

# -- 2. claimed outputs ---------------------------------------------------------------------------
fields = auditable_fields(s)
with c2:
    st.subheader(ui.tr("2 · Paste the outputs to check", "2 · 粘贴要检查的输出"))
    st.caption(ui.tr("One field per line, `name = value`; any subset of: ", "每行一个字段 `name = value`；可任选其中几个：")
               + ", ".join(f"`{f}`" for f in fields))

    def load_example(kind):
        def cb():
            exp = expected_outputs(s)
            if kind == "correct":
                keep = [f for f in ("accept_index", "predicts", "accept_lens", "correct_len", "commit_lens", "outputs") if f in exp]
                text = "\n".join(f"{f} = {json.dumps(exp[f])}" for f in keep)
            else:
                bad = dict(exp)
                if "accept_index" in bad:
                    rows = [[r for r in req[1:] if r >= 0] for req in bad["accept_index"]]
                    text = "accept_index = tensor(" + json.dumps([r + [-1] * (len(req) - len(r)) for r, req in zip(rows, bad["accept_index"])]) + \
                        ", device='cuda:0', dtype=torch.int32)\naccept_lens = " + json.dumps(bad.get("accept_lens", []))
                else:
                    text = "correct_len = " + json.dumps([k + 1 for k in bad["correct_len"]])
            ui.set_value(TEXT, text)
        return cb

    b1, b2, b3 = st.columns(3)
    b1.button(ui.tr("✓ Correct example", "✓ 正确示例"), key="w_audit_ex_ok", on_click=load_example("correct"), width="stretch")
    b2.button(ui.tr("✗ Buggy example", "✗ 错误示例"), key="w_audit_ex_bad", on_click=load_example("bad"), width="stretch")
    b3.button(ui.tr("Clear", "清空"), key="w_audit_clear", on_click=lambda: ui.set_value(TEXT, ""), width="stretch")
    text = ui.widget(st.text_area, ui.tr("Your outputs", "你的输出"), TEXT, "", height=170,
                     placeholder="accept_index = tensor([[0, 1, 3]], device='cuda:0', dtype=torch.int32)\n"
                                 "predicts = [0, 2, 0, 4, 0]\naccept_lens = [3]\noutputs = [A, C, X]")

# -- 3. verdict -----------------------------------------------------------------------------------
st.subheader(ui.tr("3 · Verdict", "3 · 结论"))
s_json = s.to_json(indent=None)
result = None
if not text.strip():
    st.info(ui.tr("Paste some outputs above (or load an example) to get a verdict.", "请在上方粘贴输出（或加载示例）以获得结论。"))
else:
    try:
        # a cached verdict at once; new work under the per-tab budget and the machine-wide slots
        result = heavy.cached(ui.tr("Your outputs", "你的输出"), _audit, s_json, text, ui.lang())
    except SpecvizError as exc:
        ui.show_error(exc)

first = None
if result is not None:
    ok, checked, findings, notes = result
    if ok:
        st.success(ui.tr("Correct: {f} match the reference (SGLang {v} semantics).", "正确：{f} 与参考实现一致（SGLang {v} 语义）。",
                         f=", ".join(checked), v=s.semantics))
    else:
        first = findings[0]
        st.error(ui.tr("First wrong value: **{w}** is {g}, expected {e}.", "第一个错误值：**{w}** 是 {g}，应为 {e}。",
                       w=first["where"], g=md_text(json.dumps(first["got"], ensure_ascii=False)),
                       e=md_text(json.dumps(first["expected"], ensure_ascii=False))))
        st.markdown(f"#### {ui.tr('Rule', '规则')}: {md(first['rule'])}")
        if len(findings) > 1:
            with st.expander(ui.tr("{k} more fields differ", "另有 {k} 个字段不一致", k=len(findings) - 1)):
                for f in findings[1:]:
                    st.markdown(f"- **{f['where']}**: {md(f['rule'])}")
    for note in notes:
        st.caption(ui.tr(note, "predicts 只检查被接受的行；其余行保留由实现决定的初始值。"))

# -- highlight in the tree and the shift table ------------------------------------------------------
run = _run(s_json)
b = first["request"] if first and first["request"] is not None else 0
commit = run.commits[b]
tree = s.tree(b)
n = s.n
labels = [s.label(t) for t in tree.tokens]
states = {i: ("accepted" if i in commit.accept_nodes else "discarded") for i in range(n)}
bad_node = first["node"] if first else None
if bad_node is not None and 0 <= bad_node < n:
    states[bad_node] = "rejected" if bad_node not in commit.accept_nodes else "accepted"
tips = {i: f"{labels[i]} · node {i} · {ui.term('row')} {b * n + i}" + (f"\n⚠ {first['where']}: {first['rule']}" if first and i == bad_node else "")
        for i in range(n)}
g1, g2 = st.columns([1, 1.2], gap="large")
with g1:
    st.markdown(f"**{ui.tr('Reference path', '参考路径')}**" + (f" · {ui.tr('request', '请求')} {b}" if len(s.requests) > 1 else "")
                + (f" · {ui.tr('outlined: where the first error points', '描边：第一个错误所指的位置')}" if bad_node is not None else ""))
    dot = tree_dot(tree.parents, labels, rows=[b * n + i for i in range(n)], states=states, selected=bad_node, tooltips=tips,
                   bonus=(commit.accept_nodes[-1], s.label(commit.next_root)), bonus_label=ui.term("bonus"), row_word=ui.term("row"))
    if not s.is_tree:  # a chain reads left to right
        dot = dot.replace("rankdir=TB", "rankdir=LR", 1)
    ui.graph(dot, width="stretch" if s.is_tree else "content")
with g2:
    st.markdown(f"**{ui.tr('Shift table: input row → output', '错位表：输入行 → 输出')}**")
    words = {"row": ui.tr("verify row", "验证行"), "input": ui.tr("input token", "输入 token"),
             "output": ui.tr("its prediction = output", "它的预测 = 输出"), "kv": ui.tr("KV", "KV"),
             "pos": ui.tr("position", "位置"), "discarded": ui.term("discarded")}
    positions = [commit.seq_len + d for d in tree.depths()]
    table = shift_table(n, labels, [b * n + i for i in range(n)], row_outputs(run), commit.accept_nodes, positions, words,
                        label_of=s.label)
    row_states = {i: ("accepted" if i in commit.accept_nodes else "discarded") for i in range(n)}
    if bad_node is not None and 0 <= bad_node < n:
        row_states[bad_node] = "rejected"
    ui.text_table(highlight_rows(table, row_states).hide(axis="index"))
    if bad_node is not None:
        st.caption(ui.tr("Red row: the row the first error is about.", "红色行：第一个错误所涉及的行。"))

with st.expander(ui.tr("Reference values for these inputs", "这些输入的参考值"), expanded=False):
    st.code(_expected_text(s_json), language=None)
with st.expander(ui.tr("The same check from the command line", "在命令行中做同样的检查"), expanded=False):
    st.caption(ui.tr("Save a JSON file with the inputs and your outputs, then run `python -m specviz audit FILE`.",
                     "把输入和你的输出保存到一个 JSON 文件，然后运行 `python -m specviz audit FILE`。"))
    try:
        claimed = parse_claimed_text(text) if text.strip() else {"accept_index": expected_outputs(s).get("accept_index", [])}
    except SpecvizError:
        claimed = {}
    st.code(json.dumps({"scenario": json.loads(s_json), "claimed": claimed}, ensure_ascii=False)[:6000], language="json")

share_ui.sidebar_controls(KEY, s, slot=SLOT, extra={"text": text[:4000]} if text.strip() else None, dot=dot,
                          key="audit_export")
ui.end_page()
