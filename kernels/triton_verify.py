"""Launchers of the Triton accept kernels (kernels in ``triton_verify_kernels.py``, ``triton_chain_kernels.py``
and ``triton_target_only_kernels.py``).

Same signatures and results as the numpy reference (spec/API.md) plus ``validate=True``: the
checks run on numpy copies (a sync on a GPU); benchmarks pass ``validate=False``. Each call is
one allocation and one kernel launch (the kernels write their own initial values).
"""
from __future__ import annotations

import functools

import torch

from specviz.base.results import TreeSampleResult, VerifyResult

from .torch_common import F32, INT32, INT64, as_tensor
from .torch_verify import check_chain_inputs, check_greedy_inputs, check_tree_sampling_args, check_work_buffer
from .triton_common import (DeviceCache, FastLaunch, chain_cdf_block, filled, interpreting, pow2, sampler_warps,
                            target_only_chunk, triton_device)
from .triton_chain_kernels import chain_accept_len_kernel, chain_rejection_sampling_kernel
from .triton_target_only_kernels import tree_sampling_target_only_kernel, tree_sampling_target_only_split_kernel
from .triton_verify_kernels import verify_tree_greedy_kernel


def _outputs(bs: int, n: int, W: int, device, record: int = 0):
    """One int32 allocation ``out`` and its views predicts [bs*n], accept_index [bs, W], accept_token_num [bs]
    (uninitialised: the kernels fill them), then ``record`` more cells (the target-only sampler's record, left
    flat). The kernels take ``out`` alone and find the rest from the grid. On an H200's host a CUDA
    ``torch.empty`` costs ~4.4 us (benchmarks/results_h200_host_profile.json), one ``split_with_sizes`` and
    a ``view`` less than two of them; and each pointer argument costs in the key and the launcher."""
    out = torch.empty(bs * (n + W + 1) + record, dtype=INT32, device=device)
    parts = out.split_with_sizes((bs * n, bs * W, bs, record) if record else (bs * n, bs * W, bs))
    return out, parts[0], parts[1].view(bs, W), parts[2], parts[3] if record else None


def verify_tree_greedy(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict, *,
                       num_speculative_tokens, predicts_init=0, validate=True) -> VerifyResult:
    """Greedy tree verification (SEMANTICS.md §4), one Triton program per request."""
    device = triton_device(candidates, retrieve_index, target_predict)
    if validate:
        check_greedy_inputs(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, target_predict,
                            num_speculative_tokens, predicts_init)
    cand = as_tensor("candidates", candidates, INT64, device)
    ri = as_tensor("retrieve_index", retrieve_index, INT64, device)
    nt = as_tensor("retrieve_next_token", retrieve_next_token, INT64, device)
    ns = as_tensor("retrieve_next_sibling", retrieve_next_sibling, INT64, device)
    tp = as_tensor("target_predict", target_predict, INT64, device)
    result, launch = greedy_prepare(cand, ri, nt, ns, tp, W=int(num_speculative_tokens), predicts_init=int(predicts_init))
    launch()
    return result


def greedy_prepare(cand, ri, nt, ns, tp, *, W, predicts_init=0):
    """Allocate the outputs; return (VerifyResult, launch) where launch() runs the kernel alone."""
    bs, n = cand.shape
    out, predicts, accept_index, accept_token_num, _ = _outputs(bs, n, W, cand.device)
    blocks = _GREEDY_BLOCKS.get((n, W))
    if blocks is None:
        blocks = _GREEDY_BLOCKS[n, W] = (pow2(n), pow2(W))
    launch = functools.partial(_GREEDY_KERNEL, (bs,), out, cand, ri, nt, ns, tp, n, W, predicts_init, *blocks,
                               num_warps=1)
    return filled(VerifyResult, {"predicts": predicts, "accept_index": accept_index,
                                 "accept_token_num": accept_token_num}), launch


_GREEDY_KERNEL = FastLaunch(verify_tree_greedy_kernel)
_GREEDY_BLOCKS = {}  # (n, W) -> (BLOCK_N, BLOCK_W)

# None: the split kernel by the rule in tree_sampling_prepare; True / False force it on / off (tests).
TARGET_ONLY_SPLIT = None


_INTERPRETING = []  # TRITON_INTERPRET=1, read once (an environment lookup a sampler call otherwise)


def _regs(cap) -> dict:
    if not _INTERPRETING:
        _INTERPRETING.append(interpreting())
    return {} if cap is None or _INTERPRETING[0] else {"maxnreg": cap}


def tree_sampling_launch(cand, ri, nt, ns, u, uf, p, **kw):
    """Launch on prepared tensors (p may have a batch stride of 0). Returns (predicts, accept_index, k, buf);
    buf is a ``WorkBuffer`` (``.materialize()``) when ``buffer_init`` is None."""
    outputs, launch = tree_sampling_prepare(cand, ri, nt, ns, u, uf, p, **kw)
    launch()
    return outputs


def tree_sampling_prepare(cand, ri, nt, ns, u, uf, p, *, W, threshold_single, threshold_acc, new, buffer_init=None):
    """Allocate the outputs; return ((predicts, accept_index, k, buf), launch).

    With no ``buffer_init`` (SGLang's call: a work buffer zero on entry) nothing the size of the
    probabilities is allocated or filled: the kernels write a record [bs, 2, n] int32 of the masses
    the rejected children leave in the buffer, and ``buf`` is a ``WorkBuffer`` that rebuilds the
    [bs, n, V] buffer from it on first use (``work_buffer``). Such a call runs
    ``tree_sampling_target_only_split_kernel``: bs * NC programs, NC chunks of the vocabulary a
    request, with cached scratch for the chunk sums and a counter a request (left at zero after a
    launch, so ``launch`` may be replayed). Every one of those programs walks the tree, so a wide tree
    (n > 16) on short rows (NC < 16) or in a large batch (bs * NC > 8192) runs the single-program kernel
    instead (ZERO_BUF: the same record, no buffer read), unless the call walks first
    (``target_only_walk_first``: bs * NC >= 4096): then one program a request walks, and the chunk
    programs, TARGET_ONLY_DRAW_CHUNKS chunks each, read its outcome, whatever the tree's width. A caller's buffer (the "q as buffer" mistake)
    runs the single-program kernel on a copy of it, read as it is, and ``buf`` is that copy.
    Both kernels draw the same tokens; the choice is speed only (H200 figures in benchmarks/README.md).
    The outputs and the record are one allocation (``_outputs``); the launch decisions of a shape are
    computed once (``_target_only_plan``)."""
    bs, n = cand.shape
    V = p.shape[2]
    ps = p.stride()  # one call for the three strides read here (0.16 us a stride(i) on the CPU machine)
    assert ps[2] == 1
    device = cand.device
    split, walk_first, consts, opts, n_tail, bpp, draw_opts = _target_only_plan(bs, n, W, V)
    zero = buffer_init is None
    # the record [bs, 2, n] (the split kernel's scratch after it) follows the outputs in their allocation
    out, predicts, accept_index, accept_token_num, rec = _outputs(bs, n, W, device, n_tail if zero else 0)
    scalars = (n, W, V, ps[0], ps[1], float(threshold_single), max(float(threshold_acc), 1e-9), new)
    if zero and split:
        buf = WorkBuffer(rec, cand, V)
        nc = consts[3]
        counters = _TARGET_ONLY_COUNTERS.get(bs, device)
        args = (out, counters, cand, ri, nt, ns, u, uf, p, *scalars, *consts)
        if not walk_first:
            return (predicts, accept_index, accept_token_num, buf), functools.partial(
                _TARGET_ONLY_SPLIT_KERNEL, (bs * nc,), *args, 0, 1, False, **opts)
        gdc = TARGET_ONLY_PDL and bs <= TARGET_ONLY_PDL_MAX_BS and _gdc(device)
        draw = functools.partial(_TARGET_ONLY_SPLIT_KERNEL, (bs * -(-nc // bpp),), *args, 2, bpp, gdc,
                                 **(dict(draw_opts, launch_pdl=True) if gdc else draw_opts))
        # the walker holds the tree's links in registers at every width (WALK_IN_REGISTERS), in one warp
        walker_opts = dict(opts, num_warps=TARGET_ONLY_WALKER_WARPS)
        if gdc and TARGET_ONLY_PDL_WALKER:
            walker_opts["launch_pdl"] = True
        walker = functools.partial(_TARGET_ONLY_SPLIT_KERNEL, (bs,), *args[:-1], True, 1, 1, gdc, **walker_opts)

        def launch():
            walker()
            return draw()
        launch.parts = walker, draw  # each launch alone, for benchmarks/bench_kernels.py
        return (predicts, accept_index, accept_token_num, buf), launch
    if zero:
        buf = WorkBuffer(rec, cand, V)
        kernel_buf = rec
    else:  # the kernel reads whatever the caller handed it
        buf = kernel_buf = buffer_init.to(device=device, dtype=F32).reshape(bs, n, V).contiguous().clone()
    launch = functools.partial(_TARGET_ONLY_KERNEL, (bs,), out, kernel_buf, cand, ri, nt, ns, u, uf, p, *scalars,
                               *consts[:3], zero, num_warps=opts["num_warps"])
    return (predicts, accept_index, accept_token_num, buf), launch


_TARGET_ONLY_PLANS = {}


def _target_only_plan(bs: int, n: int, W: int, V: int):
    """(split, walk_first, constexprs, options, tail cells, draw chunks, draw options) of a shape: split = the chunked kernel (the rule in
    ``tree_sampling_prepare``), constexprs = (BLOCK_N, BLOCK_W, CHUNK[, NC, NC_P2, WALK_IN_REGISTERS]), tail =
    the int32 cells after the outputs with a zero work buffer: the record [bs, 2, n], then (split) the chunk
    scratch [bs, 2 * NC] and (walk first) the walk's outcome [bs, 3 + BLOCK_N + 2 * BLOCK_W], each written
    before it is read; draw chunks = BPP of the walk-first draw (TARGET_ONLY_DRAW_CHUNKS). Cached per shape and knob values: a few us of Python arithmetic a call otherwise."""
    key = (bs, n, W, V, TARGET_ONLY_SPLIT, TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS, TARGET_ONLY_MAXNREG,
           TARGET_ONLY_DRAW_CHUNKS, TARGET_ONLY_DRAW_MAXNREG)
    plan = _TARGET_ONLY_PLANS.get(key)
    if plan is None:
        chunk = target_only_chunk(V)
        nc = -(-V // chunk)
        walk_first = target_only_walk_first(bs, nc)
        split = (n <= 16 or walk_first or (nc >= 16 and bs * nc <= 8192) if TARGET_ONLY_SPLIT is None
                 else TARGET_ONLY_SPLIT)
        opts = dict(num_warps=sampler_warps(V), **_regs(TARGET_ONLY_MAXNREG))
        consts = (pow2(n), pow2(W), chunk, nc, pow2(nc), n <= 16)
        n_tail = 2 * bs * n + (2 * bs * nc + (bs * (3 + consts[0] + 2 * consts[1]) if walk_first else 0) if split else 0)
        bpp = TARGET_ONLY_DRAW_CHUNKS if walk_first else 1
        draw_opts = dict(num_warps=opts["num_warps"], **_regs(TARGET_ONLY_DRAW_MAXNREG))
        plan = _TARGET_ONLY_PLANS[key] = (split, walk_first, consts, opts, n_tail, bpp, draw_opts)
    return plan


# The target-only split kernel walks each tree in a first launch (WALK = 1, one program a request), and
# its bs * NC chunk programs load the walk's outcome (WALK = 2), when the launch has at least
# TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS chunk programs: each of them would otherwise walk the whole tree
# (dependent loads) before its chunk's loads start. 0: always (tests); None: never.
TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS = 4096
# Warps of that first launch: its walk is a chain of one-element picks from 64-lane register vectors, each a
# reduction across the program's warps (one warp: shuffles only, no shared memory round trip).
TARGET_ONLY_WALKER_WARPS = 1
# Chunks each program of the second (draw) launch sums, a power of 2: more loads in flight a program, and fewer
# programs each waiting on the walk's outcome and on the request's counter.
TARGET_ONLY_DRAW_CHUNKS = 2


# The walk-first call's draw launched as a programmatic dependent launch of its walker (sm_90+, compiled: the
# kernel's GDC): the draw grid's launch and its programs' start overlap the walk. H200, bs 512 (benchmarks/README.md,
# stop 45): 0.6-1.0 us less a call in CUDA graphs, the walker's time plus the draw's alone, no longer their sum
# plus a launch gap.
TARGET_ONLY_PDL = True
# ... up to this many requests: at bs 4096 the programmatic launch was 0.3% slower (and the kernel with the
# griddepcontrol instructions launched plainly 0.5%), so larger batches launch as before, GDC off.
TARGET_ONLY_PDL_MAX_BS = 2048
# The walker launched so too, after whatever kernel ran before it on the stream (it waits for that kernel before any
# access): measured no faster in graphs (within 0.1 us of the above, stop 45), so off.
TARGET_ONLY_PDL_WALKER = False
_GDC_DEVICES = {}


def _gdc(device) -> bool:
    """Whether the target-only kernels may hold griddepcontrol instructions on this device: compiled (not the
    interpreter) on an NVIDIA GPU of compute capability 9.0 or more. Cached per device."""
    ok = _GDC_DEVICES.get(device)
    if ok is None:
        ok = _GDC_DEVICES[device] = (device.type == "cuda" and not interpreting() and torch.version.hip is None
                                     and torch.cuda.get_device_capability(device)[0] >= 9)
    return ok


def target_only_walk_first(bs: int, nc: int) -> bool:
    if TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS is None or nc == 1:
        return False
    return bs * nc >= TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS


_TARGET_ONLY_COUNTERS = DeviceCache()
_TARGET_ONLY_KERNEL = FastLaunch(tree_sampling_target_only_kernel)
_TARGET_ONLY_SPLIT_KERNEL = FastLaunch(tree_sampling_target_only_split_kernel)


def work_buffer(rec, cand, V: int) -> torch.Tensor:
    """The target-only sampler's work buffer [bs, n, V] float32 after a call that began with it zero,
    rebuilt from the kernel's record (rec [bs, 2, n] int32, or flat: the rejected child's parent node, -1 for
    none, and its target mass's bits): buf[b, node, candidates[b, child]] = mass, zero elsewhere."""
    bs, n = cand.shape
    rec = rec.narrow(0, 0, bs * 2 * n).view(bs, 2, n)  # the split kernel's scratch may follow it
    buf = torch.zeros((bs, n, V), dtype=F32, device=rec.device)
    node = rec[:, 0].to(INT64)
    mass = rec[:, 1].contiguous().view(F32)
    b, c = torch.nonzero(node >= 0, as_tuple=True)
    buf[b, node[b, c], cand.to(INT64)[b, c]] = mass[b, c]
    return buf


class WorkBuffer:
    """The work buffer of a call that began with it zero, rebuilt on first use (``materialize``)."""

    def __init__(self, rec, cand, V):
        self.rec, self.cand, self.V = rec, cand, int(V)
        self._buf = None

    def materialize(self) -> torch.Tensor:
        if self._buf is None:
            self._buf = work_buffer(self.rec, self.cand, self.V)
        return self._buf


class LazyTreeSampleResult(TreeSampleResult):
    """``TreeSampleResult`` whose ``draft_probs`` (the [bs, n, V] work buffer) is built when first read:
    a call allocates and fills nothing the size of the probabilities unless the caller reads it
    (docs/API.md). Equal, printed, pickled and copied as the plain result (which it becomes when pickled)."""

    def __init__(self, predicts, accept_index, accept_token_num, work: WorkBuffer):
        # straight into __dict__ (frozen: no setattr), as ``filled`` does: one update, not four object.__setattr__
        self.__dict__.update(predicts=predicts, accept_index=accept_index, accept_token_num=accept_token_num,
                             _work=work)

    @property
    def draft_probs(self):
        return self._work.materialize()

    def __reduce__(self):
        return TreeSampleResult, (self.predicts, self.accept_index, self.accept_token_num, self.draft_probs)


def tree_sampling_target_only(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, uniform_samples,
                              uniform_samples_for_final_sampling, target_probs, *, num_speculative_tokens,
                              threshold_single=1.0, threshold_acc=1.0, semantics="0.5.23", draft_probs=None,
                              validate=True) -> TreeSampleResult:
    """Target-only tree sampling (SEMANTICS.md §6): one Triton program per chunk of the vocabulary a request
    (one per request when the caller hands a work buffer).

    draft_probs [bs, n, V]: the work buffer on entry (None = zeros, as SGLang passes it).
    Returns predicts, accept_index, accept_token_num and the work buffer draft_probs [bs, n, V], built
    when first read if the call began with a zero buffer (``LazyTreeSampleResult``).
    """
    device = triton_device(candidates, target_probs, uniform_samples)
    if validate:
        check_tree_sampling_args(candidates, retrieve_index, retrieve_next_token, retrieve_next_sibling, uniform_samples,
                                 uniform_samples_for_final_sampling, target_probs, num_speculative_tokens,
                                 threshold_single, threshold_acc, semantics)
        if draft_probs is not None:
            check_work_buffer(draft_probs, tuple(target_probs.shape))
    predicts, accept_index, k, buf = tree_sampling_launch(
        as_tensor("candidates", candidates, INT64, device), as_tensor("retrieve_index", retrieve_index, INT64, device),
        as_tensor("retrieve_next_token", retrieve_next_token, INT64, device),
        as_tensor("retrieve_next_sibling", retrieve_next_sibling, INT64, device),
        as_tensor("uniform_samples", uniform_samples, F32, device),
        as_tensor("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, F32, device),
        as_tensor("target_probs", target_probs, F32, device), W=int(num_speculative_tokens),
        threshold_single=threshold_single, threshold_acc=threshold_acc, new=semantics == "0.5.23",
        buffer_init=None if draft_probs is None else as_tensor("draft_probs", draft_probs, F32, device))
    if isinstance(buf, WorkBuffer):
        return LazyTreeSampleResult(predicts, accept_index, k, buf)
    return TreeSampleResult(predicts=predicts, accept_index=accept_index, accept_token_num=k, draft_probs=buf)


def chain_launch(cand, ri, u, uf, p, q, **kw):
    """Launch on prepared tensors (p, q may have batch stride 0). Returns (predicts, accept_index, k)."""
    outputs, launch = chain_prepare(cand, ri, u, uf, p, q, **kw)
    launch()
    return outputs


# Blocks of 4096 tokens each program of the chain sampler sums: 2 (two blocks' loads in flight a program)
# for long rows (NB >= 16, e.g. V = 128256) and for batches of 256 requests or more; else 1 (more programs
# where a small batch would leave SMs idle). Set to a power of 2 to force one (bench_kernels.py --chain-bpp).
# Measured on an H200 (benchmarks/gpu_chain_variants.py, benchmarks/README.md): 2 beats 1 by 4-8% at
# bs 512 / 4096 with V = 32000 and at every bs with V = 128256; 1 beats 2 at bs 1 with V = 32000 (bs 64:
# within the spread); 4 and 8 lose to 2 except at bs 64 with V = 128256 (24.4 vs 26.2 us, both < 0.25x SGLang).
CHAIN_BLOCKS_PER_PROGRAM = None
# The accept tests run first in their own small kernel (chain_accept_len_kernel) when a request has at
# least CHAIN_SPLIT_MIN_PROGRAMS_A_REQUEST block programs and the launch more than CHAIN_SPLIT_MIN_PROGRAMS:
# each block program then starts its loads after one load instead of two dependent rounds, which pays for
# the second launch only there (an H200: split faster by 1.3% at bs 2048 with V = 128256; one launch faster
# at bs 512 with V = 128256 and at every bs with V = 32000, 4 programs a request).
# CHAIN_SPLIT_MIN_PROGRAMS = 0: always (tests); None: never.
CHAIN_SPLIT_MIN_PROGRAMS = 16384
CHAIN_SPLIT_MIN_PROGRAMS_A_REQUEST = 16
# ptxas register cap of the target-only sampler: its walk and draw paths set the register count of
# every program (123 without a cap), and so how many programs an SM holds while the loads are in flight;
# 64 spills a little on those paths and runs 2-19% faster at bs >= 512 on an H200 (benchmarks/README.md).
# The chain sampler runs slower under every cap tried (64, 80): its count stays the compiler's.
TARGET_ONLY_MAXNREG = 64
# The walk-first draw's cap (its second launch; the walker keeps TARGET_ONLY_MAXNREG): two chunks a program hold
# 64 floats a thread, which spill under 64 registers. H200, bs 512 / 4096 (benchmarks/README.md, stop 44): a
# call took 0.72-0.80x its time under 64 with 96, 0.73-0.78x with no cap.
TARGET_ONLY_DRAW_MAXNREG = 96
CHAIN_MAXNREG = None
_K_ROWS = 32  # requests a program of chain_accept_len_kernel


def chain_split(bs: int, nb: int, np_: int) -> bool:
    """Whether the chain sampler runs its accept tests in a first launch (see CHAIN_SPLIT_MIN_PROGRAMS)."""
    if CHAIN_SPLIT_MIN_PROGRAMS is None:
        return False
    if CHAIN_SPLIT_MIN_PROGRAMS == 0:
        return True
    return np_ >= CHAIN_SPLIT_MIN_PROGRAMS_A_REQUEST and bs * nb > CHAIN_SPLIT_MIN_PROGRAMS


def chain_prepare(cand, ri, u, uf, p, q, *, new, bonus=None):
    """Allocate the outputs; return ((predicts, accept_index, k), launch).

    The kernel's grid is bs * cdiv(NB, CHAIN_BLOCKS_PER_PROGRAM) programs, NB = the number of BLOCK_V
    blocks of a row: each program sums its blocks, the request's last program draws (``chain_rejection_sampling_kernel``).
    Its counters are a cached workspace (``_CHAIN_COUNTERS``, per device and stream), allocated once and
    never filled per call: one counter a request, zero on entry and left at zero by the kernel (so ``launch``
    may be replayed: CUDA graphs, benchmarks). The block sums (then, in large batches, the accept lengths),
    which every launch writes before it reads them, follow the outputs in their one allocation (``_outputs``):
    no second workspace to look up, no second pointer argument."""
    bs, N = cand.shape
    V = p.shape[2]
    ps = p.stride()  # one call a tensor for the strides read here (0.16 us a stride(i) on the CPU machine)
    if N == 1:
        q, qs = p, ps  # no draft rows; never read
    else:
        qs = q.stride()
    assert ps[2] == 1 and qs[2] == 1
    device = cand.device
    programs, split, n_counters, n_work, consts, opts = _chain_plan(bs, N, V)
    out, predicts, accept_index, accept_token_num, work = _outputs(bs, N, N, device, n_work)
    counters = _CHAIN_COUNTERS.get(n_counters, device)
    strides = (u.stride(0), ps[0], ps[1], qs[0], qs[1])
    sampler = functools.partial(
        _CHAIN_KERNEL, (programs,), out, bonus if bonus is not None else out, counters, cand, ri, u, uf,
        p, q, N, V, *strides, new, bonus is not None, *consts, **opts)
    if not split:
        return (predicts, accept_index, accept_token_num), sampler
    k_given = work[n_work - bs:]  # k [bs] after the block sums (the kernel's k_ptr)
    accept_len = functools.partial(_CHAIN_K_KERNEL, (-(-bs // _K_ROWS),), k_given, cand, u, p, q, bs, N, *strides,
                                   new, _K_ROWS, consts[0], num_warps=1)

    def launch():
        accept_len()
        return sampler()

    return (predicts, accept_index, accept_token_num), launch


_CHAIN_PLANS = {}


def _chain_plan(bs: int, N: int, V: int):
    """(programs, split, counters, work cells, constexprs after WRITE_BONUS, options) of a shape, by the rules in
    ``chain_prepare``; cached per shape and knob values (a few us of Python arithmetic a call otherwise). The work
    cells (the block sums [bs, NB], then k [bs] when split) follow the outputs in their one allocation."""
    key = (bs, N, V, CHAIN_BLOCKS_PER_PROGRAM, CHAIN_SPLIT_MIN_PROGRAMS, CHAIN_MAXNREG)
    plan = _CHAIN_PLANS.get(key)
    if plan is None:
        block = chain_cdf_block(V)
        nb = -(-V // block)
        bpp = 1 if nb == 1 else CHAIN_BLOCKS_PER_PROGRAM or (2 if nb >= 16 or bs >= 256 else 1)
        split = nb > 1 and N > 1 and chain_split(bs, nb, -(-nb // bpp))
        n_work = bs * nb + (bs if split else 0) if nb > 1 else 0
        plan = _CHAIN_PLANS[key] = (bs * -(-nb // bpp), split, bs if nb > 1 else 1, n_work,
                                    (pow2(N), block, nb, pow2(nb), bpp, split),
                                    dict(num_warps=sampler_warps(V), **_regs(CHAIN_MAXNREG)))
    return plan


_CHAIN_COUNTERS = DeviceCache()
_CHAIN_KERNEL = FastLaunch(chain_rejection_sampling_kernel)
_CHAIN_K_KERNEL = FastLaunch(chain_accept_len_kernel)


def chain_rejection_sampling(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                             target_probs, draft_probs, *, num_speculative_tokens, semantics="0.5.23",
                             validate=True) -> VerifyResult:
    """Chain rejection sampling (SEMANTICS.md §7), one Triton program per request."""
    device = triton_device(candidates, target_probs, draft_probs)
    if validate:
        check_chain_inputs(candidates, retrieve_index, uniform_samples, uniform_samples_for_final_sampling,
                           target_probs, draft_probs, num_speculative_tokens, semantics)
    predicts, accept_index, k = chain_launch(
        as_tensor("candidates", candidates, INT64, device), as_tensor("retrieve_index", retrieve_index, INT64, device),
        as_tensor("uniform_samples", uniform_samples, F32, device),
        as_tensor("uniform_samples_for_final_sampling", uniform_samples_for_final_sampling, F32, device),
        as_tensor("target_probs", target_probs, F32, device), as_tensor("draft_probs", draft_probs, F32, device),
        new=semantics == "0.5.23")
    return filled(VerifyResult, {"predicts": predicts, "accept_index": accept_index, "accept_token_num": k})
