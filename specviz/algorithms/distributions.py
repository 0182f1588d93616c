"""Closed-form output distributions of the two samplers, and the Monte Carlo comparison.

Glossary: p = target_probs (the target's distribution), q = draft_probs (the draft's proposal
distribution). Everything here is exact arithmetic in float64 over small vocabularies, for the
teaching pages: the stacked "accepted + redistributed = p" bar, the expected histogram a Monte
Carlo run is compared with, and the total variation distance between the two.

Worked example (SEMANTICS.md §0.5, the article's p/q table; tokens A, B, C):

>>> import numpy as np
>>> p, q = np.array([.3, .4, .3]), np.array([.6, .3, .1])
>>> accepted, redistributed, total = decomposition(p, q)
>>> np.round(accepted, 3).tolist(), np.round(redistributed, 3).tolist(), np.round(total, 3).tolist()
([0.3, 0.3, 0.1], [0.0, 0.1, 0.2], [0.3, 0.4, 0.3])
>>> round(accept_probability(p[0], q[0]), 3)   # the draft proposed A
0.5
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from specviz.base.errors import SpecvizError

SEMANTICS = ("0.5.23", "earlier")


def _vec(name: str, x) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise SpecvizError(name, f"has shape {list(arr.shape)}: give one probability per vocabulary token")
    if not np.all(np.isfinite(arr)):
        raise SpecvizError(name, "contains NaN or inf: every probability must be a finite number")
    if np.any(arr < 0):
        raise SpecvizError(name, f"holds {arr.min():g}: probabilities cannot be negative")
    return arr


def normalise(dist) -> np.ndarray:
    """dist / sum(dist); all zeros stays all zeros. [V] -> [V]."""
    d = np.asarray(dist, dtype=np.float64)
    s = d.sum()
    return d / s if s > 0 else np.zeros_like(d)


def normalise_rows(table) -> list[list[float]]:
    """Each row divided by its sum (a row of zeros stays zeros): the page's 'normalise' button."""
    out = []
    for row in table:
        r = np.clip(np.nan_to_num(np.asarray(row, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0), 0.0, None)
        out.append([float(v) for v in normalise(r)])
    return out


def total_variation(a, b) -> float:
    """TV(a, b) = 1/2 * sum |a - b| (both normalised first, so counts may be passed)."""
    a, b = normalise(_vec("a", a)), normalise(_vec("b", b))
    if a.shape != b.shape:
        raise SpecvizError("b", f"has {b.size} entries but a has {a.size}: compare distributions over one vocabulary")
    return float(0.5 * np.abs(a - b).sum())


# ---------------------------------------------------------------------------------------------
# Classic chain rejection sampling (SEMANTICS.md §7)
# ---------------------------------------------------------------------------------------------

def accept_probability(p_tok: float, q_tok: float, semantics: str = "0.5.23") -> float:
    """P(u*q < p) for u ~ U[0, 1): min(1, p/q). With q = 0: 0.5.23 rejects, earlier releases accept when p > 0."""
    p_tok, q_tok = float(p_tok), float(q_tok)
    if q_tok <= 0 or q_tok > 1:
        if semantics == "0.5.23":
            return 0.0
        return 1.0 if (q_tok <= 0 and p_tok > 0) else (min(1.0, p_tok / q_tok) if q_tok > 0 else 0.0)
    return min(1.0, p_tok / q_tok)


def residual(p, q) -> np.ndarray:
    """max(p - q, 0), not normalised. [V] -> [V]."""
    p, q = _vec("target_probs", p), _vec("draft_probs", q)
    return np.maximum(p - q, 0.0)


def decomposition(p, q):
    """The article's mass check for one position: (accepted, redistributed, total), each [V].

    accepted = min(p, q): the draft proposes x with probability q(x) and keeps it with min(1, p/q).
    redistributed = (1 - sum accepted) * normalise(max(p - q, 0)): the rejected mass, re-drawn from
    the residual. total = accepted + redistributed, which equals p whenever p and q are distributions.
    """
    p, q = _vec("target_probs", p), _vec("draft_probs", q)
    if p.shape != q.shape:
        raise SpecvizError("draft_probs", f"has {q.size} entries but target_probs has {p.size}: one vocabulary")
    accepted = np.minimum(p, q)
    rejected_mass = max(0.0, 1.0 - accepted.sum())
    redistributed = rejected_mass * normalise(np.maximum(p - q, 0.0))
    return accepted, redistributed, accepted + redistributed


def chain_first_token(p, q, draft_token: int, semantics: str = "0.5.23") -> np.ndarray:
    """Exact distribution of the first emitted token when the draft's first token is fixed.

    Accept draft_token with min(1, p/q), else draw from normalise(max(p - q', 0)) where q' is q
    with entries outside [0, 1] zeroed (0.5.23). An empty residual emits token V-1 (SGLang's
    fallback). This is *not* p: exactness needs the draft token itself to be drawn from q.
    """
    p, q = _vec("target_probs", p), _vec("draft_probs", q)
    V = p.size
    a = accept_probability(p[draft_token], q[draft_token], semantics)
    out = np.zeros(V)
    out[draft_token] += a
    res = np.maximum(p - q, 0.0)
    if res.sum() > 0:
        out += (1.0 - a) * normalise(res)
    else:
        out[V - 1] += 1.0 - a
    return out


def chain_first_token_marginal(p, q, semantics: str = "0.5.23") -> np.ndarray:
    """First emitted token when the draft samples its token x ~ q: sum_x q(x) * chain_first_token(x) (= p)."""
    p, q = _vec("target_probs", p), _vec("draft_probs", q)
    qn = normalise(q)
    out = np.zeros(p.size)
    for x in np.nonzero(qn > 0)[0]:
        out += qn[x] * chain_first_token(p, q, int(x), semantics)
    return out


# ---------------------------------------------------------------------------------------------
# Target-only tree sampling (SEMANTICS.md §6): the root's sibling scan
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bucket:
    """One sibling of the scan: its coin interval [lo, hi) on the 0..1 bar and its share of the coin."""

    node: int
    token: int
    p: float  # the target's mass on this sibling's token
    prob_acc: float  # running sum up to and including this sibling
    bound: float  # prob_acc / threshold_acc: the test is coin < bound
    single: bool  # p >= threshold_single: accepted whatever the coin
    lo: float  # coins in [lo, hi) accept this sibling
    hi: float


def sibling_buckets(p_row, sibling_tokens, sibling_nodes=None, *, threshold_single: float = 1.0,
                    threshold_acc: float = 1.0, semantics: str = "0.5.23") -> list[Bucket]:
    """The coin intervals of one level's scan. p_row [V] is the parent's target row.

    Siblings are tested in order; sibling j is accepted iff it is reached (no earlier sibling
    accepted) and p_j > 0 (0.5.23) and (coin < prob_acc_j / threshold_acc or p_j >= threshold_single).
    The bounds only grow, so each sibling owns one interval [lo, hi) of coins; a single-threshold
    hit takes every coin still left.
    """
    p_row = _vec("target_probs", p_row)
    t_acc = max(float(threshold_acc), 1e-9)
    nodes = list(sibling_nodes) if sibling_nodes is not None else list(range(len(sibling_tokens)))
    acc = 0.0
    taken = 0.0  # coins in [0, taken) were accepted by an earlier sibling
    out = []
    for node, tok in zip(nodes, sibling_tokens):
        pt = float(p_row[tok])
        acc += pt
        bound = acc / t_acc
        single = pt >= threshold_single
        allowed = pt > 0 or semantics != "0.5.23"
        if not allowed:
            lo = hi = taken
        elif single:
            lo, hi = taken, 1.0
        else:
            lo, hi = taken, max(taken, min(1.0, bound))
        taken = hi
        out.append(Bucket(node=int(node), token=int(tok), p=pt, prob_acc=acc, bound=bound, single=bool(single and allowed),
                          lo=lo, hi=hi))
    return out


def target_only_first_token(p_row, sibling_tokens, *, threshold_single: float = 1.0, threshold_acc: float = 1.0,
                            semantics: str = "0.5.23") -> np.ndarray:
    """Exact distribution of the first emitted token of the target-only sampler at one node.

    Each sibling's bucket width goes to its token; the coins left over reject every sibling, and
    the terminal token is drawn from relu(p - buffer), where the buffer holds every sibling's p.
    Equals p_row when both thresholds are 1 (the scan is an inverse-CDF draw over the siblings).
    """
    p_row = _vec("target_probs", p_row)
    V = p_row.size
    out = np.zeros(V)
    buckets = sibling_buckets(p_row, sibling_tokens, threshold_single=threshold_single, threshold_acc=threshold_acc,
                              semantics=semantics)
    for bk in buckets:
        out[bk.token] += bk.hi - bk.lo
    left = 1.0 - (buckets[-1].hi if buckets else 0.0)
    if left > 0:
        buf = np.zeros(V)
        for tok in sibling_tokens:
            buf[tok] = p_row[tok]
        dist = np.maximum(p_row - buf, 0.0)
        if dist.sum() > 0:
            out += left * normalise(dist)
        else:  # SGLang's fallback: the last token with mass (0.5.23), else V-1
            nz = np.nonzero(dist > 0)[0]
            out[int(nz[-1]) if (semantics == "0.5.23" and nz.size) else V - 1] += left
    return out


# ---------------------------------------------------------------------------------------------
# Monte Carlo: the empirical first-token histogram from a backend's sample_many
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MonteCarlo:
    num_trials: int
    counts: np.ndarray  # int64 [V]: first emitted token of each trial
    empirical: np.ndarray  # float64 [V] = counts / num_trials
    expected: np.ndarray  # float64 [V]: the closed form for the same procedure
    target: np.ndarray  # float64 [V]: p of the root row
    tv_to_target: float
    tv_to_expected: float
    accept_len_counts: np.ndarray  # int64: trials emitting 1, 2, ... tokens (index = length)


def _counts_of(result) -> tuple[np.ndarray, np.ndarray]:
    first = result.first_token_counts
    lens = result.accept_len_counts
    to_np = lambda a: np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a)  # noqa: E731
    return to_np(first).astype(np.int64), to_np(lens).astype(np.int64)


def _finish(counts, lens, expected, target) -> MonteCarlo:
    n = int(counts.sum())
    emp = counts / max(n, 1)
    return MonteCarlo(num_trials=n, counts=counts, empirical=emp, expected=expected, target=target,
                      tv_to_target=total_variation(emp, target) if n else 1.0,
                      tv_to_expected=total_variation(emp, expected) if n else 1.0, accept_len_counts=lens)


def chain_monte_carlo(sample_many: Callable, inputs: dict, *, num_trials: int, seed: int,
                      draft_from_q: bool = True, semantics: str = "0.5.23") -> MonteCarlo:
    """First-token histogram of the chain rejection sampler over ``num_trials`` trials.

    inputs: request 0's SGLang-form arrays (candidates [1, N], retrieve_index, target_probs [1, N, V],
    draft_probs [1, N-1, V], num_speculative_tokens). sample_many is a backend's function.
    draft_from_q: the draft samples its first token from q (split the trials multinomially over
    the tokens, one sample_many call per token, as a real draft would); otherwise the draft token
    stays the scenario's and the histogram matches ``chain_first_token``, not p.
    """
    cand = np.asarray(inputs["candidates"])
    p = np.asarray(inputs["target_probs"], dtype=np.float64)[0, 0]
    V = p.size
    base = {k: inputs[k] for k in ("candidates", "retrieve_index", "target_probs", "draft_probs")}
    base["num_speculative_tokens"] = int(inputs["num_speculative_tokens"])
    base["semantics"] = semantics
    if cand.shape[1] < 2:
        raise SpecvizError("chain", "has no draft slot: the chain needs at least one draft after the root")
    q = np.asarray(inputs["draft_probs"], dtype=np.float64)[0, 0]
    counts = np.zeros(V, np.int64)
    lens = np.zeros(cand.shape[1] + 1, np.int64)
    if draft_from_q:
        rng = np.random.default_rng(seed)
        split = rng.multinomial(num_trials, normalise(q))
        expected = chain_first_token_marginal(p, q, semantics)
        jobs = [(int(x), int(m)) for x, m in enumerate(split) if m > 0]
    else:
        expected = chain_first_token(p, q, int(cand[0, 1]), semantics)
        jobs = [(int(cand[0, 1]), int(num_trials))]
    for j, (tok, m) in enumerate(jobs):
        c = np.array(cand, dtype=np.int64, copy=True)
        c[0, 1] = tok
        res = sample_many("chain_rejection_sampling", {**base, "candidates": c}, num_trials=m, seed=int(seed) + 1 + j)
        f, ln = _counts_of(res)
        counts += f[:V]
        lens[:ln.size] += ln[:lens.size]
    return _finish(counts, lens, expected, p)


def target_only_monte_carlo(sample_many: Callable, inputs: dict, *, num_trials: int, seed: int,
                            root_children_tokens, threshold_single: float = 1.0, threshold_acc: float = 1.0,
                            semantics: str = "0.5.23") -> MonteCarlo:
    """First-token histogram of the target-only tree sampler; expected = ``target_only_first_token``."""
    p = np.asarray(inputs["target_probs"], dtype=np.float64)[0, 0]
    base = {k: inputs[k] for k in ("candidates", "retrieve_index", "retrieve_next_token", "retrieve_next_sibling",
                                   "target_probs")}
    base.update(num_speculative_tokens=int(inputs["num_speculative_tokens"]), threshold_single=float(threshold_single),
                threshold_acc=float(threshold_acc), semantics=semantics)
    res = sample_many("tree_sampling_target_only", base, num_trials=int(num_trials), seed=int(seed))
    counts, lens = _counts_of(res)
    expected = target_only_first_token(p, list(root_children_tokens), threshold_single=threshold_single,
                                       threshold_acc=threshold_acc, semantics=semantics)
    return _finish(counts[:p.size], lens, expected, p)


def expected_tv_noise(p, num_trials: int) -> float:
    """The TV distance an exact sampler still shows after ``num_trials`` draws, from sampling noise alone:
    E|p_hat - p| ~ sqrt(2 p (1 - p) / (pi N)) per token (normal approximation), halved and summed."""
    p = normalise(_vec("p", p))
    return float(0.5 * np.sum(np.sqrt(2.0 * p * (1.0 - p) / (np.pi * max(int(num_trials), 1)))))


def random_coins(seed: int, count: int) -> tuple[list[float], float]:
    """Seeded coins for the pages' "randomise" button: ``count`` level coins and one final coin, each in [0, 1).

    Rounded to 3 decimals so they read well on screen and in the JSON; still float32-exact enough
    that no coin sits on a bucket edge by accident more often than a hand-typed one would.
    """
    rng = np.random.default_rng(int(seed))
    vals = np.floor(rng.random(count + 1) * 1000) / 1000  # in [0, .999]
    return [float(v) for v in vals[:count]], float(vals[count])


def rows_to_text(table) -> str:
    """A probability table as text, one row per line (the inverse of ``rows_from_text``)."""
    return "\n".join(" ".join(f"{float(v):.6g}" for v in row) for row in table)


def rows_from_text(field: str, text: str, width: int) -> list[list[float]]:
    """Parse pasted rows (numbers split by spaces or commas, one row per line) into a table.

    Raises SpecvizError naming ``field[k]`` for the first row that is not ``width`` numbers; the
    sums are checked later by the scenario, which names the row the same way.
    """
    rows = []
    for k, line in enumerate(ln for ln in text.strip().splitlines() if ln.strip()):
        parts = [x for x in line.replace(",", " ").replace(";", " ").split() if x]
        try:
            vals = [float(x) for x in parts]
        except ValueError:
            bad = next(x for x in parts if not _is_number(x))
            raise SpecvizError(f"{field}[{k}]", f"holds {bad!r}, which is not a number: write the row as {width} numbers") from None
        if len(vals) != width:
            raise SpecvizError(f"{field}[{k}]", f"has {len(vals)} values but the vocabulary has {width}: one number per token")
        rows.append(vals)
    return rows


def _is_number(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True
