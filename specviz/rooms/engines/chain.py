"""One chain for three engines: the inputs (p, q, draft tokens, greedy rows), the random numbers
drawn from one seed (the "Three engines" page's presets: ``specviz.rooms.engines.chain_presets``; issue 22).

Shapes (``n`` drafts per request, ``V`` tokens):

- ``target_probs``  p  [n + 1, V]  row s-1 judges draft s; row n gives the bonus;
- ``draft_probs``   q  [n, V]      row s-1 is the distribution that proposed draft s;
- ``draft_tokens``     [n];
- ``greedy``: the request runs at temperature 0.

Random numbers (``randomness``), per request b, from one ``torch.Generator`` seeded ``seed + b``,
in the order Hugging Face transformers consumes its global generator in ``_speculative_sampling``
(so that, seeded the same way, it draws exactly these numbers):

1. ``coins``  u [n]  float32 ``torch.rand`` (transformers' ``torch.rand_like`` of the ratios);
2. ``expo``   E [V]  float32 ``exponential_()`` (what ``torch.multinomial`` draws for one sample:
   it returns ``argmax(prob / E)``);
3. ``final``  u_final float32 ``torch.rand`` (SGLang's coin for the terminal token).

vLLM takes ``u`` (as float64) and ``1 / E`` (its ``inv_q``) as tensors; SGLang takes ``u`` and
``u_final``. ``coins_override`` replaces u for the two engines that take coins as tensors; transformers
cannot be handed coins, so it keeps the seeded ones (the page says so).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from specviz.base.errors import SpecvizError

F32 = np.float32
MAX_V = 64
MAX_N = 8
MAX_BS = 4
ROW_TOL = 1e-4


@dataclasses.dataclass(frozen=True)
class Request:
    """One request of the chain: p [n+1, V], q [n, V], drafts [n], greedy (temperature 0)."""
    target_probs: tuple
    draft_probs: tuple
    draft_tokens: tuple
    greedy: bool = False

    @property
    def n(self) -> int:
        return len(self.draft_tokens)

    @property
    def V(self) -> int:
        return len(self.target_probs[0])

    def p(self) -> np.ndarray:  # [n+1, V] float32
        return np.asarray(self.target_probs, dtype=F32).reshape(self.n + 1, self.V)

    def q(self) -> np.ndarray:  # [n, V] float32
        return np.asarray(self.draft_probs, dtype=F32).reshape(self.n, self.V)


@dataclasses.dataclass(frozen=True)
class Chain:
    """A batch of requests with the same n and V, a seed, optional coins and token labels."""
    requests: tuple
    seed: int = 0
    coins_override: tuple | None = None   # [bs][n] for SGLang and vLLM, or None
    labels: tuple | None = None           # [V] display names (untrusted text), or None

    @property
    def bs(self) -> int:
        return len(self.requests)

    @property
    def n(self) -> int:
        return self.requests[0].n

    @property
    def V(self) -> int:
        return self.requests[0].V

    def label(self, token: int) -> str:
        if self.labels is not None and 0 <= token < len(self.labels):
            return str(self.labels[token])
        return str(token)

    def with_(self, **changes) -> "Chain":
        return validate(dataclasses.replace(self, **changes))


def _rows(field: str, rows, width: int | None, count: int) -> tuple:
    try:
        arr = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpecvizError(field, "holds something that is not a number: give rows of probabilities") from None
    if arr.ndim != 2 or arr.shape[0] != count or (width is not None and arr.shape[1] != width):
        want = f"[{count}, {width if width is not None else 'V'}]"
        raise SpecvizError(field, f"has shape {list(arr.shape)} but needs {want}: one row per slot, one column per token")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise SpecvizError(field, "holds a negative, NaN or infinite value: probabilities lie in [0, 1]")
    sums = arr.sum(axis=1)
    bad = np.nonzero(np.abs(sums - 1.0) > ROW_TOL)[0]
    if bad.size:
        r = int(bad[0])
        raise SpecvizError(field, f"row {r} sums to {sums[r]:.6g}; rows must sum to 1 ± {ROW_TOL:g}: normalise it")
    return tuple(tuple(float(F32(x)) for x in row) for row in arr)


def validate(chain: Chain) -> Chain:
    """The chain with float32 values, or a SpecvizError naming the field, the value and the fix."""
    if not chain.requests or len(chain.requests) > MAX_BS:
        raise SpecvizError("requests", f"has {len(chain.requests)} requests; give 1 to {MAX_BS}")
    first = chain.requests[0]
    n, V = len(first.draft_tokens), len(first.target_probs[0]) if first.target_probs else 0
    if not 1 <= n <= MAX_N:
        raise SpecvizError("draft_tokens", f"has {n} drafts; give 1 to {MAX_N}")
    if not 2 <= V <= MAX_V:
        raise SpecvizError("target_probs", f"has {V} tokens per row; give 2 to {MAX_V}")
    reqs = []
    for b, r in enumerate(chain.requests):
        where = f"request {b} " if len(chain.requests) > 1 else ""
        if len(r.draft_tokens) != n:
            raise SpecvizError(f"{where}draft_tokens", f"has {len(r.draft_tokens)} drafts but request 0 has {n}: all requests share n")
        toks = []
        for s, t in enumerate(r.draft_tokens):
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= int(t) < V:
                raise SpecvizError(f"{where}draft_tokens[{s}]", f"is {t!r}; a draft token is a whole number in [0, {V - 1}]")
            toks.append(int(t))
        p = _rows(f"{where}target_probs", r.target_probs, V, n + 1)
        q = _rows(f"{where}draft_probs", r.draft_probs, V, n)
        if not isinstance(r.greedy, (bool, np.bool_)):
            raise SpecvizError(f"{where}greedy", f"is {shown_value(r.greedy)}: true or false")
        reqs.append(Request(p, q, tuple(toks), bool(r.greedy)))
    seed = check_seed(chain.seed)
    coins = chain.coins_override
    if coins is not None:
        arr = np.asarray(coins, dtype=np.float64) if len(coins) else np.zeros((0,))
        if arr.shape != (len(reqs), n):
            raise SpecvizError("coins", f"has shape {list(arr.shape)} but needs [{len(reqs)}, {n}]: one coin per draft")
        if not np.all((arr >= 0) & (arr < 1)):
            raise SpecvizError("coins", "holds a value outside [0, 1): a coin is a uniform draw in [0, 1)")
        coins = tuple(tuple(float(F32(c)) for c in row) for row in arr)
    labels = check_labels(chain.labels, V)
    return Chain(tuple(reqs), seed, coins, labels)


def check_seed(value) -> int:
    """A seed from the editor, a widget or a link: a whole number in [0, 2^31), else a SpecvizError
    naming the field (NaN, infinities, text, true/false and fractions are refused, not coerced)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise SpecvizError("seed", f"is {shown_value(value)}; a seed is a whole number in [0, 2^31)")
    if isinstance(value, (float, np.floating)) and (not math.isfinite(value) or value != int(value)):
        raise SpecvizError("seed", f"is {shown_value(value)}; a seed is a whole number in [0, 2^31)")
    if not 0 <= int(value) < 2**31:
        raise SpecvizError("seed", f"is {shown_value(value)}; a seed is a whole number in [0, 2^31)")
    return int(value)


def shown_value(value) -> str:
    """A value quoted in an error: short, and with control and bidi characters made visible."""
    from specviz.base.safety import visible_text  # noqa: PLC0415

    return visible_text(repr(value)[:40])


def check_labels(labels, V: int):
    """Token names: the rules of every other label (scenario.Label): text, control and bidi
    characters shown as visible escapes, 1 to MAX_LABEL_CHARS characters, each name once."""
    from specviz.base.limits import MAX_LABEL_CHARS  # noqa: PLC0415
    from specviz.base.safety import visible_text  # noqa: PLC0415

    if labels is None:
        return None
    labels = tuple(labels)
    if len(labels) != V:
        raise SpecvizError("labels", f"has {len(labels)} names for {V} tokens: give one per token, or none")
    out = []
    for i, x in enumerate(labels):
        if not isinstance(x, str):
            raise SpecvizError(f"labels[{i}]", f"is {shown_value(x)}, not text: a token name is a text of 1 to {MAX_LABEL_CHARS} characters")
        name = visible_text(x)
        if not 1 <= len(name) <= MAX_LABEL_CHARS:
            raise SpecvizError(f"labels[{i}]", f"has {len(name)} characters (control and bidi characters counted as their "
                                               f"visible escapes); a token name has 1 to {MAX_LABEL_CHARS}")
        if name in out:
            raise SpecvizError(f"labels[{i}]", f"repeats {name!r}: each token name is given once")
        out.append(name)
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Draws:
    """The random numbers of one request: u [n] (the seeded ones), E [V], u_final, and the coins
    SGLang and vLLM get (``coins``: the override when given, else u)."""
    seeded_coins: np.ndarray   # [n] float32
    coins: np.ndarray          # [n] float32
    expo: np.ndarray           # [V] float32
    final: np.float32
    seed: int


def draws_for(seed: int, n: int, V: int, coins=None) -> Draws:
    """The numbers torch's generator gives for ``seed`` (see the module docstring for the order)."""
    import torch  # noqa: PLC0415

    g = torch.Generator().manual_seed(int(seed))
    u = torch.rand(n, generator=g, dtype=torch.float32).numpy()
    e = torch.empty(V, dtype=torch.float32).exponential_(generator=g).numpy()
    uf = torch.rand(1, generator=g, dtype=torch.float32).numpy()[0]
    c = u if coins is None else np.asarray(coins, dtype=F32)
    return Draws(u, c, e, F32(uf), int(seed))


def randomness(chain: Chain) -> list[Draws]:
    """Per request b: the numbers for seed ``chain.seed + b``."""
    return [draws_for(chain.seed + b, chain.n, chain.V, None if chain.coins_override is None else chain.coins_override[b])
            for b in range(chain.bs)]


# --------------------------------------------------------------------------------------------
# Chi-square: the p-value is the regularised upper incomplete gamma function Q(df/2, stat/2),
# torch.special.gammaincc (torch is already a dependency; no scipy, no hand-written series)
# --------------------------------------------------------------------------------------------

def _gammaincc(a: float, x: float) -> float:
    """Q(a, x) = Γ(a, x) / Γ(a) in float64, from ``torch.special.gammaincc``."""
    import torch  # noqa: PLC0415  (lazy: the engines page imports this module before it needs torch)

    if x <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(a, dtype=torch.float64), torch.tensor(x, dtype=torch.float64)))


def chi_square(counts, probs) -> tuple[float, int, float]:
    """(statistic, degrees of freedom, p-value) of counts against probs; tokens with probability
    0 are left out (a count there makes the p-value 0)."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    total = counts.sum()
    live = probs > 0
    if np.any(counts[~live] > 0):
        return math.inf, int(live.sum()) - 1, 0.0
    exp = total * probs[live] / probs[live].sum()
    stat = float(((counts[live] - exp) ** 2 / exp).sum())
    df = int(live.sum()) - 1
    if df <= 0:
        return stat, 0, 1.0
    return stat, df, _gammaincc(df / 2, stat / 2)


# --------------------------------------------------------------------------------------------
# JSON (the page's editor; untrusted text)
# --------------------------------------------------------------------------------------------

MAX_JSON_CHARS = 200_000


def _num(x) -> str:
    """The shortest decimal that reads back as the same float32."""
    return np.format_float_positional(F32(x), trim="-", unique=True)


def _rows_text(rows) -> str:
    return "[" + ", ".join("[" + ", ".join(_num(x) for x in row) + "]" for row in rows) + "]"


def to_json(chain: Chain) -> str:
    """The chain as the page's editor shows it (float32 values written shortest)."""
    import json  # noqa: PLC0415

    reqs = ",\n  ".join(f'{{"target_probs": {_rows_text(q.target_probs)},\n   "draft_probs": {_rows_text(q.draft_probs)},\n'
                         f'   "draft_tokens": {json.dumps(list(q.draft_tokens))}, "greedy": {json.dumps(q.greedy)}}}'
                         for q in chain.requests)
    coins = "null" if chain.coins_override is None else _rows_text(chain.coins_override)
    labels = json.dumps(chain.labels and list(chain.labels), ensure_ascii=False)
    return f'{{"seed": {chain.seed}, "coins": {coins}, "labels": {labels},\n "requests": [\n  {reqs}\n ]}}'


def from_json(text: str) -> Chain:
    """A validated chain from the editor's JSON, or a SpecvizError naming the field."""
    from specviz.base.safety import loads_json  # noqa: PLC0415

    obj = loads_json(text, "chain", MAX_JSON_CHARS)
    if not isinstance(obj, dict) or not isinstance(obj.get("requests"), list):
        raise SpecvizError("chain", 'must be an object with a "requests" list (and "seed", "coins", "labels")')
    unknown = set(obj) - {"seed", "coins", "labels", "requests"}
    if unknown:
        raise SpecvizError("chain", f"has unknown keys {sorted(unknown)}: use seed, coins, labels, requests")
    reqs = []
    for b, r in enumerate(obj["requests"]):
        if not isinstance(r, dict) or not {"target_probs", "draft_probs", "draft_tokens"} <= set(r):
            raise SpecvizError(f"requests[{b}]", "needs target_probs, draft_probs and draft_tokens (greedy optional)")
        if not isinstance(r["draft_tokens"], list) or not isinstance(r["target_probs"], list) or not r["target_probs"] \
                or not isinstance(r["target_probs"][0], list):
            raise SpecvizError(f"requests[{b}]", "target_probs is a list of rows and draft_tokens a list of token ids")
        greedy = r.get("greedy", False)
        if not isinstance(greedy, bool):
            raise SpecvizError(f"requests[{b}].greedy", f"is {shown_value(greedy)}: write true or false (JSON booleans, no quotes)")
        reqs.append(Request(r["target_probs"], r["draft_probs"], tuple(r["draft_tokens"]), greedy))
    coins = obj.get("coins")
    if coins is not None and not (isinstance(coins, list) and all(isinstance(c, list) for c in coins)):
        raise SpecvizError("coins", "is null or a list with one list of coins per request")
    labels = obj.get("labels")
    if labels is not None and not isinstance(labels, list):
        raise SpecvizError("labels", "is null or a list of token names")
    seed = obj.get("seed", 0)
    return validate(Chain(tuple(reqs), seed, None if coins is None else tuple(map(tuple, coins)),
                          None if labels is None else tuple(labels)))
