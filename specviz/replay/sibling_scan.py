"""One level of the target-only sibling scan, sibling by sibling, in the kernel's order (SEMANTICS.md §6.1).

For each sibling: its coin bucket (the coins that accept it, the earlier siblings having been
rejected), whether the scan reached it, its verdict, and the rule that decided it, applied in the
order of the kernel's test

    0.5.23:  pt > 0 and (coin < prob_acc / t_acc or pt >= threshold_single)
    earlier: coin <= prob_acc / t_acc or pt >= threshold_single

so a sibling is decided by the ``p > 0`` guard first (0.5.23), then by the coin test, and only when
the coin test fails by ``threshold_single``. The running sum and the bound are float32, as in the
reference (``specviz.reference.target_only.tree_sampling_target_only``), so a coin exactly on a bound gets
the reference's verdict. No streamlit here; the words live in ``rule_text``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32

# Rule codes (``SiblingRow.rule``)
P_ZERO = "p_zero"                 # 0.5.23: p = 0 is never accepted (the guard comes first)
COIN = "coin"                     # the coin test accepted (threshold_acc = 1: coin against prob_acc)
THRESHOLD_ACC = "threshold_acc"   # the coin test accepted only because threshold_acc < 1 stretched the bound
SINGLE = "threshold_single"       # the coin test failed, p >= threshold_single accepted
BOTH_FAIL = "both_fail"           # the coin test failed and p < threshold_single: rejected
NOT_REACHED = "not_reached"       # an earlier sibling was accepted: this one was never tested


@dataclass(frozen=True)
class SiblingRow:
    node: int
    token: int
    p: float
    prob_acc: float      # running sum up to and including this sibling (float32)
    bound: float         # prob_acc / threshold_acc (float32): the coin test's right-hand side
    lo: float            # the coins that accept this sibling: lo..hi, ends as ``closed`` says
    hi: float
    closed: str          # "[)" (0.5.23's strict <), "(]" or "[]" (earlier releases' <=)
    empty: bool          # no coin accepts this sibling (p = 0 under 0.5.23, or earlier siblings took every coin)
    single: bool         # p >= threshold_single (and allowed by the p > 0 guard)
    reached: bool        # the scan tests this sibling with the level's coin
    accepted: bool
    rule: str            # one of the codes above


def scan_level(p_row, sibling_tokens, sibling_nodes, coin: float, *, threshold_single: float = 1.0,
               threshold_acc: float = 1.0, semantics: str = "0.5.23") -> list[SiblingRow]:
    """Every sibling of one level with ``coin`` (the level's u), in sibling order, as the kernel scans them."""
    new = semantics == "0.5.23"
    t_single = F32(threshold_single)
    t_acc = F32(max(float(threshold_acc), 1e-9))
    u = F32(coin)
    acc = F32(0)
    taken = 0.0           # coins up to here were taken by earlier siblings
    first = True
    reached, out = True, []
    for node, tok in zip(sibling_nodes, sibling_tokens):
        pt = F32(p_row[tok])
        acc = F32(acc + pt)
        bound = F32(acc / t_acc)
        allowed = bool(pt > 0) or not new
        single = bool(pt >= t_single) and allowed
        if not allowed:
            lo = hi = taken
        elif single:
            lo, hi = taken, 1.0
        else:
            lo, hi = taken, max(taken, min(1.0, float(bound)))
        if new:
            closed, empty = "[)", hi <= lo
        else:  # coin <= bound: the first sibling owns [0, b], a later one (previous bound, b]
            closed, empty = ("[]" if first else "(]"), (hi < lo or (hi == lo and not first))
        coin_ok = bool(u < bound) if new else bool(u <= bound)
        if not reached:
            accepted, rule = False, NOT_REACHED
        elif not allowed:
            accepted, rule = False, P_ZERO
        elif coin_ok:
            accepted = True
            rule = THRESHOLD_ACC if t_acc < 1 and not (bool(u < acc) if new else bool(u <= acc)) else COIN
        elif single:
            accepted, rule = True, SINGLE
        else:
            accepted, rule = False, BOTH_FAIL
        out.append(SiblingRow(node=int(node), token=int(tok), p=float(pt), prob_acc=float(acc), bound=float(bound),
                              lo=float(lo), hi=float(hi), closed=closed, empty=bool(empty), single=single, reached=reached,
                              accepted=accepted, rule=rule))
        if accepted:
            reached = False
        taken = hi
        first = False
    return out


def in_bucket(row: SiblingRow, coin: float) -> bool:
    """Does ``coin`` fall in ``row``'s bucket (the ends as ``row.closed`` says)?"""
    if row.empty:
        return False
    left = coin >= row.lo if row.closed[0] == "[" else coin > row.lo
    right = coin < row.hi if row.closed[1] == ")" else coin <= row.hi
    return bool(left and right)


def _num(x: float, other: float | None = None) -> str:
    """Three significant digits, more when needed to tell ``x`` from ``other``."""
    for d in range(3, 10):
        a = f"{x:.{d}g}"
        if other is None or x == other or a != f"{other:.{d}g}":
            return a
    return repr(x)


def bucket_text(row: SiblingRow, lang: str = "en", coin: float | None = None) -> str:
    """The bucket as an interval, or "empty" (never an interval such as "[1, 1)")."""
    if row.empty:
        return "空" if lang == "zh" else "empty"
    lo = _num(row.lo, coin)
    hi = _num(row.hi, coin)
    return f"{row.closed[0]}{lo}, {hi}{row.closed[1]}"


def rule_text(row: SiblingRow, coin: float, *, threshold_single: float, threshold_acc: float, semantics: str,
              lang: str = "en") -> tuple[str, str]:
    """Which test decided ``row``, with its numbers: (short text for the table cell, full sentence for its hover)."""
    z = lang == "zh"
    lt, ge = ("<", "≥") if semantics == "0.5.23" else ("≤", ">")
    c, b = _num(coin, row.bound), _num(row.bound, coin)
    against = (f"prob_acc {b}" if threshold_acc >= 1 else f"prob_acc/threshold_acc = {_num(row.prob_acc)}/{_num(threshold_acc)} = {b}")
    p, ts = _num(row.p, threshold_single), _num(threshold_single, row.p)
    coin_word = "随机数" if z else "coin"
    if row.rule == NOT_REACHED:
        return "—", ("未到达：更早的兄弟节点已被接受，此节点不再检验" if z else "not reached: an earlier sibling was accepted, so this one is never tested")
    if row.rule == P_ZERO:
        return ("p = 0（0.5.23 的 p > 0 检查）" if z else "p = 0 (0.5.23's p > 0 guard)",
                "p = 0：0.5.23 的 p > 0 检查最先执行，拒绝，不看随机数和阈值" if z
                else "p = 0: 0.5.23's p > 0 guard comes first and rejects it, whatever the coin and the thresholds")
    if row.rule in (COIN, THRESHOLD_ACC):
        short = f"{coin_word} {c} {lt} {b}" + (" (threshold_acc)" if row.rule == THRESHOLD_ACC else "")
        long = (f"随机数检验：{c} {lt} {against}" if z else f"coin test: coin {c} {lt} {against}")
        if row.rule == THRESHOLD_ACC:
            long += ("（随机数 ≥ prob_acc {a}：只因 threshold_acc < 1 放宽了界限才通过）" if z
                     else " (the coin is not below prob_acc {a}: it passes only because threshold_acc < 1 stretches the bound)"
                     ).format(a=_num(row.prob_acc, coin))
        return short, long
    if row.rule == SINGLE:
        return (f"threshold_single：p {p} ≥ {ts}" if z else f"threshold_single: p {p} ≥ {ts}",
                f"随机数检验 {c} {ge} {against} 未通过；p {p} ≥ threshold_single {ts}，不看随机数即接受" if z
                else f"the coin test failed ({c} {ge} {against}); p {p} ≥ threshold_single {ts} accepts it whatever the coin")
    return (f"{coin_word} {c} {ge} {b}，p {p} < {ts}" if z else f"{coin_word} {c} {ge} {b}, p {p} < {ts}",
            f"随机数检验未通过（{c} {ge} {against}），且 p {p} < threshold_single {ts}：拒绝" if z
            else f"the coin test failed ({c} {ge} {against}) and p {p} < threshold_single {ts}: rejected")
