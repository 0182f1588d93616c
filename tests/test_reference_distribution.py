"""Distribution preservation, checked exactly (SEMANTICS.md §6.3, §7), not by sampling.

For a fixed input, every decision of a sampler is a piecewise-constant function of each coin:
- a level coin of the target-only tree sampler only matters through the bucket edges S_i / t_acc
  (running sums of the children's target mass, §6.3);
- a chain coin only through the ratio p/q of the drafted token (u*q < p, §7);
- the final coin only through the cumulative sums of the terminal distribution divided by its
  total (inverse CDF, §6.2).
The coins are read in a data-dependent order (the next level's coin is indexed by the accepted
node), so ``integrate`` pins them one at a time: run the reference, find the first coin it read
that is not pinned yet, split [0, 1) at that coin's breakpoints and recurse on each interval's
midpoint with weight = interval length. Breakpoints and weights are exact fractions; the reference
runs in float32 at midpoints, which sit far (>= 1/8192) from every edge, so its decision there is
the decision on the whole interval. The result is the exact output distribution as Fractions.

Target and draft "models" are tables keyed by the prefix of emitted tokens. Probabilities are
multiples of 1/64 (exact in float32) in the random cases, decimals in the SEMANTICS §0 cases.
"""
from __future__ import annotations

import itertools
import warnings
from collections import defaultdict
from fractions import Fraction as Fr
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specviz.base.errors import SpecvizWarning
from specviz.reference import chain_rejection_sampling, tree_sampling_target_only

F32 = np.float32
FINAL = "final"
SETTINGS = settings(deadline=None, max_examples=100, derandomize=True)


# ---------------------------------------------------------------------------------------------
# The integrator
# ---------------------------------------------------------------------------------------------

def integrate(start, run, plan):
    """Exact output distribution {emitted tokens: Fraction}.

    start: [(weight, scenario)]; run(batch of (scenario, pinned coins)) -> one view per item with
    ``.emitted`` and ``.signature`` (everything the run decided); plan(scenario, view) ->
    [(coin key, breakpoints)] in the order the run read them.

    The breakpoints are trusted only after a check: besides the midpoint, every interval is also
    run at 1/64 and 63/64 of its width (other coins unchanged), and all three runs must decide the
    same. An edge in the wrong place (e.g. ``<=`` made ``< 1.01 x``) shows up there.
    """
    out = defaultdict(Fr)
    frontier = [(w, sc, {}, []) for w, sc in start if w > 0]
    while frontier:
        batch = []
        for _, sc, pinned, probes in frontier:
            batch += [(sc, pinned)] + [(sc, pr) for pr in probes]
        views = iter(run(batch))
        nxt = []
        for w, sc, pinned, probes in frontier:
            view = next(views)
            for pr in probes:
                assert next(views).signature == view.signature, f"decision not constant between breakpoints: {pinned} vs {pr}"
            todo = next(((key, bps) for key, bps in plan(sc, view) if key not in pinned), None)
            if todo is None:
                out[view.emitted] += w
                continue
            key, bps = todo
            edges = sorted({Fr(0), Fr(1), *(b for b in bps if 0 < b < 1)})
            for lo, hi in zip(edges, edges[1:]):
                assert hi - lo >= Fr(1, 8192), "intervals this short would put a float32 midpoint near an edge"
                probes = [{**pinned, key: lo + (hi - lo) * f} for f in (Fr(1, 64), Fr(63, 64))]
                nxt.append((w * (hi - lo), sc, {**pinned, key: (lo + hi) / 2}, probes))
        frontier = nxt
    assert sum(out.values()) == 1
    return dict(out)


def inverse_cdf_edges(dist):
    """Where the inverse-CDF pick changes: cumulative sums over the total (§6.2)."""
    total = sum(dist)
    if total == 0:
        return []
    return list(itertools.accumulate(d / total for d in dist))


def first_token(dist):
    out = defaultdict(Fr)
    for seq, w in dist.items():
        out[seq[0]] += w
    return dict(out)


def extend_to(dist, target, length, vocab):
    """Complete every emitted sequence to ``length`` tokens with the target's own conditionals.
    If the sampler is exact, the result is the target's joint distribution over ``length`` tokens."""
    out = {}
    for s in itertools.product(range(vocab), repeat=length):
        total = Fr(0)
        for m in range(1, length + 1):
            w = dist.get(s[:m], Fr(0))
            for t in range(m, length):
                w *= target(s[:t])[s[t]]
            total += w
        out[s] = total
    return out


def joint(target, length, vocab):
    out = {}
    for s in itertools.product(range(vocab), repeat=length):
        w = Fr(1)
        for t in range(length):
            w *= target(s[:t])[s[t]]
        out[s] = w
    return out


class TableModel:
    """A next-token table keyed by the prefix: fixed rows where given, random 1/64-multiples elsewhere."""

    def __init__(self, vocab, rng=None, rows=None):
        self.vocab, self.rng, self.rows = vocab, rng, dict(rows or {})

    def __call__(self, prefix):
        prefix = tuple(prefix)
        if prefix not in self.rows:
            cuts = np.sort(self.rng.integers(0, 65, self.vocab - 1))
            counts = np.diff(np.concatenate([[0], cuts, [64]]))
            self.rows[prefix] = [Fr(int(c), 64) for c in counts]
        return self.rows[prefix]


def f32(rows):
    return np.array([[float(x) for x in r] for r in rows], dtype=F32)


# ---------------------------------------------------------------------------------------------
# Target-only tree sampling
# ---------------------------------------------------------------------------------------------

def tree_scenario(parents, tokens, target, width):
    """A tree (parent array, node tokens; node 0 = root) whose node rows are the target's conditionals."""
    n = len(parents)
    kids = [[c for c in range(1, n) if parents[c] == i] for i in range(n)]
    nt, ns = [-1] * n, [-1] * n
    for i in range(n - 1, 0, -1):
        ns[i], nt[parents[i]] = nt[parents[i]], i

    def path(i):
        out = []
        while i > 0:
            out.append(tokens[i])
            i = parents[i]
        return tuple(reversed(out))

    rows = [target(path(i)) for i in range(n)]
    return SimpleNamespace(n=n, kids=kids, tokens=tokens, nt=nt, ns=ns, rows=rows, p32=f32(rows), width=width)


def run_tree(batch, threshold_acc=1.0, threshold_single=1.0, semantics="0.5.23"):
    sc = batch[0][0]
    bs, n = len(batch), sc.n
    u = np.zeros((bs, n), F32)
    uf = np.zeros(bs, F32)
    for b, (_, pinned) in enumerate(batch):
        for key, v in pinned.items():
            if key == FINAL:
                uf[b] = float(v)
            else:
                u[b, key] = float(v)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecvizWarning)  # nothing degenerate happens on a positive-length interval
        res = tree_sampling_target_only(
            np.tile(sc.tokens, (bs, 1)), np.arange(bs * n).reshape(bs, n), np.tile(sc.nt, (bs, 1)), np.tile(sc.ns, (bs, 1)),
            u, uf, np.tile(sc.p32, (bs, 1, 1)), num_speculative_tokens=sc.width, threshold_acc=threshold_acc,
            threshold_single=threshold_single, semantics=semantics)
    views = []
    for b in range(bs):
        rows = [int(g) for g in res.accept_index[b] if g >= 0]
        emitted = tuple(int(res.predicts[g]) for g in rows)
        views.append(SimpleNamespace(nodes=[g - b * n for g in rows], emitted=emitted,
                                     signature=(tuple(g - b * n for g in rows), emitted, res.draft_probs[b].tobytes())))
    return views


def plan_tree(threshold_acc=Fr(1)):
    def plan(sc, view):
        steps = []
        k = len(view.nodes) - 1
        for j, node in enumerate(view.nodes):
            if j > sc.width - 2 or not sc.kids[node]:
                break  # no further level, or a leaf: the node's coin is never read
            sums = itertools.accumulate(sc.rows[node][sc.tokens[c]] for c in sc.kids[node])
            steps.append((node, [s / threshold_acc for s in sums]))
        last = view.nodes[-1]
        dist = list(sc.rows[last])
        if k < sc.width - 1:  # every child of the last node was rejected: its mass is in the buffer
            for c in sc.kids[last]:
                dist[sc.tokens[c]] = Fr(0)
        steps.append((FINAL, inverse_cdf_edges(dist)))
        return steps
    return plan


# The SEMANTICS §0.4 example: ids A=0 B=1 C=2 D=3 X=4 R=5; rows as decimals.
A, B, C, D, X, R = range(6)
S0_ROWS = {
    (): [Fr(s) for s in (".5", ".3", "0", "0", ".2", "0")],
    (A,): [Fr(s) for s in ("0", ".1", ".6", ".2", ".1", "0")],
    (B,): [Fr(s) for s in (".1", ".1", ".1", ".1", ".5", ".1")],
    (A, C): [Fr(s) for s in (".1", "0", "0", ".1", ".7", ".1")],
    (A, D): [Fr(s) for s in (".1", ".1", ".1", ".1", ".5", ".1")],
}


def running_example(width=3):
    return tree_scenario([-1, 0, 0, 1, 1], [R, A, B, C, D], TableModel(6, rows=S0_ROWS), width)


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_running_example_first_token_is_exactly_p_root(semantics):
    """§0.4: A is emitted first iff u[0] < .5 (probability .5); B iff .5 <= u[0] < .8 (.3); otherwise
    both are rejected and relu(p_R - buffer) = (0 0 0 0 .2 0) gives X (.2). Total = p_R exactly.
    The full sequence: A then C iff u[1] < .6, then X/... from row C; etc."""
    dist = integrate([(Fr(1), running_example())], lambda b: run_tree(b, semantics=semantics), plan_tree())
    assert first_token(dist) == {A: Fr(".5"), B: Fr(".3"), X: Fr(".2")}
    # Hand-derived pieces of the joint: P(A, C) = .5 x .6 = .3, then X from row C with .7.
    assert dist[(A, C, X)] == Fr(".5") * Fr(".6") * Fr(".7")
    assert dist[(X,)] == Fr(".2")
    # A accepted, C and D rejected (acc .6, .8; coin in [.8, 1)): residual of row A without C, D
    # = (0 .1 0 0 .1 0) -> B or X with .1/.2 each: P(A, B) = .5 x .2 x .5 = .05.
    assert dist[(A, B)] == Fr(".05")
    # With the depth limit W = 3 the emitted sequence extended by the target equals the target's
    # joint over 3 tokens.
    target = TableModel(6, rows=S0_ROWS)
    assert extend_to(dist, _complete(target), 3, 6) == joint(_complete(target), 3, 6)


def _complete(model):
    """Rows the running example does not define (e.g. after B, X) only matter for completion: uniform."""
    def target(prefix):
        return model.rows.get(tuple(prefix), [Fr(1, 6)] * 6)
    return target


@st.composite
def random_trees(draw):
    vocab = draw(st.integers(2, 4))
    n = draw(st.integers(2, 7))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parents = [-1]
    for i in range(1, n):
        options = [p for p in range(i) if sum(1 for q in parents[1:] if q == p) < vocab]
        parents.append(int(rng.choice(options)))
    tokens = [0] * n
    for node in range(n):
        kids = [c for c in range(1, n) if parents[c] == node]
        for c, t in zip(kids, rng.permutation(vocab)):  # distinct sibling tokens (a draft's top-k)
            tokens[c] = int(t)
    depth = max(len(_path(parents, i)) for i in range(n))
    width = draw(st.integers(2, depth + 2))  # W = 1 (no draft level) is covered by the properties file
    return vocab, parents, tokens, width, TableModel(vocab, rng)


def _path(parents, i):
    out = []
    while i > 0:
        out.append(i)
        i = parents[i]
    return out


@SETTINGS
@given(random_trees(), st.sampled_from(["0.5.23", "earlier"]))
def test_target_only_thresholds_one_give_exactly_the_target_distribution(case, semantics):
    """§6.3: with thresholds 1 the first emitted token is distributed exactly as p at the root, and
    the emitted sequence completed to W tokens with the target's own conditionals has exactly the
    target's joint distribution over W tokens (W = the longest emission, forced by the depth limit)."""
    vocab, parents, tokens, width, target = case
    sc = tree_scenario(parents, tokens, target, width)
    dist = integrate([(Fr(1), sc)], lambda b: run_tree(b, semantics=semantics), plan_tree())
    assert all(1 <= len(s) <= width for s in dist)
    assert first_token(dist) == {t: pr for t, pr in enumerate(target(())) if pr > 0}
    assert extend_to(dist, target, width, vocab) == joint(target, width, vocab)


@SETTINGS
@given(random_trees(), st.sampled_from([Fr(1, 2), Fr(1, 4), Fr(3, 4)]))
def test_target_only_threshold_acc_below_one_inflates_the_first_child(case, t_acc):
    """§6.3: with threshold_acc < 1 the first child t_1 of the root is accepted iff u < p(t_1)/t_acc,
    and a rejected t_1 is removed from the residual, so P(first = t_1) = min(1, p(t_1)/t_acc) exactly
    (for p(t_1) > 0); whenever 0 < p(t_1) < 1 this exceeds p(t_1): the output is not distributed as p."""
    vocab, parents, tokens, width, target = case
    sc = tree_scenario(parents, tokens, target, width)
    dist = integrate([(Fr(1), sc)], lambda b: run_tree(b, threshold_acc=float(t_acc)), plan_tree(t_acc))
    first = first_token(dist)
    if width < 2 or not sc.kids[0]:
        assert first == {t: pr for t, pr in enumerate(target(())) if pr > 0}  # no draft level: plain p
        return
    t1 = tokens[sc.kids[0][0]]
    p1 = target(())[t1]
    if p1 == 0:
        return
    assert first[t1] == min(Fr(1), p1 / t_acc)
    if p1 < 1:
        assert first[t1] > p1
        assert first != {t: pr for t, pr in enumerate(target(())) if pr > 0}


def test_threshold_acc_half_makes_a_certain_in_the_running_example():
    """§0.4/§6.3: threshold_acc .5 -> A's bound .5/.5 = 1 > every coin -> P(first = A) = 1 (exact
    sampling gives .5); B and X are never emitted first."""
    dist = integrate([(Fr(1), running_example())], lambda b: run_tree(b, threshold_acc=.5), plan_tree(Fr(1, 2)))
    assert first_token(dist) == {A: Fr(1)}


def test_threshold_single_takes_a_always_in_the_running_example():
    """threshold_single .5: A's p .5 >= .5 fires whatever the coin -> P(first = A) = 1. Then C's p .6
    >= .5 fires too -> P(A, C, .) = 1, and X follows from row C with .7."""
    dist = integrate([(Fr(1), running_example())], lambda b: run_tree(b, threshold_single=.5), plan_tree())
    assert first_token(dist) == {A: Fr(1)}
    assert dist[(A, C, X)] == Fr(".7")


# ---------------------------------------------------------------------------------------------
# Chain rejection sampling
# ---------------------------------------------------------------------------------------------

def chain_scenarios(target, draft, num_drafts, vocab, root=0):
    """One scenario per draft sequence d, weighted by the draft's probability of proposing it.
    Row s-1 of q proposed slot s; row s of p is the target after the first s drafts."""
    out = []
    for d in itertools.product(range(vocab), repeat=num_drafts):
        w = Fr(1)
        for s in range(num_drafts):
            w *= draft(d[:s])[d[s]]
        if w == 0:
            continue
        p_rows = [target(d[:s]) for s in range(num_drafts + 1)]
        q_rows = [draft(d[:s]) for s in range(num_drafts)]
        out.append((w, SimpleNamespace(cand=[root, *d], p=p_rows, q=q_rows, p32=f32(p_rows),
                                       q32=f32(q_rows).reshape(num_drafts, vocab), N=num_drafts + 1, vocab=vocab)))
    return out


def run_chain(batch, semantics="0.5.23"):
    bs, N, vocab = len(batch), batch[0][0].N, batch[0][0].vocab
    u = np.zeros((bs, N), F32)
    uf = np.zeros(bs, F32)
    for b, (_, pinned) in enumerate(batch):
        for key, v in pinned.items():
            if key == FINAL:
                uf[b] = float(v)
            else:
                u[b, key] = float(v)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecvizWarning)
        res = chain_rejection_sampling(
            np.array([sc.cand for sc, _ in batch]), np.arange(bs * N).reshape(bs, N), u, uf,
            np.stack([sc.p32 for sc, _ in batch]), np.stack([sc.q32 for sc, _ in batch]).reshape(bs, N - 1, vocab),
            num_speculative_tokens=N, semantics=semantics)
    views = []
    for b in range(bs):
        rows = tuple(int(g) for g in res.accept_index[b] if g >= 0)
        emitted = tuple(int(res.predicts[g]) for g in rows)
        views.append(SimpleNamespace(k=int(res.accept_token_num[b]), emitted=emitted, signature=(tuple(g - b * N for g in rows), emitted)))
    return views


def plan_chain(sc, view):
    steps = []
    for s in range(1, min(view.k + 2, sc.N)):  # slots tested: the accepted ones and the first rejected one
        tok = sc.cand[s]
        p, q = sc.p[s - 1][tok], sc.q[s - 1][tok]
        steps.append((s - 1, [p / q] if q > 0 else []))
    if view.k == sc.N - 1:
        dist = sc.p[sc.N - 1]
    else:
        dist = [max(Fr(0), a - b) for a, b in zip(sc.p[view.k], sc.q[view.k])]
    steps.append((FINAL, inverse_cdf_edges(dist)))
    return steps


S05_TARGET = {(): [Fr(".3"), Fr(".4"), Fr(".3")], (0,): [Fr(".2"), Fr(".5"), Fr(".3")],
              (1,): [Fr(".5"), Fr(".25"), Fr(".25")], (2,): [Fr(".1"), Fr(".1"), Fr(".8")]}
S05_DRAFT = {(): [Fr(".6"), Fr(".3"), Fr(".1")]}


@pytest.mark.parametrize("semantics", ["0.5.23", "earlier"])
def test_pq_example_mass_check_is_exact(semantics):
    """§0.5 with the draft sampling from q = (.6, .3, .1): the accept branch gives min(p, q) =
    (.3, .3, .1) (A accepted with prob .5 of .6 = .3, B with min(1, .4/.3) = 1 of .3, C with 1 of
    .1); the rejection mass .6 x .5 = .3 (only A is ever rejected) is spread as relu(p - q)/.3 =
    (0, 1/3, 2/3), i.e. (0, .1, .2). Sum (.3, .4, .3) = p. The rows after B and C are only read
    for the bonus."""
    target = TableModel(3, rows=S05_TARGET)
    draft = TableModel(3, rows=S05_DRAFT)
    dist = integrate(chain_scenarios(target, draft, 1, 3), lambda b: run_chain(b, semantics), plan_chain)
    assert first_token(dist) == {0: Fr(".3"), 1: Fr(".4"), 2: Fr(".3")}
    # A accepted (.6 x .5 = .3), then the bonus from p' = (.2, .5, .3): P(A, B) = .3 x .5.
    assert dist[(0, 1)] == Fr(".15")
    assert dist[(1,)] == Fr(".1") and dist[(2,)] == Fr(".2")


@st.composite
def random_chain_models(draw):
    vocab = draw(st.integers(2, 3))
    num_drafts = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return vocab, num_drafts, TableModel(vocab, rng), TableModel(vocab, rng)


@SETTINGS
@given(random_chain_models(), st.sampled_from(["0.5.23", "earlier"]))
def test_chain_rejection_gives_exactly_the_target_distribution(models, semantics):
    """§7: drafts sampled from q, each slot accepted with probability min(1, p/q), residual
    relu(p - q) after a rejection, plain target row after full acceptance. Over drafts and coins the
    first emitted token is exactly p, and the emitted sequence completed to N tokens with the
    target's conditionals is exactly the target's joint over N = drafts + 1 tokens."""
    vocab, num_drafts, target, draft = models
    dist = integrate(chain_scenarios(target, draft, num_drafts, vocab), lambda b: run_chain(b, semantics), plan_chain)
    assert first_token(dist) == {t: pr for t, pr in enumerate(target(())) if pr > 0}
    assert extend_to(dist, target, num_drafts + 1, vocab) == joint(target, num_drafts + 1, vocab)


def test_chain_with_a_q_the_draft_did_not_sample_from_is_biased():
    """§7: preservation needs q to be the distribution the draft really sampled from. The draft
    samples A, B, C with (.6, .3, .1) but the sampler is told q = (.3, .4, .3) = p: then every draft
    is accepted (u*q < p for all u < 1) and the first token is distributed as (.6, .3, .1), not p."""
    target = TableModel(3, rows=S05_TARGET)
    true_draft = TableModel(3, rows=S05_DRAFT)
    scen = chain_scenarios(target, true_draft, 1, 3)
    for _, sc in scen:
        sc.q = [S05_TARGET[()]]
        sc.q32 = f32(sc.q)
    dist = integrate(scen, run_chain, plan_chain)
    assert first_token(dist) == {0: Fr(".6"), 1: Fr(".3"), 2: Fr(".1")}


# ---------------------------------------------------------------------------------------------
# The Monte Carlo page's sampler against the exact distribution
# ---------------------------------------------------------------------------------------------

def assert_counts_match(counts: dict, exact: dict, trials: int):
    """Every outcome's count within 5 binomial standard deviations (+1) of trials x its exact
    probability; no outcome of probability 0 occurs. Seeds are fixed, so this is deterministic."""
    for outcome in set(counts) | set(exact):
        pr = float(exact.get(outcome, 0))
        got = counts.get(outcome, 0)
        if pr == 0:
            assert got == 0, outcome
        else:
            assert abs(got - trials * pr) <= 5 * (trials * pr * (1 - pr)) ** 0.5 + 1, (outcome, got, trials * pr)


def test_sample_many_matches_the_exact_running_example_distribution():
    """sample_many draws fresh coins per trial; its sequence histogram for the §0.4 example agrees
    with the exact distribution computed above (and sums to num_trials)."""
    from specviz.reference import sample_many

    sc = running_example()
    exact = integrate([(Fr(1), sc)], run_tree, plan_tree())
    trials = 4000
    inputs = dict(candidates=[sc.tokens], retrieve_index=[list(range(sc.n))], retrieve_next_token=[sc.nt],
                  retrieve_next_sibling=[sc.ns], target_probs=sc.p32[None], num_speculative_tokens=sc.width)
    got = sample_many("tree_sampling_target_only", inputs, num_trials=trials, seed=7)
    assert sum(got.sequence_counts.values()) == trials == got.num_trials
    assert_counts_match(got.sequence_counts, exact, trials)
    assert_counts_match({t: int(c) for t, c in enumerate(got.first_token_counts) if c}, first_token(exact), trials)


def test_sample_many_matches_the_exact_chain_distribution_for_draft_a():
    """The §0.5 chain with the draft fixed to A (as the page shows it): exactly P(A, B) = .5 x .5,
    P(A, A) = .5 x .2, P(A, C) = .5 x .3, P(B) = .5 x 1/3, P(C) = .5 x 2/3."""
    from specviz.reference import sample_many

    target = TableModel(3, rows=S05_TARGET)
    sc = next(s for _, s in chain_scenarios(target, TableModel(3, rows=S05_DRAFT), 1, 3) if s.cand[1] == 0)
    exact = integrate([(Fr(1), sc)], run_chain, plan_chain)
    assert exact == {(0, 1): Fr(1, 4), (0, 0): Fr(1, 10), (0, 2): Fr(3, 20), (1,): Fr(1, 6), (2,): Fr(1, 3)}
    trials = 4000
    inputs = dict(candidates=[sc.cand], retrieve_index=[[0, 1]], target_probs=sc.p32[None], draft_probs=sc.q32[None],
                  num_speculative_tokens=2)
    got = sample_many("chain_rejection_sampling", inputs, num_trials=trials, seed=11)
    assert_counts_match(got.sequence_counts, exact, trials)
