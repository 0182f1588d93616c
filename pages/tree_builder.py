"""Tree builder: draw the verify tree by hand, or enter it in EAGLE's rollout form.

The graphviz tree (with SGLang's first-child / next-sibling links), the retrieve_* table, the
positions and the tree mask update together; the selected node is highlighted in every view.
"""
import streamlit as st
from specviz.app.ui.bounded_cache import bounded_cache  # noqa: E402

from specviz.base.errors import SpecvizError
from specviz.base.limits import MAX_DEPTH, MAX_MASK_CELLS, MAX_TOPK, MAX_TREE_NODES
from specviz.inputs.scenario import scenario_from_json
from specviz.render.mask import mask_heatmap, mask_storage_text, mask_svg
from specviz.render.tables import retrieve_arrow
from specviz.render.tree import tree_dot
from specviz.app.ui import common as ui
from specviz.app.ui import markup
from specviz.inputs import edits
from specviz.app.ui import share_ui

SLOT = "tree"
KEY = "tree_builder"
share_ui.load_shared_state()  # a shared link (?s=...) sets the scenario, language and step before any widget
ui.page_setup(KEY, SLOT)
linked = share_ui.link_arrived(KEY)
if linked is not None:  # the request and the selected node travel with the link
    for name, skey in (("req", "sv_req::tree"), ("sel", "sv_sel::tree")):
        if isinstance(linked.get(name), int) and linked[name] >= 0:
            ui.set_value(skey, linked[name])
st.title(ui.tr("Tree builder", "构建验证树"))
st.caption(ui.tr(
    "Node i is verify row i. Siblings are ordered by node number, as in SGLang: the first child is the lowest "
    "number, retrieve_next_sibling points to the next higher one. Edits renumber the tree breadth-first.",
    "节点 i 就是验证的第 i 行。兄弟节点按编号排序（与 SGLang 相同）：第一个子节点编号最小，"
    "retrieve_next_sibling 指向下一个更大的编号。编辑后树按层重新编号。"))


@bounded_cache()
def _views(text: str, b: int, mode: str) -> dict:
    """edits.tree_views, cached on the scenario JSON (build_tree runs once per tree)."""
    return edits.tree_views(scenario_from_json(text), b, mode)


def _eagle_form(s, ver: int, b: int, n: int, labels: list, views) -> None:
    """The tree in EAGLE's rollout form, and a form that builds a tree from a rollout (drawn only while its tab is open)."""
    form = views["eagle"] if views else None
    if views and views["reason"] and form is None:
        st.warning(ui.tr("Not expressible as an EAGLE rollout: {r}", "无法表示为 EAGLE rollout：{r}", r=views["reason"]))
    elif form is not None:
        st.markdown(ui.tr("This tree **is** an EAGLE rollout (smallest topk that fits):",
                          "这棵树**可以**由 EAGLE rollout 得到（取能容纳它的最小 topk）："))
    with st.form(f"w_eagle::{ver}::{b}"):
        c = st.columns(3)
        topk = c[0].number_input("topk", min_value=1, max_value=MAX_TOPK, step=1, value=int(form.topk) if form else 2)
        depth = c[1].number_input(ui.tr("depth", "深度"), min_value=1, max_value=MAX_DEPTH, step=1, value=int(form.depth) if form else 2)
        ndt = c[2].number_input("num_draft_tokens", min_value=1, max_value=MAX_TREE_NODES, step=1, value=int(n))
        pl_text = st.text_input("parent_list", value=", ".join(map(str, form.parent_list)) if form else "-1, 0, 1")
        si_text = st.text_input("selected_index", value=", ".join(map(str, form.selected_index)) if form else "")
        dt_text = st.text_input(ui.tr("draft tokens (nodes 1..n-1)", "草稿 token（节点 1..n-1）"), value=", ".join(labels[1:]))
        submitted = st.form_submit_button(ui.tr("Build the tree from this rollout", "由此 rollout 构建树"), type="primary")
    if submitted:
        try:
            new = edits.tree_from_rollout(
                s, int(topk), int(depth), int(ndt), edits.parse_ints("parent_list", pl_text),
                edits.parse_ints("selected_index", si_text), edits.parse_labels(dt_text), labels[0], b)
        except SpecvizError as exc:
            ui.show_error(exc)
        else:
            ui.set_scenario(SLOT, new)
            ui.rerun_view()


# Everything that depends on the scenario is one fragment: an edit made in it reruns this function,
# not the page (router, sidebar widgets, CSS). Its sidebar boxes (share, export) are drawn from here
# too (Streamlit redraws a fragment's writes to the sidebar in place), so they follow each edit.
@st.fragment
def scenario_view():
    s = ui.scenario(SLOT)
    ver = ui.scenario_version(SLOT)
    b = 0
    if len(s.requests) > 1:
        b = ui.widget(st.selectbox, ui.tr("Request", "请求"), "sv_req::tree", 0, options=list(range(len(s.requests))))
        b = min(b, len(s.requests) - 1)
    tree = s.tree(b)
    labels = [s.label(t) for t in tree.tokens]
    n = tree.n

    # -- the selection, shared by every view ------------------------------------------------------
    SEL = "sv_sel::tree"
    if ui.persist_key(SEL, 1 if n > 1 else 0) >= n:
        ui.set_value(SEL, n - 1)

    def _err_key():
        return "sv_err::tree_builder"

    def _apply(build, select=None):
        """Callback body: store the edited scenario, or the error to show."""
        try:
            new = build()
        except SpecvizError as exc:
            st.session_state[_err_key()] = exc
            return
        st.session_state.pop(_err_key(), None)
        ui.set_scenario(SLOT, new)
        if select is not None:
            nt = new.tree(b)
            ui.set_value(SEL, max(0, min(nt.n - 1, select(nt))))

    def _select_path(path):
        def find(nt):
            paths = edits.token_paths(nt)
            hits = [i for i, p in enumerate(paths) if p == path]
            return hits[-1] if hits else 0
        return find

    # Callbacks read the scenario as it is now (session state), never this run's `s` / `tree`: a click
    # that interrupts a rerun runs the callback registered by an earlier run, whose `s` / `tree` would
    # be one edit behind, and would overwrite that edit (a lost click; benchmarks/README, "No lost click").
    def _now():
        cur = ui.scenario(SLOT)
        return cur, cur.tree(min(b, len(cur.requests) - 1))

    def _sel(t):
        return max(0, min(int(st.session_state[SEL]), t.n - 1))

    def on_add_child():
        cur, t = _now()
        sel, tok = _sel(t), cur.token_id(st.session_state.get("sv_tok::tree", cur.vocab[0]))
        path = edits.token_paths(t)[sel] + (tok,)
        _apply(lambda: edits.replace_tree(cur, t.add_child(sel, tok), b), _select_path(path))

    def on_add_sibling():
        cur, t = _now()
        sel, tok = _sel(t), cur.token_id(st.session_state.get("sv_tok::tree", cur.vocab[0]))
        path = edits.token_paths(t)[sel][:-1] + (tok,)
        _apply(lambda: edits.replace_tree(cur, t.add_sibling(sel, tok), b), _select_path(path))

    def on_delete():
        cur, t = _now()
        sel = _sel(t)
        parent_path = edits.token_paths(t)[t.parents[sel]] if sel > 0 else ()
        _apply(lambda: edits.replace_tree(cur, t.delete_subtree(sel), b), _select_path(parent_path))

    def on_relabel():
        cur, t = _now()
        sel, tok = _sel(t), cur.token_id(st.session_state.get("sv_tok::tree", cur.vocab[0]))
        _apply(lambda: edits.replace_tree(cur, t.relabel(sel, tok), b), lambda nt: sel)

    def on_move(step):
        def cb():
            cur, t = _now()
            sel = _sel(t)
            path = edits.token_paths(t)[sel]
            _apply(lambda: edits.replace_tree(cur, t.move_sibling(sel, step), b), _select_path(path))
        return cb

    def on_add_vocab():
        label = st.session_state.get("w_new_vocab", "").strip()
        if not label:
            st.session_state[_err_key()] = SpecvizError("vocab", "the new label is empty: type a token label first")
            return
        _apply(lambda: edits.add_vocab(ui.scenario(SLOT), label))
        ui.set_value("sv_tok::tree", label)

    def on_mode():
        mode = st.session_state[f"w_mode::{ver}"]
        _apply(lambda: ui.scenario(SLOT).replace(tree_mask_mode=mode))

    def on_table(drawn: int, key: str):
        """on_change of the table editor: a valid edit is stored before the run that draws it (one run per edit;
        read after the widget it took a second fragment run, issue 31). A refused one is left to that run,
        which shows the error under the table and keeps the typed cells."""
        def cb():
            if ui.scenario_version(SLOT) != drawn:
                return  # the table was drawn from another tree: the run redraws it
            cur, t = _now()
            parents, tokens = list(t.parents), [cur.label(x) for x in t.tokens]
            for r, cells in ((st.session_state.get(key) or {}).get("edited_rows") or {}).items():
                if 0 <= int(r) < t.n:
                    parents[int(r)] = cells.get("parent", parents[int(r)])
                    tokens[int(r)] = cells.get("token", tokens[int(r)])
            try:
                new = edits.replace_tree(cur, edits.tree_from_table(parents, tokens, cur, field="tree"), b)
            except (SpecvizError, TypeError, ValueError):
                return
            ui.set_scenario(SLOT, new)
        return cb

    # -- layout -----------------------------------------------------------------------------------


    views = None
    dot = mask_fig = None
    with ui.guard():
        views = _views(s.to_json(indent=None), b, s.tree_mask_mode)

    left, right = st.columns([1.15, 1], gap="medium")  # the editing buttons and tabs keep whole labels at 1280x720

    with left:
        # The tabs track which one is open (a tab switch reruns this fragment): the EAGLE form's six inputs and
        # its rollout text are drawn only while its tab is open, not on every edit made by hand (issue 31).
        # The same holds for the table editor (its pandas frame, Arrow conversion and hash were ~a quarter of a tree
        # edit's script CPU, and the grid's redraw part of every click's time in the browser): its own tab.
        hand_tab, table_tab, eagle_tab = st.tabs(
            [ui.tr(":material/edit: Draw by hand", ":material/edit: 手工绘制"),
             ui.tr(":material/table_edit: Table", ":material/table_edit: 表格"),
             ui.tr(":material/account_tree: EAGLE rollout", ":material/account_tree: EAGLE rollout 形式")],
            key="w_tree_tab", on_change="rerun")
        with hand_tab:
            sel = ui.widget(st.selectbox, ui.tr("Selected node", "选中的节点"), SEL, 1 if n > 1 else 0, options=list(range(n)),
                            format_func=lambda i: f"{i} · {labels[i]}" if i < n else str(i))
            ui.widget(st.selectbox, ui.tr("Token (for a new node or relabel)", "token（用于新节点或改标签）"), "sv_tok::tree",
                      s.vocab[0], options=s.vocab)
            c = st.columns(2)
            c[0].button(ui.tr("Add child", "添加子节点"), icon=":material/add:", on_click=on_add_child, width="stretch",
                        key="w_add_child")
            c[1].button(ui.tr("Add sibling", "添加兄弟节点"), icon=":material/add:", on_click=on_add_sibling, width="stretch",
                        key="w_add_sibling", disabled=sel == 0)
            c[0].button(ui.tr("Relabel token", "修改 token"), icon=":material/edit:", on_click=on_relabel, width="stretch",
                        key="w_relabel")
            c[1].button(ui.tr("Delete subtree", "删除子树"), icon=":material/delete:", on_click=on_delete, width="stretch",
                        key="w_delete", disabled=sel == 0)
            c[0].button(ui.tr("Earlier sibling", "兄弟前移"), icon=":material/arrow_upward:", on_click=on_move(-1), width="stretch",
                        key="w_up", disabled=sel == 0)
            c[1].button(ui.tr("Later sibling", "兄弟后移"), icon=":material/arrow_downward:", on_click=on_move(1), width="stretch",
                        key="w_down", disabled=sel == 0)
            err = st.session_state.pop(_err_key(), None)
            if err is not None:
                ui.show_error(err)
            with st.popover(ui.tr("Add a token to the vocabulary", "向词表添加 token")):
                st.text_input(ui.tr("New label", "新标签"), key="w_new_vocab")
                st.button(ui.tr("Add", "添加"), on_click=on_add_vocab, key="w_add_vocab")

        with table_tab:
            if table_tab.open:
                st.markdown(ui.tr("**Edit the table** (parent and token of each node):", "**编辑表格**（每个节点的父节点与 token）："))
                import pandas as pd

                df = pd.DataFrame({"node": list(range(n)), "parent": list(tree.parents), "token": labels})
                edited = st.data_editor(
                    df, key=f"w_table::{ver}::{b}", hide_index=True, width="stretch", num_rows="fixed",
                    on_change=on_table(ver, f"w_table::{ver}::{b}"),
                    column_config={
                        "node": st.column_config.NumberColumn(ui.term("node"), disabled=True),
                        "parent": st.column_config.NumberColumn(ui.tr("parent", "父节点"), step=1, min_value=-1, max_value=n - 1),
                        "token": st.column_config.SelectboxColumn(ui.term("token"), options=s.vocab, required=True),
                    })
                if list(edited["parent"]) != list(tree.parents) or list(edited["token"]) != labels:
                    try:
                        new_tree = edits.tree_from_table(list(edited["parent"]), list(edited["token"]), s, field="tree")
                        new = edits.replace_tree(s, new_tree, b)
                    except SpecvizError as exc:
                        ui.show_error(exc)
                        st.caption(ui.tr("Your table edits are kept; the views below still show the last valid tree.",
                                         "表格中的修改已保留；下方视图仍显示上一个有效的树。"))
                    else:
                        ui.set_scenario(SLOT, new)
                        ui.rerun_view()

        with eagle_tab:
            if eagle_tab.open:
                _eagle_form(s, ver, b, n, labels, views)

    with right:
        if views is not None:
            build = views["build"]
            ri, nt_, ns_ = build.retrieve_index[0], build.retrieve_next_token[0], build.retrieve_next_sibling[0]
            pos = build.positions
            depths = tree.depths()
            tips = {i: (f"node {i}: {labels[i]} (token id {tree.tokens[i]})\nparent {tree.parents[i]}, depth {depths[i]}\n"
                        f"retrieve_index {int(ri[i])}\nretrieve_next_token {int(nt_[i])}\nretrieve_next_sibling {int(ns_[i])}\n"
                        f"position {int(pos[i])}") for i in range(n)}
            links = ui.widget(st.toggle, ui.tr("Show first-child / next-sibling links (SGLang's retrieve_* arrays)",
                                               "显示第一个子节点 / 下一个兄弟节点链接（SGLang 的 retrieve_* 数组）"),
                              "sv_links::tree", True)
            dot = tree_dot(tree.parents, labels, states={i: "plain" for i in range(n)}, selected=sel, links=links, tooltips=tips,
                           row_word=ui.term("row"), link_words=(ui.tr("first child", "第一个子节点"), ui.tr("next sibling", "下一个兄弟")))
            ui.graph(dot, width="stretch")
            st.caption(ui.tr("Blue: retrieve_next_token (first child). Dashed vermillion: retrieve_next_sibling. "
                             "Purple outline: the selected node. Hover a node for its exact values.",
                             "蓝色：retrieve_next_token（第一个子节点）。橙红虚线：retrieve_next_sibling。"
                             "紫色边框：选中的节点。鼠标悬停可看精确数值。"))

    if views is not None:
        build = views["build"]
        st.subheader(ui.tr("retrieve_* links and positions", "retrieve_* 链接与 positions"))
        table = retrieve_arrow(tree, labels, build.retrieve_index[0], build.retrieve_next_token[0],
                               build.retrieve_next_sibling[0], build.positions[:n],
                               cols={"node": ui.term("node"), "token": ui.term("token"), "parent": ui.tr("parent", "父节点"),
                                     "depth": ui.tr("depth", "深度")})

        rt_key = f"w_rt::{ver}::{sel}"  # a new table widget per selected node: its selection_default is that node

        def on_pick(drawn=sel):
            # A table reports the row it was drawn with (its selection_default) when a click of another widget
            # carries the browser's state of a table from an earlier run: that is no pick, and taking it would
            # undo the selection an add-child callback just moved (test_bursts_of_add_child_then_delete_...).
            rows = st.session_state[rt_key].selection.rows
            if rows and int(rows[0]) != drawn:
                ui.set_value(SEL, int(rows[0]))

        # The selected node is the table's selected row (the grid's own highlight), not a pandas Styler
        # colouring it: marshalling the Styler cost ~0.03 s of CPU every rerun, half a tree edit's CPU.
        st.dataframe(table, hide_index=True, width="stretch", key=rt_key, on_select=on_pick, selection_mode="single-row",
                     selection_default={"selection": {"rows": [sel]}} if 0 <= sel < n else None,
                     height="auto" if n <= 10 else 480)
        st.caption(ui.tr("positions = seq_len ({sl}) + depth. Click a row to select its node.",
                         "positions = seq_len（{sl}）+ 深度。点击一行即可选中该节点。", sl=s.requests[b].seq_len))

        st.subheader(ui.tr("Tree mask", "树注意力掩码"))
        modes = ["full_mask", "qlen_only", "qlen_only_bitpacking"]
        st.radio("tree_mask_mode", modes, index=modes.index(s.tree_mask_mode), horizontal=True, key=f"w_mode::{ver}",
                 on_change=on_mode)
        if views["reason"] and views["eagle"] is not None:
            st.info(views["reason"])
        m_col, s_col = st.columns([1, 1], gap="large")
        with m_col:
            mask_words = (ui.tr("attends to", "可见"), ui.tr("masked", "屏蔽"), ui.term("row"), ui.tr("column", "列"))
            mask_fig = lambda: mask_heatmap(views["matrix"], labels, selected=sel, words=mask_words)  # noqa: E731  (chart export only)
            markup.svg_figure(mask_svg(views["matrix"], labels, selected=sel, words=mask_words), stretch=False,
                              max_height="calc(100vh - 160px)")
        with s_col:
            st.markdown(ui.tr("Row i may attend to column j (✓): itself and its ancestors. How **{m}** stores it:",
                              "第 i 行可以看到第 j 列（✓）：自身及其祖先。**{m}** 的存储方式：", m=s.tree_mask_mode))
            st.code(mask_storage_text(views["matrix"], s.tree_mask_mode, int(s.requests[b].seq_len), sel,
                                      stored=views["build"].tree_mask if views["inputs"] else None), language="text")
            st.caption(ui.tr("full_mask: per request, n rows of (seq_len + n) booleans, prefix columns all True. "
                             "qlen_only: only the n×n tree part. qlen_only_bitpacking: one integer per row, bit j = column j.",
                             "full_mask：每个请求 n 行、每行 (seq_len + n) 个布尔值，前缀列全为 True。"
                             "qlen_only：只存 n×n 的树部分。qlen_only_bitpacking：每行一个整数，第 j 位 = 第 j 列。"))

        if views["inputs"]:
            inp = views["inputs"]
            compare_mode, note = inp["tree_mask_mode"], ""
            if compare_mode == "full_mask" and inp["num_draft_tokens"] * int(inp["verified_seq_len"].sum()) > MAX_MASK_CELLS:
                # Allocating n x seq_len cells on every backend only to compare all-True prefixes: compare the
                # same tree part, positions and links in qlen_only mode instead (and say so).
                compare_mode = "qlen_only"
                note = ui.tr(" (compared in qlen_only mode: the full_mask prefix of {c:,} cells is all True and is not allocated)",
                             "（以 qlen_only 模式比较：full_mask 的前缀共 {c:,} 个单元，全为 True，不分配内存）",
                             c=inp["num_draft_tokens"] * int(inp["verified_seq_len"].sum()))
            ui.badge(ui.compare_call("build_tree", inp["parent_list"], inp["selected_index"], inp["verified_seq_len"],
                                     topk=inp["topk"], depth=inp["depth"], num_draft_tokens=inp["num_draft_tokens"],
                                     tree_mask_mode=compare_mode), what="build_tree" + note)
            mask_doc = {"full_mask": "[n*sum(seq_lens) + bs*n*n]", "qlen_only": "[bs*n*n]",
                        "qlen_only_bitpacking": "[bs*n]"}[s.tree_mask_mode]
            ui.raw_tensors({
                "parent_list": (inp["parent_list"], "[bs, topk*(depth-1)+1]"),
                "selected_index": (inp["selected_index"], "[bs, num_draft_tokens-1]"),
                "verified_seq_len": (inp["verified_seq_len"], "[bs]"),
                "tree_mask": (build.tree_mask, mask_doc),
                "positions": (build.positions, "[bs*n]"),
                "retrieve_index": (build.retrieve_index, "[bs, n]"),
                "retrieve_next_token": (build.retrieve_next_token, "[bs, n]"),
                "retrieve_next_sibling": (build.retrieve_next_sibling, "[bs, n]"),
            })
        else:
            ui.backend_badge(s)
            ui.raw_tensors({"retrieve_index": (build.retrieve_index, "[bs, n]"),
                            "retrieve_next_token": (build.retrieve_next_token, "[bs, n]"),
                            "retrieve_next_sibling": (build.retrieve_next_sibling, "[bs, n]"),
                            "positions": (build.positions, "[bs*n]")})

    share_ui.sidebar_controls(KEY, s, slot=SLOT, extra={"req": b, "sel": int(st.session_state.get("sv_sel::tree", 0))}, dot=dot,
                              fig=mask_fig, dot_what=ui.tr("The tree with its links", "树及其链接"),
                              fig_what=ui.tr("The tree mask ({m})", "树掩码（{m}）", m=s.tree_mask_mode))


scenario_view()
ui.end_page()
