"""The tiny Target/Draft and one round of the loop: the tree pass is exact (proof 1), the draft follows §2, KV commits by accept_index."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specviz.base.errors import SpecvizError
from specviz.rooms.loop.decode import LoopSettings, run_loop
from specviz.rooms.loop.proofs import TREE_TOL, tree_pass_exact
from specviz.rooms.loop.train import load_models
from specviz.reference import parent_nodes

torch.set_num_threads(1)   # tiny matmuls: threads only add contention
TARGET, DRAFT, TOK = load_models()
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
BACKENDS = ["numpy", "torch", "triton"]

prompts = st.text(alphabet=TOK.vocab, min_size=1, max_size=24)


def shapes():
    """(topk, depth, n) over the legal range (§1), small enough for CI."""
    return st.tuples(st.integers(1, 3), st.integers(1, 4)).flatmap(
        lambda kd: st.tuples(st.just(kd[0]), st.just(kd[1]),
                             st.integers(2, kd[0] + (kd[1] - 1) * kd[0] ** 2 + 1) if kd[0] > 1 else st.just(kd[1] + 1)))


def test_models_are_small_and_the_draft_is_smaller():
    sizes = [sum(p.numel() for p in m.parameters()) for m in (TARGET, DRAFT)]
    assert sizes[1] < sizes[0] < 250_000
    assert TOK.size < 128 and TOK.decode(TOK.encode("Accept")) == "Accept"


def test_unknown_characters_name_the_prompt_field():
    with pytest.raises(SpecvizError, match="prompt"):
        run_loop("接受", LoopSettings(rounds=1))


@pytest.mark.parametrize("field,kw", [("topk", dict(algorithm="chain", topk=2)), ("num_draft_tokens", dict(topk=2, depth=2, num_draft_tokens=9)),
                                      ("algorithm", dict(algorithm="beam"))])
def test_bad_settings_name_the_field(field, kw):
    with pytest.raises(SpecvizError, match=field):
        LoopSettings(**kw).checked()


def test_sequential_forward_equals_cached_incremental_forward():
    ids = TOK.encode("The Accept stage")
    full = TARGET.forward_sequence(ids)
    cache = TARGET.new_cache(4)          # grows on demand
    rows = []
    for i, t in enumerate(ids):
        rows.append(TARGET.forward(cache, [t], [i], torch.ones(1, i + 1, dtype=torch.bool))[0])
    assert torch.max(torch.abs(torch.stack(rows) - full)).item() < TREE_TOL


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=4, **SETTINGS)
@given(prompt=prompts, shape=shapes(), seed=st.integers(0, 2**16), mode=st.sampled_from(["full_mask", "qlen_only"]))
def test_tree_pass_is_exact(backend, prompt, shape, seed, mode):
    """Proof 1: each node's logits from the one verify forward = a plain forward over text + its root path."""
    topk, depth, n = shape
    run = run_loop(prompt, LoopSettings(topk=topk, depth=depth, num_draft_tokens=n, seed=seed, rounds=2,
                                        backend=backend, tree_mask_mode=mode))
    proof = tree_pass_exact(run)
    assert proof.ok, proof
    assert proof.max_abs_diff < TREE_TOL


@settings(max_examples=10, **SETTINGS)
@given(prompt=prompts, shape=shapes())
def test_draft_tree_follows_the_score_rules(prompt, shape):
    """§2: selected_index ascending; parent_list decodes to the parents; scores never rise along a path; depths by level."""
    topk, depth, n = shape
    run = run_loop(prompt, LoopSettings(topk=topk, depth=depth, num_draft_tokens=n, rounds=1))
    r = run.rounds[0]
    t = r.tree
    assert t.selected_index == sorted(t.selected_index) and len(t.selected_index) == n - 1
    assert len(t.parent_list) == topk * (depth - 1) + 1
    par = parent_nodes(np.array([t.parent_list]), np.array([t.selected_index]), topk)[0]
    assert list(par) == t.parents
    for i in range(1, n):
        assert t.parents[i] < i
        assert t.scores[i] <= t.scores[t.parents[i]] + 1e-7
    seq_len = r.seq_len
    depths = [0] * n
    for i in range(1, n):
        depths[i] = depths[t.parents[i]] + 1
    assert r.positions == [seq_len + d for d in depths]
    # The tree mask used in the forward is the ancestor relation.
    for i in range(n):
        anc = set()
        j = i
        while j != -1:
            anc.add(j)
            j = t.parents[j]
        assert {j for j in range(n) if r.mask_used[i, j]} == anc


def test_kv_commit_keeps_the_accepted_input_rows_compacted():
    """§5.3: rows of accept_index (root + accepted drafts) move to the front; positions continue without gaps."""
    run = run_loop("The target model verifies the draft tree. ", LoopSettings(topk=3, depth=4, num_draft_tokens=10, rounds=6))
    for r in run.rounds:
        t = r.tree
        kept = [(t.candidates[i], r.positions[i]) for i in r.accept_nodes]
        tail = r.kv_after[len(r.kv_after) - len(kept):]
        assert tail == kept
        assert [p for _, p in kept] == list(range(r.seq_len, r.seq_len + len(kept)))
        assert r.emitted == [r.predicts[i] for i in r.accept_nodes] and r.bonus == r.emitted[-1]
    for a, b in zip(run.rounds, run.rounds[1:]):
        assert b.root == a.bonus and b.seq_len == a.seq_len + a.accept_len


def test_siblings_and_rejections_happen():
    """The Draft disagrees often enough: some rounds reject, some accept through a non-first sibling."""
    run = run_loop("The target model verifies the draft tree. ", LoopSettings(topk=3, depth=4, num_draft_tokens=10, rounds=24))
    lens = [r.accept_len for r in run.rounds]
    assert min(lens) < 5 and max(lens) > 1
    second_sibling = any(any(r.tree.parents[i] == r.tree.parents[i - 1] and i - 1 not in r.accept_nodes
                             for i in r.accept_nodes[1:]) for r in run.rounds)
    assert second_sibling
    assert 1.5 <= np.mean(lens) <= 4.5
