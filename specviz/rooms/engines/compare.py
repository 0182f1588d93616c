"""The three engines side by side on one chain: each engine's decision (specviz's description of
its rule) next to what its own code emitted, the slots where engines differ and the rule behind
each difference, and a Monte Carlo per engine ("different draws, same law").
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from specviz.rooms.engines import adapters as A
from specviz.rooms.engines import chain as C
from specviz.rooms.engines import rules as R

# Why a slot or a terminal token differs, in both languages: the headline of each listed difference.
# The page adds, after the headline, what each of the two engines received and did (``explain``):
# the coin it used and where that coin came from, its test with its own numbers, its terminal rule.
REASONS = {
    "coins": ("Different coins: the two engines did not test this slot with the same coin. SGLang and vLLM receive the "
              "coins as tensors (the edited ones here); transformers draws its own with torch.rand_like and cannot be "
              "handed coins.",
              "硬币不同：两个引擎检验这个位置时用的不是同一枚硬币。SGLang 与 vLLM 以张量形式接收硬币（这里是编辑后的硬币）；"
              "transformers 用 torch.rand_like 自己抽取，无法传入硬币。"),
    "equality": ("u·q = p exactly, same coin: SGLang accepts only when u·q < p (strict), vLLM when p/q ≥ u, transformers "
                 "when u ≤ p/q; at equality SGLang rejects and the other two accept.",
                 "u·q = p 恰好相等，硬币相同：SGLang 仅在 u·q < p（严格小于）时接受，vLLM 在 p/q ≥ u 时接受，transformers 在 "
                 "u ≤ p/q 时接受；相等时 SGLang 拒绝，另两者接受。"),
    "q_zero": ("q = 0 for the draft token, same coin: SGLang requires 0 < q ≤ 1 and vLLM q > 0, so both reject; "
               "transformers divides p/0 = ∞ and accepts (or 0/0 = NaN and rejects).",
               "draft token 的 q = 0，硬币相同：SGLang 要求 0 < q ≤ 1，vLLM 要求 q > 0，两者都拒绝；transformers 计算 "
               "p/0 = ∞ 而接受（0/0 = NaN 时拒绝）。"),
    "p_zero": ("p = 0 with a coin of exactly 0, same coin: SGLang's strict 0·q < 0 is false, so it rejects; vLLM's "
               "0/q ≥ 0 and transformers' 0 ≤ 0/q are true, so both accept a token the target gives no probability. "
               "How often a coin is exactly 0: vLLM draws float64 coins (2⁻⁵³ a draw: never in practice); transformers' "
               "float32 torch.rand_like returns 0.0 about once in 2²⁴ draws; SGLang rejects whatever the coin.",
               "p = 0 且硬币恰为 0，硬币相同：SGLang 的严格不等式 0·q < 0 不成立，于是拒绝；vLLM 的 0/q ≥ 0 与 transformers 的 "
               "0 ≤ 0/q 都成立，于是两者都接受了一个目标概率为 0 的 token。硬币恰为 0 的频率：vLLM 抽 float64 硬币（每次 2⁻⁵³，"
               "实际上不会发生）；transformers 的 float32 torch.rand_like 大约每 2²⁴ 次返回一次 0.0；SGLang 无论硬币为何都拒绝。"),
    "greedy": ("Greedy request in a mixed batch: SGLang samples it at temperature 1 from top_k = 1 with a coin, vLLM's "
               "greedy kernel takes the argmax (first of a tie) and uses no coin; transformers runs greedy requests alone, "
               "by argmax. That SGLang's top_k = 1 keeps ties is unverified: it is FlashInfer's CUDA-only top-k path, "
               "which specviz has not run.",
               "混合批中的贪心请求：SGLang 在温度 1 下从 top_k = 1 的分布中用硬币采样，vLLM 的贪心 kernel 取 argmax（并列取第一个），"
               "不用硬币；transformers 单独运行贪心请求，取 argmax。SGLang 的 top_k = 1 是否保留并列尚未验证："
               "那是 FlashInfer 仅限 CUDA 的 top-k 路径，specviz 没有运行过它。"),
    "rounding": ("Rounding, same coin: the engines compute the test in different arithmetic (SGLang the float32 product u·q, "
                 "vLLM the float32 ratio p/q against a float64 coin, transformers p/q on softmax(log p) and softmax(log q)), "
                 "and here the last bits decide.",
                 "舍入，硬币相同：各引擎用不同的算术做检验（SGLang 用 float32 乘积 u·q，vLLM 用 float32 比值 p/q 对比 float64 硬币，"
                 "transformers 在 softmax(log p) 与 softmax(log q) 上计算 p/q），这里由最后几位决定。"),
    "zero_mass": ("Residual of zero mass: max(p − q, 0) is all zeros where an engine draws its recovered token.",
                  "残差质量为零：引擎抽取恢复 token 时 max(p − q, 0) 全为零。"),
    "draw": ("Different draws of the same law: SGLang inverts the CDF of the residual (or of p for the bonus) with one "
             "coin u_final; vLLM and transformers take argmax(residual / E) with exponential E (the exponential race).",
             "同一分布的不同抽样：SGLang 用一个硬币 u_final 对残差（bonus 时对 p）做逆 CDF；vLLM 与 transformers 用指数随机数 E 取 "
             "argmax(残差 / E)（指数竞赛）。"),
    "terminal_rounding": ("Rounding: vLLM and transformers race the same exponentials E, but transformers works on "
                          "softmax(log p) and divides the residual by its sum, and here the last bits pick another token.",
                          "舍入：vLLM 与 transformers 用同一组指数随机数 E 竞赛，但 transformers 使用 softmax(log p) 并把残差除以其和，"
                          "这里最后几位选出了另一个 token。"),
    "follows": ("Follows an earlier difference: the engines stopped at different slots, so their terminal tokens are "
                "drawn at different positions.",
                "由前面的差异导致：各引擎停在不同的位置，终止 token 在不同位置抽取。"),
    "not_run": ("Not run: transformers' greedy path is inline in _assisted_decoding (no function to call); shown "
                "by its rule only.",
                "未运行：transformers 的贪心路径写在 _assisted_decoding 内部（无可调用的函数），仅按规则展示。"),
}

# Where each engine's coin comes from (``Diff.sources``).
COIN_SOURCE = {
    "edited": ("the edited coin", "编辑后的硬币"),
    "seeded": ("the seed's coin", "种子生成的硬币"),
    "own": ("its own torch.rand_like draw", "它自己用 torch.rand_like 抽取的硬币"),
    "none": ("no coin (argmax)", "不用硬币（argmax）"),
}

# What an engine did for its terminal token, by ``Terminal.why`` (both languages; {t} the token).
TERMINAL_TEXT = {
    "sglang_bonus": ("bonus by the inverse CDF of p with u_final → {t}", "bonus：用 u_final 对 p 做逆 CDF → {t}"),
    "sglang_inverse_cdf": ("inverse CDF of relu(p − q) with u_final → {t}", "用 u_final 对 relu(p − q) 做逆 CDF → {t}"),
    "sglang_zero_mass": ("the residual has zero mass, so its inverse CDF falls back to V − 1 → {t}",
                         "残差质量为零，逆 CDF 回退到 V − 1 → {t}"),
    "race": ("argmax of residual / E → {t}", "残差 / E 的 argmax → {t}"),
    "race_bonus": ("bonus argmax p / E → {t}", "bonus：p / E 的 argmax → {t}"),
    "vllm_race_bonus": ("bonus argmax p / E → {t} (specviz's stand-in for vLLM's Sampler, fed the same E row; in a vLLM "
                        "server the bonus token is drawn by vLLM's own Sampler with its own random numbers)",
                        "bonus：p / E 的 argmax → {t}（specviz 代替 vLLM 的 Sampler，使用同一行 E；在 vLLM 服务器中 bonus token "
                        "由 vLLM 自己的 Sampler 用它自己的随机数抽取）"),
    "vllm_zero_mass": ("the residual has zero mass: argmax of an all-zero score → {t}", "残差质量为零：全零分数的 argmax → {t}"),
    "hf_zero_mass": ("the residual has zero mass: relu(p − q)/0 = NaN and torch.multinomial raises",
                     "残差质量为零：relu(p − q)/0 = NaN，torch.multinomial 报错"),
    "argmax": ("no residual (greedy: argmax p) → {t}", "不形成残差（贪心：argmax p）→ {t}"),
}

ARGMAX_RULES = {"greedy_verify", "greedy_kernel", "hf_greedy"}
Q_RULES = {"q_zero", "hf_q_zero_accept", "hf_nan"}
EQUAL_RULES = {"equal_strict", "equal_accept"}
ZERO_MASS = {"sglang_zero_mass", "vllm_zero_mass", "hf_zero_mass"}


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
    coins: tuple = ()    # slot: (coin a, coin b) each engine tested with (nan: no coin, argmax)
    sources: tuple = ()  # slot: (source a, source b), keys of COIN_SOURCE
    also: str = ""       # "coins": the reason they would still differ with a's coin at b (a REASONS key), or ""
    counterfactual: str = ""   # "coins": b's verdict had it been handed a's coin ("accept" / "reject")


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


def coin_source(ch: C.Chain, engine: str, s: R.SlotTest) -> str:
    """Where the coin an engine tested slot ``s`` with came from (a key of COIN_SOURCE)."""
    if s.rule in ARGMAX_RULES:
        return "none"
    if engine == "transformers":
        return "own"
    return "edited" if ch.coins_override is not None else "seeded"


def _same_coin(sa: R.SlotTest, sb: R.SlotTest) -> bool:
    return np.float32(sa.coin) == np.float32(sb.coin)   # vLLM holds the float64 of the same float32 coin


def _rule_reason(sa: R.SlotTest, sb: R.SlotTest) -> str:
    """Why two engines that tested a slot with the same coin differ: the rule that decided."""
    rules_ = {sa.rule, sb.rule}
    if rules_ & Q_RULES:
        return "q_zero"
    if sa.coin == 0 and sa.p == 0 and sb.p == 0:
        return "p_zero"
    if rules_ & EQUAL_RULES:
        return "equality"
    return "rounding"


def _with_coin(engine: str, req: C.Request, d: C.Draws, slot: int, coin: float, all_greedy: bool) -> R.SlotTest | None:
    """The engine's test at ``slot`` had it been handed ``coin`` there (its other coins unchanged)."""
    coins, seeded = d.coins.copy(), d.seeded_coins.copy()
    coins[slot - 1] = seeded[slot - 1] = np.float32(coin)
    dec = R.describe(engine, req, dataclasses.replace(d, coins=coins, seeded_coins=seeded), all_greedy=all_greedy)
    return dec.slots[slot - 1] if slot <= len(dec.slots) else None


def _slot_diff(ch, draws, pair, r, sa, sb) -> Diff:
    """A slot where two engines' verdicts differ, explained coins first."""
    a, b = pair
    req, d = ch.requests[r], draws[r]
    src = (coin_source(ch, a, sa), coin_source(ch, b, sb))
    base = dict(pair=pair, request=r, slot=sa.slot, a=_verdict(sa), b=_verdict(sb), coins=(sa.coin, sb.coin), sources=src)
    if "none" in src:
        return Diff(reason="greedy", **base)
    if not _same_coin(sa, sb):
        all_greedy = all(x.greedy for x in ch.requests)
        cf = _with_coin(b, req, d, sa.slot, sa.coin, all_greedy)
        also = _rule_reason(sa, cf) if cf is not None and cf.accepted != sa.accepted else ""
        return Diff(reason="coins", also=also, counterfactual=_verdict(cf), **base)
    return Diff(reason=_rule_reason(sa, sb), **base)


def _terminal_text(t) -> str:
    return "error" if t.token is None else str(t.token)


def differences(ch: C.Chain, views: dict, draws=None) -> tuple:
    """Every place two engines' outputs differ: the first slot whose verdicts differ, and the
    terminal tokens when they differ (never two equal values)."""
    draws = C.randomness(ch) if draws is None else draws
    out = []
    for a, b in itertools.combinations(R.ENGINES, 2):
        for r in range(ch.bs):
            da, db = views[a].decisions[r], views[b].decisions[r]
            diverged = False
            for sa, sb in zip(da.slots, db.slots):
                if sa.accepted != sb.accepted:
                    out.append(_slot_diff(ch, draws, (a, b), r, sa, sb))
                    diverged = True
                    break
            ta, tb = da.terminal, db.terminal
            if _terminal_text(ta) == _terminal_text(tb):
                continue   # the same token (or both raise): nothing to list, wherever it was drawn
            if diverged or da.accepted != db.accepted:
                why = "follows"
            elif {ta.why, tb.why} & ZERO_MASS:
                why = "zero_mass"
            elif ch.requests[r].greedy:
                why = "greedy"
            elif "sglang" in (a, b):
                why = "draw"
            else:
                why = "terminal_rounding"
            out.append(Diff((a, b), r, "terminal", _terminal_text(ta), _terminal_text(tb), why))
    return tuple(out)


def _g(x) -> str:
    return f"{float(x):.6g}"


def explain(cmp: "Comparison", dd: Diff, label=str) -> tuple[str, str]:
    """The reason for one listed difference, (English, Chinese): the headline (REASONS) and what each
    of the two engines received and did, with its own numbers. ``label(token)`` names a token."""
    en, zh = REASONS[dd.reason]
    parts_en, parts_zh = [en], [zh]
    names = [R.NAMES[e] for e in dd.pair]
    decs = [cmp.views[e].decisions[dd.request] for e in dd.pair]
    if dd.slot != "terminal":
        for name, dec, coin, src in zip(names, decs, dd.coins, dd.sources):
            s = dec.slots[dd.slot - 1]
            verdict = ("accept", "接受") if s.accepted else ("reject", "拒绝")
            if src == "none":
                parts_en.append(f"{name}: {s.test} → {verdict[0]}.")
                parts_zh.append(f"{name}：{s.test} → {verdict[1]}。")
            else:
                parts_en.append(f"{name} used u = {_g(coin)} ({COIN_SOURCE[src][0]}): {s.test} → {verdict[0]}.")
                parts_zh.append(f"{name} 用 u = {_g(coin)}（{COIN_SOURCE[src][1]}）：{s.test} → {verdict[1]}。")
        if dd.reason == "coins":
            cf = {"accept": ("accept", "接受"), "reject": ("reject", "拒绝")}.get(dd.counterfactual, ("—", "—"))
            if dd.also:
                aen, azh = REASONS[dd.also]
                parts_en.append(f"Handed u = {_g(dd.coins[0])}, {names[1]} would {cf[0]}, still unlike {names[0]}: {aen}")
                parts_zh.append(f"若 {names[1]} 也用 u = {_g(dd.coins[0])}，它会{cf[1]}，仍与 {names[0]} 不同：{azh}")
            else:
                parts_en.append(f"Handed u = {_g(dd.coins[0])}, {names[1]} would {cf[0]} as {names[0]} does: the coin alone "
                                f"makes this difference.")
                parts_zh.append(f"若 {names[1]} 也用 u = {_g(dd.coins[0])}，它会与 {names[0]} 一样{cf[1]}：这个差异仅由硬币造成。")
    elif dd.reason != "follows":
        for name, dec in zip(names, decs):
            t = dec.terminal
            key = "vllm_race_bonus" if (dec.engine == "vllm" and t.why == "race_bonus") else t.why
            ten, tzh = TERMINAL_TEXT.get(key, (t.detail, t.detail))
            tok = "—" if t.token is None else label(t.token)
            parts_en.append(f"{name}: {ten.format(t=tok)}.")
            parts_zh.append(f"{name}：{tzh.format(t=tok)}。")
    return " ".join(parts_en), "".join(parts_zh)


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
    return Comparison(ch, tuple(draws), views, differences(ch, views, draws))


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
