"""The pitfall gallery: common Accept-stage bugs next to the correct behaviour, on the same inputs.

Each ``Pitfall`` holds a scenario (the inputs both sides see), a deliberately *buggy*
implementation (``specviz.rooms.pitfall_bugs``: small and readable, so a student can spot the mistake), and the
correct values from the numpy reference (``specviz.replay.engine`` / ``specviz.rooms.audit``). The buggy
side returns the same field names the audit engine checks (``accept_index``, ``outputs``,
``correct_len``, ...), so ``audit(pitfall.scenario(), pitfall.buggy_outputs())`` explains the
bug in one sentence as well.

This module is the gallery's content (the words, as data: ``PITFALLS``) and what shows it (the record,
the side-by-side comparison, the nodes each side marks in the tree). No streamlit here. Text is given
in English and 简体中文.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from specviz.rooms.audit import expected_outputs
from specviz.replay.engine import run_scenario
from specviz.rooms.pitfall_bugs import (buffer_scenario, bug_buffer_as_q, bug_count_all_matches, bug_kv_by_outputs, bug_le_boundary,
                           bug_local_ids, bug_no_root, bug_pad_gather, bug_q_zero, bug_thresholds, bug_top_p_one_side,
                           dspark_scenario, pad_scenario, preset, q_zero_scenario, top_p_scenario)
from specviz.inputs.scenario import Scenario


# ---------------------------------------------------------------------------------------------
# The pitfall record
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    field: str  # audit field name
    buggy: str  # display text (token labels)
    correct: str

    @property
    def differs(self) -> bool:
        return self.buggy != self.correct


@dataclass(frozen=True)
class Pitfall:
    key: str
    title: dict  # {"en": ..., "zh": ...}
    symptom: dict  # one sentence: what goes wrong, visibly
    fix: dict  # one sentence: the rule that fixes it
    make_scenario: Callable[[], Scenario]  # the shared inputs (the correct side runs them as given)
    buggy: Callable[[Scenario], dict]  # the buggy implementation: scenario -> {audit field: value (token ids)}
    fields: tuple  # fields shown side by side, in order
    buggy_label: dict = field(default_factory=lambda: {"en": "buggy", "zh": "错误实现"})
    correct_label: dict = field(default_factory=lambda: {"en": "correct (SGLang 0.5.23)", "zh": "正确（SGLang 0.5.23）"})
    page: str = "greedy"  # the live page where the scenario can be explored further

    def scenario(self) -> Scenario:
        return self.make_scenario()

    def buggy_outputs(self, s: Scenario | None = None) -> dict:
        return self.buggy(s if s is not None else self.scenario())

    def correct_outputs(self, s: Scenario | None = None) -> dict:
        s = s if s is not None else self.scenario()
        exp = expected_outputs(s)
        return {k: exp[k] for k in self.fields}

    def compare(self) -> list[Comparison]:
        """The fields side by side, as display text."""
        s = self.scenario()
        bug, ok = self.buggy_outputs(s), self.correct_outputs(s)
        return [Comparison(f, display(s, f, bug[f]), display(s, f, ok[f])) for f in self.fields]


TOKEN_FIELDS = ("predicts", "accept_tokens", "outputs", "out_tokens", "bonus", "committed_tokens")


def display(s: Scenario, name: str, value) -> str:
    """Token fields as labels, index fields as numbers; one request -> no outer brackets."""
    def lab(v):
        if isinstance(v, list):
            return "[" + ", ".join(lab(x) for x in v) + "]"
        if name in TOKEN_FIELDS:
            return s.label(int(v)) if int(v) >= 0 else str(int(v))
        return str(int(v))
    if isinstance(value, list) and len(s.requests) == 1 and len(value) == 1:
        value = value[0]
    return lab(value)


def _pitfall(key: str, make_scenario: Callable[[], Scenario], buggy: Callable[[Scenario], dict], fields: tuple,
             page: str = "greedy", **words: tuple) -> Pitfall:
    """A gallery record with its words (title, symptom, fix; optionally buggy_label, correct_label) given as
    (English, 简体中文) pairs: a word without both languages is refused when the module loads."""
    for name, pair in words.items():
        if len(pair) != 2 or not all(isinstance(t, str) and t.strip() for t in pair):
            raise ValueError(f"pitfall {key!r}: {name} needs an English and a Chinese text")
    return Pitfall(key=key, make_scenario=make_scenario, buggy=buggy, fields=fields, page=page,
                   **{name: {"en": en, "zh": zh} for name, (en, zh) in words.items()})


# ---------------------------------------------------------------------------------------------
# The gallery
# ---------------------------------------------------------------------------------------------

PITFALLS: tuple[Pitfall, ...] = (
    _pitfall("no_root_row", lambda: preset("running_example"), bug_no_root, ("accept_index", "outputs"),
             title=("accept_index without the root row", "accept_index 漏掉 root 行"),
             symptom=("The first output A disappears: accept_index is [1, 3] and predicts at those rows give only C, X.",
                      "第一个输出 A 消失了：accept_index 只有 [1, 3]，这两行的预测只给出 C、X。"),
             fix=("Start accept_index with the root's row b*n: the root's prediction is the first output, so accept_index = [0, 1, 3].",
                  "accept_index 要从 root 行 b*n 开始：root 的预测就是第一个输出，因此 accept_index = [0, 1, 3]。")),
    _pitfall("pad_gather", pad_scenario, bug_pad_gather, ("accept_tokens", "outputs", "bonus"), page="batch_kv",
             title=("Gathering predicts through a -1 pad", "用 -1 填充位去 gather predicts"),
             symptom=("Request 0 accepts only A, yet its outputs end with Y: predicts[-1] read the last element of the whole flat tensor, which belongs to request 1.",
                      "请求 0 只接受了 A，输出末尾却多出 Y：predicts[-1] 读到了整个扁平张量的最后一个元素，它属于请求 1。"),
             fix=("Gather only the first accept_lens slots of each row (the -1 pads are not indices) and take the bonus at slot accept_lens - 1.",
                  "每行只 gather 前 accept_lens 个位置（-1 只是填充，不是下标），bonus 取 accept_lens - 1 位置。")),
    _pitfall("dspark_non_leading", dspark_scenario, bug_count_all_matches, ("correct_len", "bonus", "outputs"), page="dspark",
             title=("DSpark: counting a non-leading match in correct_len", "DSpark：把非前缀的匹配也计入 correct_len"),
             symptom=("Draft B mismatches but the later C matches, and correct_len becomes 2: the output A, B, C keeps a draft the target rejected.",
                      "Draft B 已经不匹配，后面的 C 却恰好匹配，correct_len 变成 2：输出 A、B、C 保留了 Target 已否定的 Draft。"),
             fix=("correct_len is the length of the leading run of matches: stop at the first mismatch (here 1), bonus = target_predict[1] = X.",
                  "correct_len 是从头开始连续匹配的长度：遇到第一个不匹配就停止（这里是 1），bonus = target_predict[1] = X。")),
    _pitfall("kv_by_outputs", lambda: preset("running_example"), bug_kv_by_outputs, ("committed_tokens",), page="batch_kv",
             title=("Committing KV by output tokens", "按输出 token 提交 KV"),
             symptom=("The KV commit asks for A, C, X: it misses the root R, whose KV this verify pass wrote, and wants X's KV, which does not exist yet.",
                      "KV 提交要的是 A、C、X：漏掉了本轮 Verify 刚写入 KV 的 root R，又去要还不存在的 X 的 KV。"),
             fix=("Keep the KV of the input rows in accept_index (R, A, C at positions 10, 11, 12); X gets its KV next round as the new root.",
                  "保留 accept_index 指向的输入行（R、A、C，位置 10、11、12）的 KV；X 在下一轮作为新 root 才计算 KV。")),
    _pitfall("buffer_as_q", buffer_scenario, bug_buffer_as_q, ("accept_index", "outputs"), page="target_only",
             title=("Treating the target-only work buffer as q", "把 Target-only 的工作缓冲区当成 q"),
             symptom=("With q = the zero buffer, u*q = 0 < p for every child, so A and C are accepted although the coin .9 lies outside A's bucket [0, .5).",
                      "把全零缓冲区当作 q 后，u*q = 0 < p 对每个 child 都成立，所以即使 coin .9 不在 A 的区间 [0, .5) 内，A、C 也被接受。"),
             fix=("The target-only sampler has no q: it compares the coin with the running sum of target mass over siblings, and the buffer only collects rejected mass for relu(p − buffer).",
                  "Target-only sampler 没有 q：它把 coin 与各 sibling 的 Target 累计概率比较，缓冲区只收集被拒绝的质量，用于 relu(p − buffer)。")),
    _pitfall("q_zero", q_zero_scenario, bug_q_zero, ("accept_index", "outputs"), page="chain_sampling",
             title=("q = 0 for a proposed token", "被提出的 token 其 q = 0"),
             symptom=("The draft 'proposed' A with q(A) = 0; earlier releases accept it (u*0 = 0 < p = .3) whatever the coin, 0.5.23 rejects it.",
                      "Draft 以 q(A) = 0 “提出”了 A；早期版本无论 coin 多少都接受（u*0 = 0 < p = .3），0.5.23 则拒绝。"),
             fix=("Pass the distribution the draft really sampled from (q > 0 for every proposed token); 0.5.23 also requires 0 < q <= 1 before u*q < p.",
                  "传入 Draft 实际采样所用的分布（被提出的 token 必有 q > 0）；0.5.23 在判断 u*q < p 之前还要求 0 < q <= 1。"),
             buggy_label=("earlier releases", "早期版本")),
    _pitfall("coin_on_boundary", lambda: preset("semantics_disagree"), bug_le_boundary, ("accept_index", "outputs"), page="target_only",
             title=("A coin exactly on a bucket boundary (< vs <=)", "coin 恰好落在区间边界（< 与 <=）"),
             symptom=("u[0] = .5 equals A's running sum .5: with <= A is accepted (output A, C, X), with the strict < it is rejected and B is taken (output B, X).",
                      "u[0] = .5 恰好等于 A 的累计概率 .5：用 <= 时 A 被接受（输出 A、C、X），用严格的 < 时 A 被拒绝、改走 B（输出 B、X）。"),
             fix=("Buckets are half-open [S(i-1), S(i)): use coin < running sum, as 0.5.23 does; test coins should sit on a boundary only on purpose.",
                  "区间是左闭右开的 [S(i-1), S(i))：与 0.5.23 一样使用 coin < 累计概率；测试用的 coin 只在有意时才放在边界上。"),
             buggy_label=("<= (earlier releases)", "<=（早期版本）")),
    _pitfall("thresholds_below_1", buffer_scenario, bug_thresholds, ("accept_index", "outputs"), page="target_only",
             title=("Thresholds below 1 (lossy)", "阈值小于 1（有损）"),
             symptom=("With threshold_acc = .5 the coin .9 passes u < .5/.5 = 1, so A is accepted: A's share of first tokens rises from .5 to 1 and the output no longer follows the target.",
                      "threshold_acc = .5 时，coin .9 满足 u < .5/.5 = 1，A 被接受：A 作为第一个 token 的概率从 .5 升到 1，输出不再服从 Target 分布。"),
             fix=("Keep threshold_single = threshold_acc = 1 for exact sampling; lower thresholds trade exactness for longer accepts on purpose.",
                  "需要精确采样时保持 threshold_single = threshold_acc = 1；更低的阈值是有意用精确性换更长的接受长度。"),
             buggy_label=("threshold_acc = 0.5", "threshold_acc = 0.5"),
             correct_label=("thresholds = 1 (exact)", "阈值 = 1（精确）")),
    _pitfall("top_p_one_side", top_p_scenario, bug_top_p_one_side, ("accept_index", "outputs"), page="chain_sampling",
             title=("top-p applied to one side only", "只在一侧应用 top-p"),
             symptom=("The target p is truncated by top_p = .8 but q is the raw draft distribution: A's acceptance min(1, p/q) becomes .98 instead of .88, so the coin .9 accepts A.",
                      "Target 的 p 按 top_p = .8 截断了，q 却仍是未截断的 Draft 分布：A 的接受概率 min(1, p/q) 从 .88 变成 .98，coin .9 因而接受了 A。"),
             fix=("q must be the distribution the draft actually sampled from, under the same top-k / top-p as the request; truncate and renormalise both sides consistently.",
                  "q 必须是 Draft 实际采样所用、与请求相同 top-k / top-p 处理后的分布；两侧要一致地截断并重新归一化。")),
    _pitfall("local_node_ids", lambda: preset("batch_two_requests"), bug_local_ids, ("accept_index", "outputs"), page="batch_kv",
             title=("A batch with per-request offsets forgotten", "batch 中忘了每个请求的行偏移"),
             symptom=("Request 1's accept_index holds local node ids [0, 1, 4], so its gather reads request 0's rows: output A, C, A instead of B, F, Y.",
                      "请求 1 的 accept_index 存的是局部节点号 [0, 1, 4]，gather 读到的是请求 0 的行：输出 A、C、A 而不是 B、F、Y。"),
             fix=("accept_index holds global rows b*n + i (request 1: [5, 6, 9]); logits, predicts and positions are all indexed by the global row.",
                  "accept_index 存的是全局行号 b*n + i（请求 1：[5, 6, 9]）；logits、predicts 与 positions 都按全局行号索引。")),
)

BY_KEY = {p.key: p for p in PITFALLS}


def get_pitfall(key: str) -> Pitfall:
    from specviz.base.errors import SpecvizError

    if key not in BY_KEY:
        raise SpecvizError("pitfall", f"{key!r} is not in the gallery: choose one of {', '.join(BY_KEY)}")
    return BY_KEY[key]


# ---------------------------------------------------------------------------------------------
# What each side marks in the tree (for the side-by-side figures)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SideView:
    """Per request: the nodes a side treats as kept (root + accepted), and the bonus token it emits."""

    nodes: tuple  # per request: tuple of node ids
    bonus: tuple  # per request: token id or None


def side_view(s: Scenario, values: dict) -> SideView:
    """Read a side's values (audit field names, token ids) as kept nodes per request.

    accept_index / committed_rows are global rows: a row is drawn in the request that owns it
    (so local node ids of request 1 light up request 0's tree, which is what that bug reads).
    """
    bs, n = len(s.requests), s.n
    ref = run_scenario(s, with_trace=False).commits
    nodes = [set() for _ in range(bs)]
    rows = None
    if "accept_index" in values:
        rows = [r for req in values["accept_index"] for r in req if r >= 0]
    elif "committed_rows" in values:
        rows = [r for req in values["committed_rows"] for r in req]
    if rows is not None:
        for r in rows:
            if 0 <= r < bs * n:
                nodes[r // n].add(r % n)
    elif "correct_len" in values:
        for b, k in enumerate(values["correct_len"]):
            nodes[b].update(range(min(int(k), n - 1) + 1))
    elif "committed_tokens" in values:
        tree_tokens = [s.tree(b).tokens for b in range(bs)]
        for b, toks in enumerate(values["committed_tokens"]):
            for t in toks:
                hit = next((i for i in ref[b].accept_nodes if tree_tokens[b][i] == t), None)
                if hit is not None:
                    nodes[b].add(hit)
    else:
        for b in range(bs):
            nodes[b].update(ref[b].accept_nodes)
    bonus = []
    for b in range(bs):
        if "bonus" in values:
            bonus.append(int(values["bonus"][b]))
        elif "outputs" in values and values["outputs"][b]:
            bonus.append(int(values["outputs"][b][-1]))
        elif "committed_tokens" in values:
            bonus.append(None)
        else:
            bonus.append(int(ref[b].next_root))
    return SideView(nodes=tuple(tuple(sorted(x)) for x in nodes), bonus=tuple(bonus))
