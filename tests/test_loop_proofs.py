"""Proofs 2-4 on the real loop: greedy is lossless on every backend, sampling is lossless (Monte Carlo with a stated
bound), thresholds below 1 are measurably biased, and each classic mistake breaks its proof."""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specviz.rooms.loop.decode import LoopSettings, run_loop
from specviz.rooms.loop.settings import MISTAKES
from specviz.rooms.loop.proofs import PROOF_FOR_MISTAKE, greedy_lossless, sampling_lossless, tree_pass_exact
from specviz.rooms.loop.train import load_models

torch.set_num_threads(1)
_, _, TOK = load_models()
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
PROMPT = "The target model verifies the draft tree. "
# Monte Carlo: a short horizon (2 tokens), a shallow tree, 400 trials; K = 8 bins, delta = 1e-3 ->
# a correct sampler's L1 distance exceeds the bound (~0.25) with probability <= 1e-3. The prompt is
# one where the Draft's first guess ('r', q .09) is plausible but not likely for the Target (p .16),
# so a biased acceptance shows at once.
MC = dict(num_tokens=2, trials=400, bins=8, delta=1e-3, seed=7)
MC_PROMPT = "Each round the "


def shapes():
    return st.tuples(st.integers(1, 3), st.integers(1, 4)).flatmap(
        lambda kd: st.tuples(st.just(kd[0]), st.just(kd[1]),
                             st.integers(2, kd[0] + (kd[1] - 1) * kd[0] ** 2 + 1) if kd[0] > 1 else st.just(kd[1] + 1)))


@pytest.mark.parametrize("backend", ["numpy", "torch", "triton"])
@settings(max_examples=5, **SETTINGS)
@given(prompt=st.text(alphabet=TOK.vocab, min_size=1, max_size=24), shape=shapes(), seed=st.integers(0, 2**16))
def test_greedy_speculative_decoding_emits_the_targets_greedy_tokens(backend, prompt, shape, seed):
    topk, depth, n = shape
    run = run_loop(prompt, LoopSettings(topk=topk, depth=depth, num_draft_tokens=n, seed=seed, rounds=4, backend=backend))
    proof = greedy_lossless(run)
    assert proof.ok, (proof.speculative, proof.reference)
    assert len(proof.speculative) == sum(r.accept_len for r in run.rounds) >= 4


@pytest.mark.parametrize("algorithm,topk,n", [("target_only", 2, 4), pytest.param("chain", 1, 3, marks=pytest.mark.exhaustive)])
def test_sampling_with_thresholds_1_matches_the_targets_own_sampling(algorithm, topk, n):
    s = LoopSettings(algorithm=algorithm, topk=topk, depth=2, num_draft_tokens=n, temperature=1.0, rounds=4)
    proof = sampling_lossless(MC_PROMPT, s, **MC)
    assert proof.ok, proof
    assert abs(sum(proof.observed) - 1) < 1e-9 and abs(sum(proof.expected) - 1) < 1e-6


@pytest.mark.exhaustive  # CI time; thresholds' bias stays in the default run in tests/test_sample_many_stats.py (numpy, torch)
def test_thresholds_below_1_are_measurably_biased():
    s = LoopSettings(algorithm="target_only", topk=2, depth=2, num_draft_tokens=4, temperature=1.0, rounds=4, threshold_acc=0.1)
    proof = sampling_lossless(MC_PROMPT, s, **MC)
    assert not proof.ok and proof.l1 > 2 * proof.bound, proof


def test_every_mistake_has_a_proof_that_catches_it():
    assert set(PROOF_FOR_MISTAKE) == set(MISTAKES)


@pytest.mark.parametrize("mistake", ["kv_by_outputs", "no_shift", "mask_drop_ancestor"])
def test_mistake_breaks_greedy_losslessness(mistake):
    s = LoopSettings(topk=2, depth=4, num_draft_tokens=8, rounds=6)
    assert greedy_lossless(run_loop(PROMPT, s)).ok
    broken = greedy_lossless(run_loop(PROMPT, LoopSettings(**{**s.__dict__, "mistakes": (mistake,)})))
    assert not broken.ok and broken.first_divergence is not None


def test_missing_ancestor_breaks_the_tree_pass():
    s = LoopSettings(topk=2, depth=4, num_draft_tokens=8, rounds=3, mistakes=("mask_drop_ancestor",))
    proof = tree_pass_exact(run_loop(PROMPT, s))
    assert not proof.ok and proof.max_abs_diff > 1e-2
    node = proof.worst[1]
    assert run_loop(PROMPT, s).rounds[proof.worst[0]].tree.parents[node] > 0   # the node that lost its parent's column


# The "q as buffer" mistake is checked at the page's defaults (tests/test_truth.py), where a student meets it.


def _cuda_triton_reason():
    import os
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (compiled Triton); this machine has none"
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "TRITON_INTERPRET=1: the Triton backend runs on the CPU here; run with TRITON_INTERPRET=0 on the GPU"
    return None


@pytest.mark.skipif(_cuda_triton_reason() is not None, reason=str(_cuda_triton_reason()))
@pytest.mark.parametrize("algorithm, mode", [("greedy", "full_mask"), ("greedy", "qlen_only"), ("chain", "full_mask"),
                                             ("target_only", "qlen_only")])
def test_loop_runs_on_compiled_triton_on_a_gpu(algorithm, mode):
    """Issue 21: on a GPU the Triton backend's outputs are CUDA tensors; the loop keeps them there for the
    accept step and reads them on the host once. Greedy: the lossless check (the Target's own greedy
    tokens); the sampling algorithms run their rounds and emit tokens."""
    topk, n = (1, 4) if algorithm == "chain" else (2, 5)  # chain sampling verifies chains only
    s = LoopSettings(topk=topk, depth=3, num_draft_tokens=n, seed=7, rounds=4, backend="triton", tree_mask_mode=mode,
                     algorithm=algorithm, **({} if algorithm == "greedy" else {"temperature": 1.0}))
    run = run_loop(MC_PROMPT, s)
    assert len(run.rounds) == 4 and all(r.accept_len >= 1 for r in run.rounds)
    assert tree_pass_exact(run).ok
    if algorithm == "greedy":
        proof = greedy_lossless(run)
        assert proof.ok, (proof.speculative, proof.reference)


def test_proof_3_runs_taken_in_pieces_are_the_runs_taken_at_once():
    """The page takes proof 3's runs 25 at a time (to show progress): run t has its own coins, so pieces
    joined are exactly the runs of one call, and the proof from them is the proof of one call."""
    from specviz.rooms.loop import proofs
    from specviz.rooms.loop.decode import LoopSettings

    s = proofs.proof_settings(LoopSettings(algorithm="target_only", **proofs.PAGE_SETTINGS)).checked()
    whole = proofs.speculative_samples(proofs.PAGE_PROMPT, s, 2, 12)
    pieces = [x for a, c in ((0, 5), (5, 5), (10, 2)) for x in proofs.speculative_samples(proofs.PAGE_PROMPT, s, 2, c, start=a)]
    assert pieces == whole
    one = proofs.sampling_lossless(proofs.PAGE_PROMPT, s, trials=12)
    assert proofs.sampling_lossless(proofs.PAGE_PROMPT, s, trials=12, samples=pieces) == one
    with pytest.raises(ValueError, match="samples"):
        proofs.sampling_lossless(proofs.PAGE_PROMPT, s, trials=12, samples=pieces[:11])


@pytest.mark.parametrize("algorithm,mistakes", [("target_only", ()), ("target_only", ("q_as_buffer",)),
                                                ("target_only", ("mask_drop_ancestor", "kv_by_outputs")),
                                                ("greedy", ("no_shift",)), ("chain", ())])
def test_shared_round_work_changes_no_run(algorithm, mistakes):
    """speculative_samples shares each round's Draft tree, Target forward and Draft catch-up between runs that
    reached the same text (Decoder.step's memo): every run, and its caches, are exactly what a run of its own gives."""
    from dataclasses import replace

    from specviz.rooms.loop import proofs
    from specviz.rooms.loop.decode import Decoder

    s = proofs.proof_settings(LoopSettings(algorithm=algorithm, mistakes=mistakes,
                                                **{**proofs.PAGE_SETTINGS, "depth": 3, **({"topk": 1} if algorithm == "chain" else {})})).checked()
    got = proofs.speculative_samples(proofs.PAGE_PROMPT, s, 3, 16)
    base = Decoder(proofs.PAGE_PROMPT, replace(s, rounds=max(s.rounds, 3)))
    want = []
    for t in range(16):
        dec = base.clone(t)
        toks = []
        while len(toks) < 3:
            toks.extend(dec.step().emitted)
        want.append(tuple(toks[:3]))
    assert got == want
    shared = base.clone(0)
    shared._memo = {}
    own = base.clone(0)
    for _ in range(3):  # a memo filled by one run, then read by a second run with the same coins: the same caches
        a, b = shared.clone(5), own.clone(5)
        for _ in range(2):
            ra, rb = a.step(), b.step()
            assert (ra.accept_index, ra.emitted) == (rb.accept_index, rb.emitted)
        assert a.tcache.tokens == b.tcache.tokens and torch.equal(a.tcache.keys[:, :, :a.tcache.length], b.tcache.keys[:, :, :b.tcache.length])
        assert a.dcache.tokens == b.dcache.tokens and torch.equal(a.dcache.values[:, :, :a.dcache.length], b.dcache.values[:, :, :b.dcache.length])
