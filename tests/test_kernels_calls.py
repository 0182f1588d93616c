"""What a Triton call costs beyond its kernel (issue 36): nothing allocated or filled per call that grows
with the vocabulary, cached scratch shared correctly between calls of different shapes, the lazy work
buffer of the target-only sampler, the register-resident and multi-pass logits kernels, and the
FastLaunch key. Small sizes: these run under the interpreter on the CPU (and on the GPU suite too)."""
import copy
import pickle

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from kernels import triton_common, triton_sampling, triton_tree, triton_verify
from kernels.triton_target_only_kernels import _parents
from tests.support.random_cases import eagle_rollout, plausible_candidates, random_probs
from specviz.base.results import TreeSampleResult
from specviz.algorithms.backends import cdf_order
from specviz.reference import cdf
from test_kernels_helpers import REF as _REF
from test_kernels_helpers import assert_same, on_device


class _RefInKernelOrder:
    """The numpy reference summing in the order of the Triton backend here (interpreter or GPU)."""

    def __getattr__(self, name):
        fn = getattr(_REF, name)

        def call(*args, **kwargs):
            with cdf.summation_order(cdf_order("triton")):
                return fn(*args, **kwargs)
        return call


REF = _RefInKernelOrder()

pytestmark = pytest.mark.filterwarnings("ignore::specviz.base.errors.SpecvizWarning")


class _Allocations:
    """Records the element counts of torch.zeros / empty / full / ones calls made inside the kernels' launchers."""

    def __init__(self, monkeypatch):
        self.sizes = []
        for name in ("zeros", "empty", "full", "ones", "zeros_like", "empty_like"):
            real = getattr(torch, name)

            def spy(*args, _real=real, **kwargs):
                out = _real(*args, **kwargs)
                self.sizes.append(out.numel())
                return out
            monkeypatch.setattr(torch, name, spy)


def _tree_case(seed, bs, shape, V):
    rng = np.random.default_rng(seed)
    topk, depth, n = shape
    pl, si = eagle_rollout(rng, bs, topk, depth, n)
    build = REF.build_tree(pl, si, np.full(bs, 10), topk=topk, depth=depth, num_draft_tokens=n,
                           tree_mask_mode="full_mask")
    ri, nt, ns = build.retrieve_index, build.retrieve_next_token, build.retrieve_next_sibling
    p = random_probs(rng, (bs, n), V)
    cand = plausible_candidates(rng, nt, ns, p, V)
    u = rng.uniform(0, 1, (bs, n)).astype(np.float32)
    uf = rng.uniform(0, 1, bs).astype(np.float32)
    return (cand, ri, nt, ns, u, uf, p), dict(num_speculative_tokens=depth + 1)


@pytest.mark.parametrize("shape, V", [((2, 3, 6), 4097), ((4, 5, 24), 1000)])  # the split kernel; the single program
def test_target_only_call_allocates_nothing_the_size_of_the_probabilities(monkeypatch, shape, V):
    """A call with SGLang's zero work buffer allocates and fills nothing of bs * n * V elements (the
    kernel records the rejected masses); reading draft_probs builds the buffer, equal to the reference's."""
    args, kw = _tree_case(7, 3, shape, V)
    dev = [on_device(a) for a in args]
    triton_verify.tree_sampling_target_only(*dev, **kw, validate=False)  # scratch caches warmed
    allocs = _Allocations(monkeypatch)
    res = triton_verify.tree_sampling_target_only(*dev, **kw, validate=False)
    bs, n = args[0].shape
    assert max(allocs.sizes) < bs * n * V / 4, allocs.sizes
    monkeypatch.undo()
    expected = REF.tree_sampling_target_only(*args, **kw)
    assert_same(expected, res, "triton.tree_sampling_target_only")  # draft_probs read here: built from the record
    assert res.draft_probs is res.draft_probs  # built once


def test_lazy_tree_result_pickles_and_copies_as_the_plain_result():
    args, kw = _tree_case(3, 2, (2, 3, 6), 50)
    res = triton_verify.tree_sampling_target_only(*[on_device(a) for a in args], **kw)
    for other in (pickle.loads(pickle.dumps(res)), copy.deepcopy(res)):
        assert type(other) is TreeSampleResult
        for name, value in res.as_dict().items():
            assert torch.equal(value.cpu(), getattr(other, name).cpu()), name
    assert res.as_dict()["draft_probs"].shape == (2, 6, 50)


def test_chain_call_fills_no_scratch_and_shares_it_between_shapes(monkeypatch):
    """The chain sampler's block-sum scratch is cached (no zero fill per call), and calls of other shapes
    in between (other counts of blocks and requests) leave every call's draws the reference's."""
    from test_kernels_random import _chain_case

    rng = np.random.default_rng(11)
    cases = [_chain_case(rng, bs, N, V) for bs, N, V in ((3, 4, 9000), (1, 3, 4097), (5, 2, 13000), (3, 4, 9000))]
    for warm in (True, False):  # the first round may grow the cached scratch; the second allocates outputs only
        for cand, p, q, u in cases:
            bs, N = cand.shape
            V = p.shape[-1]
            ri = np.arange(bs * N).reshape(bs, N)
            uf = rng.uniform(0, 1, bs).astype(np.float32)
            args = (cand, ri, u, uf, p, q)
            kw = dict(num_speculative_tokens=N)
            dev = [on_device(a) for a in args]
            allocs = _Allocations(monkeypatch)
            res = triton_verify.chain_rejection_sampling(*dev, **kw, validate=False)
            monkeypatch.undo()
            # the second round allocates the outputs only: one allocation holds predicts [bs*N],
            # accept_index [bs, N] and accept_token_num [bs] (each at most bs * N elements), then the block
            # sums [bs, NB] the launch writes before it reads them; the zeroed counters stay cached
            assert warm or allocs.sizes == [bs * (2 * N + 1) + bs * -(-V // 4096)], allocs.sizes
            assert_same(REF.chain_rejection_sampling(*args, **kw), res, "triton.chain_rejection_sampling")


@pytest.mark.parametrize("top_k, top_p", [(None, None), (5, None), (None, 0.8), (40, 0.9)])
def test_target_probs_both_kernels_and_both_argument_forms(monkeypatch, top_k, top_p):
    """The register-resident kernel, and on rows forced to count as long the split kernel (temperature
    only, scalar arguments; 6 chunks of 128 tokens, called twice: its row counters must be left at zero)
    and the multi-pass one (the rest), with scalar and per-row arguments, give the reference's
    probabilities."""
    rng = np.random.default_rng(5)
    rows, V = 3, 700
    logits = (rng.normal(size=(rows, V)) * 3).astype(np.float32)
    expected = REF.target_probs_from_logits(logits, temperature=0.7, top_k=top_k, top_p=top_p)
    per_row = dict(temperature=[0.7] * rows, top_k=None if top_k is None else [top_k] * rows,
                   top_p=None if top_p is None else [top_p] * rows)
    split_calls = []
    split = triton_sampling._SPLIT_KERNEL
    monkeypatch.setattr(triton_sampling, "_SPLIT_KERNEL", lambda grid, *a, **k: split_calls.append(grid) or split(grid, *a, **k))
    monkeypatch.setattr(triton_sampling, "SPLIT_CHUNK", 128)
    for limit in (triton_sampling.ROW_IN_REGISTERS_MAX, 0):
        monkeypatch.setattr(triton_sampling, "ROW_IN_REGISTERS_MAX", limit)
        for kw in (dict(temperature=0.7, top_k=top_k, top_p=top_p), per_row):
            for _ in range(2):
                got = triton_sampling.target_probs_from_logits(on_device(logits), **kw)
                assert_same(expected, got, f"limit {limit}, {kw}")
    assert split_calls == ([(rows, 6)] * 2 if top_k is None and top_p is None else [])


def test_fast_launch_key_tells_apart_what_triton_specializes_on():
    """FastLaunch reuses a compiled kernel only for arguments Triton would compile the same way: every
    constexpr value, a tensor's dtype and 16-byte alignment, an int's == 1 / % 16 / 64-bit."""
    fast = triton_common.FastLaunch(triton_verify.verify_tree_greedy_kernel)
    t = torch.zeros(64, dtype=torch.int64)
    base = [t] * 6 + [8, 9, 0, 8, 16]  # out, five tree tensors; N, W, PREDICTS_INIT, BLOCK_N, BLOCK_W
    key = fast._key(base)
    assert fast._key(list(base)) == key
    assert fast._key(base[:6] + [16, 9, 0, 8, 16]) != key  # N (constexpr)
    assert fast._key([t[1:]] + base[1:]) != key  # misaligned pointer
    assert fast._key([t.int()] + base[1:]) != key  # dtype
    assert triton_common._spec(1) != triton_common._spec(3) != triton_common._spec(32)
    assert triton_common._spec(2**40) != triton_common._spec(32)
    with pytest.raises(AssertionError):
        fast._key(base[:-1])


@pytest.mark.parametrize("case_seed", [0, 1])
def test_target_only_walk_in_a_first_launch(monkeypatch, case_seed):
    """The split target-only sampler with the tree walk in its own first launch (forced for every size)
    gives the reference's tokens, accept paths and work buffer, for narrow and wide trees."""
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_SPLIT", True)
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS", 0)
    for shape, V in (((2, 3, 6), 4097), ((4, 5, 24), 5000)):
        args, kw = _tree_case(case_seed, 3, shape, V)
        assert triton_verify.target_only_walk_first(3, -(-V // triton_common.target_only_chunk(V)))
        for semantics in ("0.5.23", "earlier"):
            expected = REF.tree_sampling_target_only(*args, **kw, semantics=semantics)
            got = triton_verify.tree_sampling_target_only(*[on_device(a) for a in args], **kw, semantics=semantics)
            assert_same(expected, got, f"walk first {shape} {V} {semantics}")


@pytest.mark.parametrize("pdl_walker", [False, True])
def test_target_only_programmatic_launches_back_to_back(monkeypatch, pdl_walker):
    """Walk-first calls queued back to back on one stream, no sync between them, each call's draw a programmatic
    dependent launch of its walker (on sm_90+; and with pdl_walker the walker one of the previous call's draw,
    whose walk outcome it overwrites): every call's tokens, accept paths and work buffer are the reference's.
    Under the interpreter (and off sm_90) the launches are plain ones: the same results."""
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_SPLIT", True)
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS", 0)
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_PDL_WALKER", pdl_walker)
    cases = [_tree_case(seed, 3, shape, V) for seed, (shape, V) in enumerate((((2, 3, 6), 4097), ((4, 5, 24), 5000),
                                                                               ((2, 3, 6), 4097), ((4, 5, 24), 5000)))]
    dev_cases = [([on_device(a) for a in args], kw) for args, kw in cases]
    got = [triton_verify.tree_sampling_target_only(*dev, **kw, validate=False) for dev, kw in dev_cases]
    for (args, kw), res in zip(cases, got):
        assert_same(REF.tree_sampling_target_only(*args, **kw), res, f"back to back, pdl_walker={pdl_walker}")


def test_target_only_programmatic_launch_plan(monkeypatch):
    """The walk-first launches hold griddepcontrol instructions (GDC, the kernel's last constexpr) only where
    ``_gdc`` allows them (never under the interpreter: it has no inline assembly), TARGET_ONLY_PDL is on and the
    batch is at most TARGET_ONLY_PDL_MAX_BS, and then the draw is launched as a programmatic dependent launch
    (launch_pdl), the walker only with TARGET_ONLY_PDL_WALKER."""
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_SPLIT", True)
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS", 0)
    if triton_common.interpreting():
        assert not triton_verify._gdc(torch.device("cpu")) and not triton_verify._gdc(on_device(np.zeros(1)).device)
    args, kw = _tree_case(0, 3, (2, 3, 6), 4097)
    dev = [on_device(a) for a in args]
    for gdc in (False, True):
        monkeypatch.setattr(triton_verify, "_gdc", lambda device, gdc=gdc: gdc)
        for pdl, pdl_walker in ((True, False), (True, True), (False, False)):
            monkeypatch.setattr(triton_verify, "TARGET_ONLY_PDL", pdl)
            monkeypatch.setattr(triton_verify, "TARGET_ONLY_PDL_WALKER", pdl_walker)
            _, launch = triton_verify.tree_sampling_prepare(*dev, W=kw["num_speculative_tokens"], threshold_single=1.0,
                                                            threshold_acc=1.0, new=True)
            walker, draw = launch.parts  # not launched: GDC True would need a compiled kernel
            on = gdc and pdl
            assert walker.args[-4:] == (True, 1, 1, on) and draw.args[-3:] == (2, triton_verify.TARGET_ONLY_DRAW_CHUNKS, on)
            assert draw.keywords.get("launch_pdl", False) == on
            assert walker.keywords.get("launch_pdl", False) == (on and pdl_walker)
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_PDL_MAX_BS", 2)  # a batch of 3 is then over the limit
    _, launch = triton_verify.tree_sampling_prepare(*dev, W=kw["num_speculative_tokens"], threshold_single=1.0,
                                                    threshold_acc=1.0, new=True)
    walker, draw = launch.parts
    assert walker.args[-1] is False and draw.args[-1] is False and "launch_pdl" not in draw.keywords


def test_target_only_walker_on_a_node_named_twice(monkeypatch):
    """The first launch gathers every child's mass from the row of the parent it infers from the links; on a
    malformed tree (validate=False; the reference refuses it: node 2 is node 1's next sibling and its first
    child) the inferred parent of node 2 is 1 while the walk tests it under 0, and the walker loads p[0, 7]
    as the one-launch kernel's walk does (p[1, 7] = 0.6 would accept node 2 where p[0, 7] = 0.2 rejects it)."""
    monkeypatch.setattr(triton_verify, "TARGET_ONLY_SPLIT", True)
    V = 4097
    cand = np.array([[3, 5, 7, 9]], np.int64)
    ri = np.arange(4, dtype=np.int64)[None]
    nt = np.array([[1, 2, -1, -1]], np.int64)
    ns = np.array([[-1, 2, -1, -1]], np.int64)
    p = np.full((1, 4, V), 0.1 / (V - 2), np.float32)
    p[0, :, 5], p[0, 0, 7], p[0, 1, 7] = 0.1, 0.2, 0.6
    args = [on_device(a) for a in (cand, ri, nt, ns, np.float32([[0.5, 0.3, 0.3, 0.3]]), np.float32([0.7]), p)]
    for semantics in ("0.5.23", "earlier"):
        results = []
        for walk_first in (None, 0):  # one launch (every program walks, loading as it goes); walk first
            monkeypatch.setattr(triton_verify, "TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS", walk_first)
            assert triton_verify._target_only_plan(1, 4, 3, V)[1] == (walk_first == 0)
            results.append(triton_verify.tree_sampling_target_only(*args, num_speculative_tokens=3,
                                                                   semantics=semantics, validate=False))
        one, first = results
        assert int(first.accept_token_num[0]) == 0  # both children of the root rejected
        assert float(first.draft_probs[0, 0, 7]) == np.float32(0.2) and float(first.draft_probs[0, 0, 5]) == np.float32(0.1)
        for name in ("predicts", "accept_index", "accept_token_num", "draft_probs"):  # every bit
            a, b = (getattr(r, name).cpu().contiguous() for r in results)
            assert torch.equal(a.view(torch.int32), b.view(torch.int32)), (name, semantics)


class _AtenOps:
    """Counts the torch operations (aten ops, each one host-side step on a GPU) a launcher makes inside a
    block, the kernel launches left out (the interpreter runs a kernel on torch ops of its own)."""

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

        ops = self.ops = []
        self.launch = launch = triton_common.FastLaunch.__call__

        def unseen(fast, *args, **kwargs):
            with _disable_current_modes():
                return launch(fast, *args, **kwargs)
        triton_common.FastLaunch.__call__ = unseen

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                ops.append(func.overloadpacket.__name__)
                return func(*args, **(kwargs or {}))

        self.mode = Mode()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        triton_common.FastLaunch.__call__ = self.launch


def test_fill_bonus_tokens_takes_the_samplers_int32_as_it_is():
    """The samplers return int32 (predicts, accept_token_num): fill_bonus_tokens reads them as they are,
    with one allocation (its output) and no conversion (a copy kernel each, ~10 us of the Python call on
    a GPU); int64 and lists still work."""
    predicts = on_device(np.array([[5, 6, 7, 0], [8, 9, 0, 0]], dtype=np.int32))
    lens = on_device(np.array([3, 1], dtype=np.int32))
    triton_sampling.fill_bonus_tokens(predicts, lens, stride=4, validate=False)
    with _AtenOps() as seen:
        got = triton_sampling.fill_bonus_tokens(predicts, lens, stride=4, validate=False)
    assert [op for op in seen.ops if op not in ("view", "_unsafe_view")] == ["empty"], seen.ops
    expected = _REF.fill_bonus_tokens(np.array([[5, 6, 7, 0], [8, 9, 0, 0]]), np.array([3, 1]), stride=4)
    assert_same(expected, got)
    assert_same(expected, triton_sampling.fill_bonus_tokens(predicts.long(), lens.long(), stride=4))
    assert_same(expected, triton_sampling.fill_bonus_tokens([[5, 6, 7, 0], [8, 9, 0, 0]], [3, 1], stride=4))


@pytest.mark.parametrize("in_kernel", [True, False])
def test_build_tree_full_mask_prefix_in_kernel(monkeypatch, in_kernel):
    """FULL_MASK: a small batch's programs sum the lengths before their request themselves (no cumsum op
    on the Python call: failed before, one cumsum a call); larger batches keep the cumsum. Both give the
    reference's tree, here with 5 requests over prefix blocks of 2 tokens."""
    rng = np.random.default_rng(3)
    bs, topk, depth, n = 5, 2, 3, 6
    pl, si = eagle_rollout(rng, bs, topk, depth, n)
    seq_lens = rng.integers(1, 9, size=bs)
    kw = dict(topk=topk, depth=depth, num_draft_tokens=n, tree_mask_mode="full_mask")
    monkeypatch.setattr(triton_tree, "PREFIX_BLOCK", 2)
    monkeypatch.setattr(triton_tree, "PREFIX_IN_KERNEL_MAX_BS", bs if in_kernel else bs - 1)
    args = [on_device(x) for x in (pl, si, seq_lens)]
    triton_tree.build_tree(*args, validate=False, seq_lens_sum=int(seq_lens.sum()), **kw)
    with _AtenOps() as seen:
        got = triton_tree.build_tree(*args, validate=False, seq_lens_sum=int(seq_lens.sum()), **kw)
    assert ("cumsum" in seen.ops) != in_kernel, seen.ops
    assert_same(_REF.build_tree(pl, si, seq_lens, **kw), got)


def test_current_device_getter_skips_torch_python_checks():
    """Where triton's driver asks torch.cuda.current_device (a Python function running _lazy_init's checks on
    every launch), a launch calls torch's C getter behind it; any other driver's getter is kept."""
    from types import SimpleNamespace
    other = SimpleNamespace(get_current_device=lambda: 0)
    assert triton_common.current_device_getter(other) is other.get_current_device
    cuda = SimpleNamespace(get_current_device=torch.cuda.current_device)
    expected = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
    assert triton_common.current_device_getter(cuda) is expected


def test_filled_results_are_the_dataclasses_own():
    """``triton_common.filled`` builds a result without its frozen __init__: the same fields, equal, printed, hashed
    and pickled alike, for every result class a Triton launcher returns; it relies on their having no
    __post_init__ and no field left to a default."""
    import dataclasses
    import pickle

    from specviz.base.results import TreeBuild, TreeSampleResult, VerifyResult
    for cls in (TreeBuild, VerifyResult, TreeSampleResult):
        assert not hasattr(cls, "__post_init__")
        values = {f.name: (i, f.name) for i, f in enumerate(dataclasses.fields(cls))}
        made, built = triton_common.filled(cls, values), cls(**values)
        assert type(made) is cls and made == built and repr(made) == repr(built) and hash(made) == hash(built)
        assert pickle.loads(pickle.dumps(made)) == built and made.as_dict() == values
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.predicts = 0
    work = triton_verify.WorkBuffer(None, None, 4)
    lazy = triton_verify.LazyTreeSampleResult(1, 2, 3, work)
    assert (lazy.predicts, lazy.accept_index, lazy.accept_token_num, lazy._work) == (1, 2, 3, work)


@triton.jit
def _parents_kernel(fc_ptr, ns_ptr, out_ptr, n: tl.constexpr, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_N)
    valid = offs < n
    fc = tl.load(fc_ptr + offs, mask=valid, other=-1)
    ns = tl.load(ns_ptr + offs, mask=valid, other=-1)
    tl.store(out_ptr + offs, _parents(fc, ns, offs, valid, BLOCK_N), mask=valid)


def test_walker_parents_on_built_trees_and_malformed_links():
    """``_parents`` (the walker's parent inference: one int32 pass over the node pairs, then pointer jumping)
    gives every node's parent on trees the tree builder makes (narrow and wide), and on malformed links it
    prefers a first-child namer over a previous sibling and ignores links outside the tree, as the two-pass
    form did; its user only takes it as a hint (a wrong parent costs a load, not a wrong token)."""
    def run(nt, ns):
        n = len(nt)
        out = on_device(np.full(n, -7, np.int32))
        with triton_common.INTERPRETER_LOCK:
            _parents_kernel[(1,)](on_device(np.asarray(nt, np.int64)), on_device(np.asarray(ns, np.int64)), out, n,
                                 triton_common.pow2(n))
        return out.cpu().numpy().tolist()

    for seed, shape in ((0, (1, 7, 8)), (1, (4, 5, 24)), (2, (8, 4, 64))):
        (cand, ri, nt, ns, u, uf, p), _ = _tree_case(seed, 2, shape, 50)
        for b in range(2):
            want = [-1] * shape[2]
            for j in range(shape[2]):
                c = nt[b, j]
                while c != -1:
                    want[c] = j
                    c = ns[b, c]
            assert run(nt[b], ns[b]) == want, (shape, b)
    # node 2: named by node 0 as first child and by node 1 as next sibling -> 0; links 9 and 2**32 + 1 name nothing
    assert run([2, 9, -1, 2**32 + 1], [-1, 2, 3, -1]) == [-1, -1, 0, 0]
