"""Sentences that name tokens or rows, computed from a live result (never from preset text).

Pages, the CLI and the export call these with the scenario and the engine's commit view, so a
caption can never describe another walk than the one drawn beside it. ``lang`` is "en" or "zh".
"""
from __future__ import annotations

from .scenario import Scenario


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def toks(s: Scenario, ids) -> str:
    return " ".join(s.label(int(t)) for t in ids)


def walk_summary(s: Scenario, commit, lang: str = "en") -> str:
    """"R → A → C, output A C X": the committed path and what it emits."""
    path = " → ".join(s.label(int(t)) for t in commit.committed_tokens)
    return _t(lang, f"{path}, output {toks(s, commit.output_tokens)}", f"{path}，输出 {toks(s, commit.output_tokens)}")


def shift_sentence(s: Scenario, commit, lang: str = "en") -> str:
    """The one-position shift of this walk: which input row emits which token, which rows keep KV."""
    ins = [s.label(int(t)) for t in commit.committed_tokens]
    outs = [s.label(int(t)) for t in commit.output_tokens]
    en = ", ".join(f"row {i} emits {o}" for i, o in zip(ins, outs))
    zh = "，".join(f"{i} 行产生 {o}" for i, o in zip(ins, outs))
    kv = ", ".join(ins)
    return _t(lang,
              f"The one-position shift: input {en}; {outs[-1]} is the bonus. Only the rows fed through the model this "
              f"round ({kv}) have KV.",
              f"错开一个位置：输入 {zh}；{outs[-1]} 是 bonus。只有本轮送进模型的行（{'、'.join(ins)}）有 KV。")


def outcome_sentence(s: Scenario, commit, lang: str = "en") -> str:
    """What the Overview says about the live walk: accept_index, outputs, KV rows, bonus, discarded."""
    rows = "[" + ", ".join(str(r) for r in commit.accept_rows) + "]"
    disc = ", ".join(s.label(int(s.tree(commit.request).tokens[i])) for i in commit.discarded_nodes)
    outs = toks(s, commit.output_tokens)
    kv = ", ".join(s.label(int(t)) for t in commit.committed_tokens)
    bonus = s.label(int(commit.next_root))
    en = (f"This walk: accept_index = {rows}; the input rows {kv} keep their KV and give the outputs {outs}. "
          f"{bonus} is the bonus and the next root" + (f"; {disc} discarded." if disc else "."))
    zh = (f"本次遍历：accept_index = {rows}；输入行 {kv} 保留 KV，并给出输出 {outs}。"
          f"{bonus} 是 bonus，也是下一轮的根" + (f"；{disc} 被丢弃。" if disc else "。"))
    return _t(lang, en, zh)
