"""Player frames as pure functions of the one replay (no Streamlit, no second computation).

A frame states numbers (correct_len, the bonus, commit_lens, verdicts, probabilities). Each one
is read from the typed events of the numpy reference's trace (``specviz.replay.steps``): the
SEMANTICS rules ran once, in the library, and the events carry their results. The page only
lays the frames out; a test builds the same frames in both languages and checks every number
against the reference (``tests/test_frame_truth.py``).

    views = dspark_frames(s, run, "en")   # one player.Frame per step of run.trace
"""
from __future__ import annotations

from specviz import algorithms
from specviz.replay import captions, player, sibling_scan, steps
from specviz.replay.events import AcceptTest, Cap, Commit, Compare, Finalize, Residual, Terminal
from specviz.replay.frames import replay
from specviz.render import sampling_charts as sc
from specviz.render.tree import tree_dot

_TERMS = {"bonus": ("bonus", "bonus（奖励 token）"), "accepted": ("accepted", "已接受"), "rejected": ("rejected", "已拒绝"),
          "root": ("root", "根节点")}


def _tr(lang: str, en: str, zh: str, **fmt) -> str:
    text = zh if lang == "zh" else en
    return text.format(**fmt) if fmt else text


def _term(lang: str, key: str) -> str:
    return _tr(lang, *_TERMS[key])


def _word(vocab: list, v: int) -> str:
    return vocab[v] if 0 <= v < len(vocab) else str(v)


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
    word = lambda v: _word(vocab, v)  # noqa: E731

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


# -- shared rows (the sampling pages) ---------------------------------------------------------------------

def array_rows(arrays: dict, seen, vocab: list, lang: str = "en", compact: bool = False) -> list:
    """accept_index and predicts after the (recorded) events ``seen``, as the player's chip rows.

    ``compact``: list only the predicts rows written so far (a big tree's 64 chips would bury them)."""
    ai = arrays["accept_index"].reshape(-1).tolist()
    pr = arrays["predicts"].reshape(-1).tolist()
    last = {(name, i) for e in seen[-1:] for (name, i, _) in e.writes}
    rows = [player.Row("accept_index", [(v, "current" if ("accept_index", j) in last else ("accepted" if v >= 0 else "pending"),
                                         f"accept_index[0][{j}] = {v}") for j, v in enumerate(ai)])]
    written = {i for e in seen for (name, i, _) in e.writes if name == "predicts"}
    word = lambda v: _word(vocab, v)  # noqa: E731

    if compact:
        rows.append(player.Row(_tr(lang, "predicts (rows written)", "predicts（已写入的行）"),
                               [(f"{j}→{word(pr[j])}", "current" if ("predicts", j) in last else "accepted", f"predicts[{j}] = {pr[j]}")
                                for j in sorted(written)] or [("·", "pending", _tr(lang, "nothing written yet", "尚未写入"))]))
    else:
        rows.append(player.Row("predicts", [(word(v), "current" if ("predicts", j) in last else "accepted", f"predicts[{j}] = {v} ({word(v)})")
                                            if j in written else ("·", "pending", f"predicts[{j}]: not written (init {v})")
                                            for j, v in enumerate(pr)]))
    return rows


def dist_chips(vocab: list, values, chosen: int | None = None, fmt: str = "{:.3g}", skip_zero: bool = False) -> list:
    """One chip per token: ``A .25`` (the chosen token marked as the bonus); ``skip_zero``: only tokens with mass."""
    out = [(f"{t} {fmt.format(float(v))}", "bonus" if chosen == i else ("pending" if float(v) <= 0 else "compared"),
            f"{t}: {float(v):.4g}") for i, (t, v) in enumerate(zip(vocab, values)) if not skip_zero or float(v) > 0 or chosen == i]
    return out or ["0"]


def terminal_draw_rows(label: str, vocab: list, values, chosen: int | None, coin: float, lang: str = "en",
                       skip_zero: bool = False) -> list:
    """The terminal draw as two player rows: the normalised distribution (chosen token marked) and
    u_final -> the token, once drawn. ``values``: the unnormalised terminal distribution."""
    values = [float(x) for x in values]
    total = sum(values)
    hint = _tr(lang, "the inverse-CDF draw picks the first token whose cumulative mass exceeds u_final",
               "逆 CDF 采样：选出累计质量首次超过 u_final 的 token")
    return [player.Row(label, dist_chips(vocab, [v / total if total > 0 else 0.0 for v in values], chosen, skip_zero=skip_zero)),
            player.Row("u_final", [(f"{coin:.3f}", "compared" if chosen is None else "bonus", hint)]
                       + ([f"→ {vocab[chosen]}"] if chosen is not None else []))]


# -- chain rejection sampling -------------------------------------------------------------------------

def chain_test_cells(ev: AcceptTest, lang: str = "en") -> tuple:
    """The verdict cells of one chain test, from its event: (the test as shown, the verdict, the hover)."""
    state = "accepted" if ev.accepted else "rejected"
    if ev.q_valid is False:  # 0.5.23 rejects an invalid q before the coin is looked at
        test = (f"q = {ev.q:.3g} ∉ (0, 1]", state, _tr(lang, "0.5.23 accepts only when 0 < q ≤ 1", "0.5.23 仅在 0 < q ≤ 1 时接受"))
    else:
        uq, pp = captions.apart(ev.u_times_q, ev.p, 3, "g")  # never equal-looking when they differ
        test = (f"{uq} {'<' if ev.u_times_q < ev.p else '≥'} {pp}", state, "u·q < p")
    verdict = (_term(lang, state), state, _tr(lang, "accept probability {a:.3g}", "接受概率 {a:.3g}", a=ev.accept_prob))
    return test, verdict


def chain_frames(s, run, lang: str = "en") -> list:
    """Every step of chain rejection sampling (request 0) as player frames, in ``lang``."""
    req = s.requests[0]
    vocab = list(s.vocab)
    N = len(req.chain)
    events = list(run.trace.events)
    typed = steps.typed_events(events)
    arrays = [f.arrays for f in replay(run.trace)]
    tests = {e.node: e for e in typed if isinstance(e, AcceptTest) and e.request == 0}
    hovers = [_tr(lang, "root {t} (row 0)", "根节点 {t}（第 0 行）", t=req.chain[0])] + [
        (_tr(lang, "slot {j}: {t}  p = {p:.4g}, q = {q:.4g}, u = {u:.4g}", "位置 {j}：{t}  p = {p:.4g}，q = {q:.4g}，u = {u:.4g}",
             j=j, t=req.chain[j], p=tests[j].p, q=tests[j].q, u=tests[j].coin)
         if j in tests else _tr(lang, "slot {j}: {t} (never tested)", "位置 {j}：{t}（未检验）", j=j, t=req.chain[j]))
        for j in range(1, N)]
    slot_names = [_term(lang, "root")] + [_tr(lang, "slot {s}", "位置 {s}", s=j) for j in range(1, N)]

    def frame(k: int) -> player.Frame:
        seen, tseen = events[:k], typed[:k]
        view = steps.scan_view(tseen, N, chain=True, cut_after_reject=True, finish=False)
        bonus = vocab[view.bonus[1]] if view.bonus else None
        dot = sc.chain_dot(list(req.chain), view.states, bonus=bonus, hovers=hovers, slot_names=slot_names,
                           bonus_caption=_term(lang, "bonus"))
        tested = {e.node for e in tseen if isinstance(e, AcceptTest)}
        table = [[_tr(lang, "slot", "位置"), _tr(lang, "draft", "Draft"), "p(x)", "q(x)", "u", "u·q", "u·q < p ?",
                  _tr(lang, "verdict", "结果")]]
        for j in range(1, N):
            ev = tests.get(j)
            here = view.focus == j and j not in tested
            if ev is None:
                table.append([str(j), req.chain[j], "", "", f"{req.coins[j - 1]:.3f}", "", "",
                              (_tr(lang, "not reached", "未到达"), "discarded", "")])
            elif j in tested:
                state = "accepted" if ev.accepted else "rejected"
                test, verdict = chain_test_cells(ev, lang)
                table.append([(str(j), "current" if view.focus == j else "", ""), req.chain[j], f"{ev.p:.3g}", f"{ev.q:.3g}",
                              f"{ev.coin:.3f}", (f"{ev.u_times_q:.3g}", state, ""), test, verdict])
            else:
                table.append([(str(j), "current" if here else "", ""), req.chain[j], f"{ev.p:.3g}", f"{ev.q:.3g}", f"{ev.coin:.3f}",
                              "?", "?", ("…", "current" if here else "pending", "")])
        rows = array_rows(arrays[k], seen, vocab, lang)
        res = next((e for e in tseen if isinstance(e, Residual)), None)
        if res is not None:
            raw = next(e for e in seen if e.kind == "residual")
            term = next((e for e in tseen if isinstance(e, Terminal)), None)
            src = _tr(lang, "residual max(p − q, 0), normalised", "residual max(p − q, 0)，归一化") if raw.data.get("q") is not None \
                else _tr(lang, "plain p (every draft accepted)", "直接用 p（全部 Draft 被接受）")
            rows += terminal_draw_rows(_tr(lang, "terminal draw at row {r}: {src}", "第 {r} 行的终止采样：{src}", r=res.node, src=src),
                                       vocab, raw.data["dist"], term.token if term is not None else None, req.coin_final, lang)
        caption = captions.plain(captions.caption(tseen[-1] if k else None, s, lang))
        return player.Frame(dot=dot, caption=caption, rows=rows, table=table,
                            alt=_tr(lang, "the draft chain at step {k}", "第 {k} 步的 Draft 链", k=k))

    return [frame(k) for k in range(len(events) + 1)]


# -- greedy tree verify ------------------------------------------------------------------------------

def greedy_frames(s, run, lang: str = "en", b: int = 0) -> list:
    """Every step of request ``b``'s greedy walk as player frames, in ``lang`` (the tree, accept_index,
    predicts, target_predict and the counts after each of the request's events)."""
    tree = s.tree(b)
    n, W = tree.n, s.width
    labels = [s.label(t) for t in tree.tokens]
    tp_labels = [s.label(int(t)) for t in run.inputs["target_predict"][b]]
    all_events = run.trace.events
    events = [e for e in all_events if e.request == b]
    typed = steps.typed_events(events)
    global_idx = [0] + [k + 1 for k, e in enumerate(all_events) if e.request == b]
    frames = replay(run.trace)
    link_words = (_tr(lang, "first child", "第一个子节点"), _tr(lang, "next sibling", "下一个兄弟"))
    row_word = _tr(lang, "row", "行")

    def frame(k: int) -> player.Frame:
        arrays = frames[global_idx[k]].arrays
        event = events[k - 1] if k > 0 else None
        walk = steps.walk_after(typed, k, n, b)
        bonus = (walk.bonus[0], s.label(walk.bonus[1])) if walk.bonus else None
        dot = tree_dot(tree.parents, labels, rows=[b * n + i for i in range(n)], states=walk.states, links=True,
                       bonus=bonus, bonus_label=_term(lang, "bonus"), row_word=row_word, link_words=link_words)
        ai = arrays["accept_index"].reshape(-1, W)[b]
        written = {i for e in events[:k] for a, i, _ in e.writes if a == "predicts"}
        last_writes = {(a, i) for a, i, _ in (event.writes if event else ())}
        rows = [player.Row("accept_index", [(int(r), "pending" if r < 0 else ("current" if ("accept_index", b * W + j) in last_writes
                                                                              else "accepted"), f"accept_index[{b}][{j}] = {int(r)}")
                                            for j, r in enumerate(ai)]),
                player.Row("", code=f"accept_index[{b}] = {[int(x) for x in ai]}")]
        pr = arrays["predicts"]
        # Up to 16 rows every row is shown; beyond that only the rows the walk has touched.
        touched = set(range(n)) if n <= 16 else ({r - b * n for r in written} | {i for i, st_ in walk.states.items() if st_ not in ("pending", "discarded")}
                                                 | ({walk.target_row - b * n} if walk.target_row is not None else set()))
        terminal_rows = {e.data["row"] for e in events[:k] if e.kind == "terminal"}
        chips = []
        for i in sorted(touched):
            r = b * n + i
            if r in written:
                state = "current" if ("predicts", r) in last_writes else ("bonus" if r in terminal_rows else "accepted")
                text = s.label(int(pr[r]))
            else:
                state, text = "pending", f"{int(pr[r])}"
            chips.append((f"{r}:{text}", state, f"predicts[{r}] = {int(pr[r])}" + ("" if r in written else " (predicts_init, never written)")))
        if len(touched) < n:
            chips.append(_tr(lang, "… {k} more rows untouched", "… 另有 {k} 行未触及", k=n - len(touched)))
        rows.append(player.Row("predicts", chips))
        rows.append(player.Row("target_predict", [(f"{b * n + i}:{tp_labels[i]}", "compared" if walk.target_row == b * n + i and not walk.done
                                                    else "pending", f"target_predict[{b * n + i}] = {tp_labels[i]}") for i in sorted(touched)]))
        atn = int(arrays["accept_token_num"].reshape(-1)[b])
        rows.append(player.Row("num_correct_drafts", [(walk.num_accepted, "accepted" if walk.num_accepted else "pending",
                                                       _tr(lang, "drafts accepted so far", "目前已接受的草稿数"))]))
        rows.append(player.Row("accept_lens", [(walk.num_accepted + 1, "accepted", "num_correct_drafts + 1 (the bonus)")]))
        rows.append(player.Row("accept_token_num", [(atn if walk.done else "—", "accepted" if walk.done else "pending",
                                                     _tr(lang, "written when the request commits", "在请求提交时写入"))]))
        caption = captions.plain(captions.caption(typed[k - 1] if k else None, s, lang))
        return player.Frame(dot=dot, caption=caption, rows=rows, alt=_tr(lang, "verify tree at step {k}", "第 {k} 步的验证树", k=k))

    return [frame(k) for k in range(len(events) + 1)]


# -- target-only tree sampling ---------------------------------------------------------------------------

def sibling_rows(s, parent: int, p_row, tokens, lang: str = "en") -> list:
    """The siblings under ``parent`` as the kernel scans them with coin u[parent]: per sibling its bucket, the
    rule that decided it and its verdict (``specviz.replay.sibling_scan``, the reference's float32 order of tests)."""
    sibs = s.tree(0).children(parent)
    coin = float(s.requests[0].coins[parent])
    rows = sibling_scan.scan_level(p_row, [tokens[c] for c in sibs], sibs, coin, threshold_single=s.threshold_single,
                                   threshold_acc=s.threshold_acc, semantics=s.semantics)
    return [(r, sibling_scan.bucket_text(r, lang, coin),
             sibling_scan.rule_text(r, coin, threshold_single=s.threshold_single, threshold_acc=s.threshold_acc,
                                    semantics=s.semantics, lang=lang)) for r in rows]


def target_only_frames(s, run, lang: str = "en") -> list:
    """Every step of target-only tree sampling (request 0) as player frames, in ``lang``."""
    req = s.requests[0]
    vocab = list(s.vocab)
    tree = s.tree(0)
    n = len(tree.parents)
    labels = [vocab[t] for t in tree.tokens]
    children = [tree.children(i) for i in range(n)]
    p_rows = [[float(x) for x in r] for r in run.inputs["target_probs"][0]]
    events = list(run.trace.events)
    typed = steps.typed_events(events)
    arrays = [f.arrays for f in replay(run.trace)]
    tests = {e.node: e for e in typed if isinstance(e, AcceptTest) and e.request == 0}
    big = n > 12  # a big tree shows the walk's path and the siblings it scanned; the rest is folded
    node_caps = ["" if i == 0 else f"p={p_rows[tree.parents[i]][tree.tokens[i]]:.3g}" for i in range(n)]
    hovers = [f"node {i} ({labels[i]}), row {i}" + ("" if i == 0 else f": p(row {tree.parents[i]})[{labels[i]}] = "
                                                  f"{p_rows[tree.parents[i]][tree.tokens[i]]:.4g}, coin u[{tree.parents[i]}] = {req.coins[tree.parents[i]]:.4g}")
              for i in range(n)]
    skip_zero = len(vocab) > 10  # a large vocabulary: only the tokens with mass

    def frame(k: int) -> player.Frame:
        seen, tseen = events[:k], typed[:k]
        view = steps.scan_view(tseen, n, parents=tree.parents)
        states, parent = view.states, view.parent
        bonus = (view.bonus[0], vocab[view.bonus[1]]) if view.bonus else None
        path = [i for i in range(n) if states[i] == "accepted"] + [parent]
        shown = set(path) | {c for i in path for c in children[i]} if big else None
        dot = sc.sampling_tree_dot(list(tree.parents), labels, states, hovers=hovers, captions=node_caps, bonus=bonus,
                                   bonus_caption=_term(lang, "bonus"), show=shown, more_caption=_tr(lang, "more", "个节点"))
        rows = array_rows(arrays[k], seen, vocab, lang, compact=big)
        terminal_phase = any(e.kind in ("residual", "terminal", "commit") for e in seen)
        sibs = children[parent]
        table = None
        if sibs and not terminal_phase:
            decided = {e.node: e for e in tseen if isinstance(e, AcceptTest) and e.node in sibs}
            rows.append(player.Row(_tr(lang, "coin u[{p}] for the children of {t}", "节点 {t} 的子节点用随机数 u[{p}]", p=parent, t=labels[parent]),
                                   [(f"{req.coins[parent]:.3f}", "compared", _tr(lang, "one coin per level, shared by the siblings",
                                                                                 "每层一个随机数，由兄弟节点共享"))]))
            table = [[_tr(lang, "sibling", "兄弟节点"), "p", "prob_acc", _tr(lang, "coin bucket", "随机数桶"),
                      _tr(lang, "decided by", "判定依据"), _tr(lang, "verdict", "结果")]]
            for r, bucket, (rule, why) in sibling_rows(s, parent, p_rows[parent], tree.tokens, lang):
                ev = decided.get(r.node)
                here = view.focus == r.node and ev is None
                skipped = ev is None and not r.reached and any(e.accepted for e in decided.values())
                state = ("accepted" if ev.accepted else "rejected") if ev is not None else ("current" if here else "pending")
                word = (_term(lang, state) if ev is not None else _tr(lang, "not reached", "未到达") if skipped
                        else ("?" if here else "…"))
                table.append([(f"{r.node}: {labels[r.node]}", "current" if view.focus == r.node else "", ""), f"{r.p:.3g}",
                              f"{r.prob_acc:.3g}",
                              (bucket, state, _tr(lang, "accepted iff the coin falls here", "随机数落在此区间即接受")),
                              (rule, state, why) if ev is not None or skipped else ("…", state, ""), (word, state, "")])
        buf = arrays[k]["draft_probs"].reshape(n, -1)[parent]
        rows.append(player.Row(_tr(lang, "p, row {p}", "p，第 {p} 行", p=parent), dist_chips(vocab, p_rows[parent], skip_zero=skip_zero)))
        rows.append(player.Row(_tr(lang, "work buffer draft_probs[{p}]", "工作缓冲区 draft_probs[{p}]", p=parent),
                               dist_chips(vocab, buf, skip_zero=skip_zero)))
        res = next((e for e in seen if e.kind == "residual"), None)
        if res is not None:
            term = next((e for e in seen if e.kind == "terminal"), None)
            rows += terminal_draw_rows(_tr(lang, "relu(p − buffer), normalised", "relu(p − buffer)，归一化"), vocab,
                                       res.data["dist"], term.data["token"] if term is not None else None, req.coin_final, lang,
                                       skip_zero=skip_zero)
        caption = captions.plain(captions.caption(tseen[-1] if k else None, s, lang))
        return player.Frame(dot=dot, caption=caption, rows=rows, table=table,
                            alt=_tr(lang, "the verify tree at step {k}", "第 {k} 步的验证树", k=k))

    return [frame(k) for k in range(len(events) + 1)]


def frames_for(s, run, lang: str = "en") -> list:
    """The player's frames of any scenario, as its page shows them: the greedy walk (every request's in
    turn), chain rejection, target-only tree sampling or DSpark (request 0)."""
    alg = algorithms.get(s.algorithm)
    if alg.family == "dspark":
        return dspark_frames(s, run, lang)
    if alg.decision == "greedy":
        return [f for b in range(len(s.requests)) for f in greedy_frames(s, run, lang, b)]
    return chain_frames(s, run, lang) if alg.topology == "chain" else target_only_frames(s, run, lang)
