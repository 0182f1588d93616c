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
   probability at most ``delta``. A second, targeted statistic runs beside it: the share of runs
   whose first token lies in the Draft-favoured set ``A = {x : q(x) > p(x)}`` (both models' next-token
   distributions after the prompt, fixed before any coin), checked with an exact two-sided binomial
   test. Each test gets ``delta / 2``, so a correct sampler fails the proof with probability at most
   ``delta``. Samplers that lean towards drafted tokens (thresholds below 1) or away from them (the
   work buffer started at q) move the mass of A by far more than the L1 bins see.
   ``detection_power`` computes, from the exact law of the first token (the numpy reference on
   round 0's tree, every coin interval), how often the proof fails at a given number of trials.
4. The mistakes (``settings.MISTAKES``) each make one of these fail; ``proof_for_mistake`` says which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.rooms.loop.decode import Decoder, LoopSettings, target_greedy
from specviz.rooms.loop.model import single_threaded
from specviz.rooms.loop.train import load_models

TREE_TOL = 1e-4   # float32 logits of magnitude ~10: sums in a different order differ by ~1e-6

# Which proof each mistake breaks (what the page and the tests check).
PROOF_FOR_MISTAKE = {
    "kv_by_outputs": "greedy",          # the root's KV row is lost: later logits see a different text
    "no_shift": "greedy",               # the text repeats the rows' own tokens
    "q_as_buffer": "sampling",          # the terminal draw after rejections is biased
    "mask_drop_ancestor": "tree",       # a node's logits no longer see its parent
}


# The decoding-loop page's defaults (the page reads them from here, so a test can check a mistake demo
# at exactly what a student sees first): prompt, settings and the Monte Carlo's trials.
PAGE_PROMPT = "The target model verifies the draft tree. "
PAGE_SETTINGS = dict(topk=2, depth=4, num_draft_tokens=8, temperature=0.8, seed=0, rounds=16)
PAGE_TRIALS = 200
PROOF_TOKENS = 2   # proof 3 compares the next 2 tokens


def proof_settings(settings: LoopSettings) -> LoopSettings:
    """The shallow tree proof 3 samples with (depth <= 2, n <= 4): many independent runs stay cheap."""
    return replace(settings, depth=min(settings.depth, 2),
                   num_draft_tokens=min(settings.num_draft_tokens, 4) if settings.topk > 1 else min(settings.depth, 2) + 1)


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
    l1_ok: bool = True       # the L1 statistic within its bound (at delta / 2)
    set_tokens: tuple = ()   # A = {x : q(x) > p(x)}: the Draft-favoured first tokens
    set_expected: float = 0.0  # p(A) under the Target
    set_observed: float = 0.0  # share of runs whose first token is in A
    set_ok: bool = True      # the exact binomial test on that share (at delta / 2)
    set_pvalue: float = 1.0  # its two-sided p-value (twice the smaller tail, capped at 1)


@dataclass(frozen=True)
class DetectionPower:
    """How often the sampling proof fails at ``trials`` for these settings (exact, from round 0's tree)."""
    trials: int
    tv: float                # TV distance between the first token's exact law and p
    set_expected: float      # p(A)
    set_actual: float        # the sampler's exact probability of a first token in A
    power: float             # P(the binomial test on A fails) at ``trials``: a lower bound for the proof's power
    law: np.ndarray          # [V] the first token's exact law under the sampler
    target: np.ndarray       # [V] p, the Target's next-token distribution


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
    from specviz.algorithms.backends import get_backend

    target, draft, _ = models or load_models()
    key = (tuple(prompt_ids), int(num_tokens), float(temperature), backend, float(min_prob), which, id(target), id(draft))
    if key in _SEQUENCE_PROBS:  # the same models and text: the same exact law (proof 3 asks for it on every run)
        return dict(_SEQUENCE_PROBS[key])
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
    if len(_SEQUENCE_PROBS) >= 32:
        _SEQUENCE_PROBS.clear()
    _SEQUENCE_PROBS[key] = dict(out)
    return out


_SEQUENCE_PROBS: dict = {}  # target_sequence_probs' results (small dicts), keyed by its inputs and the models' identity


@single_threaded
def speculative_samples(prompt: str, settings: LoopSettings, num_tokens: int, trials: int, seed: int = 0,
                        models=None, start: int = 0) -> list:
    """``trials`` independent runs of the loop (fresh coins each), the first ``num_tokens`` tokens of each.

    Run t uses its own coins (from ``seed`` and t), so runs ``start .. start + trials - 1`` taken in pieces
    are exactly the same runs as taken at once (the page runs them in pieces to show its progress)."""
    base = Decoder(prompt, replace(settings, rounds=max(settings.rounds, num_tokens)), models)
    # The runs start from one state: a round's Draft tree and Target forward, a function of the text so far
    # (the coins enter only at the Accept), are computed once per distinct text and shared by the runs
    # (Decoder.step's memo; not for the chain, whose Draft samples with coins).
    base._memo = {}
    out = []
    for t in range(start, start + trials):
        dec = base.clone(seed * 1_000_003 + t)
        got = []
        while len(got) < num_tokens:
            got.extend(dec.step().emitted)
        out.append(tuple(got[:num_tokens]))
    return out


@single_threaded
def sampling_lossless(prompt: str, settings: LoopSettings, *, num_tokens: int = 2, trials: int = 600, seed: int = 0,
                      bins: int = 8, delta: float = 1e-3, models=None, samples: list | None = None) -> SamplingProof:
    """Proof 3: L1 distance between the loop's empirical next-token sequences and the Target's exact ones.

    Bins: the Target's most likely sequences and the Draft's most likely ones (a biased sampler
    leans towards drafted tokens, which the Target may find unlikely), then "other". They are
    fixed from the two models before any coin is drawn, so the bound holds as stated. ``samples``: the
    runs ``speculative_samples(prompt, settings, num_tokens, trials, seed)`` returns, when already taken.
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
    p1, q1 = next_token_laws(ids, s, m)
    in_set = q1 > p1                                       # A, fixed from the two models before any coin
    if samples is None:
        samples = speculative_samples(prompt, s, num_tokens, trials, seed, m)
    if len(samples) != trials or any(len(x) != num_tokens for x in samples):
        raise ValueError(f"samples: {len(samples)} runs given for {trials} trials of {num_tokens} tokens")
    index = {k: i for i, k in enumerate(ranked)}
    counts = np.zeros(len(labels))
    for x in samples:
        counts[index.get(x, len(labels) - 1)] += 1
    observed = counts / trials
    l1 = float(np.abs(observed - np.asarray(expected)).sum())
    K = len(labels)
    bound = math.sqrt(2 * (K * math.log(2) + math.log(2 / delta)) / trials)   # delta / 2 for this test
    hits = sum(1 for x in samples if in_set[x[0]])
    p_a = float(p1[in_set].sum())
    pval = binomial_two_sided_pvalue(hits, trials, p_a)
    set_ok = pval > delta / 2
    vocab = m[2].vocab
    return SamplingProof(ok=l1 <= bound and set_ok, l1=l1, bound=bound, delta=delta, trials=trials, labels=labels,
                         expected=[float(e) for e in expected], observed=[float(o) for o in observed], l1_ok=l1 <= bound,
                         set_tokens=tuple(vocab[i] for i in np.nonzero(in_set)[0]), set_expected=p_a,
                         set_observed=hits / trials, set_ok=set_ok, set_pvalue=pval)


def next_token_laws(ids: list, s: LoopSettings, models) -> tuple:
    """(p, q) [V] float64: the Target's next-token distribution after ``ids`` at the loop's temperature, and
    the Draft's at the temperature the loop drafts with (chain: the same; trees rank by q at 1.0)."""
    from specviz.algorithms.backends import get_backend

    target, draft, _ = models
    ops = get_backend(s.backend)

    def law(model, temperature):
        logits = model.forward_sequence(list(ids))[-1:]
        return ops.target_probs_from_logits(logits, temperature=float(temperature))[0].numpy().astype(np.float64)

    return law(target, s.temperature), law(draft, s.temperature if s.algorithm == "chain" else 1.0)


def _binomial_pmf(n: int, a: float) -> np.ndarray:
    """[n + 1] P(X = c) for X ~ Binomial(n, a), in log space (exact enough for n in the thousands)."""
    c = np.arange(n + 1)
    if a <= 0.0 or a >= 1.0:
        out = np.zeros(n + 1)
        out[0 if a <= 0.0 else n] = 1.0
        return out
    logc = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) for k in c])
    return np.exp(logc + c * math.log(a) + (n - c) * math.log1p(-a))


def binomial_two_sided_pvalue(hits: int, n: int, a: float) -> float:
    """Twice the smaller tail of ``hits`` under Binomial(n, a), capped at 1."""
    pmf = _binomial_pmf(n, a)
    lo, hi = float(pmf[: hits + 1].sum()), float(pmf[hits:].sum())
    return min(1.0, 2.0 * min(lo, hi))


def first_token_law(prompt: str, settings: LoopSettings, models=None) -> tuple:
    """(law, p): the exact law [V] of the loop's first emitted token, and the Target's p [V] (target-only trees).

    Round 0's Draft tree is deterministic (top-k ranking), so the first token depends only on the
    coin u[0] and u_final. The numpy reference runs once per interval between the root children's
    bucket edges (read from its own trace); in each, the outcome is one accepted child or the
    terminal draw, whose normalised distribution the trace records. Mistakes and thresholds act
    exactly as in the loop (the work buffer, the accept rule)."""
    from specviz import reference as ref
    from specviz.base.trace import Trace

    s = settings.checked()
    if s.algorithm != "target_only":
        raise SpecvizError("algorithm", f"is {s.algorithm!r}: the exact first-token law is computed for target_only trees")
    m = models or load_models()
    dec = Decoder(prompt, replace(s, rounds=1), m).clone(0)
    rnd = dec.step()
    tree, n = rnd.tree, len(rnd.tree.candidates)
    build = ref.build_tree(np.array([tree.parent_list]), np.array([tree.selected_index]), np.array([rnd.seq_len]),
                           topk=s.topk, depth=s.depth, num_draft_tokens=n)
    cand = np.array([tree.candidates], dtype=np.int64)
    p = np.asarray(rnd.target_probs, dtype=np.float32)[None]               # [1, n, V]
    work = tree.node_q[None] if "q_as_buffer" in s.mistakes else None

    def run(coin: float):
        trace = Trace()
        u = np.full((1, n), 0.5, dtype=np.float32)
        u[0, 0] = coin
        ref.tree_sampling_target_only(cand, build.retrieve_index, build.retrieve_next_token, build.retrieve_next_sibling,
                                      u, np.array([0.5], np.float32), p, num_speculative_tokens=s.depth + 1,
                                      threshold_single=s.threshold_single, threshold_acc=s.threshold_acc, draft_probs=work,
                                      trace=trace)
        return trace.events

    edges = sorted({0.0, 1.0} | {min(1.0, max(0.0, float(e.data["bound"]))) for e in run(np.nextafter(np.float32(1), 0))
                                if e.kind == "accept_test" and e.request == 0 and e.data.get("level") == 1})
    V = p.shape[2]
    law = np.zeros(V)
    for lo, hi in zip(edges, edges[1:]):
        if hi <= lo:
            continue
        events = run(np.float32((lo + hi) / 2))
        first = next((e for e in events if e.kind == "accept" and e.data.get("level") == 1), None)
        if first is not None:
            law[first.data["token"]] += hi - lo
            continue
        res = next(e for e in events if e.kind == "residual")
        dist = np.asarray(res.data["dist"], dtype=np.float64)
        if dist.sum() > 0:
            law += (hi - lo) * dist / dist.sum()
        else:  # no mass: the kernel's fallback token, whatever u_final
            law[next(e for e in events if e.kind == "terminal").data["token"]] += hi - lo
    return law, p[0, 0].astype(np.float64)


def detection_power(prompt: str, settings: LoopSettings, trials: int, delta: float = 1e-3, models=None) -> DetectionPower:
    """P(the sampling proof's binomial test on A fails) at ``trials``, from the first token's exact law
    (``first_token_law``); the proof as a whole fails at least this often."""
    s = settings.checked()
    m = models or load_models()
    law, p = first_token_law(prompt, s, m)
    ids = m[2].encode(prompt)
    p1, q1 = next_token_laws(ids, s, m)
    in_set = q1 > p1
    p_a, a = float(p1[in_set].sum()), float(law[in_set].sum())
    pmf = _binomial_pmf(trials, a)
    power = float(sum(pmf[c] for c in range(trials + 1) if binomial_two_sided_pvalue(c, trials, p_a) <= delta / 2))
    return DetectionPower(trials=trials, tv=0.5 * float(np.abs(law - p).sum()), set_expected=p_a, set_actual=a,
                          power=power, law=law, target=p)


def text_divergence(run, models=None) -> int | None:
    """Where the run's text first leaves the Target's greedy text (None when it never does): for the page."""
    return greedy_lossless(run, models).first_divergence


__all__ = ["TREE_TOL", "PROOF_FOR_MISTAKE", "PAGE_PROMPT", "PAGE_SETTINGS", "PAGE_TRIALS", "PROOF_TOKENS", "proof_settings", "tree_pass_exact", "greedy_lossless", "sampling_lossless",
           "target_sequence_probs", "speculative_samples", "text_divergence", "first_token_law", "detection_power",
           "binomial_two_sided_pvalue", "next_token_laws"]
