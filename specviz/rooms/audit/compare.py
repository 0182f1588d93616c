"""Compare one claimed field with the reference run and explain the first wrong value.

``field_finding`` returns the first wrong value of one field as an AuditFinding with its one-sentence
rule, or None; the reference side (``Context``: what the rule sentences need about the reference run,
in English or 简体中文; ``expected_values``) is in ``specviz.rooms.audit.expected``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from specviz.rooms.audit.expected import Context
from specviz.rooms.audit.report import AuditFinding


def field_finding(ctx: Context, name: str, got, exp) -> AuditFinding | None:
    """Compare one field; return the first wrong value with its rule, or None."""
    s, bs, n, W, t = ctx.s, ctx.bs, ctx.n, ctx.W, ctx.t
    if name == "accept_index":
        return _accept_index_finding(ctx, got, exp)
    if name in ("accept_token_num", "correct_len", "accept_lens", "commit_lens", "bonus", "new_seq_lens"):
        for b in range(bs):
            if got[b] == exp[b]:
                continue
            c = ctx.commits[b]
            k = c.num_correct_drafts
            if name == "accept_token_num":
                reason = ctx.level_reason(b, k + 1 if k + 1 < W else k)
                rule = t(f"it counts accepted drafts only (the root and the bonus are not counted): {k}, because {reason}",
                         f"它只统计被接受的 Draft（root 与 bonus 都不计入）：{k}，因为{reason}")
                if got[b] == k + 1:
                    rule = t(f"that is accept_lens; accept_token_num counts accepted drafts only, k = accept_lens - 1 = {k}",
                             f"这是 accept_lens；accept_token_num 只统计被接受的 Draft，k = accept_lens - 1 = {k}")
            elif name == "correct_len":
                rule = _correct_len_rule(ctx, b, got[b])
            elif name == "accept_lens":
                rule = t(f"accept_lens is num_correct_drafts + 1 = {k} + 1 = {k + 1} (the accepted drafts plus the bonus)",
                         f"accept_lens = num_correct_drafts + 1 = {k} + 1 = {k + 1}（被接受的 Draft 加上 bonus）")
            elif name == "commit_lens":
                rule = t(f"commit_lens is correct_len + 1 = {k} + 1 = {k + 1}: the anchor plus the accepted drafts keep their KV",
                         f"commit_lens = correct_len + 1 = {k} + 1 = {k + 1}：anchor 与被接受的 Draft 保留 KV")
            elif name == "bonus":
                e = ctx.lab(exp[b])
                if ctx.dspark and s.algorithm == "dspark_greedy":
                    rule = t(f"the bonus is target_predict[correct_len = {k}] = {e}", f"bonus 是 target_predict[correct_len = {k}] = {e}")
                elif ctx.dspark:
                    rule = t(f"the bonus is the two-level gather predicts[accept_index[{b}][correct_len = {k}]] = {e}",
                             f"bonus 由两级 gather 得到：predicts[accept_index[{b}][correct_len = {k}]] = {e}")
                else:
                    rule = t(f"the bonus is the last emitted token, predicts at the last accepted row {c.accept_rows[-1]} = {e}, "
                             f"and it becomes the next root",
                             f"bonus 是最后一个输出 token，即最后一个被接受行 {c.accept_rows[-1]} 的 predicts = {e}，它将成为下一轮的 root")
                return AuditFinding(name, (b,), ctx.lab(exp[b]), ctx.lab(got[b]), rule, b, c.accept_nodes[-1], c.accept_rows[-1])
            else:
                rule = t(f"new_seq_lens = seq_len + accept_lens = {c.seq_len} + {k + 1} = {c.new_seq_len}: the bonus has no KV yet",
                         f"new_seq_lens = seq_len + accept_lens = {c.seq_len} + {k + 1} = {c.new_seq_len}：bonus 还没有 KV")
            return AuditFinding(name, (b,), exp[b], got[b], rule, b, None, None)
        return None
    if name == "predicts":
        return _predicts_finding(ctx, got, exp)
    if name == "accept_tokens":
        for b in range(bs):
            if len(got[b]) != len(exp[b]):
                return AuditFinding(name, (b,), len(exp[b]), len(got[b]),
                                    t(f"accept_tokens has W = {W} slots per request, like accept_index",
                                      f"accept_tokens 每个请求有 W = {W} 个位置，与 accept_index 相同"), b)
            for j, (g, e) in enumerate(zip(got[b], exp[b])):
                if g == e:
                    continue
                c = ctx.commits[b]
                if e == -1:
                    raw = ctx.res["predicts"].reshape(-1)[-1]
                    rule = t(f"slot {j} is beyond accept_lens = {c.accept_len}, so it is -1",
                             f"第 {j} 个位置超出 accept_lens = {c.accept_len}，所以是 -1")
                    if g == raw:
                        rule += t(f"; {ctx.lab(g)} is predicts[-1], the last element of the whole tensor: the gather went through "
                                  f"a -1 pad. Gather only the first accept_lens slots",
                                  f"；{ctx.lab(g)} 是 predicts[-1]，即整个张量的最后一个元素：gather 穿过了 -1 填充位。"
                                  f"只 gather 前 accept_lens 个位置")
                    return AuditFinding(name, (b, j), -1, g if g < 0 else ctx.lab(g), rule, b)
                row = c.accept_rows[j]
                return AuditFinding(name, (b, j), ctx.lab(e), ctx.lab(g) if g >= 0 else g,
                                    f"accept_tokens[{b}][{j}] = predicts[accept_index[{b}][{j}] = {row}] = {ctx.lab(e)}",
                                    b, c.accept_nodes[j], row)
        return None
    if name in ("outputs", "committed_rows", "committed_tokens"):
        for b in range(bs):
            g, e = list(got[b]), list(exp[b])
            if g == e:
                continue
            c = ctx.commits[b]
            j = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
            node = c.accept_nodes[j] if j < len(c.accept_nodes) else None
            row = c.accept_rows[j] if j < len(c.accept_rows) else None
            if name == "outputs":
                if g == list(c.committed_tokens):
                    rule = t(f"{ctx.toks(g)} are the committed input tokens (root + accepted drafts); the outputs are the "
                             f"predictions at those rows, shifted by one position: {ctx.toks(e)}",
                             f"{ctx.toks(g)} 是被提交的输入 token（root + 被接受的 Draft）；输出是这些行的预测，"
                             f"错开一个位置：{ctx.toks(e)}")
                elif len(e) > 1 and g == e[1:]:
                    rule = t(f"the first output {ctx.lab(e[0])} is missing: it is the root's prediction (predicts at row "
                             f"{c.accept_rows[0]}), so the outputs are {ctx.toks(e)}",
                             f"缺少第一个输出 {ctx.lab(e[0])}：它是 root 的预测（第 {c.accept_rows[0]} 行的 predicts），"
                             f"所以输出是 {ctx.toks(e)}")
                elif len(g) == len(e) - 1 and g == e[:-1]:
                    rule = t(f"the bonus {ctx.lab(e[-1])} is missing: accept_lens = {c.accept_len} tokens are emitted, the "
                             f"accepted drafts plus the bonus",
                             f"缺少 bonus {ctx.lab(e[-1])}：共输出 accept_lens = {c.accept_len} 个 token，即被接受的 Draft 加上 bonus")
                elif len(g) == len(e) and sum(x != y for x, y in zip(g, e)) == 1:
                    # one wrong token: name it, with the row it comes from
                    rule = t(f"outputs[{b}][{j}] is predicts at the accepted row {row}: {ctx.lab(e[j])}, the token emitted after "
                             f"row {row} ({ctx.lab(c.committed_tokens[j])})",
                             f"outputs[{b}][{j}] 是被接受的第 {row} 行的 predicts：{ctx.lab(e[j])}，即第 {row} 行"
                             f"（{ctx.lab(c.committed_tokens[j])}）之后输出的 token")
                    return AuditFinding(name, (b, j), ctx.lab(e[j]), ctx.lab(g[j]) if isinstance(g[j], (int, np.integer)) else g[j],
                                        rule, b, node, row)
                else:
                    rule = t(f"the outputs are predicts at the accepted rows {ctx.rows_text(c.accept_rows)}: the accepted drafts "
                             f"then the bonus, {ctx.toks(e)}",
                             f"输出是被接受行 {ctx.rows_text(c.accept_rows)} 的 predicts：先是被接受的 Draft，再是 bonus，{ctx.toks(e)}")
                return AuditFinding(name, (b,), ctx.toks(e), ctx.toks(g), rule, b, node, row)
            if name == "committed_tokens":
                if g == list(c.output_tokens):
                    nr = ctx.lab(c.next_root)
                    rule = t(f"{ctx.toks(g)} are the output tokens; KV is kept for the input rows root + accepted drafts "
                             f"{ctx.toks(e)}: the root's KV is written now, the bonus {nr} gets its KV next round",
                             f"{ctx.toks(g)} 是输出 token；保留 KV 的是输入行 root + 被接受的 Draft {ctx.toks(e)}："
                             f"root 的 KV 在本轮写入，bonus {nr} 在下一轮才有 KV")
                else:
                    rule = t(f"KV is kept for the verify rows of the root and the accepted drafts: {ctx.toks(e)}",
                             f"保留 KV 的是 root 与被接受 Draft 的验证行：{ctx.toks(e)}")
                return AuditFinding(name, (b,), ctx.toks(e), ctx.toks(g), rule, b, node, row)
            # committed_rows
            if g == [r - b * n for r in e] and b > 0:
                rule = t(f"these are request {b}'s local node ids; rows are global, b*n + i = {b}*{n} + i: {ctx.rows_text(e)}",
                         f"这些是请求 {b} 的局部节点号；行号是全局的，b*n + i = {b}*{n} + i：{ctx.rows_text(e)}")
            elif g == e[1:]:
                rule = t(f"the root's row {e[0]} is missing: the root's KV does not exist yet, it is written in this verify pass",
                         f"缺少 root 的第 {e[0]} 行：root 的 KV 此前并不存在，它在本轮 Verify 中写入")
            else:
                rule = t(f"KV is kept for the root row and the accepted drafts' rows {ctx.rows_text(e)}; every other row is discarded",
                         f"保留 KV 的是 root 行与被接受 Draft 的行 {ctx.rows_text(e)}；其余行都被丢弃")
            return AuditFinding(name, (b,), e, g, rule, b, node, row)
        return None
    if name == "out_tokens":
        for b in range(bs):
            for j, (g, e) in enumerate(zip(got[b], exp[b])):
                if g != e:
                    k = ctx.commits[b].num_correct_drafts
                    if j == k:
                        rule = t(f"column correct_len = {k} holds the bonus {ctx.lab(e)}", f"第 correct_len = {k} 列存放 bonus {ctx.lab(e)}")
                    elif j < k:
                        rule = t(f"columns before correct_len = {k} hold the accepted drafts", f"correct_len = {k} 之前的列存放被接受的 Draft")
                    elif j == n - 1:
                        rule = t("the last column starts as 0 (out[:, gamma] = 0) and only the bonus is scattered",
                                 "最后一列初始为 0（out[:, gamma] = 0），只有 bonus 会被 scatter 进来")
                    else:
                        rule = t("columns after correct_len keep the stale draft tokens (only the first commit_lens entries are output)",
                                 "correct_len 之后的列保留旧的 Draft token（只有前 commit_lens 个是输出）")
                    return AuditFinding(name, (b, j), e, g, rule, b, j, b * n + j)
            if len(got[b]) != len(exp[b]):
                return AuditFinding(name, (b,), len(exp[b]), len(got[b]),
                                    t(f"out_tokens has T = {n} columns per request", f"out_tokens 每个请求有 T = {n} 列"), b)
        return None
    raise AssertionError(name)


def _accept_index_finding(ctx: Context, got, exp) -> AuditFinding | None:
    n, t = ctx.n, ctx.t
    for b in range(ctx.bs):
        g, e = list(got[b]), list(exp[b])
        c = ctx.commits[b]
        valid = c.accept_rows
        root = b * n
        g_valid = [x for x in g if x != -1]
        # Whole-row diagnoses first: they explain the bug better than the first differing slot.
        if g != e:
            if g_valid == valid[1:] and len(valid) > 1:
                return AuditFinding("accept_index", (b, 0), root, g[0] if g else None,
                                    t(f"accept_index lists draft rows {ctx.rows_text(valid[1:])} only: the root's row {root} comes "
                                      f"first, because the root's prediction is the first output",
                                      f"accept_index 只列出了 Draft 行 {ctx.rows_text(valid[1:])}：root 的第 {root} 行必须排在最前，"
                                      f"因为 root 的预测就是第一个输出"), b, 0, root)
            if b > 0 and g_valid == [r - root for r in valid]:
                return AuditFinding("accept_index", (b, 0), root, g[0],
                                    t(f"accept_index[{b}] holds local node ids {ctx.rows_text(g_valid)}: accept_index holds global "
                                      f"rows b*n + i = {b}*{n} + i, so request {b}'s rows are {ctx.rows_text(valid)}",
                                      f"accept_index[{b}] 存的是局部节点号 {ctx.rows_text(g_valid)}：accept_index 存全局行号 "
                                      f"b*n + i = {b}*{n} + i，所以请求 {b} 的行是 {ctx.rows_text(valid)}"), b, 0, root)
        if len(g) != len(e) and not (ctx.s.algorithm == "dspark_sampling"):
            return AuditFinding("accept_index", (b,), len(e), len(g),
                                t(f"accept_index has W = {len(e)} slots per request (root + up to {len(e) - 1} accepted drafts), "
                                  f"-1 padded",
                                  f"accept_index 每个请求有 W = {len(e)} 个位置（root + 最多 {len(e) - 1} 个被接受的 Draft），用 -1 填充"), b)
        for j in range(min(len(g), len(e))):
            if ctx.s.algorithm == "dspark_sampling" and j >= len(valid):
                break  # SGLang leaves these entries uninitialised
            if g[j] == e[j]:
                continue
            if j == 0:
                rule = t(f"slot 0 is always the root's global row b*n = {root}: the root's prediction is the first output",
                         f"第 0 个位置总是 root 的全局行号 b*n = {root}：root 的预测就是第一个输出")
                return AuditFinding("accept_index", (b, 0), e[0], g[0], rule, b, 0, root)
            if e[j] == -1:
                rule = t(f"slots after the last accepted node are padded with -1: {ctx.level_reason(b, j)}",
                         f"最后一个被接受节点之后的位置用 -1 填充：{ctx.level_reason(b, j)}")
                return _with_claim(AuditFinding("accept_index", (b, j), -1, g[j], rule, b, c.accept_nodes[-1],
                                                c.accept_rows[-1]), g[j], root, n)
            node = e[j] - root
            if g[j] == node and b > 0:
                rule = t(f"{g[j]} is a local node id; accept_index holds global rows b*n + i = {b}*{n} + {node} = {e[j]}",
                         f"{g[j]} 是局部节点号；accept_index 存全局行号 b*n + i = {b}*{n} + {node} = {e[j]}")
            else:
                rule = t(f"{ctx.level_reason(b, j)}, so slot {j} holds its global row {e[j]}",
                         f"{ctx.level_reason(b, j)}，所以第 {j} 个位置是它的全局行号 {e[j]}")
            return _with_claim(AuditFinding("accept_index", (b, j), e[j], g[j], rule, b, node, e[j]), g[j], root, n)
    return None


def _with_claim(f: AuditFinding, claimed_row, root: int, n: int) -> AuditFinding:
    """f with the node / row the claimed value points at (when it is a row of that request)."""
    if isinstance(claimed_row, (int, np.integer)) and root <= int(claimed_row) < root + n:
        return dataclasses.replace(f, claimed_node=int(claimed_row) - root, claimed_row=int(claimed_row))
    return f


def _predicts_finding(ctx: Context, got, exp) -> AuditFinding | None:
    t = ctx.t
    for b in range(ctx.bs):
        c = ctx.commits[b]
        for j, row in enumerate(c.accept_rows):
            g, e = got[row], exp[row]
            if g == e:
                continue
            node = c.accept_nodes[j]
            own = ctx.lab(ctx.cand[b, node])
            last = j == len(c.accept_rows) - 1
            gl = f"{g}{f' ({ctx.lab(g)})' if 0 <= g < len(ctx.s.vocab) else ''}"
            if last:
                rule = t(f"predicts[{row}] is {gl}: the bonus {ctx.lab(e)} is written at the last accepted row {row} ({own})",
                         f"predicts[{row}] 是 {gl}：bonus {ctx.lab(e)} 应写在最后一个被接受的第 {row} 行（{own}）")
            elif ctx.lab(g) == own and 0 <= g < len(ctx.s.vocab):
                rule = t(f"{own} is row {row}'s own input token: predicts[g] is the token emitted AFTER row g, "
                         f"i.e. the next accepted node's token {ctx.lab(e)} (the one-position shift)",
                         f"{own} 是第 {row} 行自己的输入 token：predicts[g] 是第 g 行之后输出的 token，"
                         f"即下一个被接受节点的 token {ctx.lab(e)}（错开一个位置）")
            else:
                rule = t(f"predicts[{row}] is the token emitted after row {row}: the next accepted node's token {ctx.lab(e)}",
                         f"predicts[{row}] 是第 {row} 行之后输出的 token：下一个被接受节点的 token {ctx.lab(e)}")
            return AuditFinding("predicts", (row,), ctx.lab(e), ctx.lab(g) if g >= 0 else g, rule, b, node, row)
    return None


def _correct_len_rule(ctx: Context, b: int, got: int) -> str:
    t = ctx.t
    cand = ctx.cand[b]
    k = ctx.commits[b].num_correct_drafts
    if ctx.s.algorithm == "dspark_greedy":
        tp = ctx.run.inputs["target_predict"][b]
        match = [bool(cand[i + 1] == tp[i]) for i in range(len(cand) - 1)]
        raw = int(ctx.res.get("raw_correct_len", ctx.res["correct_len"])[b])
        first_miss = match.index(False) + 1 if False in match else None
        if got == sum(match) and got != k:
            return t(f"correct_len is the length of the LEADING run of matches; {got} counts every match, but the first "
                     f"mismatch is at draft {first_miss}, so the later matches are ignored: {k}",
                     f"correct_len 是从头开始连续匹配的长度；{got} 把所有匹配都算上了，但第一个不匹配出现在 Draft {first_miss}，"
                     f"之后的匹配都被忽略：{k}")
        if raw != k:
            return t(f"the window cap min(correct_len, verify_len - 1) = min({raw}, {k}) cuts it to {k}",
                     f"窗口上限 min(correct_len, verify_len - 1) = min({raw}, {k}) 把它截为 {k}")
        if first_miss is not None:
            d, tg = ctx.lab(cand[first_miss]), ctx.lab(tp[first_miss - 1])
            return t(f"correct_len is the leading run of matches candidates[t+1] == target_predict[t]: draft {first_miss} ({d}) "
                     f"differs from target_predict[{first_miss - 1}] = {tg}, so {k}",
                     f"correct_len 是 candidates[t+1] == target_predict[t] 从头开始连续成立的长度：Draft {first_miss}（{d}）"
                     f"与 target_predict[{first_miss - 1}] = {tg} 不同，所以是 {k}")
        return t(f"correct_len is the leading run of matches candidates[t+1] == target_predict[t]: every draft matches, {k}",
                 f"correct_len 是 candidates[t+1] == target_predict[t] 从头开始连续成立的长度：所有 Draft 都匹配，{k}")
    reason = ctx.level_reason(b, k + 1 if k + 1 < ctx.n else k)
    return t(f"correct_len = accept_token_num of the chain sampler: {k}, because {reason}",
             f"correct_len 等于链式采样的 accept_token_num：{k}，因为{reason}")
