"""Sentences that name tokens or rows, computed from a live result (never from preset text).

Pages, the CLI and the export call these with the scenario and the engine's commit view, so a
caption can never describe another walk than the one drawn beside it. ``lang`` is "en" or "zh".
"""
from __future__ import annotations

from specviz.inputs.scenario import Scenario
from specviz.replay.wording import event_warning, residual_source


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def _plain_label(text: str) -> str:
    return text


def toks(s: Scenario, ids, esc=_plain_label) -> str:
    return " ".join(esc(s.label(int(t))) for t in ids)


def walk_summary(s: Scenario, commit, lang: str = "en", esc=_plain_label) -> str:
    """"R → A → C, output A C X": the committed path and what it emits. ``esc`` escapes each label
    for where the text goes (e.g. ``safety.md_text`` for Streamlit markdown); plain by default."""
    path = " → ".join(esc(s.label(int(t))) for t in commit.committed_tokens)
    return _t(lang, f"{path}, output {toks(s, commit.output_tokens, esc)}", f"{path}，输出 {toks(s, commit.output_tokens, esc)}")


def shift_sentence(s: Scenario, commit, lang: str = "en", esc=_plain_label) -> str:
    """The one-position shift of this walk: which input row emits which token, which rows keep KV."""
    ins = [esc(s.label(int(t))) for t in commit.committed_tokens]
    outs = [esc(s.label(int(t))) for t in commit.output_tokens]
    en = ", ".join(f"row {i} emits {o}" for i, o in zip(ins, outs))
    zh = "，".join(f"{i} 行产生 {o}" for i, o in zip(ins, outs))
    kv = ", ".join(ins)
    return _t(lang,
              f"The one-position shift: input {en}; {outs[-1]} is the bonus. Only the rows fed through the model this "
              f"round ({kv}) have KV.",
              f"错开一个位置：输入 {zh}；{outs[-1]} 是 bonus。只有本轮送进模型的行（{'、'.join(ins)}）有 KV。")


def outcome_sentence(s: Scenario, commit, lang: str = "en", esc=_plain_label) -> str:
    """What the Overview says about the live walk: accept_index, outputs, KV rows, bonus, discarded."""
    rows = "[" + ", ".join(str(r) for r in commit.accept_rows) + "]"
    disc = ", ".join(esc(s.label(int(s.tree(commit.request).tokens[i]))) for i in commit.discarded_nodes)
    outs = toks(s, commit.output_tokens, esc)
    kv = ", ".join(esc(s.label(int(t))) for t in commit.committed_tokens)
    bonus = esc(s.label(int(commit.next_root)))
    en = (f"This walk: accept_index = {rows}; the input rows {kv} keep their KV and give the outputs {outs}. "
          f"{bonus} is the bonus and the next root" + (f"; {disc} discarded." if disc else "."))
    zh = (f"本次遍历：accept_index = {rows}；输入行 {kv} 保留 KV，并给出输出 {outs}。"
          f"{bonus} 是 bonus，也是下一轮的根" + (f"；{disc} 被丢弃。" if disc else "。"))
    return _t(lang, en, zh)


# -- the one step caption ------------------------------------------------------------------------------
# Pages, the CLI, the export and the client-side player all caption a step with ``caption``.
# Markdown bold (**x**) marks the key value; ``plain`` strips it for text outputs.

def plain(text: str) -> str:
    return text.replace("**", "")


def _accepted(lang):
    return _t(lang, "accepted", "已接受")


def _rejected(lang):
    return _t(lang, "rejected", "已拒绝")


def _bonus(lang):
    return _t(lang, "bonus", "bonus（奖励 token）")


def apart(a: float, b: float, digits: int = 3, kind: str = "f") -> tuple:
    """``a`` and ``b`` as text (format ``.{digits}{kind}``), with more digits when needed so that two
    different numbers never read the same (a coin a hair below a threshold must not print as equal to it)."""
    for d in range(digits, 10):
        x, y = f"{a:.{d}{kind}}", f"{b:.{d}{kind}}"
        if a == b or x != y:
            return x, y
    return repr(a), repr(b)


def caption(ev, s: Scenario, lang: str = "en", esc=_plain_label) -> str:
    """One sentence for a typed step event (``specviz.replay.steps``) of scenario ``s``; None = before the walk.

    Every token and row named comes from the event (the live run), never from preset text. ``esc``
    escapes each token label for the destination (``safety.md_text`` on a page); plain by default."""
    from specviz import algorithms
    from specviz.replay import events as E

    alg = algorithms.get(s.algorithm)

    def L(tok):
        return esc(s.label(tok))

    z = lang == "zh"

    def t(en, zh, **fmt):
        return (zh if z else en).format(**fmt)

    if ev is None:
        if alg.family == "dspark":
            return t("Start: the window R + drafts has been verified; now count the leading matches.",
                     "开始：窗口（anchor + Draft）已完成 Verify；现在数前缀匹配。")
        if alg.key == "greedy":
            return t("Before the walk: accept_index is all -1 and predicts hold predicts_init.",
                     "开始之前：accept_index 全为 -1，predicts 为初始值 predicts_init。")
        if alg.key == "target_only":
            return t("Start: nothing is decided yet. The root's children are scanned first with coin u[0].",
                     "开始：尚未判定。先用随机数 u[0] 扫描 root 的子节点。")
        return t("Start: the chain R → drafts is in the verify batch; nothing is decided yet.",
                 "开始：链 R → Draft 已进入 Verify batch，尚未做任何判定。")
    n = s.n
    tree = s.tree(ev.request)
    toks_ = tree.tokens

    def tok(node):
        return L(toks_[node]) if node is not None and 0 <= node < len(toks_) else ""

    def row(node):
        return ev.request * n + node

    if isinstance(ev, E.Start):
        if alg.key == "greedy":
            return t("Start at the root {tok} (row {row}): accept_index[0] = {row}. The root is always kept.",
                     "从根节点 {tok}（第 {row} 行）开始：accept_index[0] = {row}。根节点总是保留。", tok=tok(0), row=ev.row)
        if alg.key == "target_only" and ev.coin is not None:
            return t("accept_index[0] = row {r} (the root); level 1 uses coin u[0] = {c:.3f}.",
                     "accept_index[0] = 第 {r} 行（root）；第 1 层使用随机数 u[0] = {c:.3f}。", r=ev.row, c=ev.coin)
        return t("accept_index[0] = row {r}: the root is always kept.", "accept_index[0] = 第 {r} 行：root 总会保留。", r=ev.row)
    if isinstance(ev, E.Visit):
        if alg.key == "greedy":
            r = ev.row if ev.row is not None else row(ev.node)
            if ev.via_sibling:
                return t("Look at node {node} ({tok}, row {row}), reached through retrieve_next_sibling.",
                         "查看节点 {node}（{tok}，第 {row} 行），经由 retrieve_next_sibling 到达。", node=ev.node, tok=tok(ev.node), row=r)
            return t("Look at node {node} ({tok}, row {row}), the first child (retrieve_next_token) of the last accepted node.",
                     "查看节点 {node}（{tok}，第 {row} 行）：上一个被接受节点的第一个子节点（retrieve_next_token）。",
                     node=ev.node, tok=tok(ev.node), row=r)
        if alg.is_tree:
            return t("Visit node {i} (**{t}**), a child of node {p}.", "访问节点 {i}（**{t}**），它是节点 {p} 的子节点。",
                     i=ev.node, t=tok(ev.node), p=tree.parents[ev.node])
        return t("Look at slot {s}: the Draft proposed **{t}**.", "查看位置 {s}：Draft 提出 **{t}**。", s=ev.node, t=tok(ev.node))
    if isinstance(ev, E.Compare):
        if alg.family == "dspark":
            if ev.note:
                return t("Row {r}: draft {t} vs target {x}: {m} — but it comes after a mismatch, so it is **ignored**.",
                         "第 {r} 行：Draft {t} 对比 Target {x}：{m}——但它位于分歧之后，因此被**忽略**。",
                         r=ev.target_row, t=L(ev.token), x=L(ev.target), m="✔" if ev.match else "✘")
            return t("Row {r}: is draft {t} (row {n}) equal to the target's prediction {x}? **{m}**",
                     "第 {r} 行：Draft {t}（第 {n} 行）是否等于 Target 预测 {x}？**{m}**",
                     r=ev.target_row, n=ev.node, t=L(ev.token), x=L(ev.target),
                     m=t("yes: counted", "是：计入") if ev.counted else t("no: the run stops", "否：停止计数"))
        if ev.match:
            return t("Compare {tok} with target_predict at row {trow} = {target}: they match.",
                     "比较 {tok} 与第 {trow} 行的 target_predict = {target}：一致。", tok=L(ev.token), trow=ev.target_row, target=L(ev.target))
        return t("Compare {tok} with target_predict at row {trow} = {target}: no match.",
                 "比较 {tok} 与第 {trow} 行的 target_predict = {target}：不一致。", tok=L(ev.token), trow=ev.target_row, target=L(ev.target))
    if isinstance(ev, E.AcceptTest):
        v = _accepted(lang) if ev.accepted else _rejected(lang)
        if ev.q is not None:  # chain rejection: (0.5.23: 0 < q <= 1 and) u·q < p; accept_prob from the reference
            if ev.q_valid is False:  # 0.5.23 rejects an invalid q before the coin is looked at
                return t("q = {q:.3f} fails SGLang 0.5.23's rule 0 < q ≤ 1, so the proposal is **{v}** whatever the coin "
                         "(accept probability {a:.3f}); u·q < p is not what decides it.",
                         "q = {q:.3f} 不满足 SGLang 0.5.23 的条件 0 < q ≤ 1，所以无论随机数是多少都**{v}**"
                         "（接受概率 {a:.3f}）；决定结果的不是 u·q < p。",
                         q=ev.q, v=v, a=ev.accept_prob)
            cmp = "<" if ev.u_times_q < ev.p else "≥"
            if ev.q > 0:
                why = t("accept probability min(1, p/q) = {a:.3f}", "接受概率 min(1, p/q) = {a:.3f}", a=ev.accept_prob)
            else:  # earlier releases: q = 0 (or below) makes u·q = 0, so p alone decides
                why = t("q = {q:.3f}: earlier releases test u·q < p alone, so every coin gives the same verdict; accept probability {a:.3f}",
                        "q = {q:.3f}：更早的版本只检验 u·q < p，所以任何随机数结果都相同；接受概率 {a:.3f}", q=ev.q, a=ev.accept_prob)
            uq, pp = apart(ev.u_times_q, ev.p, 4)
            return t("Test u·q < p: {u:.3f} × {q:.3f} = {uq} {cmp} p = {p} → **{v}** ({why}).",
                     "检验 u·q < p：{u:.3f} × {q:.3f} = {uq} {cmp} p = {p} → **{v}**（{why}）。",
                     u=ev.coin, q=ev.q, uq=uq, p=pp, cmp=cmp, v=v, why=why)
        # In the kernel's order (SEMANTICS §6.1): 0.5.23's p > 0 guard, then the coin test, then threshold_single.
        new = s.semantics == "0.5.23"
        op = "<" if new else "≤"
        c, bnd = apart(ev.coin, ev.bound)
        test = t("coin {c} {op} prob_acc / threshold_acc = {b}", "coin {c} {op} prob_acc / threshold_acc = {b}", c=c, op=op, b=bnd)
        if new and ev.p <= 0:
            return t("prob_acc = {a:.3f}; p = 0 fails 0.5.23's p > 0 guard, which is tested first ({x} is not looked at) → **{v}**",
                     "prob_acc = {a:.3f}；p = 0 未通过 0.5.23 最先检验的 p > 0 检查（不再看 {x}）→ **{v}**",
                     a=ev.prob_acc, x=test, v=v)
        coin_ok = ev.coin < ev.bound if new else ev.coin <= ev.bound
        if coin_ok:
            return t("prob_acc = {a:.3f}; {x}? yes → **{v}**", "prob_acc = {a:.3f}；{x}？是 → **{v}**", a=ev.prob_acc, x=test, v=v)
        pp, ts = apart(ev.p, s.threshold_single)
        return t("prob_acc = {a:.3f}; {x}? no; p = {p} {cmp} threshold_single = {t} → **{v}**",
                 "prob_acc = {a:.3f}；{x}？否；p = {p} {cmp} threshold_single = {t} → **{v}**",
                 a=ev.prob_acc, x=test, p=pp, cmp="≥" if ev.single_fired else "<", t=ts, v=v)
    if isinstance(ev, E.Accept):
        if alg.key == "greedy":
            return t("Accept node {node} ({tok}, row {row}): predicts[{prow}] = {tok}, accept_index[{k}] = {row}.",
                     "接受节点 {node}（{tok}，第 {row} 行）：predicts[{prow}] = {tok}，accept_index[{k}] = {row}。",
                     node=ev.node, tok=tok(ev.node), row=ev.row, prow=ev.predicts_row if ev.predicts_row is not None else "?", k=ev.k)
        if alg.key == "target_only":
            return t("Accepted: predicts[row {p}] = {t}, accept_index[{k}] = row {r}; the next level uses coin u[{i}] = {c:.3f} and a fresh prob_acc.",
                     "接受：predicts[第 {p} 行] = {t}，accept_index[{k}] = 第 {r} 行；下一层使用随机数 u[{i}] = {c:.3f}，prob_acc 清零。",
                     p=ev.predicts_row if ev.predicts_row is not None else tree.parents[ev.node], t=L(ev.token), k=ev.k, r=ev.row,
                     i=ev.node, c=ev.next_coin if ev.next_coin is not None else float("nan"))
        return t("Accepted: predicts[row {r0}] = {t}; accept_index[{k}] = row {r}.",
                 "接受：predicts[第 {r0} 行] = {t}；accept_index[{k}] = 第 {r} 行。",
                 r0=ev.predicts_row if ev.predicts_row is not None else ev.row - 1, t=L(ev.token), k=ev.k, r=ev.row)
    if isinstance(ev, E.Reject):
        if ev.target is not None:
            return t("{tok} ≠ {target}: node {node} is rejected.", "{tok} ≠ {target}：节点 {node} 被拒绝。",
                     tok=L(ev.token), target=L(ev.target), node=ev.node)
        if alg.key == "target_only":
            return t("Rejected: its target mass p = {p:.3f} is written into the work buffer draft_probs[row {r}][{t}].",
                     "拒绝：其 Target 质量 p = {p:.3f} 写入工作缓冲区 draft_probs[第 {r} 行][{t}]。",
                     p=ev.p, r=row(tree.parents[ev.node]), t=L(ev.token))
        return t("Rejected: the chain stops here; later slots are discarded.", "拒绝：链在此停止，后续位置全部丢弃。")
    if isinstance(ev, E.NextSibling):
        if ev.node is None:
            return t("No next sibling is left (retrieve_next_sibling = -1).", "没有下一个兄弟节点了（retrieve_next_sibling = -1）。")
        return t("Move to the next sibling, node {node}.", "移到下一个兄弟节点：节点 {node}。", node=ev.node)
    if isinstance(ev, E.NoChild):
        if ev.reason and alg.key == "greedy":
            return t("No child of node {node} matches the target: the walk stops.", "节点 {node} 的子节点都与目标不一致：遍历结束。", node=ev.node)
        if alg.key == "greedy":
            return t("Node {node} has no children: the walk stops.", "节点 {node} 没有子节点：遍历结束。", node=ev.node)
        return t("Node {i} has no (more) children to try: the walk stops.", "节点 {i} 没有（更多）可尝试的子节点：遍历停止。", i=ev.node)
    if isinstance(ev, E.DepthLimit):
        if alg.key == "greedy":
            return t("{k} = W-1 drafts accepted: the depth limit ends the walk.", "已接受 {k} = W-1 个草稿：达到深度上限，遍历结束。", k=ev.k)
        if alg.is_tree:
            return t("W − 1 = {k} drafts accepted: the depth limit; the bonus comes from plain p.",
                     "已接受 W − 1 = {k} 个 Draft：达到深度上限；bonus 直接从 p 采样。", k=ev.k)
        return t("Every draft was accepted: the bonus comes from plain p of the last row.", "全部 Draft 被接受：bonus 直接从最后一行的 p 采样。")
    if isinstance(ev, E.Residual):
        src = residual_source(ev.code, lang, fallback=esc(ev.source))  # worded from the event's code, in this language
        if alg.key == "target_only" and ev.node is not None:
            return t("Terminal distribution at node {i}: {src}.", "节点 {i} 处的终止分布：{src}。", i=ev.node, src=src)
        return t("Terminal distribution: {src}.", "终止分布：{src}。", src=src)
    if isinstance(ev, E.Terminal):
        if alg.decision == "greedy" and alg.family == "dspark":
            if ev.provisional:
                return t("AcceptGreedy: bonus = target_predict[{r}] = {t}, at the uncapped length; the verify window cap comes next.",
                         "AcceptGreedy：bonus = target_predict[{r}] = {t}（未裁剪的长度）；接下来是验证窗口的裁剪。", r=ev.row, t=L(ev.token))
            return t("bonus = target_predict[{r}] = **{t}**.", "bonus = target_predict[{r}] = **{t}**。", r=ev.row, t=L(ev.token))
        if ev.provisional and ev.coin is not None:
            return t("u_final = {c:.3f} lands on {t}: predicts[row {r}] = {t}, at the uncapped length; the verify window cap comes next.",
                     "u_final = {c:.3f} 落在 {t}：predicts[第 {r} 行] = {t}（未裁剪的长度）；接下来是验证窗口的裁剪。",
                     c=ev.coin, t=L(ev.token), r=ev.row)
        if alg.decision == "greedy":
            return t("Bonus: predicts[{row}] = target_predict[{row}] = {tok}. It is the next root; it has no KV yet.",
                     "bonus：predicts[{row}] = target_predict[{row}] = {tok}。它是下一轮的根，还没有 KV。", row=ev.row, tok=L(ev.token))
        if ev.coin is None:
            return t("u_final lands on **{t}**.", "u_final 落在 **{t}**。", t=L(ev.token))
        return t("u_final = {c:.3f} lands on **{t}**: predicts[row {r}] = {t} (the {b}).",
                 "u_final = {c:.3f} 落在 **{t}**：predicts[第 {r} 行] = {t}，即 {b}。", c=ev.coin, t=L(ev.token), r=ev.row, b=_bonus(lang))
    if isinstance(ev, E.Commit):
        if alg.family == "dspark":
            if alg.decision == "greedy":
                return t("AcceptGreedy: correct_len = {k} (the leading run of matching drafts).",
                         "AcceptGreedy：correct_len = {k}（连续匹配的 Draft 前缀长度）。", k=ev.k)
            return t("The chain sampler: correct_len = accept_token_num = {k}.",
                     "链式采样器：correct_len = accept_token_num = {k}。", k=ev.k)
        if alg.key == "greedy":
            return t("accept_token_num = {k} (num_correct_drafts); accept_lens = {k1}. The rows in accept_index keep their KV.",
                     "accept_token_num = {k}（num_correct_drafts）；accept_lens = {k1}。accept_index 中的行保留 KV。", k=ev.k, k1=ev.k + 1)
        return t("accept_token_num = {k}; accept_lens = {a}.", "accept_token_num = {k}；accept_lens = {a}。", k=ev.k, a=ev.accept_len)
    if isinstance(ev, E.Cap):
        if ev.greedy:
            src = t("the bonus is re-read: target_predict[{c}] = **{b}**", "bonus 重新读取：target_predict[{c}] = **{b}**",
                    c=ev.capped, b=L(ev.bonus))
        else:
            src = t("the two-level gather at the capped length: bonus = predicts[accept_index[{c}]] = predicts[{g}] = **{b}**",
                    "在裁剪后的长度上做两级 gather：bonus = predicts[accept_index[{c}]] = predicts[{g}] = **{b}**",
                    c=ev.capped, g=ev.gather_row, b=L(ev.bonus))
        return t("CapCorrectLen: verify_len = {v}, so correct_len = min({r}, {v} − 1) = **{c}**, cap_trim_lens = {x}; {src}.",
                 "CapCorrectLen：verify_len = {v}，所以 correct_len = min({r}, {v} − 1) = **{c}**，cap_trim_lens = {x}；{src}。",
                 v=ev.verify_len, r=ev.raw, c=ev.capped, x=ev.trim, src=src)
    if isinstance(ev, E.Finalize):
        if not ev.greedy:
            gather = t("bonus = predicts[accept_index[{k}]] = predicts[{g}] = {b}; ", "bonus = predicts[accept_index[{k}]] = predicts[{g}] = {b}；",
                       k=ev.k, g=ev.gather_row, b=L(ev.bonus))
        else:
            gather = ""
        return t("{g}commit_lens = correct_len + 1 = **{a}**; new_seq_lens = {p} + {a} = {n}; rows 0..{last} keep their KV.",
                 "{g}commit_lens = correct_len + 1 = **{a}**；new_seq_lens = {p} + {a} = {n}；第 0..{last} 行保留 KV。",
                 g=gather, a=ev.commit_len, p=ev.prefix, n=ev.new_seq_len, last=ev.commit_len - 1)
    if isinstance(ev, E.Warning_):
        return ("注意：" if z else "Note: ") + event_warning(ev, s, lang, esc)
    return getattr(ev, "kind", type(ev).__name__)
