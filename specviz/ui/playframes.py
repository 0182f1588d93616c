"""Player frames as pure functions of the one replay (no Streamlit, no second computation).

A frame states numbers (correct_len, the bonus, commit_lens, verdicts, probabilities). Each one
is read from the typed events of the numpy reference's trace (``specviz.steps``): the
SEMANTICS rules ran once, in the library, and the events carry their results. The page only
lays the frames out; a test builds the same frames in both languages and checks every number
against the reference (``tests/test_frame_truth.py``).

    views = dspark_frames(s, run, "en")   # one player.Frame per step of run.trace
"""
from __future__ import annotations

from specviz import captions, steps
from specviz.events import AcceptTest, Cap, Commit, Compare, Finalize, Terminal
from specviz.render import sampling_charts as sc
from specviz.ui import player

_TERMS = {"bonus": ("bonus", "bonus（奖励 token）"), "accepted": ("accepted", "已接受"), "rejected": ("rejected", "已拒绝")}


def _tr(lang: str, en: str, zh: str, **fmt) -> str:
    text = zh if lang == "zh" else en
    return text.format(**fmt) if fmt else text


def _term(lang: str, key: str) -> str:
    en, zh = _TERMS[key]
    return zh if lang == "zh" else en


def dspark_step_values(typed_seen) -> dict:
    """What the DSpark events seen so far have decided: raw / capped correct_len, the bonus, the
    commit (None until known). ``typed_seen``: the typed events of request 0 up to the step."""
    out = {"raw": None, "correct_len": None, "bonus": None, "commit_len": None, "new_seq_len": None, "output": None,
           "capped": False, "compared": {}}
    for ev in typed_seen:
        if isinstance(ev, Compare):
            out["compared"][ev.node] = ev
        elif isinstance(ev, Terminal):
            out["bonus"] = ev.token
        elif isinstance(ev, Commit):
            out["raw"] = out["correct_len"] = ev.k
        elif isinstance(ev, Cap):
            out["correct_len"], out["bonus"], out["capped"] = ev.capped, ev.bonus, True
        elif isinstance(ev, Finalize):
            out["correct_len"], out["bonus"] = ev.k, ev.bonus
            out["commit_len"], out["new_seq_len"], out["output"] = ev.commit_len, ev.new_seq_len, list(ev.output)
    return out


def dspark_frames(s, run, lang: str = "en") -> list:
    """Every step of the DSpark accept (request 0) as player frames, in ``lang``."""
    req = s.requests[0]
    vocab = list(s.vocab)
    T = len(req.chain)
    greedy = s.algorithm == "dspark_greedy"
    vlen = int(run.inputs["verify_lens"][0])
    seq_len = int(req.seq_len)
    typed = [e for e in steps.typed_events(run.trace.events) if e.request == 0]
    tests = {e.node: e for e in typed if isinstance(e, AcceptTest)}
    slot_names = ["anchor"] + [f"t={j}" for j in range(1, T)]
    tp_ids = [int(x) for x in run.inputs["target_predict"][0]] if greedy else None

    def word(v):
        return vocab[v] if 0 <= v < len(vocab) else str(v)

    def frame(k: int) -> player.Frame:
        seen = typed[:k]
        vals = dspark_step_values(seen)
        if greedy:
            walk = steps.walk_after(typed, k, T, 0, dspark=True)
            states = [walk.states.get(i, "accepted" if i == 0 else "pending") for i in range(T)]
            table = [["t", _tr(lang, "verify row", "Verify 行"), _tr(lang, "Target predicts after it", "Target 在其后的预测"),
                      _tr(lang, "next draft", "下一个 Draft"), _tr(lang, "match?", "匹配？")]]
            for t in range(T - 1):
                node = t + 1
                ev = vals["compared"].get(node)
                if ev is not None:
                    if ev.match and not ev.counted:
                        cell = (_tr(lang, "(match) ignored", "（匹配）忽略"), "discarded", _tr(lang, "after the first mismatch", "在第一次分歧之后"))
                    else:
                        cell = (_tr(lang, "match", "匹配") if ev.match else _tr(lang, "mismatch", "不匹配"),
                                "accepted" if ev.match else "rejected", "")
                else:
                    cell = ("?", "current" if t == len(vals["compared"]) else "pending", "")
                cut = vlen < T and node >= vlen
                table.append([str(t), req.chain[t], (word(tp_ids[t]), "compared" if ev is not None else "", f"target_predict[{t}]"),
                              (req.chain[node], "discarded" if cut else "",
                               _tr(lang, "outside the verify window", "在验证窗口之外") if cut else ""), cell])
        else:
            states = steps.scan_view(seen, T, chain=True, finish=False).states
            table = [["t", _tr(lang, "draft", "Draft"), "p", "q", "u", "u·q", _tr(lang, "verdict", "结果")]]
            tested = {e.node for e in seen if isinstance(e, AcceptTest)}
            for j in range(1, T):
                ev = tests.get(j)
                if ev is None:
                    table.append([str(j), req.chain[j], "", "", f"{req.coins[j - 1]:.3f}", "",
                                  (_tr(lang, "not reached", "未到达"), "discarded", "")])
                elif j in tested:
                    state = "accepted" if ev.accepted else "rejected"
                    table.append([str(j), req.chain[j], f"{ev.p:.3g}", f"{ev.q:.3g}", f"{ev.coin:.3f}",
                                  (f"{ev.u_times_q:.3g}", state, ""), (_term(lang, state), state, "")])
                else:
                    table.append([str(j), req.chain[j], f"{ev.p:.3g}", f"{ev.q:.3g}", f"{ev.coin:.3f}", "?", ("…", "pending", "")])
            if vals["capped"]:
                for row in table[1:]:
                    j = int(row[0])
                    if j > vals["correct_len"] and isinstance(row[-1], tuple) and row[-1][1] == "accepted":
                        row[-1] = (_tr(lang, "trimmed by the cap", "被窗口裁掉"), "discarded",
                                   _tr(lang, "accepted, but beyond verify_len − 1", "已接受，但超出 verify_len − 1"))
        bonus = word(vals["bonus"]) if vals["bonus"] is not None else None
        dot = sc.chain_dot(list(req.chain), states, bonus=bonus, bonus_caption=_term(lang, "bonus"), slot_names=slot_names)
        pend = ("—", "pending", _tr(lang, "known when the Accept finishes", "Accept 结束时才知道"))
        cl = vals["correct_len"]
        cl_chips = [(cl, "accepted", _tr(lang, "the leading run of matching drafts", "连续匹配的 Draft 前缀长度")
                     if not vals["capped"] else _tr(lang, "capped at verify_len − 1", "裁剪到 verify_len − 1"))] if cl is not None else [pend]
        if vals["capped"] and vals["raw"] != cl:
            cl_chips.append(f"({_tr(lang, 'uncapped', '未裁剪')} {vals['raw']})")
        commit = vals["commit_len"]
        rows = [player.Row("correct_len", cl_chips),
                player.Row("bonus", [(bonus, "bonus", "") if bonus is not None else pend]),
                player.Row("commit_lens", [(commit, "accepted", "correct_len + 1") if commit is not None else pend]),
                player.Row("new_seq_lens", [(vals["new_seq_len"], "accepted", f"prefix {seq_len} + commit_lens {commit}")
                                            if commit is not None else pend]),
                player.Row(_tr(lang, "output", "输出"),
                           [(word(x), "bonus" if j == len(vals["output"]) - 1 else "accepted", "") for j, x in enumerate(vals["output"])]
                           if vals["output"] is not None else [pend])]
        if vlen < T:
            rows.append(player.Row("verify_len", [(vlen, "compared", _tr(lang, "the verify window caps correct_len at verify_len − 1",
                                                                        "验证窗口把 correct_len 限制在 verify_len − 1"))]))
        caption = captions.plain(captions.caption(seen[-1] if k else None, s, lang))
        return player.Frame(dot=dot, caption=caption, rows=rows, table=table,
                            alt=_tr(lang, "the DSpark chain at step {k}", "第 {k} 步的 DSpark 链", k=k))

    return [frame(k) for k in range(len(typed) + 1)]
