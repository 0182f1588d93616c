"""Pitfall gallery: a common Accept bug next to the correct behaviour, on the same inputs.

Everything shown comes from specviz.rooms.pitfalls (the buggy implementations and the reference
values) and specviz.rooms.audit (the one-sentence diagnosis); this page only lays them out.
"""
import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache  # noqa: E402

from specviz.rooms.audit import audit
from specviz.rooms.pitfalls import PITFALLS, BY_KEY, display, side_view
from specviz.render.tree import forest_dot, tree_dot
from specviz.inputs.scenario import scenario_from_json
from specviz.app.ui import common as ui
from specviz.app.ui import markup, share_ui
from specviz.base.safety import md_prose

KEY = "pitfalls"


def md(text: str) -> str:
    """Plain text inside markdown: b*n + i must not turn into italics."""
    return text.replace("*", "\\*")

# A deep link (e.g. a shared /pitfalls?s=...) can run this page without app.py on its first load:
# keep the wide projector layout either way.
st.set_page_config(layout="wide")
share_ui.load_shared_state()
ui.page_setup(KEY, slot=None)
share_ui.link_arrived(KEY)

# Which live page (and scenario slot) explores a pitfall's scenario further.
PAGE_SLOTS = {"greedy": ("pages/greedy.py", "tree"), "batch_kv": ("pages/batch_kv.py", "batch"),
              "dspark": ("pages/dspark.py", "dspark"), "target_only": ("pages/target_only.py", "target_only"),
              "chain_sampling": ("pages/chain_sampling.py", "chain")}

extra = share_ui.shared_extra(KEY)
if extra.get("pitfall") in BY_KEY and st.session_state.get("sv_pitfall_from_link") != extra["pitfall"]:
    st.session_state["sv_pitfall_from_link"] = extra["pitfall"]
    st.session_state["sv_pitfall"] = extra["pitfall"]
    st.session_state.pop(f"w_pitfall::{ui.lang()}", None)

st.title(ui.tr("Pitfall gallery", "常见错误图鉴"))
st.caption(ui.tr("Each entry runs a small buggy implementation and the SGLang 0.5.23 reference on the same inputs. "
                 "Pick one, compare the two sides, then read the symptom and the fix.",
                 "每个条目都在相同输入上运行一个小的错误实现和 SGLang 0.5.23 参考实现。选择一个条目，对比两侧结果，再阅读症状与修正方法。"))


@bounded_cache()
def _pitfall_data(key: str):
    p = BY_KEY[key]
    s = p.scenario()
    bug, ok = p.buggy_outputs(s), p.correct_outputs(s)
    rep = audit(s, bug)
    return (s.to_json(indent=None), p.compare(), side_view(s, bug), side_view(s, ok),
            {lg: rep.first_error.sentence(lg) for lg in ("en", "zh")} if rep.first_error else {})


keys = [p.key for p in PITFALLS]
pick_col, main_col = st.columns([1.15, 3], gap="large")
with pick_col:
    st.markdown(f"**{ui.tr('Choose a pitfall', '选择一个错误')}**")
    current = ui.persist_key("sv_pitfall", keys[0])
    current = current if current in BY_KEY else keys[0]
    wkey = f"w_pitfall::{ui.lang()}"  # the option texts change with the language: one widget per language

    def _pick():
        st.session_state["sv_pitfall"] = st.session_state[wkey]

    key = st.radio(ui.tr("Pitfall", "错误"), keys, index=keys.index(current), key=wkey, on_change=_pick,
                   format_func=lambda k, _l=ui.lang(): f"{keys.index(k) + 1}. {BY_KEY[k].title[_l]}", label_visibility="collapsed")
    if key != current:  # a link or another page changed the choice: follow the session value
        key = current
        st.session_state[wkey] = current
p = BY_KEY[key]
s_json, rows, bug_view, ok_view, diagnosis = _pitfall_data(key)
s = scenario_from_json(s_json)
lang = ui.lang()

with main_col:
    st.subheader(f"{keys.index(key) + 1}. {p.title[lang]}")
    if s.description and lang == "en":
        st.caption(md_prose(s.title))
    st.warning(f"**{ui.tr('Symptom', '症状')}** · {md(p.symptom[lang])}", icon=":material/bug_report:")
    st.success(f"**{ui.tr('Fix', '修正')}** · {md(p.fix[lang])}", icon=":material/build:")

    # Side by side: the values ...
    left, right = st.columns(2, gap="large")
    for col, side, label, is_bug in ((left, bug_view, p.buggy_label[lang], True), (right, ok_view, p.correct_label[lang], False)):
        with col:
            st.markdown(f"### {':material/cancel:' if is_bug else ':material/check_circle:'} {label}")
            chips_html = []
            for r in rows:
                value = r.buggy if is_bug else r.correct
                state = ("rejected" if r.differs else "accepted") if is_bug else "accepted"
                name = ui.tr("outputs", "输出 token（outputs）") if r.field == "outputs" else r.field
                chips_html.append(markup.row_html(name, [ui.chip(value, state, title=f"{r.field} = {value}")]))
            markup.show(chips_html)

    # ... and the trees they imply.
    ref_nodes = ok_view.nodes

    def states_for(view, b):
        st_ = {}
        for i in range(s.n):
            kept, want = i in view.nodes[b], i in ref_nodes[b]
            if view is ok_view:
                st_[i] = "accepted" if kept else "discarded"
            else:
                st_[i] = "accepted" if kept and want else ("rejected" if kept else ("pending" if want else "discarded"))
        return st_

    def dot_for(view):
        trees = []
        for b in range(len(s.requests)):
            tree = s.tree(b)
            last = max(view.nodes[b]) if view.nodes[b] else 0
            path = [i for i in view.nodes[b]]
            anchor = path[-1] if path else 0
            if s.is_tree and view.nodes[b]:
                depths = tree.depths()
                anchor = max(view.nodes[b], key=lambda i: (depths[i], i))
            else:
                anchor = last
            bonus = (anchor, s.label(view.bonus[b])) if view.bonus[b] is not None else None
            trees.append(dict(parents=tree.parents, labels=[s.label(t) for t in tree.tokens],
                              rows=[b * s.n + i for i in range(s.n)], states=states_for(view, b), bonus=bonus,
                              bonus_label=ui.term("bonus"), row_word=ui.term("row"),
                              tooltips={i: f"{s.label(tree.tokens[i])} · {ui.term('row')} {b * s.n + i}" for i in range(s.n)},
                              cluster=f"{ui.tr('request', '请求')} {b}" if len(s.requests) > 1 else None))
        if len(trees) == 1:
            kw = dict(trees[0])
            kw.pop("cluster")
            dot = tree_dot(**kw)
        else:
            dot = forest_dot(trees)
        # A chain reads left to right (and does not blow up into a tall column when stretched).
        return dot if s.is_tree else dot.replace("rankdir=TB", "rankdir=LR", 1)

    left, right = st.columns(2, gap="large")
    with left:
        ui.graph(dot_for(bug_view), width="stretch" if s.is_tree else "content")
        st.caption(ui.tr("Green ✓: rows both sides keep. Red ✗: rows only the buggy code uses. Grey: rows it misses.",
                         "绿色 ✓：两侧都保留的行。红色 ✗：只有错误实现使用的行。灰色：它漏掉的行。"))
    with right:
        correct_dot = dot_for(ok_view)
        ui.graph(correct_dot, width="stretch" if s.is_tree else "content")
        st.caption(ui.tr("Green ✓: the root and the accepted drafts (their KV is kept); orange ★: the bonus, the next root.",
                         "绿色 ✓：root 与被接受的 Draft（保留 KV）；橙色 ★：bonus，即下一轮的根。"))

    if diagnosis:
        st.info(f"**{ui.tr('What the audit engine says about the buggy side', '审计引擎对错误一侧的判断')}** · {md(diagnosis[lang])}",
                icon=":material/search:")

    c1, c2 = st.columns(2)
    page_file, slot = PAGE_SLOTS.get(p.page, (None, None))

    def open_live():
        ui.set_scenario(slot, s)

    def open_audit():
        """Hand the inputs and the buggy side's outputs (token fields as labels) to the audit page."""
        ui.set_scenario("audit", s)
        text = "\n".join(f"{f} = {display(s, f, v)}" for f, v in p.buggy_outputs(s).items())
        st.session_state["sv_audit_text"] = text
        st.session_state["w_sv_audit_text"] = text

    if page_file and slot:
        if c1.button(ui.tr("Explore these inputs on the live page", "在对应页面中探索这些输入"), key="w_pitfall_live",
                     on_click=open_live, width="stretch"):
            st.switch_page(page_file)
    if c2.button(ui.tr("Audit the buggy outputs", "审计错误实现的输出"), key="w_pitfall_audit", on_click=open_audit,
                 width="stretch"):
        st.switch_page("pages/audit.py")

    share_ui.sidebar_controls(KEY, s, extra={"pitfall": key}, dot=correct_dot, key="pitfall_export",
                              dot_what=ui.tr("The correct side's tree", "正确一侧的树"))
ui.end_page()
