"""The running example (SEMANTICS.md §0) on the torch and Triton backends: hand-derived values, and
equality with the numpy reference. Token ids of §0.4: A=0, B=1, C=2, D=3, X=4, R=5."""
import numpy as np
import pytest
import torch

from specviz.algorithms.backends import get_backend
from specviz.base.errors import SpecvizError
from test_kernels_helpers import KERNEL_BACKENDS, REF, assert_same, check_all, on_device

A, B, C, D, X, R = 0, 1, 2, 3, 4, 5
PARENT_LIST = [[-1, 0, 1]]
SELECTED = [[0, 1, 2, 3]]
SEQ_LENS = [10]
TREE = REF.build_tree(PARENT_LIST, SELECTED, SEQ_LENS, topk=2, depth=2, num_draft_tokens=5, tree_mask_mode="qlen_only")
LINKS = (TREE.retrieve_index.numpy(), TREE.retrieve_next_token.numpy(), TREE.retrieve_next_sibling.numpy())
CANDIDATES = [[R, A, B, C, D]]
P_ROWS = np.array([[.5, .3, 0, 0, .2, 0], [0, .1, .6, .2, .1, 0], [.1, .1, .1, .1, .5, .1],
                   [.1, 0, 0, .1, .7, .1], [.1, .1, .1, .1, .5, .1]], dtype=np.float32)[None]  # [1, 5, 6]


@pytest.fixture(params=KERNEL_BACKENDS)
def ops(request):
    return get_backend(request.param)


@pytest.mark.parametrize("mode, expected_mask", [
    ("qlen_only", [1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1]),
    ("qlen_only_bitpacking", [1, 3, 5, 11, 19]),
    ("full_mask", None),
])
def test_build_tree_running_example(ops, mode, expected_mask):
    """§0.2: links [0..4] / [1,3,-1,-1,-1] / [-1,2,-1,4,-1], positions [10,11,11,12,12]; the mask per mode."""
    res = ops.build_tree(on_device(PARENT_LIST), on_device(SELECTED), on_device(SEQ_LENS), topk=2, depth=2,
                         num_draft_tokens=5, tree_mask_mode=mode)
    assert res.retrieve_index.tolist() == [[0, 1, 2, 3, 4]]
    assert res.retrieve_next_token.tolist() == [[1, 3, -1, -1, -1]]
    assert res.retrieve_next_sibling.tolist() == [[-1, 2, -1, 4, -1]]
    assert res.positions.tolist() == [10, 11, 11, 12, 12]
    if mode == "full_mask":  # 75 cells; row i starts at 15*i: 10 prefix True, then the qlen_only row
        mask = res.tree_mask.cpu().numpy()
        assert mask.shape == (75,) and mask.reshape(5, 15)[:, :10].all()
        assert mask.reshape(5, 15)[:, 10:].astype(int).tolist() == [
            [1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 0, 0, 1]]
    else:
        assert res.tree_mask.to(torch.int64).tolist() == expected_mask
    assert_same(REF.build_tree(PARENT_LIST, SELECTED, SEQ_LENS, topk=2, depth=2, num_draft_tokens=5,
                               tree_mask_mode=mode), res, mode)


@pytest.mark.parametrize("target, predicts, accept_index, k", [
    ([A, C, X, X, X], [A, C, 0, X, 0], [0, 1, 3], 2),  # R->A, A->C accepted, bonus X
    ([A, D, X, X, X], [A, D, 0, 0, X], [0, 1, 4], 2),  # C fails, sibling D matches
    ([A, X, X, X, X], [A, X, 0, 0, 0], [0, 1, -1], 1),  # C and D fail: correction X after A
    ([X, X, X, X, X], [X, 0, 0, 0, 0], [0, -1, -1], 0),  # root mismatch
])
def test_greedy_running_example(ops, target, predicts, accept_index, k):
    """§0.3 and its variants."""
    res = ops.verify_tree_greedy(on_device(CANDIDATES), *map(on_device, LINKS), on_device([target]), num_speculative_tokens=3)
    assert res.predicts.tolist() == predicts
    assert res.accept_index.tolist() == [accept_index]
    assert res.accept_token_num.tolist() == [k]
    assert res.predicts.dtype == res.accept_index.dtype == res.accept_token_num.dtype == torch.int32


def test_greedy_predicts_init_keeps_unreached_rows(ops):
    """SGLang's kernel tests pre-fill predicts with -1: unreached rows keep it."""
    res = ops.verify_tree_greedy(on_device(CANDIDATES), *map(on_device, LINKS), on_device([[A, X, X, X, X]]),
                                 num_speculative_tokens=3, predicts_init=-1)
    assert res.predicts.tolist() == [A, X, -1, -1, -1]


@pytest.mark.parametrize("u0, t_acc, semantics, predicts, accept_index", [
    (.4, 1.0, "0.5.23", [A, C, 0, X, 0], [0, 1, 3]),  # accept A (.4 < .5), then C (.55 < .6); terminal X
    (.9, 1.0, "0.5.23", [X, 0, 0, 0, 0], [0, -1, -1]),  # A and B rejected; relu(p_R - buffer) leaves only X
    (.5, 1.0, "0.5.23", [B, 0, X, 0, 0], [0, 2, -1]),  # on A's edge: strict < rejects A, B accepted, leaf
    (.5, 1.0, "earlier", [A, C, 0, X, 0], [0, 1, 3]),  # earlier releases: .5 <= .5 accepts A
    (.9, 0.5, "0.5.23", [A, C, 0, X, 0], [0, 1, 3]),  # t_acc .5: .9 < .5/.5 accepts A anyway
])
def test_target_only_running_example(ops, u0, t_acc, semantics, predicts, accept_index):
    """§0.4, coins u = [u0, .55, .3, .8, .2], u_final = .5."""
    u = [[u0, .55, .3, .8, .2]]
    res = ops.tree_sampling_target_only(on_device(CANDIDATES), *map(on_device, LINKS), on_device(np.float32(u)),
                                        on_device(np.float32([.5])), on_device(P_ROWS), num_speculative_tokens=3,
                                        threshold_acc=t_acc, semantics=semantics)
    assert res.predicts.tolist() == predicts
    assert res.accept_index.tolist() == [accept_index]
    expected = REF.tree_sampling_target_only(CANDIDATES, *LINKS, np.float32(u), np.float32([.5]), P_ROWS,
                                             num_speculative_tokens=3, threshold_acc=t_acc, semantics=semantics)
    assert_same(expected, res, "tree_sampling")
    if u0 == .9 and t_acc == 1.0:  # the rejected siblings' mass is in the work buffer at row 0
        assert res.draft_probs[0, 0].tolist() == pytest.approx([.5, .3, 0, 0, 0, 0])


@pytest.mark.parametrize("u0, t_acc, semantics, predicts, accept_index", [
    (.5, 1.0, "0.5.23", [B, 0, X, 0, 0], [0, 2, -1]),  # the coin on A's edge
    (.5, 1.0, "earlier", [A, C, 0, X, 0], [0, 1, 3]),
    (.9, 1.0, "0.5.23", [X, 0, 0, 0, 0], [0, -1, -1]),  # both root children rejected: the residual
    (.9, 0.5, "0.5.23", [A, C, 0, X, 0], [0, 1, 3]),  # threshold_acc
])
@pytest.mark.parametrize("path", ["split", "walk_first"])
def test_target_only_corners_on_every_triton_path(monkeypatch, path, u0, t_acc, semantics, predicts, accept_index):
    """The running example's corners through the block-parallel kernel and its walk-first form (the walker that
    infers parents from the links), which the example's own 6-token rows never take: the rows padded with
    zero-probability tokens to V 4097 (two chunks), so the same tokens and accept paths are expected."""
    from kernels import triton_verify

    if "triton" not in KERNEL_BACKENDS:
        pytest.skip("needs the Triton backend")
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_SPLIT", True)
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS", 0 if path == "walk_first" else None)
    p = np.zeros((1, 5, 4097), np.float32)
    p[..., :6] = P_ROWS
    u = np.float32([[u0, .55, .3, .8, .2]])
    assert triton_verify._target_only_plan(1, 5, 3, 4097)[1] == (path == "walk_first")
    kw = dict(num_speculative_tokens=3, threshold_acc=t_acc, semantics=semantics)
    res = get_backend("triton").tree_sampling_target_only(on_device(CANDIDATES), *map(on_device, LINKS), on_device(u),
                                                          on_device(np.float32([.5])), on_device(p), **kw)
    assert res.predicts.tolist() == predicts
    assert res.accept_index.tolist() == [accept_index]
    assert_same(REF.tree_sampling_target_only(CANDIDATES, *LINKS, u, np.float32([.5]), p, **kw), res, "tree_sampling")


def test_target_only_residual_after_rejecting_every_child(ops):
    """Both children (tokens 1 and 2, .3 each) rejected with coin .7 >= .6: relu(p - buffer) keeps only
    token 0, so even a final coin close to 1 emits token 0; the buffer row 0 holds (0, .3, .3, 0)."""
    p = np.zeros((1, 3, 4), np.float32)
    p[0, :, 1] = .3
    p[0, :, 2] = .3
    p[0, :, 0] = .4
    args = ([[3, 1, 2]], [[0, 1, 2]], [[1, -1, -1]], [[-1, 2, -1]])  # root -> node 1 (token 1), sibling node 2 (token 2)
    coins, final = np.float32([[.7, 0, 0]]), np.float32([.999999])
    expected = REF.tree_sampling_target_only(*args, coins, final, p, num_speculative_tokens=2)
    res = ops.tree_sampling_target_only(*map(on_device, args), on_device(coins), on_device(final), on_device(p),
                                        num_speculative_tokens=2)
    assert res.predicts[0].item() == 0  # only token 0 keeps mass after the buffer is subtracted
    assert_same(expected, res)


PQ_P = np.array([[[.3, .4, .3], [.2, .5, .3]]], np.float32)
PQ_Q = np.array([[[.6, .3, .1]]], np.float32)


@pytest.mark.parametrize("u0, u_final, predicts, k", [
    (.5, .25, [B, 0], 0),  # exactly on the edge: .5*.6 = .3 is not < .3 -> rejected; residual (0, 1/3, 2/3)
    (.7, .25, [B, 0], 0),
    (.7, .5, [C, 0], 0),
    (.4, .5, [A, B], 1),  # accepted; bonus from p' = (.2, .5, .3)
])
def test_chain_running_example(ops, u0, u_final, predicts, k):
    """§0.5 with A=0, B=1, C=2 (the root's id is never read)."""
    args = ([[C, A]], [[0, 1]], np.float32([[u0, 0.0]]), np.float32([u_final]), PQ_P, PQ_Q)
    res = ops.chain_rejection_sampling(*map(on_device, args), num_speculative_tokens=2)
    assert res.predicts.tolist() == predicts and res.accept_token_num.tolist() == [k]
    assert_same(REF.chain_rejection_sampling(*args, num_speculative_tokens=2), res)


def test_chain_residual_without_mass_gives_last_token(ops):
    """p == q and the draft (a token with p = q = 0) rejected: the residual is empty, so the token is V-1."""
    p = np.array([[[.5, .5, 0, 0], [.25, .25, .25, .25]]], np.float32)
    q = p[:, :1].copy()
    args = ([[0, 2]], [[0, 1]], np.float32([[.5, 0]]), np.float32([.3]), p, q)  # token 2: p = q = 0, rejected
    with pytest.warns(Warning):
        expected = REF.chain_rejection_sampling(*args, num_speculative_tokens=2)
    res = ops.chain_rejection_sampling(*map(on_device, args), num_speculative_tokens=2)
    assert res.predicts[0].item() == 3
    assert_same(expected, res)


@pytest.mark.parametrize("semantics, k", [("0.5.23", 0), ("earlier", 1)])
def test_chain_zero_q_rule(ops, semantics, k):
    """A token the draft gave q = 0: 0.5.23 rejects it, earlier releases accept it when p > 0."""
    p = np.array([[[.5, .5], [.5, .5]]], np.float32)
    q = np.array([[[1.0, 0.0]]], np.float32)
    args = ([[0, 1]], [[0, 1]], np.float32([[.5, 0]]), np.float32([.3]), p, q)
    with pytest.warns(Warning):
        expected = REF.chain_rejection_sampling(*args, num_speculative_tokens=2, semantics=semantics)
    res = ops.chain_rejection_sampling(*map(on_device, args), num_speculative_tokens=2, semantics=semantics)
    assert res.accept_token_num.tolist() == [k]
    assert_same(expected, res)


def test_dspark_running_example(ops):
    """§0.6: anchor R, drafts A, B, C vs targets [A, B, X, Y]: correct_len 2, bonus X, out [A, B, X, 0]."""
    Y = 6
    cl, bonus = ops.dspark_accept_greedy(on_device([[R, A, B, C]]), on_device([[A, B, X, Y]]))
    assert cl.tolist() == [2] and bonus.tolist() == [X]
    assert cl.dtype == torch.int32 and bonus.dtype == torch.int64
    commit, new_seq = ops.finalize_accept_lens(cl, on_device([10]))
    assert commit.tolist() == [3] and new_seq.tolist() == [13]
    capped, trim = ops.cap_correct_len(cl, on_device([4]))
    assert capped.tolist() == [2] and trim.tolist() == [0]
    out = ops.build_out_tokens(on_device([[A, B, C]]), cl, bonus)
    assert out.tolist() == [[A, B, X, 0]] and out.dtype == torch.int64


def test_dspark_later_matches_are_ignored(ops):
    check_all("dspark_accept_greedy", np.array([[9, 1, 5, 3, 4]]), np.array([[1, 2, 3, 4, 4]]))


def test_dspark_sampling_running_example(ops):
    """§0.5's chain as a DSpark window: accepted (u .4) -> bonus B from p'; rejected (u .7) -> residual."""
    for u0, expected in ((.4, (1, B)), (.7, (0, B))):
        cl, bonus = ops.dspark_accept_sampling(on_device([[C, A]]), on_device(PQ_P), on_device(PQ_Q),
                                               on_device(np.float32([[u0]])), on_device(np.float32([.25])))
        assert (cl.item(), bonus.item()) == expected


def test_fill_bonus_uses_stride_w(ops):
    """bonus[b] = accept_tokens[b*W + accept_lens[b] - 1] with W = accept_index width."""
    bonus = ops.fill_bonus_tokens(on_device([[A, C, X], [X, -1, -1]]), on_device([3, 1]), stride=3)
    assert bonus.tolist() == [X, X] and bonus.dtype == torch.int32


def test_eagle_sample_running_example(ops):
    """Greedy (T = 0) reproduces §0.3; sampling with §0.4's coins reproduces [A, C, X]."""
    logits = np.log(P_ROWS[0] + 1e-12)
    res = ops.eagle_sample(on_device(CANDIDATES), *map(on_device, LINKS), on_device(logits), num_speculative_tokens=3,
                           temperature=0.0)
    assert res.accept_tokens.tolist() == [[A, C, X]] and res.bonus.tolist() == [X] and res.accept_lens.tolist() == [3]
    res = ops.eagle_sample(on_device(CANDIDATES), *map(on_device, LINKS), on_device(logits), num_speculative_tokens=3,
                           temperature=1.0, uniform_samples=on_device(np.float32([[.4, .55, .3, .8, .2]])),
                           uniform_samples_for_final_sampling=on_device(np.float32([.5])))
    assert res.accept_tokens.tolist() == [[A, C, X]]
    check_all("eagle_sample", CANDIDATES, *LINKS, logits, num_speculative_tokens=3, temperature=1.0,
              uniform_samples=np.float32([[.9, .55, .3, .8, .2]]), uniform_samples_for_final_sampling=np.float32([.5]))


def test_target_probs_renorm_example(ops):
    """§5.2: (.4, .2, .2, .1, .1) with top_k 2 or top_p .5 -> (.5, .25, .25, 0, 0): ties at the cut kept."""
    logits = np.log(np.float32([[.4, .2, .2, .1, .1]]))
    for kw in (dict(top_k=2), dict(top_p=.5)):
        probs = ops.target_probs_from_logits(on_device(logits), temperature=1.0, **kw)
        assert probs.cpu().numpy() == pytest.approx(np.float32([[.5, .25, .25, 0, 0]]), abs=1e-6)


# ---------------------------------------------------------------------------------------------
# Bad input: the same SpecvizError, naming the field, as the reference
# ---------------------------------------------------------------------------------------------

def test_errors_name_the_field(ops):
    with pytest.raises(SpecvizError, match="^target_predict"):
        ops.verify_tree_greedy([[0, 1]], [[0, 1]], [[1, -1]], [[-1, -1]], [[0, 0, 0]], num_speculative_tokens=2)
    with pytest.raises(SpecvizError, match="^candidates"):
        ops.verify_tree_greedy([[0, -1]], [[0, 1]], [[1, -1]], [[-1, -1]], [[0, 0]], num_speculative_tokens=2)
    with pytest.raises(SpecvizError, match="^retrieve_next_token"):
        ops.verify_tree_greedy([[0, 1]], [[0, 1]], [[1, 1]], [[-1, -1]], [[0, 0]], num_speculative_tokens=2)
    with pytest.raises(SpecvizError, match="^target_probs"):
        ops.tree_sampling_target_only(CANDIDATES, *LINKS, np.float32([[.1] * 5]), np.float32([.5]), P_ROWS * 2,
                                      num_speculative_tokens=3)
    with pytest.raises(SpecvizError, match="^uniform_samples"):
        ops.tree_sampling_target_only(CANDIDATES, *LINKS, np.float32([[1.5] * 5]), np.float32([.5]), P_ROWS,
                                      num_speculative_tokens=3)
    with pytest.raises(SpecvizError, match="^draft_probs"):
        ops.chain_rejection_sampling([[C, A]], [[0, 1]], np.float32([[.5, 0]]), np.float32([.5]), PQ_P, None,
                                     num_speculative_tokens=2)
    with pytest.raises(SpecvizError, match="^tree_mask_mode"):
        ops.build_tree(PARENT_LIST, SELECTED, SEQ_LENS, topk=2, depth=2, num_draft_tokens=5, tree_mask_mode="bits")
    with pytest.raises(SpecvizError, match="^semantics"):
        ops.chain_rejection_sampling([[C, A]], [[0, 1]], np.float32([[.5, 0]]), np.float32([.5]), PQ_P, PQ_Q,
                                     num_speculative_tokens=2, semantics="0.4")
    with pytest.raises(SpecvizError, match="^correct_len"):
        ops.build_out_tokens([[1, 2]], [3], [0])
    with pytest.raises(SpecvizError, match="^accept_lens"):
        ops.fill_bonus_tokens([[1, 2]], [3], stride=2)
    with pytest.raises(SpecvizError, match="^top_p"):
        ops.target_probs_from_logits([[0.0, 1.0]], temperature=1.0, top_p=1.5)
    with pytest.raises(SpecvizError, match="^algorithm"):
        ops.sample_many("greedy", {}, num_trials=10, seed=0)


def test_rows_outside_the_request_block_are_refused(ops):
    """The parallel backends need each request's rows in its own block (SGLang: b*n + i)."""
    cand = [[0, 1], [0, 1]]
    with pytest.raises(SpecvizError, match="^retrieve_index.*own block"):
        ops.verify_tree_greedy(cand, [[2, 3], [0, 1]], [[1, -1]] * 2, [[-1, -1]] * 2, [[1, 1]] * 2,
                               num_speculative_tokens=2)
    with pytest.raises(SpecvizError, match="^retrieve_index.*twice"):
        ops.verify_tree_greedy(cand, [[0, 0], [2, 3]], [[1, -1]] * 2, [[-1, -1]] * 2, [[1, 1]] * 2,
                               num_speculative_tokens=2)


def test_parent_slot_from_a_later_step_is_refused(ops):
    """Slot 1 is beam 0 of step 0, so it must name a step-0 candidate (0 or 1 with topk 2), not 4."""
    with pytest.raises(SpecvizError, match="^parent_list.*step 0"):
        ops.build_tree([[-1, 4, 1]], SELECTED, SEQ_LENS, topk=2, depth=2, num_draft_tokens=5)


def test_orphaned_node_stays_unlinked(ops):
    """Selecting candidate 4 (a child of B) without B (candidate 1) orphans it (SEMANTICS.md §3.4)."""
    with pytest.warns(Warning):
        check_all("build_tree", PARENT_LIST, [[0, 2, 3, 4]], SEQ_LENS, topk=2, depth=2, num_draft_tokens=5,
                  tree_mask_mode="qlen_only")
