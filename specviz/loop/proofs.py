"""The four proofs, as functions that return numbers (the page shows them, the tests assert them).

1. ``tree_pass_exact``: every node's logits from the one tree-verify forward equal a plain causal
   forward over the text so far followed by that node's root path (max |difference|; float32
   round-off only, tolerance ``TREE_TOL``).
2. ``greedy_lossless``: speculative greedy decoding emits exactly the Target's own greedy tokens.
3. ``sampling_lossless``: the next ``num_tokens`` tokens of speculative sampling follow the
   Target's own sampling distribution. Monte Carlo with a stated bound: outcomes are pooled into
   ``K`` bins (the most likely sequences + "other"); by the Bretagnolle-Huber-Carol inequality
   ``P(||p_hat - p||_1 >= lam) <= 2^K exp(-N lam^2 / 2)``, so with
   ``lam = sqrt(2 (K ln 2 + ln(1/delta)) / N)`` a correct sampler exceeds ``lam`` with
   probability at most ``delta``. Thresholds below 1 (or a mistake) show an L1 distance well above it.
4. The mistakes (``decode.MISTAKES``) each make one of these fail; ``proof_for_mistake`` says which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .decode import Decoder, LoopSettings, target_greedy
from .model import single_threaded
from .train import load_models

TREE_TOL = 1e-4   # float32 logits of magnitude ~10: sums in a different order differ by ~1e-6

# Which proof each mistake breaks (what the page and the tests check).
PROOF_FOR_MISTAKE = {
    "kv_by_outputs": "greedy",          # the root's KV row is lost: later logits see a different text
    "no_shift": "greedy",               # the text repeats the rows' own tokens
    "q_as_buffer": "sampling",          # the terminal draw after rejections is biased
    "mask_drop_ancestor": "tree",       # a node's logits no longer see its parent
}


@dataclass(frozen=True)
class TreeProof:
    ok: bool
    max_abs_diff: float
    per_round: list          # [rounds] max |diff| of each round
    worst: tuple             # (round, node) of the largest difference


@dataclass(frozen=True)
class GreedyProof:
    ok: bool
    speculative: list
    reference: list
    first_divergence: int | None   # index into the generated tokens, None when equal


@dataclass(frozen=True)
class SamplingProof:
    ok: bool
    l1: float
    bound: float
    delta: float
    trials: int
    labels: list             # [K] bin labels (token sequences, last "other")
    expected: list           # [K] exact Target probabilities
    observed: list           # [K] empirical frequencies


@single_threaded
def tree_pass_exact(run, models=None, tol: float = TREE_TOL) -> TreeProof:
    """Proof 1 over every node of every round of ``run``."""
    target, _, _ = models or load_models()
    text = list(run.prompt_ids)            # the text before round r (its last token should be the root)
    per_round, worst, best = [], (0, 0), -1.0
    for r in run.rounds:
        context = text[:-1] + [r.root]
        tree = r.tree
        worst_r = 0.0
        for i in range(len(tree.parents)):
            path, j = [], i
            while j != -1:
                path.append(tree.candidates[j])
                j = tree.parents[j]
            seq = context + path[::-1][1:]
            ref = target.forward_sequence(seq)[-1].numpy()
            d = float(np.max(np.abs(ref - r.logits[i])))
            worst_r = max(worst_r, d)
            if d > best:
                best, worst = d, (r.index, i)
        per_round.append(worst_r)
        text = text + list(r.emitted)
    m = max(per_round) if per_round else 0.0
    return TreeProof(ok=m <= tol, max_abs_diff=m, per_round=per_round, worst=worst)


@single_threaded
def greedy_lossless(run, models=None) -> GreedyProof:
    """Proof 2: ``run`` (any algorithm's tree shape, greedy accept) against the Target's own greedy decoding."""
    spec = list(run.generated)
    ref = target_greedy(run.prompt_ids, len(spec), models)
    first = next((i for i, (a, b) in enumerate(zip(spec, ref)) if a != b), None)
    return GreedyProof(ok=first is None, speculative=spec, reference=ref, first_divergence=first)


@single_threaded
def target_sequence_probs(prompt_ids: list, num_tokens: int, temperature: float, backend: str = "torch",
                          min_prob: float = 1e-5, models=None, which: str = "target") -> dict:
    """Exact probabilities of the Target's own next ``num_tokens`` tokens (sequences below ``min_prob`` pooled as None).

    ``which="draft"`` enumerates the Draft's instead (used only to choose the bins).
    """
    from ..backends import get_backend

    target, draft, _ = models or load_models()
    if which == "draft":
        target = draft
    ops = get_backend(backend)

    def probs(seq):
        logits = target.forward_sequence(seq)[-1:]
        return ops.target_probs_from_logits(logits, temperature=float(temperature))[0].numpy().astype(np.float64)

    out = {}

    def walk(seq, prefix, mass):
        if len(prefix) == num_tokens:
            out[tuple(prefix)] = out.get(tuple(prefix), 0.0) + mass
            return
        p = probs(seq)
        rest = 0.0
        for t in np.nonzero(p * mass >= min_prob)[0]:
            walk(seq + [int(t)], prefix + [int(t)], mass * p[t])
        rest = mass * float(p[p * mass < min_prob].sum())
        if rest > 0:
            out[None] = out.get(None, 0.0) + rest

    walk(list(prompt_ids), [], 1.0)
    return out


@single_threaded
def speculative_samples(prompt: str, settings: LoopSettings, num_tokens: int, trials: int, seed: int = 0,
                        models=None) -> list:
    """``trials`` independent runs of the loop (fresh coins each), the first ``num_tokens`` tokens of each."""
    base = Decoder(prompt, replace(settings, rounds=max(settings.rounds, num_tokens)), models)
    out = []
    for t in range(trials):
        dec = base.clone(seed * 1_000_003 + t)
        got = []
        while len(got) < num_tokens:
            got.extend(dec.step().emitted)
        out.append(tuple(got[:num_tokens]))
    return out


@single_threaded
def sampling_lossless(prompt: str, settings: LoopSettings, *, num_tokens: int = 2, trials: int = 600, seed: int = 0,
                      bins: int = 8, delta: float = 1e-3, models=None) -> SamplingProof:
    """Proof 3: L1 distance between the loop's empirical next-token sequences and the Target's exact ones.

    Bins: the Target's most likely sequences and the Draft's most likely ones (a biased sampler
    leans towards drafted tokens, which the Target may find unlikely), then "other". They are
    fixed from the two models before any coin is drawn, so the bound holds as stated.
    """
    s = settings.checked()
    m = models or load_models()
    ids = m[2].encode(prompt)
    exact = target_sequence_probs(ids, num_tokens, s.temperature, s.backend, models=m)
    drafty = target_sequence_probs(ids, num_tokens, 1.0, s.backend, models=m, which="draft")
    by_target = sorted((k for k in exact if k is not None), key=lambda k: -exact[k])
    by_draft = sorted((k for k in drafty if k is not None), key=lambda k: -drafty[k])
    ranked = []
    for k in by_target[: (bins - 1) // 2 + (bins - 1) % 2] + by_draft + by_target:
        if k not in ranked and len(ranked) < bins - 1:
            ranked.append(k)
    labels = ranked + ["other"]
    expected = [exact.get(k, 0.0) for k in ranked]
    expected.append(max(0.0, 1.0 - sum(expected)))
    samples = speculative_samples(prompt, s, num_tokens, trials, seed, m)
    index = {k: i for i, k in enumerate(ranked)}
    counts = np.zeros(len(labels))
    for x in samples:
        counts[index.get(x, len(labels) - 1)] += 1
    observed = counts / trials
    l1 = float(np.abs(observed - np.asarray(expected)).sum())
    K = len(labels)
    bound = math.sqrt(2 * (K * math.log(2) + math.log(1 / delta)) / trials)
    return SamplingProof(ok=l1 <= bound, l1=l1, bound=bound, delta=delta, trials=trials, labels=labels,
                         expected=[float(e) for e in expected], observed=[float(o) for o in observed])


def text_divergence(run, models=None) -> int | None:
    """Where the run's text first leaves the Target's greedy text (None when it never does): for the page."""
    return greedy_lossless(run, models).first_divergence


__all__ = ["TREE_TOL", "PROOF_FOR_MISTAKE", "tree_pass_exact", "greedy_lossless", "sampling_lossless",
           "target_sequence_probs", "speculative_samples", "text_divergence"]
