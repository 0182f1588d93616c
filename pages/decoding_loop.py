"""Decoding loop: a tiny Target and Draft decode for real with build_tree's mask and positions and a KV commit by accept_index."""
from dataclasses import replace

import pandas as pd
import streamlit as st

from specviz.app.ui import common as ui
from specviz.app.ui import share_ui

KEY = "decoding_loop"
share_ui.load_shared_state()  # a shared link (?s=...) sets the language, the round and the inputs before any widget
ui.page_setup(KEY, slot=None)
_linked = share_ui.link_arrived(KEY)

from specviz.base.errors import SpecvizError  # noqa: E402
from specviz.rooms.loop import metrics as M  # noqa: E402
from specviz.rooms.loop import view  # noqa: E402
from specviz.base.limits import LOOP_MAX_DEPTH, LOOP_MAX_PROMPT_CHARS, LOOP_MAX_ROUNDS, LOOP_MAX_TOPK  # noqa: E402
from specviz.rooms.loop.budget import check_loop_budget  # noqa: E402
from specviz.rooms.loop.decode import LoopSettings  # noqa: E402
from specviz.rooms.loop.proofs import (PAGE_PROMPT, PAGE_SETTINGS, PAGE_TRIALS, PROOF_FOR_MISTAKE, PROOF_TOKENS, TREE_TOL,  # noqa: E402
                                       proof_settings)
from specviz.app.ui.loop_page import (MISTAKE_TEXT, PROOF_NAMES, cached_greedy_proof, cached_power, cached_run,  # noqa: E402
                                      cached_sampling_proof, cached_samples, cached_tree_proof, loop_link_inputs,
                                      mc_pieces, models, round_frames)
from specviz.app.ui import heavy, markup, player  # noqa: E402

DEFAULT_PROMPT = PAGE_PROMPT
D = PAGE_SETTINGS  # the page's defaults live in the library (a test checks the mistake demos at them)
ALGOS = {"greedy": ("Greedy verify", "贪心验证"), "target_only": ("Target-only tree sampling", "仅目标模型的树采样"),
         "chain": ("Chain rejection sampling (topk 1)", "链式拒绝采样（topk 1）")}
st.title(ui.tr("Decoding loop", "解码循环"))
st.caption(ui.tr(
    "A real (tiny) Target and a tinier Draft, character-level transformers trained on this project's own text, decode "
    "your prompt. Each round: the Draft grows a tree → build_tree gives the mask and positions → ONE Target forward "
    "over the whole tree → Accept on the chosen backend → the KV rows named by accept_index are kept (the rest "
    "dropped) → the bonus token is the next root.",
    "一个真实（很小）的 Target 和一个更小的 Draft（在本项目自身文本上训练的字符级 transformer）续写你的提示。每一轮："
    "Draft 生成一棵树 → build_tree 给出掩码和位置 → 对整棵树只做一次 Target 前向 → 在所选后端上 Accept → "
    "保留 accept_index 指定行的 KV（其余丢弃）→ bonus token 成为下一轮的根。"))

if _linked and "loop" in _linked:  # a link's inputs (checked by specviz.rooms.share against the widgets' bounds)
    for _k, _v in _linked["loop"].items():
        if _k == "mistakes":
            for _m in MISTAKE_TEXT:
                ui.set_value(f"sv_loop::m::{_m}", _m in _v)
        else:
            ui.set_value(f"sv_loop::{_k}", _v)

# -- inputs ------------------------------------------------------------------------------------------
c = st.columns([3, 2])
with c[0]:
    prompt = ui.widget(st.text_input, ui.tr("Prompt (plain ASCII)", "提示（纯 ASCII）"), "sv_loop::prompt", DEFAULT_PROMPT,
                       max_chars=LOOP_MAX_PROMPT_CHARS)
with c[1]:
    algorithm = ui.widget(st.selectbox, ui.tr("Accept algorithm", "接受算法"), "sv_loop::algorithm", "greedy",
                          options=list(ALGOS), format_func=lambda a: ui.tr(*ALGOS[a]))
c = st.columns(6)
chain = algorithm == "chain"
with c[0]:
    topk = 1 if chain else ui.widget(st.slider, "topk", "sv_loop::topk", D["topk"], min_value=1, max_value=LOOP_MAX_TOPK)
    if chain:
        st.metric("topk", 1)
with c[1]:
    depth = ui.widget(st.slider, ui.tr("depth (draft steps)", "深度（草稿步数）"), "sv_loop::depth", D["depth"], min_value=1,
                      max_value=LOOP_MAX_DEPTH)
most = topk + (depth - 1) * topk ** 2 + 1
with c[2]:
    if topk == 1:
        n = depth + 1
        st.metric("num_draft_tokens", n, help=ui.tr("topk 1 forces n = depth + 1", "topk 为 1 时 n = depth + 1"))
    else:
        if int(st.session_state.get("sv_loop::n", 8)) > most:     # a smaller tree shape: keep the slider in range
            ui.set_value("sv_loop::n", most)
        n = ui.widget(st.slider, "num_draft_tokens", "sv_loop::n", min(D["num_draft_tokens"], most), min_value=2, max_value=most)
with c[3]:
    temperature = ui.widget(st.slider, ui.tr("temperature", "温度"), "sv_loop::temperature", D["temperature"], min_value=0.1, max_value=2.0,
                            step=0.1, disabled=algorithm == "greedy")
with c[4]:
    seed = ui.widget(st.number_input, ui.tr("seed", "随机种子"), "sv_loop::seed", D["seed"], min_value=0, max_value=2**31 - 1, step=1)
with c[5]:
    rounds = ui.widget(st.slider, ui.tr("rounds", "轮数"), "sv_loop::rounds", D["rounds"], min_value=1, max_value=LOOP_MAX_ROUNDS)

with st.expander(ui.tr("Classic mistakes (each breaks a proof)", "经典错误（每个都会打破一个证明）"), expanded=False):
    mistakes = tuple(m for m in MISTAKE_TEXT if ui.widget(st.checkbox, ui.tr(*MISTAKE_TEXT[m]), f"sv_loop::m::{m}", False))
    t_acc = ui.widget(st.slider, ui.tr("threshold_acc (below 1 biases sampling)", "threshold_acc（小于 1 会使采样有偏）"),
                      "sv_loop::t_acc", 1.0, min_value=0.05, max_value=1.0, step=0.05, disabled=algorithm != "target_only")

settings = LoopSettings(algorithm=algorithm, topk=int(topk), depth=int(depth), num_draft_tokens=int(n),
                        temperature=float(temperature), seed=int(seed), rounds=int(rounds), backend=ui.backend(),
                        threshold_acc=float(t_acc) if algorithm == "target_only" else 1.0, mistakes=mistakes)
greedy_settings = None
try:
    settings = settings.checked()
    greedy_settings = replace(settings, algorithm="greedy", threshold_acc=1.0,
                              mistakes=tuple(m for m in settings.mistakes if m != "q_as_buffer"))
    if not (cached_run.contains(prompt, settings) and cached_tree_proof.contains(prompt, settings)
            and cached_greedy_proof.contains(prompt, greedy_settings)):
        # New work: estimated from the inputs before it starts (a refusal names the field to lower),
        # then run under this tab's share of the server (ui.heavy: per-session budget, CPU slots).
        check_loop_budget(prompt, settings)
        with heavy.heavy(ui.tr("decoding loop", "解码循环")), st.spinner(ui.tr("Decoding…", "解码中…")):
            cached_run(prompt, settings)
            cached_tree_proof(prompt, settings)
            cached_greedy_proof(prompt, greedy_settings)
    run = cached_run(prompt, settings)
except SpecvizError as exc:
    ui.show_error(exc)
    share_ui.sidebar_controls(KEY, step_key=KEY, extra={"loop": loop_link_inputs()})
    ui.end_page()
    st.stop()

_, _, tok = models()
show = tok.show

# -- timeline and text -----------------------------------------------------------------------------------
st.subheader(ui.tr("Rounds", "各轮"))
words = {"accepted": ui.tr("accepted drafts", "被接受的草稿"), "bonus": ui.term("bonus"), "round": ui.tr("round", "轮"),
         "tokens": ui.tr("tokens per Target pass", "每次 Target 前向的 token 数"), "node": ui.tr("node", "节点"),
         "score": ui.tr("score", "分数"), "position": ui.tr("position", "位置"), "row": ui.tr("row", "行"),
         "token": "token", "status": ui.tr("status", "状态"), "prefix": ui.tr("prefix (kept)", "前缀（保留）"),
         "kept": ui.tr("kept", "保留"), "dropped": ui.tr("dropped", "丢弃"), "slot_after": ui.tr("slot after commit", "提交后的槽位")}
markup.svg_figure(view.timeline_svg(run, None, words), max_height="min(380px, calc(100vh - 200px))")  # a strip, not a poster
st.markdown(ui.tr("**Text** (grey: prompt; green: accepted drafts; orange: bonus)",
                  "**文本**（灰：提示；绿：被接受的草稿；橙：bonus）"))
st.markdown(view.text_markdown(view.text_spans(run, None)))

# -- every round, stepped in the browser -------------------------------------------------------------------
st.subheader(ui.tr("Round by round", "逐轮查看"))
st.caption(ui.tr("Each step is one round: the Draft's tree and the walk, the tree mask of the verify forward, accept_index "
                 "and the Target's KV rows kept or dropped by the commit. The keys ← → step, space plays.",
                 "每一步是一轮：Draft 的树与遍历、验证前向的树掩码、accept_index，以及提交时保留或丢弃的 Target KV 行。"
                 "按键 ← → 单步，空格播放。"))
mask_words = (ui.tr("attends to", "可见"), ui.tr("masked", "屏蔽"), ui.tr("row", "行"), ui.tr("col", "列"))


player.show(round_frames(prompt, settings, ui.lang(), words, mask_words), key=KEY, start=min(ui.step(KEY), len(run.rounds) - 1))
ui.legend()
st.caption(ui.tr("Beside the tree: the tree mask used in the verify forward (every row also sees the prefix rows); "
                 "under it the Target's KV rows around the commit (green: kept, red: dropped).",
                 "树的旁边：验证前向使用的树掩码（每一行还能看到前缀行）；其下是提交前后的 Target KV 行（绿：保留，红：丢弃）。"))

import numpy as np  # noqa: E402  (arrays for the raw-tensor listing only)

raw_round = ui.widget(st.number_input, ui.tr("Raw tensors of round", "查看原始张量的轮次"), "sv_loop::raw_round", 0,
                      min_value=0, max_value=len(run.rounds) - 1, step=1)
rnd = run.rounds[min(int(raw_round), len(run.rounds) - 1)]
ui.raw_tensors({
    "parent_list": (np.array([rnd.tree.parent_list]), "[bs, topk*(depth-1)+1]"),
    "selected_index": (np.array([rnd.tree.selected_index]), "[bs, n-1]"),
    "candidates": (np.array([rnd.tree.candidates]), "[bs, n]"),
    "positions": (np.array(rnd.positions), "[bs*n]"),
    "uniform_samples": (np.array([rnd.coins], dtype=np.float32), "[bs, n]"),
    "uniform_samples_for_final_sampling": (np.array([rnd.coin_final], dtype=np.float32), "[bs]"),
    "draft_coins": (np.array(rnd.draft_coins, dtype=np.float32), "[depth] (chain Draft only)"),
    "predicts": (np.array(rnd.predicts, dtype=np.int32), "[bs*n]"),
    "accept_index": (np.array([rnd.accept_index], dtype=np.int32), "[bs, W]"),
}, title=ui.tr("Raw tensors of round {r}", "第 {r} 轮的原始张量", r=rnd.index))

# -- proofs ------------------------------------------------------------------------------------------
st.subheader(ui.tr("Proofs, live", "证明（实时）"))
tp = cached_tree_proof(prompt, settings)
gp = cached_greedy_proof(prompt, greedy_settings)
ok_word, fail_word = ui.tr("holds", "成立"), ui.tr("FAILS", "不成立")  # words: a table cell cannot show an icon font
rows = [{ui.tr("proof", "证明"): ui.tr(*PROOF_NAMES["tree"]), ui.tr("result", "结果"): ok_word if tp.ok else fail_word,
         ui.tr("detail", "细节"): ui.tr("max |tree logits − sequential logits| = {d:.2e} (tolerance {t:g}); worst: round {r}, node {i}",
                                        "max |树前向 logits − 逐个前向 logits| = {d:.2e}（容差 {t:g}）；最大处：第 {r} 轮，节点 {i}",
                                        d=tp.max_abs_diff, t=TREE_TOL, r=tp.worst[0], i=tp.worst[1])},
        {ui.tr("proof", "证明"): ui.tr(*PROOF_NAMES["greedy"]), ui.tr("result", "结果"): ok_word if gp.ok else fail_word,
         ui.tr("detail", "细节"): ui.tr("{m} speculative greedy tokens vs the Target's own greedy decoding; first difference: {f}",
                                        "{m} 个投机贪心 token 对比 Target 自身贪心解码；首个不同：{f}",
                                        m=len(gp.speculative), f="—" if gp.ok else gp.first_divergence)}]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
summary_box = st.container()  # filled below, once proof 3 (when it runs) is known too: one verdict from every proof shown
if not gp.ok:
    f = gp.first_divergence
    st.markdown(ui.tr("Where the text diverges (greedy, token {f}):", "文本分叉处（贪心，第 {f} 个 token）：", f=f))
    st.code(ui.tr("speculative: ", "投机解码：") + tok.decode(gp.speculative[max(0, f - 12): f + 12]) + "\n"
            + ui.tr("target only: ", "仅目标：  ") + tok.decode(gp.reference[max(0, f - 12): f + 12]), language=None)
if mistakes:
    st.caption(ui.tr("Mistakes on: ", "已开启的错误：") + "; ".join(
        ui.tr("{m} breaks proof {p}", "{m} 打破证明 {p}", m=m, p=ui.tr(*PROOF_NAMES[PROOF_FOR_MISTAKE[m]])) for m in mistakes))

sp = None  # proof 3's result, once it has run
with st.expander(ui.tr("3. Sampling lossless (Monte Carlo)", "3. 采样无损（蒙特卡洛）"), expanded=algorithm != "greedy"):
    if algorithm == "greedy":
        st.info(ui.tr("Choose a sampling algorithm to run this proof.", "选择一种采样算法来运行此证明。"))
    else:
        trials = ui.widget(st.select_slider, ui.tr("trials", "试验次数"), "sv_loop::trials", PAGE_TRIALS, options=[100, 200, 400, 800])
        mc_settings = proof_settings(settings)
        st.caption(ui.tr(
            "The next {k} tokens after the prompt, {t} independent runs (depth {d}, n {n}), against the Target's exact "
            "distribution, by two tests at 0.0005 each (so a correct sampler fails the proof with probability ≤ 0.001). "
            "L1 over K bins: P(L1 ≥ λ) ≤ 2^K·exp(−N·λ²/2) (Bretagnolle–Huber–Carol). The Draft-favoured set A = {{x : q(x) > p(x)}} "
            "of first tokens: the share of runs that start in A against p(A), by an exact binomial test. A sampler that leans "
            "towards drafted tokens, or away from them, moves that share first.",
            "提示之后的 {k} 个 token，{t} 次独立运行（深度 {d}，n {n}），与 Target 的精确分布比较，用两个各 0.0005 的检验"
            "（正确的采样器让证明失败的概率 ≤ 0.001）。K 个分箱上的 L1：P(L1 ≥ λ) ≤ 2^K·exp(−N·λ²/2)（Bretagnolle–Huber–Carol）。"
            "Draft 偏好的首 token 集合 A = {{x : q(x) > p(x)}}：以 A 开头的运行比例对比 p(A)，用精确二项检验。"
            "偏向或偏离草稿 token 的采样器，最先改变的就是这个比例。",
            k=PROOF_TOKENS, t=trials, d=mc_settings.depth, n=mc_settings.num_draft_tokens))
        if algorithm == "target_only":
            # The power against a named mistake: these settings' own when they carry one (q as the buffer, threshold_acc
            # below 1); for a correct sampler the power would only be the test's own false-alarm rate, so the page states
            # what the proof does against the classic mistake instead.
            biased = "q_as_buffer" in mc_settings.mistakes or mc_settings.threshold_acc < 1
            against = mc_settings if biased else replace(mc_settings, mistakes=tuple(mc_settings.mistakes) + ("q_as_buffer",))
            pw = cached_power(prompt, against.checked(), int(trials))
            pw_text = "> 99.9%" if pw.power > 0.999 else ("< 0.1%" if pw.power < 0.001 else f"{pw.power:.1%}")
            named = "; ".join([f"q_as_buffer ({ui.tr(*MISTAKE_TEXT['q_as_buffer'])})"] * ("q_as_buffer" in against.mistakes)
                              + [f"threshold_acc = {against.threshold_acc:g}"] * (against.threshold_acc < 1))
            if biased:
                st.markdown(ui.tr(
                    "**Detection power, exact**, against the mistake on now ({m}): the first token's law (the reference run "
                    "over every coin interval of round 0's tree) is at TV distance **{tv:.3f}** from p; p(A) = {pa:.3f}, this "
                    "sampler puts {a:.3f} on A. At {t} trials the proof fails with probability **{pw}** or more.",
                    "**检测功效（精确）**，针对当前开启的错误（{m}）：首 token 的精确分布（参考实现遍历第 0 轮树的每个随机数区间）"
                    "与 p 的 TV 距离为 **{tv:.3f}**；p(A) = {pa:.3f}，此采样器在 A 上的概率为 {a:.3f}。{t} 次试验时，证明失败的概率"
                    "至少为 **{pw}**。",
                    m=named, tv=pw.tv, pa=pw.set_expected, a=pw.set_actual, t=trials, pw=pw_text))
            else:
                st.markdown(ui.tr(
                    "**Detection power, exact**: this sampler is correct (its first token follows p), so the proof fails only "
                    "by chance, with probability ≤ 0.1%. Against the named mistake {m}, turned on above: the first token's law "
                    "would be at TV distance **{tv:.3f}** from p (p(A) = {pa:.3f}, the sampler would put {a:.3f} on A), and "
                    "at {t} trials the proof would fail with probability **{pw}** or more.",
                    "**检测功效（精确）**：当前采样器是正确的（首 token 服从 p），证明只会因偶然失败，概率 ≤ 0.1%。"
                    "针对上方可开启的错误 {m}：首 token 的精确分布与 p 的 TV 距离将为 **{tv:.3f}**（p(A) = {pa:.3f}，"
                    "采样器在 A 上的概率将为 {a:.3f}），{t} 次试验时证明失败的概率至少为 **{pw}**。",
                    m=named, tv=pw.tv, pa=pw.set_expected, a=pw.set_actual, t=trials, pw=pw_text))
        if ui.widget(st.toggle, ui.tr("Run the Monte Carlo", "运行蒙特卡洛"), "sv_loop::run_mc", False):
            with ui.guard():
                mc_checked = mc_settings.checked()
                if cached_sampling_proof.contains(prompt, mc_checked, int(trials)):
                    sp = cached_sampling_proof(prompt, mc_checked, int(trials))
                else:  # the runs in pieces, with a progress bar between them (each piece is cached on its own)
                    with heavy.heavy(ui.tr("trials", "试验次数")):
                        bar = st.progress(0.0, text=ui.tr("Sampling: 0 of {t} runs", "采样：{t} 次运行中的 0 次", t=int(trials)))
                        for a, count in mc_pieces(int(trials)):
                            cached_samples(prompt, mc_checked, a, count)
                            bar.progress((a + count) / int(trials), text=ui.tr("Sampling: {d} of {t} runs", "采样：{t} 次运行中的 {d} 次",
                                                                               d=a + count, t=int(trials)))
                        sp = cached_sampling_proof(prompt, mc_checked, int(trials))
                        bar.empty()
        if sp is not None:
            st.markdown(ui.tr("**{r}** ({n} trials): L1 = {l:.3f}, bound λ = {b:.3f} → {r1}; first token in A: {o:.3f} "
                              "observed vs p(A) = {e:.3f}, binomial p-value {pv:.2g} → {r2}",
                              "**{r}**（{n} 次）：L1 = {l:.3f}，界 λ = {b:.3f} → {r1}；首 token 落在 A：观测 {o:.3f}，"
                              "p(A) = {e:.3f}，二项检验 p 值 {pv:.2g} → {r2}",
                              r=ok_word if sp.ok else fail_word, l=sp.l1, b=sp.bound, n=sp.trials,
                              r1=ok_word if sp.l1_ok else fail_word, o=sp.set_observed, e=sp.set_expected, pv=sp.set_pvalue,
                              r2=ok_word if sp.set_ok else fail_word))
            st.dataframe(pd.DataFrame({ui.tr("next 2 tokens", "接下来 2 个 token"):
                                       [("".join(show(t) for t in lab) if lab != "other" else ui.tr("other", "其他")) for lab in sp.labels],
                                       ui.tr("Target exact", "Target 精确"): [round(x, 4) for x in sp.expected],
                                       ui.tr("speculative observed", "投机解码观测"): [round(x, 4) for x in sp.observed]}),
                         hide_index=True, width="stretch")

# One verdict from every proof on the page (the same results as the table and proof 3's line show).
results = [(ui.tr(*PROOF_NAMES["tree"]), tp.ok), (ui.tr(*PROOF_NAMES["greedy"]), gp.ok)]
if algorithm != "greedy":
    results.append((ui.tr(*PROOF_NAMES["sampling"]), None if sp is None else sp.ok))
sep = ui.tr("; ", "；")
failed = sep.join(name for name, ok in results if ok is False)
not_run = sep.join(name for name, ok in results if ok is None)
held = sep.join(name for name, ok in results if ok)
with summary_box:
    if failed:
        st.warning(ui.tr("Fails with these settings: {f}.", "在当前设置下不成立：{f}。", f=failed)
                   + (ui.tr(" Holds: {h}.", "成立：{h}。", h=held) if held else "")
                   + (ui.tr(" Not run yet: {n}.", "尚未运行：{n}。", n=not_run) if not_run else ""),
                   icon=":material/cancel:")
    elif not_run:
        st.info(ui.tr("Hold on this prompt: {h}. Not run yet: {n} (turn on “Run the Monte Carlo” below).",
                      "在这个 prompt 上成立：{h}。尚未运行：{n}（在下方打开“运行蒙特卡洛”）。", h=held, n=not_run),
                icon=":material/pending:")
    else:
        st.success(ui.tr("Every proof shown holds on this prompt: {h}.", "本页的每个证明在这个 prompt 上都成立：{h}。", h=held),
                   icon=":material/check_circle:")

# -- metrics --------------------------------------------------------------------------------------------
st.subheader(ui.tr("Acceptance metrics", "接受率指标"))
m = M.run_metrics(run)
exp_tau = M.expected_tau(run)
alpha = m.alpha_per_depth[0] if m.alpha_per_depth and m.alpha_per_depth[0] == m.alpha_per_depth[0] else 0.0
c = st.columns(5)
c[0].metric(ui.tr("τ tokens per Target pass", "τ 每次 Target 前向的 token"), f"{m.tau:.2f}",
            help=ui.tr("Mean accept length, the bonus counted (SGLang accept_length, vLLM mean acceptance length).",
                       "平均接受长度，计入 bonus（SGLang 的 accept_length、vLLM 的 mean acceptance length）。"))
c[1].metric(ui.tr("tree expectation E[τ]", "树期望 E[τ]"), f"{exp_tau:.2f}",
            help=ui.tr("1 + Σ over nodes of the product of per-node acceptance probabilities on its root path, averaged over rounds.",
                       "1 + 对每个节点，其根路径上各节点接受概率之积的和，对各轮取平均。"))
c[2].metric(ui.tr("chain closed form", "链式闭式"), f"{M.chain_tau(alpha, depth):.2f}",
            help=ui.tr("(1 − α^(K+1)) / (1 − α) with α = the measured 1-α and K = depth: a chain with i.i.d. acceptance.",
                       "(1 − α^(K+1)) / (1 − α)，α 取实测的 1-α，K = 深度：假设各步独立同分布的链。"))
c[3].metric(ui.tr("per-token acceptance (vLLM)", "逐 token 接受率（vLLM）"), f"{m.token_acceptance_rate:.1%}",
            help=ui.tr("Accepted drafts / drafted tokens: a wide tree drafts n − 1 tokens but can accept at most depth.",
                       "被接受草稿 / 草稿总数：宽树起草 n − 1 个但最多接受 depth 个。"))
c[4].metric(ui.tr("system efficiency (vLLM)", "系统效率（vLLM）"), f"{m.system_efficiency:.1%}",
            help=ui.tr("Emitted / (rounds × (depth + 1)): emitted tokens over the most the rounds could emit; = τ / (depth + 1).",
                       "输出 / (轮数 × (depth + 1))：实际输出与最多可能输出之比；= τ / (depth + 1)。"))
st.dataframe(pd.DataFrame({ui.tr("depth d", "深度 d"): list(range(1, depth + 1)),
                           ui.tr("n-α (given depth d−1 accepted)", "n-α（在 d−1 已接受的条件下）"): [round(a, 3) for a in m.alpha_per_depth],
                           ui.tr("per-position rate (vLLM, unconditional)", "逐位置接受率（vLLM，无条件）"): [round(a, 3) for a in m.position_rate]}),
             hide_index=True, width="stretch")
st.caption(ui.tr(
    "How they differ: τ counts emitted tokens per Target pass (what speed depends on); n-α is conditional on the "
    "previous depth; vLLM's per-position rate is unconditional (the running product of n-α); the per-token rate divides "
    "by every drafted token, so wide trees lower it; system efficiency divides by the most a round could emit.",
    "区别：τ 数的是每次 Target 前向输出的 token（速度取决于它）；n-α 以上一深度被接受为条件；vLLM 的逐位置接受率是无条件的"
    "（n-α 的累积乘积）；逐 token 接受率除以全部草稿 token，宽树会拉低它；系统效率除以一轮最多能输出的 token 数。"))
ratio = ui.widget(st.slider, ui.tr("cost ratio c = Draft step cost / Target pass cost", "成本比 c = Draft 单步成本 / Target 前向成本"),
                  "sv_loop::cost", 0.05, min_value=0.0, max_value=0.5, step=0.01)
st.markdown(ui.tr("Estimated speed-up τ / (1 + depth·c) = {t:.2f} / (1 + {d}·{c:g}) = **{s:.2f}×**",
                  "估计加速比 τ / (1 + depth·c) = {t:.2f} / (1 + {d}·{c:g}) = **{s:.2f}×**",
                  t=m.tau, d=depth, c=ratio, s=M.speedup(m.tau, depth, ratio)))

share_ui.sidebar_controls(KEY, step_key=KEY, extra={"loop": loop_link_inputs()})
ui.end_page()
