"""The decoding loop page's work: its cached runs and proofs, and the step player's frames (one per round).

The page (pages/decoding_loop.py) only wires widgets to these; the loop itself is specviz.rooms.loop.
"""
import streamlit as st

from specviz.app.ui import common as ui
from specviz.app.ui import player
from specviz.app.ui.bounded_cache import bounded_cache
from specviz.render.mask import mask_svg
from specviz.rooms.loop import view
from specviz.rooms.loop.decode import LoopSettings, run_loop
from specviz.rooms.loop.proofs import (PROOF_TOKENS, detection_power, greedy_lossless, sampling_lossless,
                                       speculative_samples, tree_pass_exact)
from specviz.rooms.loop.train import load_models

MISTAKE_TEXT = {
    "kv_by_outputs": ("Commit KV by output tokens (the accepted drafts' rows) instead of the input rows",
                      "按输出 token（被接受草稿的行）而不是输入行提交 KV"),
    "no_shift": ("Skip the one-position shift: emit candidates[accept_index] instead of predicts[accept_index]",
                 "跳过一位错位：输出 candidates[accept_index] 而不是 predicts[accept_index]"),
    "q_as_buffer": ("Hand the target-only sampler the Draft's q as its work buffer (instead of zeros)",
                    "把 Draft 的 q 当作仅目标采样器的工作缓冲（而不是零）"),
    "mask_drop_ancestor": ("A tree mask missing an ancestor (depth >= 2 nodes lose their parent's column)",
                           "树掩码缺少一个祖先（深度 ≥ 2 的节点看不到父节点）"),
}


def loop_link_inputs() -> dict:
    """The page's inputs as its share link carries them (specviz.rooms.share.check_loop_inputs)."""
    names = ("prompt", "algorithm", "topk", "depth", "n", "temperature", "seed", "rounds", "t_acc", "trials", "run_mc", "cost")
    out = {k: st.session_state[f"sv_loop::{k}"] for k in names if f"sv_loop::{k}" in st.session_state}
    out["mistakes"] = [m for m in MISTAKE_TEXT if st.session_state.get(f"sv_loop::m::{m}")]
    return out


PROOF_NAMES = {"tree": ("1. Tree pass exact", "1. 树前向精确"), "greedy": ("2. Greedy lossless", "2. 贪心无损"),
               "sampling": ("3. Sampling lossless", "3. 采样无损")}


@st.cache_resource(show_spinner=False)
def models():
    return load_models()


@bounded_cache()
def cached_run(prompt: str, settings: LoopSettings):
    return run_loop(prompt, settings, models())


@bounded_cache()
def cached_tree_proof(prompt: str, settings: LoopSettings):
    return tree_pass_exact(cached_run(prompt, settings), models())


@bounded_cache()
def cached_greedy_proof(prompt: str, settings: LoopSettings):
    return greedy_lossless(cached_run(prompt, settings), models())


MC_PIECE = 25  # proof 3's runs are taken 25 at a time: the page shows its progress between pieces


def mc_pieces(trials: int) -> list:
    return [(a, min(MC_PIECE, trials - a)) for a in range(0, trials, MC_PIECE)]


@bounded_cache()
def cached_samples(prompt: str, settings: LoopSettings, start: int, count: int):
    """Proof 3's runs start .. start + count - 1 (the same runs as taken at once: each has its own coins)."""
    return speculative_samples(prompt, settings, PROOF_TOKENS, count, models=models(), start=start)


@bounded_cache()
def cached_sampling_proof(prompt: str, settings: LoopSettings, trials: int):
    samples = [x for a, c in mc_pieces(trials) for x in cached_samples(prompt, settings, a, c)]
    return sampling_lossless(prompt, settings, num_tokens=PROOF_TOKENS, trials=trials, models=models(), samples=samples)


@bounded_cache()
def cached_power(prompt: str, settings: LoopSettings, trials: int):
    return detection_power(prompt, settings, trials, models=models())


@bounded_cache()
def round_frames(prompt: str, settings: LoopSettings, lang: str, words: dict, mask_words: tuple) -> list:
    """One player frame per round (cached per run and language: the page reruns for other widgets)."""
    run = cached_run(prompt, settings)
    show = models()[2].show
    out = []
    text = prompt
    vocab = run.vocab
    for rnd in run.rounds:
        k = rnd.accept_len - 1
        text += "".join(vocab[t] for t in rnd.emitted)
        cands = rnd.tree.candidates
        ai = [i for i in rnd.accept_index]
        caption = ui.tr(
            "Round {r}: root '{root}' at position {pos} (its KV does not exist yet); the Target's KV held {L} rows. "
            "Accepted drafts k = {k}; emitted {m} token(s); bonus '{b}' is the next root.",
            "第 {r} 轮：根 '{root}' 位于位置 {pos}（它的 KV 尚不存在）；Target 的 KV 有 {L} 行。被接受草稿 k = {k}；"
            "输出 {m} 个 token；bonus '{b}' 成为下一轮的根。",
            r=rnd.index, root=show(rnd.root), pos=rnd.seq_len, L=rnd.seq_len, k=k, m=len(rnd.emitted), b=show(rnd.bonus))
        hover = lambda i: ui.tr("row {i}: input {x} → predicts {y}", "第 {i} 行：输入 {x} → predicts {y}",  # noqa: E731
                                i=i, x=show(cands[i]), y=show(rnd.predicts[i]))
        last = len([i for i in ai if i >= 0]) - 1
        rows = [player.Row(ui.tr("text so far", "目前的文本"), code=("…" + text[-72:]) if len(text) > 72 else text),
                player.Row("accept_index", [(str(i), "accepted", hover(i)) if i >= 0 else (str(i), "pending", "") for i in ai]),
                player.Row(ui.tr("input row token", "输入行 token"),
                           [(show(cands[i]), "accepted", hover(i)) for i in ai if i >= 0]),
                player.Row(ui.tr("predicts (emitted)", "predicts（输出）"),
                           [(show(rnd.predicts[i]), "bonus" if j == last else "accepted", hover(i))
                            for j, i in enumerate(x for x in ai if x >= 0)])]
        kv = view.kv_table(rnd, show, words)
        status = words["status"]
        table = [list(kv.columns)] + [
            [(str(v), ("accepted" if row[status] == words["kept"] else "rejected" if row[status] == words["dropped"] else ""), "")
             for v in row.values] for _, row in kv.iterrows()]
        out.append(player.Frame(dot=view.round_tree_dot(rnd, show, words), caption=caption, rows=rows, table=table,
                                svg2=mask_svg(rnd.mask_used, [show(t) for t in cands], words=mask_words),
                                alt=ui.tr("the draft tree of round {r}", "第 {r} 轮的草稿树", r=rnd.index)))
    return out
