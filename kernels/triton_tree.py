"""Launcher of the Triton tree build (kernel in ``triton_tree_kernels.py``)."""
from __future__ import annotations

import functools

import torch

from specviz.reference.tree import TREE_MASK_MODES, check_build_args
from specviz.base.results import TreeBuild

from .torch_common import INT64, as_tensor, check_parent_steps
from .torch_tree import MASK_DTYPES
from .triton_common import FastLaunch, filled, pow2, triton_device
from .triton_tree_kernels import build_tree_kernel

_BUILD_KERNEL = FastLaunch(build_tree_kernel)
# FULL_MASK batches up to this size: each program sums the lengths before its request itself (at most 511
# loads of 8 bytes, from L2) instead of a torch.cumsum launched before the kernel (one launch less a call).
PREFIX_IN_KERNEL_MAX_BS = 512
PREFIX_BLOCK = 128
SIGNED_VIEW = {torch.uint8: torch.int8, torch.uint16: torch.int16, torch.uint32: torch.int32}


def build_tree(parent_list, selected_index, verified_seq_len, *, topk, depth, num_draft_tokens,
               tree_mask_mode="full_mask", seq_lens_sum=None, validate=True) -> TreeBuild:
    """Build every request's verify tree (SEMANTICS.md §3), one Triton program per request.

    parent_list [bs, topk*(depth-1)+1], selected_index [bs, n-1], verified_seq_len [bs] (int64).
    ``seq_lens_sum`` (FULL_MASK only) saves the device-to-host read of sum(verified_seq_len), as
    SGLang's caller passes it; ``validate=False`` skips the numpy-side checks (benchmarks).
    """
    device = triton_device(parent_list, selected_index, verified_seq_len)
    if validate:
        pl_np, si_np, *_ = check_build_args(parent_list, selected_index, verified_seq_len, topk, depth,
                                            num_draft_tokens, tree_mask_mode)
        check_parent_steps(pl_np, si_np, int(topk))
    result, launch = build_prepare(as_tensor("parent_list", parent_list, INT64, device),
                                   as_tensor("selected_index", selected_index, INT64, device),
                                   as_tensor("verified_seq_len", verified_seq_len, INT64, device), topk=topk, depth=depth,
                                   num_draft_tokens=num_draft_tokens, tree_mask_mode=tree_mask_mode,
                                   seq_lens_sum=seq_lens_sum)
    launch()
    return result


def build_prepare(pl, si, sl, *, topk, depth, num_draft_tokens, tree_mask_mode, seq_lens_sum=None):
    """Allocate the outputs (the kernel writes every cell, the FULL_MASK prefix's True cells too); return
    (TreeBuild, launch) where launch() runs the kernel alone."""
    device = sl.device
    bs = sl.shape[0]
    mode, n, consts, warps, mask_dtype = _build_plan(bs, topk, depth, num_draft_tokens, tree_mask_mode)
    if pl.dim() != 2 or pl.shape[1] == 0:
        pl = torch.zeros((bs, 1), dtype=INT64, device=device)  # depth 1: never read
    # retrieve_index, next_token, next_sibling, positions: one buffer, every cell written (4.4 us an allocation
    # on an H200's host, benchmarks/results_h200_host_profile.json; one pointer argument instead of four)
    links = torch.empty(4, bs, n, dtype=INT64, device=device)  # sizes as arguments: 0.5 us less than a tuple
    ri, nt, ns, positions = links.unbind(0)
    positions = positions.view(bs * n)
    if mode == 0:
        total = n * (int(sl.sum()) if seq_lens_sum is None else int(seq_lens_sum)) + bs * n * n
        mask = torch.empty(total, dtype=torch.bool, device=device)  # every cell is written (prefix cells True)
        seq_prefix = sl if consts[-1] else torch.cumsum(sl, 0)  # the kernel subtracts its own length
        kernel_mask = mask
    elif mode == 1:
        mask = torch.empty(bs * n * n, dtype=torch.bool, device=device)  # every cell is written
        seq_prefix = sl
        kernel_mask = mask
    else:
        mask = torch.empty(bs * n, dtype=mask_dtype, device=device)
        seq_prefix = sl
        kernel_mask = mask.view(SIGNED_VIEW[mask_dtype])
    launch = functools.partial(_BUILD_KERNEL, (bs,), pl, si, sl, seq_prefix, kernel_mask, links, pl.stride(0), *consts,
                               num_warps=warps)
    return filled(TreeBuild, {"tree_mask": mask, "positions": positions, "retrieve_index": ri, "retrieve_next_token": nt,
                              "retrieve_next_sibling": ns}), launch


_BUILD_PLANS = {}


def _build_plan(bs, topk, depth, num_draft_tokens, tree_mask_mode):
    """(mode, n, constexprs after parent_list_stride, num_warps, bit-packed mask dtype) of a shape; cached
    (a few us of Python a call otherwise: the mode's index, pow2, the prefix rule)."""
    key = (bs, topk, depth, num_draft_tokens, tree_mask_mode, PREFIX_BLOCK, PREFIX_IN_KERNEL_MAX_BS)  # knobs: tests
    plan = _BUILD_PLANS.get(key)
    if plan is None:
        mode = TREE_MASK_MODES.index(tree_mask_mode)
        topk, depth, n = int(topk), int(depth), int(num_draft_tokens)
        prefix_block = PREFIX_BLOCK if mode == 0 and bs <= PREFIX_IN_KERNEL_MAX_BS else 0
        mask_dtype = next(d for bits, d in MASK_DTYPES if n <= bits) if mode == 2 else torch.bool
        consts = (topk, depth, n, mode, pow2(n, 16), max(0, (depth - 1).bit_length()), max(16, 2048 // pow2(n, 16)),
                  prefix_block)
        plan = _BUILD_PLANS[key] = (mode, n, consts, 1 if n <= 16 else 4, mask_dtype)
    return plan
