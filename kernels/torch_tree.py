"""Tree build in torch (SEMANTICS.md §2-§3), vectorised over requests *and* nodes.

The reference builds one request at a time with a reverse-order push-front loop. The same links
follow in closed form, which is what this module computes for the whole batch at once:

* ``parent[b, i]`` = the node holding candidate ``parent_list[b, selected_index[b, i-1] // topk]``
  (slot 0 = the root; a parent candidate that is not selected gives INVALID_PARENT, §3.4);
* ``retrieve_next_token[b, p]`` = the lowest node whose parent is p (push-front from high to low
  leaves the lowest index in front);
* ``retrieve_next_sibling[b, i]`` = the next higher node with the same parent;
* ancestors / positions: at most ``depth`` steps up the parent array, as the kernel walks.
"""
from __future__ import annotations

import torch

from specviz.reference.tree import INVALID_PARENT, TREE_MASK_MODES, check_build_args
from specviz.base.results import TreeBuild

from .torch_common import INT64, as_tensor, check_parent_steps, pick_device

MASK_DTYPES = ((8, torch.uint8), (16, torch.uint16), (32, torch.uint32))


def parent_nodes(parent_list: torch.Tensor, selected_index: torch.Tensor, topk: int) -> torch.Tensor:
    """[bs, n] int64 parent node of every node: -1 for the root, INVALID_PARENT when not selected."""
    bs, m = selected_index.shape
    if m == 0:  # no drafts: the root alone
        return torch.full((bs, 1), -1, dtype=INT64, device=selected_index.device)
    slot = torch.div(selected_index, topk, rounding_mode="floor")  # [bs, n-1]
    if parent_list.shape[1] > 0:
        parent_cand = parent_list.gather(1, slot.clamp(0, parent_list.shape[1] - 1))  # [bs, n-1]
    else:  # depth 1: every candidate hangs off the root (slot 0)
        parent_cand = torch.zeros_like(slot)
    eq = selected_index[:, None, :] == parent_cand[:, :, None]  # [bs, node, position]
    found = eq.any(dim=2)
    pos = eq.to(torch.int8).argmax(dim=2)  # first match (candidates are distinct)
    par = torch.where(slot == 0, torch.zeros_like(pos), torch.where(found, pos + 1, torch.full_like(pos, INVALID_PARENT)))
    root = torch.full((bs, 1), -1, dtype=INT64, device=par.device)
    return torch.cat([root, par.to(INT64)], dim=1)


def links_from_parents(par: torch.Tensor):
    """(retrieve_next_token, retrieve_next_sibling) [bs, n] from the parent array."""
    bs, n = par.shape
    ar = torch.arange(n, device=par.device)
    big = torch.full((), n, dtype=INT64, device=par.device)
    # First child: lowest i >= 1 with parent p.
    is_child = (par[:, None, :] == ar[None, :, None]) & (ar[None, None, :] >= 1)  # [bs, p, i]
    first = torch.where(is_child, ar[None, None, :], big).amin(dim=2)
    next_token = torch.where(first < n, first, torch.full_like(first, -1))
    # Next sibling: lowest j > i with the same (valid) parent.
    same = (par[:, :, None] == par[:, None, :]) & (ar[None, None, :] > ar[None, :, None]) & (par[:, :, None] >= 0)
    nxt = torch.where(same, ar[None, None, :], big).amin(dim=2)
    next_sibling = torch.where(nxt < n, nxt, torch.full_like(nxt, -1))
    return next_token, next_sibling


def ancestor_walk(par: torch.Tensor, depth: int):
    """(anc [bs, n, n] bool: column j in A(i); steps [bs, n]) walking at most ``depth`` parents."""
    bs, n = par.shape
    ar = torch.arange(n, device=par.device)
    cur = ar[None, :].expand(bs, n).clone()
    steps = torch.zeros((bs, n), dtype=INT64, device=par.device)
    anc = torch.zeros((bs, n, n), dtype=torch.bool, device=par.device)
    anc[:, :, 0] = True
    for _ in range(depth):
        alive = cur > 0
        anc |= (cur[:, :, None] == ar[None, None, :]) & alive[:, :, None]
        steps += alive.to(INT64)
        cur = torch.where(alive, par.gather(1, cur.clamp(min=0)), cur)
    return anc, steps


def build_tree(parent_list, selected_index, verified_seq_len, *, topk, depth, num_draft_tokens,
               tree_mask_mode="full_mask", seq_lens_sum=None, validate=True) -> TreeBuild:
    """Build every request's verify tree at once (see the module docstring).

    parent_list [bs, topk*(depth-1)+1] int64, selected_index [bs, n-1] int64, verified_seq_len [bs] int64.
    Returns TreeBuild (tree_mask per mode, positions [bs*n], retrieve_* [bs, n]) on the inputs' device.
    ``validate=False`` skips the numpy-side checks (for benchmarks; inputs must then be valid);
    ``seq_lens_sum`` (FULL_MASK) saves reading sum(verified_seq_len) back from the device.
    """
    device = pick_device(parent_list, selected_index, verified_seq_len)
    if validate:
        pl_np, si_np, *_ = check_build_args(parent_list, selected_index, verified_seq_len, topk, depth,
                                            num_draft_tokens, tree_mask_mode)
        check_parent_steps(pl_np, si_np, int(topk))
    elif tree_mask_mode not in TREE_MASK_MODES:
        raise ValueError(tree_mask_mode)
    topk, depth, n = int(topk), int(depth), int(num_draft_tokens)
    pl = as_tensor("parent_list", parent_list, INT64, device)
    si = as_tensor("selected_index", selected_index, INT64, device)
    sl = as_tensor("verified_seq_len", verified_seq_len, INT64, device)
    bs = sl.shape[0]
    if pl.dim() == 2 and pl.shape[0] == bs and depth == 1:
        pl = pl[:, :0]  # [bs, 0] or [bs, 1]: never read with depth 1
    par = parent_nodes(pl, si.reshape(bs, n - 1), topk)
    next_token, next_sibling = links_from_parents(par)
    retrieve_index = torch.arange(bs * n, dtype=INT64, device=device).reshape(bs, n)
    anc, steps = ancestor_walk(par, depth)
    positions = (sl[:, None] + steps).reshape(-1)
    if tree_mask_mode == "qlen_only":
        mask = anc.reshape(-1).clone()
    elif tree_mask_mode == "full_mask":
        total = n * (int(sl.sum()) if seq_lens_sum is None else int(seq_lens_sum)) + bs * n * n
        mask = torch.ones(total, dtype=torch.bool, device=device)  # prefix cells pre-filled True
        seq_prefix = torch.cumsum(sl, 0) - sl
        ar = torch.arange(n, device=device)
        start = (n * n * torch.arange(bs, device=device) + n * seq_prefix)[:, None] + ar[None, :] * (sl[:, None] + n) + sl[:, None]
        idx = start[:, :, None] + ar[None, None, :]  # [bs, n, n]
        mask[idx.reshape(-1)] = anc.reshape(-1)
    else:
        weights = torch.ones(n, dtype=INT64, device=device) << torch.arange(n, dtype=INT64, device=device)
        value = (anc.to(INT64) * weights).sum(dim=2).reshape(-1)
        dtype = next(d for bits, d in MASK_DTYPES if n <= bits)
        mask = value.to(dtype)
    return TreeBuild(tree_mask=mask, positions=positions, retrieve_index=retrieve_index,
                     retrieve_next_token=next_token, retrieve_next_sibling=next_sibling)
