"""What each engine's own code received and did on a chain, recorded from inside the real runs, and
the reason two engines differ derived from those runs (not from specviz's description of the rules).

``observe(ch)`` runs SGLang's chain kernel, vLLM's kernels and transformers' ``_speculative_sampling``
through ``specviz.rooms.engines.adapters`` and records, per engine and request:

- the coins the engine's code consumed: SGLang's ``u`` tensor and vLLM's ``uniform_probs`` tensor
  as handed to their kernels, and for transformers the values its own ``torch.rand_like`` returned
  (with the ratios ``p_i / q_i`` it compared them with);
- how many drafts it accepted and the token it ended with (or the error it raised);
- the p and q rows the engine was handed (for the residual's mass).

``expected_diffs(ch)`` derives, from such runs, every place two engines' outputs differ and why:

1. a greedy request that one engine takes by argmax (no coin): "greedy";
2. the recorded coins differ: "coins";
3. same coin: q = 0 for the draft in the input: "q_zero"; else, when one engine's test sits exactly
   on its boundary in its own arithmetic on the numbers its code received (SGLang u·q = p, vLLM
   p/q = u, transformers its recorded ratio = its recorded draw) and re-running both engines' own
   code with that coin 1 to 3 float32 steps away makes them agree (transformers handed the coin
   through its ``torch.rand_like``): "p_zero" when p = 0 for the draft and the coin is 0, else
   "equality"; otherwise "rounding";
4. terminal tokens that differ: after different accepted counts "follows"; an engine that raised or
   whose residual (from the rows it was handed) has zero mass "zero_mass"; a greedy request
   "greedy"; SGLang against a racing engine "draw"; vLLM against transformers "terminal_rounding".

transformers' greedy requests take an inline argmax loop in ``_assisted_decoding`` (no function to
call): they are the one case read from transformers' code, not run (accept while the draft equals
argmax p, then emit argmax p).
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools

import numpy as np

from specviz.rooms.engines import adapters as A
from specviz.rooms.engines import chain as C
from specviz.rooms.engines import rules as R

F32 = np.float32


@dataclasses.dataclass
class Seen:
    coins: list            # [n] the coins the engine's code tested with (nan: argmax, no coin)
    accepted: int          # drafts accepted
    terminal: str          # the last emitted token, or "error"
    p: np.ndarray | None   # [n+1, V] the target rows it was handed (None: not recorded)
    q: np.ndarray | None   # [n, V]
    argmax: bool = False   # the request took a greedy (argmax) path
    token_at: tuple = ()   # [n] the draft tokens
    extra: dict | None = None   # transformers: its recorded ratios and rand_like draws


@contextlib.contextmanager
def _recording(feed_transformers=None):
    """Wrap the kernels' launchers and torch.rand_like to record their inputs; ``feed_transformers``
    (a list of coin rows, one per transformers call) replaces what rand_like returns."""
    import torch

    rec = {"sglang": [], "vllm": [], "transformers": []}
    sgl, vl = A._sgl(), A._vllm()
    chain_sampling, random_kernel, rand_like = sgl.chain_sampling, vl.random, torch.rand_like

    def rec_sglang(*args, **kw):
        rec["sglang"].append(dict(u=args[7].cpu().numpy().copy(), p=args[9].cpu().numpy().copy(),
                                  q=args[10].cpu().numpy().copy()))
        return chain_sampling(*args, **kw)

    def rec_vllm(*args, **kw):
        rec["vllm"].append(dict(u=args[7].cpu().numpy().copy(), q=args[3].cpu().numpy().copy(),
                                p=args[4].cpu().numpy().copy()))
        return random_kernel(*args, **kw)

    def rec_rand_like(x, *a, **k):
        out = rand_like(x, *a, **k)
        i = len(rec["transformers"])
        if feed_transformers is not None:
            out = torch.tensor(np.asarray(feed_transformers[i], dtype=F32)).reshape(out.shape)
        rec["transformers"].append(dict(ratio=x.detach().numpy().copy().reshape(-1), r=out.numpy().copy().reshape(-1)))
        return out

    sgl.chain_sampling, vl.random, torch.rand_like = rec_sglang, rec_vllm, rec_rand_like
    try:
        yield rec
    finally:
        sgl.chain_sampling, vl.random, torch.rand_like = chain_sampling, random_kernel, rand_like


def _last(out) -> str:
    return "error" if out.error else str(out.tokens[-1])


def observe(ch: C.Chain, coins=None, transformers_coins=None) -> dict:
    """engine -> [Seen per request], from one instrumented run of each engine's own code.
    ``coins`` ([bs][n]) replaces the coins SGLang and vLLM get; ``transformers_coins`` ([bs][n])
    what transformers' rand_like returns."""
    if coins is not None:
        ch = C.validate(dataclasses.replace(ch, coins_override=tuple(tuple(float(c) for c in row) for row in coins)))
    draws = C.randomness(ch)
    bs, n = ch.bs, ch.n
    all_greedy = all(r.greedy for r in ch.requests)
    sampled = [b for b, r in enumerate(ch.requests) if not r.greedy]
    feed = None if transformers_coins is None else [transformers_coins[b] for b in sampled]
    with _recording(feed) as rec:
        outs = {e: A.run(e, ch, draws) for e in R.ENGINES}
    seen = {e: [] for e in R.ENGINES}
    for b, req in enumerate(ch.requests):
        nan = [float("nan")] * n
        # SGLang: one chain-kernel launch for the batch (none when all greedy: the greedy verifier)
        o = outs["sglang"][b]
        if all_greedy:
            seen["sglang"].append(Seen(nan, o.accepted, _last(o), req.p(), req.q(), argmax=True))
        else:
            s = rec["sglang"][0]
            seen["sglang"].append(Seen([float(x) for x in s["u"][b, :n]], o.accepted, _last(o), s["p"][b], s["q"][b],
                                      token_at=req.draft_tokens))
        # vLLM: greedy rows go through its greedy kernel (the random kernel skips them)
        o = outs["vllm"][b]
        if req.greedy:
            seen["vllm"].append(Seen(nan, o.accepted, _last(o), req.p(), req.q(), argmax=True))
        else:
            v = rec["vllm"][0]
            rows = slice(b * n, (b + 1) * n)
            p = np.concatenate([v["p"][rows], req.p()[n:]])   # row n (the bonus) is not a kernel input
            seen["vllm"].append(Seen([float(x) for x in v["u"][rows]], o.accepted, _last(o), p, v["q"][rows],
                                    token_at=req.draft_tokens))
        # transformers: its own rand_like draws; greedy requests: the inline argmax loop (read, not run)
        if req.greedy:
            am = req.p().argmax(axis=1)
            k = next((s for s in range(n) if req.draft_tokens[s] != am[s]), n)
            seen["transformers"].append(Seen(nan, k, str(int(am[k])), req.p(), req.q(), argmax=True))
        else:
            t = rec["transformers"][sampled.index(b)]
            ok = t["r"] <= t["ratio"]
            k = int(np.argmin(ok)) if not ok.all() else n
            seen["transformers"].append(Seen([float(x) for x in t["r"]], k, _last(outs["transformers"][b]), None, None,
                                            token_at=req.draft_tokens, extra=t))
    return seen


def _zero_mass(s: Seen, n: int) -> bool:
    if s.argmax or s.accepted >= n or s.p is None:
        return False
    return not np.maximum(s.p[s.accepted] - s.q[s.accepted], 0).any()


def _on_boundary(seen: dict, e: str, b: int, slot: int) -> bool:
    """Does engine ``e``'s test sit exactly on its boundary, in its own arithmetic on the numbers its
    code received? SGLang: float32 u·q = p; vLLM: float32 p/q = the float64 coin; transformers: its
    ratio p_i/q_i = its rand_like draw (both recorded from its run)."""
    s = seen[e][b]
    u = s.coins[slot - 1]
    if e == "transformers":
        t = s.extra
        return bool(t["ratio"][slot - 1] == t["r"][slot - 1])
    t = s.token_at[slot - 1]
    p, q = F32(s.p[slot - 1, t]), F32(s.q[slot - 1, t])
    if e == "sglang":
        return bool(F32(u) * q == p)
    return bool(q > 0 and np.float64(p / q) == np.float64(u))


def _nudge_resolves(ch: C.Chain, seen: dict, pair, b: int, slot: int) -> bool:
    """Run both engines' own code again with the shared coin at ``slot`` moved 1 to 3 float32 steps
    up or down: do they agree at that slot for some such coin?"""
    c = F32(seen[pair[0]][b].coins[slot - 1])
    base = [[float(x) for x in C.randomness(ch)[r].coins] if ch.coins_override is None else list(ch.coins_override[r])
            for r in range(ch.bs)]
    for toward in (F32(1), F32(0)):
        x = c
        for _ in range(3):
            x = np.nextafter(x, toward)
            if not 0 <= x < 1 or x == c:
                break
            coins = [list(row) for row in base]
            coins[b][slot - 1] = float(x)
            again = observe(ch, coins=coins, transformers_coins=coins)
            ka, kb = (min(again[e][b].accepted, slot) for e in pair)
            if ka == kb:
                return True
    return False


def slot_reason(ch: C.Chain, seen: dict, pair, b: int, slot: int) -> str:
    sa, sb = (seen[e][b] for e in pair)
    if sa.argmax or sb.argmax:
        return "greedy"
    ca, cb = F32(sa.coins[slot - 1]), F32(sb.coins[slot - 1])
    if ca != cb:
        return "coins"
    req = ch.requests[b]
    t = req.draft_tokens[slot - 1]
    if req.q()[slot - 1, t] == 0:
        return "q_zero"
    if any(_on_boundary(seen, e, b, slot) for e in pair) and _nudge_resolves(ch, seen, pair, b, slot):
        return "p_zero" if req.p()[slot - 1, t] == 0 and ca == 0 else "equality"
    return "rounding"


def real_diffs(ch: C.Chain, seen: dict) -> dict:
    """{(pair, request, slot): (a, b)} for every place the engines' own outputs differ."""
    out = {}
    for pair in itertools.combinations(R.ENGINES, 2):
        for b in range(ch.bs):
            sa, sb = (seen[e][b] for e in pair)
            if sa.accepted != sb.accepted:
                s = min(sa.accepted, sb.accepted) + 1
                out[(pair, b, s)] = tuple("accept" if x.accepted >= s else "reject" for x in (sa, sb))
            if sa.terminal != sb.terminal:
                out[(pair, b, "terminal")] = (sa.terminal, sb.terminal)
    return out


def terminal_reason(ch: C.Chain, seen: dict, pair, b: int) -> str:
    sa, sb = (seen[e][b] for e in pair)
    if sa.accepted != sb.accepted:
        return "follows"
    if "error" in (sa.terminal, sb.terminal) or _zero_mass(sa, ch.n) or _zero_mass(sb, ch.n):
        return "zero_mass"
    if ch.requests[b].greedy:
        return "greedy"
    return "draw" if "sglang" in pair else "terminal_rounding"


def expected_diffs(ch: C.Chain) -> dict:
    """{(pair, request, slot): reason} derived from the engines' own code runs."""
    seen = observe(ch)
    out = {}
    for (pair, b, slot) in real_diffs(ch, seen):
        out[(pair, b, slot)] = terminal_reason(ch, seen, pair, b) if slot == "terminal" else slot_reason(ch, seen, pair, b, slot)
    return out
