"""Acceptance metrics, defined once (the page, the benchmark and the tests all call these).

Counting per round r (one Target verify pass): ``k_r`` accepted drafts, ``k_r + 1`` emitted tokens
(the bonus included), ``n - 1`` drafted tokens (verify rows below the root), depth ``S``.

- **tokens per Target pass**, ``tau = mean(k_r + 1)``: the mean accept length, bonus counted. This is
  what SGLang calls ``accept_length`` and what vLLM reports as "mean acceptance length"
  (``1 + accepted / num_drafts``). It is the quantity the speed-up depends on.
- **per-depth acceptance** ``alpha_d`` ("n-alpha" in the EAGLE papers): among rounds that accepted
  a draft at depth ``d - 1`` (the root counts as depth 0), the share that also accepted one at
  depth ``d``. A *conditional* rate: it says how good the Draft is at the d-th step given the
  previous ones were right.
- **per-position acceptance** (vLLM's per-position rate, ``accepted at position d / num_drafts``):
  the *unconditional* share of rounds that reached depth ``d``; it is the running product of the
  ``alpha_d``, so it falls faster.
- **per-token acceptance rate** (vLLM's "draft acceptance rate", ``accepted / drafted tokens``):
  divides by every drafted token. For a tree, ``n - 1`` drafts are verified but at most ``S`` can
  be accepted, so a wide tree lowers this rate even when it raises ``tau``.
- **system efficiency** (vLLM v0's ``system_efficiency``, ``emitted / (rounds * (k + 1))``): the
  emitted tokens over the most the rounds could have emitted (every draft on the path accepted,
  plus the bonus); here ``k = S``, the longest path. It equals ``tau / (S + 1)``.

Sources for vLLM's definitions: ``vllm/spec_decode/metrics.py`` (v0 ``AsyncMetricsCollector``:
draft acceptance rate = accepted / draft tokens; system efficiency = emitted / (drafted sequences
x (k + 1))), and https://docs.vllm.ai/en/v0.21.0/api/vllm/v1/spec_decode/metrics/ (v1: counts of
drafts, draft tokens, accepted tokens and accepted tokens per position).

Models: with i.i.d. acceptance ``alpha`` on a chain of ``K`` drafts, ``tau = (1 - alpha^(K+1)) /
(1 - alpha)`` (Leviathan et al. 2023). For a tree whose node i is accepted with probability
``a_i`` given its parent was, ``E[tau] = 1 + sum_i prod_{j on root..i} a_j`` (each node counts
once if it ends up on the accepted path; siblings' events are disjoint). The speed-up estimate
with cost ratio ``c = Draft step cost / Target pass cost`` and ``S`` Draft steps per round is
``tau / (1 + S c)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Metrics:
    rounds: int
    tau: float                       # tokens per Target pass (bonus counted)
    alpha_per_depth: list            # [S] conditional acceptance at depth 1..S (nan where no round reached d-1)
    position_rate: list              # [S] unconditional: share of rounds accepting a draft at depth d
    token_acceptance_rate: float     # accepted drafts / drafted tokens
    system_efficiency: float         # emitted / (rounds * (S + 1))
    accepted: int
    drafted: int
    emitted: int


def measure(accept_lens, *, depth: int, drafted_per_round: int) -> Metrics:
    """Metrics from the per-round accept lengths (``k + 1`` each)."""
    lens = np.asarray(list(accept_lens), dtype=np.int64)
    R = int(lens.size)
    if R == 0:
        nan = float("nan")
        return Metrics(0, nan, [nan] * depth, [nan] * depth, nan, nan, 0, 0, 0)
    k = lens - 1
    reached = [int(np.sum(k >= d)) for d in range(depth + 1)]        # reached[0] = R
    alpha = [reached[d] / reached[d - 1] if reached[d - 1] else float("nan") for d in range(1, depth + 1)]
    pos = [reached[d] / R for d in range(1, depth + 1)]
    accepted, emitted, drafted = int(k.sum()), int(lens.sum()), R * int(drafted_per_round)
    return Metrics(rounds=R, tau=float(lens.mean()), alpha_per_depth=alpha, position_rate=pos,
                   token_acceptance_rate=accepted / drafted if drafted else float("nan"),
                   system_efficiency=emitted / (R * (depth + 1)), accepted=accepted, drafted=drafted, emitted=emitted)


def chain_tau(alpha: float, num_drafts: int) -> float:
    """Expected tokens per Target pass for a chain of ``num_drafts`` drafts with i.i.d. acceptance ``alpha``."""
    a, K = float(alpha), int(num_drafts)
    if abs(1 - a) < 1e-12:
        return float(K + 1)
    return (1 - a ** (K + 1)) / (1 - a)


def tree_expected_accept_length(parents, accept_probs) -> float:
    """``1 + sum_i prod_{j on root..i} a_j``: node i (>= 1) is accepted with probability ``accept_probs[i]`` given its parent was."""
    n = len(parents)
    reach = [1.0] * n
    total = 1.0
    for i in range(1, n):
        reach[i] = reach[parents[i]] * float(accept_probs[i])
        total += reach[i]
    return total


def speedup(tau: float, draft_steps: int, cost_ratio: float) -> float:
    """Estimated speed-up over plain decoding: tau tokens per (1 Target pass + ``draft_steps`` Draft steps at ``cost_ratio``)."""
    return float(tau) / (1.0 + int(draft_steps) * float(cost_ratio))


def round_accept_probs(rnd, algorithm: str) -> list:
    """Per-node acceptance probability given the parent was accepted, from one round's recorded tensors.

    greedy: 1 if the node's token is the Target's argmax at the parent row (first matching sibling only),
    else 0. target-only sampling (thresholds 1): ``p_parent(token)``, the node's bucket width.
    chain rejection: ``min(1, p(token) / q(token))``.
    """
    tree = rnd.tree
    n = len(tree.parents)
    a = [1.0] * n
    for i in range(1, n):
        par, tok = tree.parents[i], tree.candidates[i]
        if algorithm == "greedy":
            a[i] = 1.0 if int(np.argmax(rnd.logits[par])) == tok else 0.0
        elif algorithm == "target_only":
            a[i] = float(rnd.target_probs[par][tok])
        else:
            q = float(tree.proposal_q[i][tok])
            a[i] = min(1.0, float(rnd.target_probs[par][tok]) / q) if q > 0 else 0.0
    return a


def expected_tau(run) -> float:
    """Mean over rounds of the tree formula applied to each round's own tree and probabilities (the depth limit is the tree's)."""
    vals = [tree_expected_accept_length(r.tree.parents, round_accept_probs(r, run.settings.algorithm)) for r in run.rounds]
    return float(np.mean(vals)) if vals else float("nan")


def run_metrics(run) -> Metrics:
    s = run.settings
    return measure([r.accept_len for r in run.rounds], depth=s.depth, drafted_per_round=s.num_draft_tokens - 1)
