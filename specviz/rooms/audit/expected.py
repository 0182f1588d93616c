"""The reference side of an audit: ``Context`` holds what the rule sentences need about the reference
run (in English or 简体中文), and ``expected_values`` gives every field's reference value.
``specviz.rooms.audit.compare`` compares a claimed field with them.
"""
from __future__ import annotations

import numpy as np

from specviz import algorithms
from specviz.replay.engine import Run
from specviz.reference import gather_accept_tokens
from specviz.inputs.scenario import Scenario


class Context:
    """Everything the rule sentences need about the reference run. ``lang`` picks the language of
    the sentences ("en" or "zh"); ``t(en, zh)`` returns the one in use."""

    def __init__(self, s: Scenario, run: Run, lang: str = "en"):
        self.s, self.run = s, run
        self.lang = lang
        self.bs, self.n, self.W = len(s.requests), s.n, s.width
        self.cand = run.inputs["candidates"]  # [bs, n]
        self.res = run.result
        self.commits = run.commits
        self.dspark = algorithms.get(s.algorithm).family == "dspark"

    def t(self, en: str, zh: str) -> str:
        return zh if self.lang == "zh" else en

    def lab(self, tok) -> str:
        return self.s.label(int(tok))

    def row_name(self, g: int) -> str:
        word = self.t("row", "第")
        if g < 0 or g >= self.bs * self.n:
            return self.t(f"row {g}", f"第 {g} 行")
        b, i = divmod(g, self.n)
        return self.t(f"row {g} ({self.lab(self.cand[b, i])})", f"{word} {g} 行（{self.lab(self.cand[b, i])}）")

    def rows_text(self, rows) -> str:
        return "[" + ", ".join(str(r) for r in rows) + "]"

    def toks(self, ids) -> str:
        return "[" + ", ".join(self.lab(t) for t in ids) + "]"

    def level_reason(self, b: int, level: int) -> str:
        """One clause: what decided level ``level`` of request b in the reference run."""
        t = self.t
        c = self.commits[b]
        k = c.num_correct_drafts
        ev = [e for e in (self.run.trace.events if self.run.trace else []) if e.request == b]
        prev_node = c.accept_nodes[level - 1] if level - 1 < len(c.accept_nodes) else None
        prev_row = c.accept_rows[level - 1] if level - 1 < len(c.accept_rows) else None
        if level <= k:
            node = c.accept_nodes[level]
            tok = self.lab(self.cand[b, node])
            if self.s.algorithm == "greedy":
                par = self.lab(self.cand[b, prev_node])
                return t(f"at level {level} the target predicts {tok} after {self.row_name(prev_row)}, and node {node} ({tok}) "
                         f"is the first child of {par} with that token",
                         f"第 {level} 层 Target 在{self.row_name(prev_row)}之后预测 {tok}，节点 {node}（{tok}）是 {par} "
                         f"的子节点中第一个带有该 token 的")
            test = [e for e in ev if e.kind == "accept_test" and e.node == node and e.data.get("accepted")]
            if test and self.s.algorithm == "target_only":
                d = test[-1].data
                op = "<" if self.s.semantics == "0.5.23" else "<="
                if d.get("single_fired"):
                    why_en = f"p = {d['p']:.4g} >= threshold_single"
                    why_zh = f"p = {d['p']:.4g} >= threshold_single"
                else:
                    why_en = f"coin {d['coin']:.4g} {op} running sum {d['prob_acc']:.4g} / threshold_acc = {d['bound']:.4g}"
                    why_zh = f"coin {d['coin']:.4g} {op} 累计概率 {d['prob_acc']:.4g} / threshold_acc = {d['bound']:.4g}"
                return t(f"at level {level} node {node} ({tok}) is accepted because {why_en}",
                         f"第 {level} 层节点 {node}（{tok}）被接受，因为 {why_zh}")
            if test:
                d = test[-1].data
                return t(f"at slot {level} u*q = {d['u_times_q']:.4g} < p = {d['p']:.4g}, so {tok} is accepted",
                         f"第 {level} 个位置 u*q = {d['u_times_q']:.4g} < p = {d['p']:.4g}，所以 {tok} 被接受")
            if self.dspark:
                return t(f"draft {level} ({tok}) is in the leading run of matches", f"Draft {level}（{tok}）位于从头开始的连续匹配中")
            return t(f"node {node} ({tok}) is accepted at level {level}", f"节点 {node}（{tok}）在第 {level} 层被接受")
        # level > k: the walk stopped before this level
        if k == self.W - 1:
            return t(f"the depth limit W-1 = {self.W - 1} accepted drafts was reached",
                     f"已接受 W-1 = {self.W - 1} 个 Draft，达到深度上限")
        node = c.accept_nodes[-1]
        nlab = self.lab(self.cand[b, node])
        if self.s.algorithm == "greedy":
            tp = self.lab(self.run.inputs["target_predict"].reshape(-1)[c.accept_rows[-1]])
            if not self.s.tree(b).children(node):
                return t(f"node {node} ({nlab}) has no child, so the walk stops after {k} accepted drafts",
                         f"节点 {node}（{nlab}）没有子节点，遍历在接受 {k} 个 Draft 后停止")
            return t(f"the target predicts {tp} after {self.row_name(c.accept_rows[-1])} and no child of {nlab} carries {tp}, "
                     f"so the walk stops after {k} accepted drafts",
                     f"Target 在{self.row_name(c.accept_rows[-1])}之后预测 {tp}，而 {nlab} 没有带 {tp} 的子节点，"
                     f"遍历在接受 {k} 个 Draft 后停止")
        rej = [e for e in ev if e.kind == "accept_test" and not e.data.get("accepted")]
        if self.s.algorithm == "target_only":
            if not self.s.tree(b).children(node):
                return t(f"node {node} has no child, so the walk stops after {k} accepted drafts",
                         f"节点 {node} 没有子节点，遍历在接受 {k} 个 Draft 后停止")
            coin = float(self.s.requests[b].coins[node])
            return t(f"every child of {nlab} is rejected by the coin {coin:.4g}, so the walk stops after {k} accepted drafts",
                     f"{nlab} 的每个子节点都被 coin {coin:.4g} 拒绝，遍历在接受 {k} 个 Draft 后停止")
        if rej:
            d = rej[-1].data
            op = "0 < q and u*q < p" if self.s.semantics == "0.5.23" else "u*q < p"
            tok = self.lab(d["token"])
            return t(f"at slot {k + 1} u*q = {d['u_times_q']:.4g} vs p = {d['p']:.4g} fails {op}, so {tok} is rejected and "
                     f"the walk stops after {k} accepted drafts",
                     f"第 {k + 1} 个位置 u*q = {d['u_times_q']:.4g}、p = {d['p']:.4g}，不满足 {op}，所以 {tok} 被拒绝，"
                     f"遍历在接受 {k} 个 Draft 后停止")
        return t(f"the walk stops after {k} accepted drafts", f"遍历在接受 {k} 个 Draft 后停止")


def expected_values(ctx: Context) -> dict:
    """The reference value of every field this algorithm outputs (canonical shapes, token ids)."""
    r = ctx.res
    exp = {}
    for key in ("accept_index", "accept_token_num", "predicts"):
        if key in r:
            exp[key] = np.asarray(r[key]).astype(np.int64).tolist()
    if "accept_token_num" in r and not ctx.dspark:
        al = np.asarray(r["accept_token_num"]) + 1
        exp["accept_lens"] = al.tolist()
        exp["accept_tokens"] = gather_accept_tokens(r["predicts"], r["accept_index"], al).tolist()
    exp["outputs"] = [list(c.output_tokens) for c in ctx.commits]
    exp["bonus"] = [int(c.next_root) for c in ctx.commits]
    exp["new_seq_lens"] = [int(c.new_seq_len) for c in ctx.commits]
    exp["committed_rows"] = [list(c.accept_rows) for c in ctx.commits]
    exp["committed_tokens"] = [list(c.committed_tokens) for c in ctx.commits]
    if ctx.dspark:
        exp["correct_len"] = np.asarray(r["correct_len"]).astype(int).tolist()
        exp["commit_lens"] = np.asarray(r["commit_lens"]).astype(int).tolist()
        exp["out_tokens"] = np.asarray(r["out_tokens"]).astype(int).tolist()
    return exp
