"""Read the greedy accept walk off a trace: what each node looks like at step k, and what happened.

Pure functions over ``specviz.trace`` events (no numpy maths, no streamlit): the greedy page
draws the tree with ``node_states`` and writes ``describe`` under the step controls.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WalkState:
    states: dict = field(default_factory=dict)  # node -> accepted / rejected / pending / current / compared / discarded
    current: int | None = None  # last accepted node
    compared: int | None = None  # the child being compared
    target_row: int | None = None  # the row whose target prediction the child is compared with
    bonus: tuple | None = None  # (node, token id) once the terminal token is written
    done: bool = False
    num_accepted: int = 0  # drafts accepted so far


def node_states(events, step: int, n: int, request: int = 0) -> WalkState:
    """The walk of ``request`` after its first ``step`` events (``events`` already filtered to it)."""
    w = WalkState()
    for e in events[:step]:
        if e.request != request:
            continue
        if e.kind == "start":
            w.states[0] = "current"
            w.current = 0
        elif e.kind == "visit":
            w.compared = e.node
            w.states[e.node] = "compared"
        elif e.kind == "compare":
            w.target_row = e.data.get("target_row")
        elif e.kind == "reject":
            w.states[e.node] = "rejected"
            w.compared = None
        elif e.kind == "accept":
            if w.current is not None:
                w.states[w.current] = "accepted"
            w.states[e.node] = "current"
            w.current = e.node
            w.compared = None
            w.num_accepted = int(e.data.get("k", w.num_accepted + 1))
        elif e.kind == "terminal":
            w.bonus = (e.node, int(e.data["token"]))
        elif e.kind == "commit":
            w.done = True
            for i in range(n):
                if w.states.get(i) == "current":
                    w.states[i] = "accepted"
                elif w.states.get(i) != "accepted":
                    w.states[i] = "discarded"
    return w


TEXT = {
    "before": ("Before the walk: accept_index is all -1 and predicts hold predicts_init.",
               "开始之前：accept_index 全为 -1，predicts 为初始值 predicts_init。"),
    "start": ("Start at the root {tok} (row {row}): accept_index[0] = {row}. The root is always kept.",
              "从根节点 {tok}（第 {row} 行）开始：accept_index[0] = {row}。根节点总是保留。"),
    "visit_first": ("Look at node {node} ({tok}, row {row}), the first child (retrieve_next_token) of the last accepted node.",
                    "查看节点 {node}（{tok}，第 {row} 行）：上一个被接受节点的第一个子节点（retrieve_next_token）。"),
    "visit_sib": ("Look at node {node} ({tok}, row {row}), reached through retrieve_next_sibling.",
                  "查看节点 {node}（{tok}，第 {row} 行），经由 retrieve_next_sibling 到达。"),
    "compare_hit": ("Compare {tok} with target_predict at row {trow} = {target}: they match.",
                    "比较 {tok} 与第 {trow} 行的 target_predict = {target}：一致。"),
    "compare_miss": ("Compare {tok} with target_predict at row {trow} = {target}: no match.",
                     "比较 {tok} 与第 {trow} 行的 target_predict = {target}：不一致。"),
    "reject": ("{tok} ≠ {target}: node {node} is rejected.", "{tok} ≠ {target}：节点 {node} 被拒绝。"),
    "next_sibling": ("Move to the next sibling, node {node}.", "移到下一个兄弟节点：节点 {node}。"),
    "no_sibling": ("No next sibling is left (retrieve_next_sibling = -1).", "没有下一个兄弟节点了（retrieve_next_sibling = -1）。"),
    "no_child": ("Node {node} has no children: the walk stops.", "节点 {node} 没有子节点：遍历结束。"),
    "no_match": ("No child of node {node} matches the target: the walk stops.", "节点 {node} 的子节点都与目标不一致：遍历结束。"),
    "accept": ("Accept node {node} ({tok}, row {row}): predicts[{prow}] = {tok}, accept_index[{k}] = {row}.",
               "接受节点 {node}（{tok}，第 {row} 行）：predicts[{prow}] = {tok}，accept_index[{k}] = {row}。"),
    "depth_limit": ("{k} = W-1 drafts accepted: the depth limit ends the walk.", "已接受 {k} = W-1 个草稿：达到深度上限，遍历结束。"),
    "terminal": ("Bonus: predicts[{row}] = target_predict[{row}] = {tok}. It is the next root; it has no KV yet.",
                 "bonus：predicts[{row}] = target_predict[{row}] = {tok}。它是下一轮的根，还没有 KV。"),
    "commit": ("accept_token_num = {k} (num_correct_drafts); accept_lens = {k1}. The rows in accept_index keep their KV.",
               "accept_token_num = {k}（num_correct_drafts）；accept_lens = {k1}。accept_index 中的行保留 KV。"),
    "warning": ("Note: {message}", "注意：{message}"),
}


def describe(event, label, tokens, lang: str = "en", row_of=None) -> str:
    """One sentence for ``event`` (None = before the walk). ``label(token_id)`` gives the text,
    ``tokens[node]`` a node's token id, ``row_of(node)`` its verify row (default: the node id)."""
    row_of = row_of or (lambda i: i)
    k = 1 if lang == "zh" else 0

    def t(key, **fmt):
        return TEXT[key][k].format(**fmt)

    if event is None:
        return t("before")
    d, node = event.data, event.node
    tok = label(tokens[node]) if node is not None and 0 <= node < len(tokens) else ""
    if event.kind == "start":
        return t("start", tok=tok, row=d.get("row", 0))
    if event.kind == "visit":
        # The first look at a level is the first child; later looks come from a next_sibling move.
        return t("visit_sib" if d.get("via_sibling") else "visit_first", node=node, tok=tok, row=d.get("row", row_of(node)))
    if event.kind == "compare":
        return t("compare_hit" if d["match"] else "compare_miss", tok=label(d["token"]), trow=d["target_row"], target=label(d["target"]))
    if event.kind == "reject":
        return t("reject", tok=label(d["token"]), target=label(d["target"]), node=node)
    if event.kind == "next_sibling":
        return t("no_sibling") if node is None else t("next_sibling", node=node)
    if event.kind == "no_child":
        return t("no_match" if d.get("reason") else "no_child", node=node)
    if event.kind == "accept":
        prow = next((i for a, i, _ in event.writes if a == "predicts"), "?")
        return t("accept", node=node, tok=tok, row=d["row"], prow=prow, k=d["k"])
    if event.kind == "depth_limit":
        return t("depth_limit", k=d["k"])
    if event.kind == "terminal":
        return t("terminal", row=d["row"], tok=label(d["token"]))
    if event.kind == "commit":
        return t("commit", k=d["k"], k1=d["k"] + 1)
    if event.kind == "warning":
        return t("warning", message=d.get("message", ""))
    return event.kind


def mark_sibling_visits(events) -> list:
    """Copy of ``events`` where a visit that follows a next_sibling move carries ``via_sibling``."""
    from dataclasses import replace

    out, after_move = [], False
    for e in events:
        if e.kind == "visit":
            e = replace(e, data={**e.data, "via_sibling": after_move})
            after_move = False
        elif e.kind == "next_sibling":
            after_move = e.node is not None
        out.append(e)
    return out
