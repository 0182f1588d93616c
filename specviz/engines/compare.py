"""The three engines side by side on one chain: each engine's decision (specviz's description of
its rule) next to what its own code emitted, the slots where engines differ and the rule behind
each difference, and a Monte Carlo per engine ("different draws, same law").
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from specviz.engines import adapters as A
from specviz.engines import chain as C
from specviz.engines import rules as R

# Why a slot or a terminal token differs, in both languages (the page shows these).
REASONS = {
    "equality": ("u·q = p exactly: SGLang accepts only when u·q < p (strict), vLLM when p/q ≥ u, transformers when "
                 "u ≤ p/q; at equality SGLang rejects and the other two accept.",
                 "u·q = p 恰好相等：SGLang 仅在 u·q < p（严格小于）时接受，vLLM 在 p/q ≥ u 时接受，transformers 在 "
                 "u ≤ p/q 时接受；相等时 SGLang 拒绝，另两者接受。"),
    "q_zero": ("q = 0 for the draft token: SGLang requires 0 < q ≤ 1 and vLLM q > 0, so both reject; transformers "
               "divides p/0 = ∞ and accepts (or 0/0 = NaN and rejects).",
               "draft token 的 q = 0：SGLang 要求 0 < q ≤ 1，vLLM 要求 q > 0，两者都拒绝；transformers 计算 "
               "p/0 = ∞ 而接受（0/0 = NaN 时拒绝）。"),
    "p_zero": ("p = 0 with a coin of exactly 0: SGLang's 0·q < 0 is false (reject); vLLM's 0/q ≥ 0 is true, so it "
               "accepts a token the target gives no probability.",
               "p = 0 且硬币恰为 0：SGLang 的 0·q < 0 不成立（拒绝）；vLLM 的 0/q ≥ 0 成立，于是接受了一个目标概率为 0 的 token。"),
    "greedy": ("Greedy request: SGLang (mixed batch) samples from top_k = 1 with ties kept, vLLM takes the argmax "
               "(first of a tie); transformers runs greedy requests alone, by argmax.",
               "贪心请求：SGLang（混合批）从 top_k = 1（保留并列）的分布采样，vLLM 取 argmax（并列取第一个）；"
               "transformers 单独运行贪心请求，取 argmax。"),
    "coins": ("Different coins: transformers draws its own (torch.rand_like) and cannot be handed the edited coins.",
              "硬币不同：transformers 自己抽取硬币（torch.rand_like），无法传入编辑后的硬币。"),
    "rounding": ("Rounding: transformers works on softmax(log p), which differs from p in the last bits.",
                 "舍入：transformers 使用 softmax(log p)，与 p 在最后几位不同。"),
    "follows": ("Follows an earlier difference: the engines stopped at different slots.",
                "由前面的差异导致：各引擎停在不同的位置。"),
    "zero_mass": ("Residual of zero mass: SGLang falls back to V−1, vLLM's argmax of zeros gives token 0, "
                  "transformers divides 0 by 0 and torch.multinomial raises.",
                  "残差质量为零：SGLang 回退到 V−1，vLLM 对全零取 argmax 得到 token 0，transformers 计算 0/0，"
                  "torch.multinomial 报错。"),
    "draw": ("Different draws of the same law: SGLang inverts the CDF of the residual with one coin u_final; vLLM "
             "and transformers take argmax(residual / E) with exponential E (the exponential race).",
             "同一分布的不同抽样：SGLang 用一个硬币 u_final 对残差做逆 CDF；vLLM 与 transformers 用指数随机数 E 取 "
             "argmax(残差 / E)（指数竞赛）。"),
    "not_run": ("Not run: transformers' greedy path is inline in _assisted_decoding (no function to call); shown "
                "by its rule only.",
                "未运行：transformers 的贪心路径写在 _assisted_decoding 内部（无可调用的函数），仅按规则展示。"),
}


@dataclasses.dataclass(frozen=True)
class EngineView:
    engine: str
    available: bool
    how: str                     # where it was found, or why it is missing
    decisions: tuple             # [bs] rules.Decision (always: the description needs no package)
    outs: tuple | None           # [bs] adapters.EngineOut, None when missing
    error: str = ""              # an unexpected failure of the engine call (shown, never a traceback)

    def agrees(self, b: int) -> bool | None:
        """Does the engine's own output match the description for request b? None if not run."""
        if self.outs is None or not self.outs[b].ran:
            return None
        d, o = self.decisions[b], self.outs[b]
        if d.terminal.kind == "error":
            return bool(o.error)
        return not o.error and tuple(o.tokens) == tuple(d.tokens) and o.accepted == d.accepted


@dataclasses.dataclass(frozen=True)
class Diff:
    pair: tuple          # (engine a, engine b)
    request: int
    slot: int | str      # 1..n, or "terminal"
    a: str
    b: str
    reason: str          # a key of REASONS


@dataclasses.dataclass(frozen=True)
class Comparison:
    chain: C.Chain
    draws: tuple
    views: dict          # engine -> EngineView
    diffs: tuple

    def slots_compared(self, pair) -> int:
        """Slot verdicts plus terminal tokens compared for a pair (both engines reached them)."""
        count = 0
        for b in range(self.chain.bs):
            da, db = (self.views[e].decisions[b] for e in pair)
            count += min(len(da.slots), len(db.slots)) + 1
        return count


def _verdict(s: R.SlotTest | None) -> str:
    return "—" if s is None else ("accept" if s.accepted else "reject")


def _slot_reason(sa: R.SlotTest, sb: R.SlotTest, greedy: bool) -> str:
    rules_ = {sa.rule, sb.rule}
    if greedy:
        return "greedy"
    if rules_ & {"q_zero", "hf_q_zero_accept", "hf_nan"}:
        return "q_zero"
    if "p_zero_accept" in rules_:
        return "p_zero"
    if rules_ & {"equal_strict", "equal_accept"}:
        return "equality"
    if sa.coin != sb.coin:
        return "coins"
    return "rounding"


def differences(ch: C.Chain, views: dict) -> tuple:
    out = []
    for a, b in itertools.combinations(R.ENGINES, 2):
        for r in range(ch.bs):
            da, db = views[a].decisions[r], views[b].decisions[r]
            greedy = ch.requests[r].greedy
            diverged = False
            for s in range(ch.n):
                sa = da.slots[s] if s < len(da.slots) else None
                sb = db.slots[s] if s < len(db.slots) else None
                if sa is None or sb is None:
                    break
                if sa.accepted != sb.accepted:
                    out.append(Diff((a, b), r, s + 1, _verdict(sa), _verdict(sb), _slot_reason(sa, sb, greedy)))
                    diverged = True
                    break
            ta, tb = da.terminal, db.terminal
            same = ta.kind == tb.kind == "error" or (ta.token == tb.token and not diverged and da.accepted == db.accepted)
            if not same:
                if diverged or da.accepted != db.accepted:
                    why = "follows"
                elif "error" in (ta.kind, tb.kind) or {ta.why, tb.why} & {"sglang_zero_mass", "vllm_zero_mass", "hf_zero_mass"}:
                    why = "zero_mass"
                elif greedy:
                    why = "greedy"
                elif "sglang" in (a, b):
                    why = "draw"
                else:
                    why = "rounding"
                fmt = lambda t: "error" if t.token is None else str(t.token)  # noqa: E731
                out.append(Diff((a, b), r, "terminal", fmt(ta), fmt(tb), why))
    return tuple(out)


def compare(ch: C.Chain, engines=R.ENGINES) -> Comparison:
    """Every engine's description and, where installed, its own code's output on ``ch``."""
    ch = C.validate(ch)
    draws = C.randomness(ch)
    avail = A.availability()
    all_greedy = all(r.greedy for r in ch.requests)
    views = {}
    for e in R.ENGINES:
        dec = tuple(R.describe(e, r, d, all_greedy=all_greedy) for r, d in zip(ch.requests, draws))
        ok, how = avail[e]
        outs, err = None, ""
        if ok and e in engines:
            try:
                outs = tuple(A.run(e, ch, draws))
            except A.EngineMissing as exc:
                ok, how = False, str(exc)
            except Exception as exc:  # noqa: BLE001  (shown on the page as the engine's failure)
                err = f"{type(exc).__name__}: {exc}"
        views[e] = EngineView(e, ok, how, dec, outs, err)
    return Comparison(ch, tuple(draws), views, differences(ch, views))


# --------------------------------------------------------------------------------------------
# Monte Carlo: different draws, same law
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class MonteCarlo:
    engine: str
    counts: np.ndarray     # [V] how often each token came first
    expected: np.ndarray   # [V] p
    statistic: float
    df: int
    p_value: float
    trials: int


def mc_inputs(p_row, q_row, trials: int, seed: int):
    """The drafts (sampled from q with numpy, seed ``seed``) and each trial's numbers, drawn in
    bulk from one ``torch.Generator`` seeded ``seed`` (coins [T], exponentials [T, V], final
    coins [T]); one draft per trial, so the first emitted token has law p. transformers draws
    its own: trial i runs under ``torch.manual_seed(seed * 1_000_003 + i)`` (``Draws.seed``)."""
    import torch  # noqa: PLC0415

    p_row = np.asarray(p_row, dtype=C.F32)
    q_row = np.asarray(q_row, dtype=C.F32)
    V = p_row.shape[0]
    rng = np.random.default_rng(seed)
    qd = q_row.astype(np.float64) / q_row.sum(dtype=np.float64)
    drafts = rng.choice(V, size=trials, p=qd)
    p = tuple(tuple(float(x) for x in row) for row in (p_row, p_row))
    q = (tuple(float(x) for x in q_row),)
    reqs = tuple(C.Request(p, q, (int(t),)) for t in drafts)
    g = torch.Generator().manual_seed(int(seed))
    u = torch.rand(trials, 1, generator=g).numpy()
    e = torch.empty(trials, V).exponential_(generator=g).numpy()
    uf = torch.rand(trials, generator=g).numpy()
    draws = [C.Draws(u[i], u[i], e[i], uf[i], seed * 1_000_003 + i) for i in range(trials)]
    return C.Chain(reqs, seed), draws


def monte_carlo(engine: str, p_row, q_row, *, trials: int = 1000, seed: int = 0, own_code: bool = True) -> MonteCarlo:
    """First emitted token over ``trials`` fresh draws, by the engine's own code (or its described
    rule with ``own_code=False``), and the chi-square test against p."""
    ch, draws = mc_inputs(p_row, q_row, trials, seed)
    V = ch.V
    if own_code:
        outs = A.run(engine, ch, draws)
        firsts = [o.tokens[0] if o.tokens else -1 for o in outs]
    else:
        firsts = [R.describe(engine, r, d, all_greedy=False).tokens[0] for r, d in zip(ch.requests, draws)]
    firsts = np.asarray(firsts)
    counts = np.bincount(firsts[firsts >= 0], minlength=V)[:V]
    expected = np.asarray(p_row, dtype=np.float64)
    stat, df, pv = C.chi_square(counts, expected)
    return MonteCarlo(engine, counts, expected, stat, df, pv, trials)
