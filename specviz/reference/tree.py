"""Tree build (SEMANTICS.md §2-§3): parent_list / selected_index -> retrieve_* links, positions, mask.

Numbering: node 0 is the root; node i >= 1 is draft candidate ``selected_index[i-1]``. The
candidate's parent *slot* is ``selected_index[i-1] // topk``: slot 0 means the root, any other
slot names ``parent_list[slot]``, the parent's flat candidate index, and the parent node is one
more than that candidate's position in ``selected_index``.
"""
from __future__ import annotations

import warnings

import numpy as np

from specviz.base.errors import SpecvizError, SpecvizWarning
from specviz.base.results import TreeBuild
from specviz.base.trace import Trace
from specviz.base.validate import check_shape, int_array

TREE_MASK_MODES = ("full_mask", "qlen_only", "qlen_only_bitpacking")
from specviz.base.rollout import INVALID_PARENT, parent_nodes  # noqa: F401  (re-exported; they live below the model layer)


def num_candidates(topk: int, depth: int) -> int:
    """How many scored candidates a rollout of this shape produces: topk + (depth-1)*topk^2."""
    return topk + (depth - 1) * topk * topk


def check_build_args(parent_list, selected_index, verified_seq_len, topk, depth, num_draft_tokens, tree_mask_mode):
    for name, v, lo in (("topk", topk, 1), ("depth", depth, 1), ("num_draft_tokens", num_draft_tokens, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise SpecvizError(name, f"is {v!r}: it must be a whole number")
        if v < lo:
            raise SpecvizError(name, f"is {v}: it must be at least {lo}")
    topk, depth, n = int(topk), int(depth), int(num_draft_tokens)
    if tree_mask_mode not in TREE_MASK_MODES:
        raise SpecvizError("tree_mask_mode", f"is {tree_mask_mode!r}: choose one of {', '.join(TREE_MASK_MODES)}")
    if tree_mask_mode == "qlen_only_bitpacking" and n > 32:
        raise SpecvizError("tree_mask_mode", f"qlen_only_bitpacking holds at most 32 nodes per request, got num_draft_tokens = {n}: use qlen_only")
    if n - 1 > num_candidates(topk, depth):
        raise SpecvizError(
            "num_draft_tokens",
            f"is {n}, but topk={topk}, depth={depth} score only {num_candidates(topk, depth)} candidates: "
            f"num_draft_tokens - 1 must be <= topk + (depth-1)*topk^2",
        )
    pl = int_array("parent_list", parent_list, 2)
    si = int_array("selected_index", selected_index, 2)
    sl = int_array("verified_seq_len", verified_seq_len, 1)
    bs = sl.shape[0]
    if bs < 1:
        raise SpecvizError("verified_seq_len", "is empty: give one prefix length per request")
    check_shape("selected_index", si, (bs, n - 1), "([bs, num_draft_tokens - 1])")
    width = topk * (depth - 1) + 1
    if not (pl.shape == (bs, width) or (depth == 1 and pl.shape in ((bs, 0), (bs, 1)))):
        raise SpecvizError("parent_list", f"has shape {list(pl.shape)} but must be [{bs}, topk*(depth-1)+1] = [{bs}, {width}]")
    if np.any(sl < 0):
        raise SpecvizError("verified_seq_len", f"holds {int(sl.min())}: prefix lengths cannot be negative")
    ncand = num_candidates(topk, depth)
    if np.any((si < 0) | (si >= ncand)):
        b, j = (int(v) for v in np.argwhere((si < 0) | (si >= ncand))[0])
        raise SpecvizError("selected_index", f"request {b} entry {j} is {si[b, j]}: candidate indices lie in [0, {ncand})")
    for b in range(bs):
        if len(np.unique(si[b])) != si.shape[1]:
            raise SpecvizError("selected_index", f"request {b} lists a candidate twice: each candidate is selected at most once")
    if pl.size and np.any(pl < -1):
        raise SpecvizError("parent_list", f"holds {int(pl.min())}: entries are candidate indices or -1")
    # §2: slot j >= 1 holds beam (j-1) % topk of step t = (j-1) // topk, i.e. a flat candidate
    # index of step t. Anything else (e.g. a later step's candidate) can make a node its own
    # ancestor: a cycle that no draft rollout produces.
    for j in range(1, pl.shape[1] if depth > 1 else 0):
        t = (j - 1) // topk
        lo, hi = (0, topk) if t == 0 else (topk + topk * topk * (t - 1), topk + topk * topk * t)
        bad = (pl[:, j] < lo) | (pl[:, j] >= hi)
        if np.any(bad):
            b = int(np.argmax(bad))
            raise SpecvizError(
                "parent_list",
                f"request {b} slot {j} is {int(pl[b, j])}: slot {j} holds a beam of draft step {t}, whose candidates are "
                f"{lo}..{hi - 1}; another value (e.g. a deeper candidate) would make a node its own ancestor (a cycle)",
            )
    return pl, si, sl, topk, depth, n


def build_tree(parent_list, selected_index, verified_seq_len, *, topk, depth, num_draft_tokens,
               tree_mask_mode="full_mask", trace: Trace | None = None) -> TreeBuild:
    """Build the verify tree of every request (one request at a time, as one program per request).

    parent_list      [bs, topk*(depth-1)+1] flat candidate index of each parent slot
    selected_index   [bs, n-1] the selected candidates, ascending
    verified_seq_len [bs] tokens already in KV (the root's position)
    Returns TreeBuild with retrieve_* [bs, n], positions [bs*n], tree_mask per mode (§3.3).
    """
    pl, si, sl, topk, depth, n = check_build_args(
        parent_list, selected_index, verified_seq_len, topk, depth, num_draft_tokens, tree_mask_mode)
    bs = sl.shape[0]
    par = parent_nodes(pl, si, topk)
    ri = np.full((bs, n), -1, dtype=np.int64)
    nt = np.full((bs, n), -1, dtype=np.int64)
    ns = np.full((bs, n), -1, dtype=np.int64)
    positions = np.zeros(bs * n, dtype=np.int64)
    if tree_mask_mode == "full_mask":
        mask = np.ones(int(n * sl.sum() + bs * n * n), dtype=bool)  # prefix cells pre-filled True
    elif tree_mask_mode == "qlen_only":
        mask = np.ones(bs * n * n, dtype=bool)
    else:
        mask = np.zeros(bs * n, dtype=np.uint8 if n <= 8 else np.uint16 if n <= 16 else np.uint32)
    if trace is not None:
        trace.begin("build_tree", retrieve_index=ri, retrieve_next_token=nt, retrieve_next_sibling=ns,
                    positions=positions, tree_mask=mask)

    seq_prefix = np.concatenate([[0], np.cumsum(sl)[:-1]])
    for b in range(bs):
        # Links: reverse node order, push-front, so first child = lowest index (§3.1).
        for i in range(n - 1, 0, -1):
            ri[b, i] = b * n + i
            writes = [("retrieve_index", b * n + i, b * n + i)]
            p = int(par[b, i])
            if p < 0:
                message = (f"request {b} node {i}: its parent candidate is not selected, so the node stays unlinked and "
                           "unreachable (SGLang's CUDA builder prints 'invalid eagle tree'); its mask row and position are undefined in SGLang")
                warnings.warn(message, SpecvizWarning, stacklevel=2)
                if trace is not None:
                    trace.emit("warning", b, i, writes, message=message, code="unlinked_node")
                continue
            if nt[b, p] == -1:
                nt[b, p] = i
                writes.append(("retrieve_next_token", b * n + p, i))
            else:
                ns[b, i] = nt[b, p]
                nt[b, p] = i
                writes += [("retrieve_next_sibling", b * n + i, int(ns[b, i])), ("retrieve_next_token", b * n + p, i)]
            if trace is not None:
                trace.emit("build_link", b, i, writes, parent=p)
        ri[b, 0] = b * n
        if trace is not None:
            trace.emit("build_link", b, 0, [("retrieve_index", b * n, b * n)], parent=None)
        # Mask rows and positions: walk up at most `depth` parents, marking self and ancestors.
        for i in range(n):
            cols = [0]
            cur, steps = i, 0
            while cur > 0 and steps < depth:
                cols.append(cur)
                steps += 1
                cur = int(par[b, cur])
            positions[b * n + i] = sl[b] + steps
            writes = [("positions", b * n + i, int(sl[b] + steps))]
            if tree_mask_mode == "qlen_only_bitpacking":
                value = sum(1 << c for c in set(cols))
                mask[b * n + i] = value
                writes.append(("tree_mask", b * n + i, value))
            else:
                start = (n * n * b + n * int(seq_prefix[b]) + i * (int(sl[b]) + n) + int(sl[b])
                         if tree_mask_mode == "full_mask" else b * n * n + i * n)
                mask[start:start + n] = False
                mask[[start + c for c in cols]] = True
                writes += [("tree_mask", start + c, bool(mask[start + c])) for c in range(n)]
            if trace is not None:
                trace.emit("build_row", b, i, writes, ancestors=sorted(set(cols)), position=int(sl[b] + steps))
    return TreeBuild(tree_mask=mask, positions=positions, retrieve_index=ri,
                     retrieve_next_token=nt, retrieve_next_sibling=ns)


def tree_mask_matrix(build: TreeBuild, verified_seq_len, num_draft_tokens: int, tree_mask_mode: str, request: int = 0) -> np.ndarray:
    """The [n, n] tree part of one request's mask as a bool matrix, whatever the storage mode."""
    n = num_draft_tokens
    sl = np.asarray(verified_seq_len, dtype=np.int64)
    b = request
    if isinstance(build.tree_mask, FullMask):
        return build.tree_mask.tree[b].copy()
    mask = np.asarray(build.tree_mask)
    if tree_mask_mode == "qlen_only_bitpacking":
        vals = mask[b * n:(b + 1) * n].astype(np.int64)
        return ((vals[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
    if tree_mask_mode == "qlen_only":
        return mask[b * n * n:(b + 1) * n * n].reshape(n, n).copy()
    off = n * n * b + n * int(sl[:b].sum())
    rows = [mask[off + i * (sl[b] + n) + sl[b]: off + i * (sl[b] + n) + sl[b] + n] for i in range(n)]
    return np.stack(rows)


# --------------------------------------------------------------------------------------------
# full_mask described, not allocated (what the app draws)
# --------------------------------------------------------------------------------------------

class FullMask:
    """A full_mask (§3.3) whose all-True prefix columns are described, not stored.

    Request b's n rows are each ``seq_lens[b]`` True cells (the prefix: every draft attends to
    every token already in KV) followed by the n tree cells ``tree[b]``. The stored array
    build_tree writes has ``n*sum(seq_lens) + bs*n*n`` cells; this object holds only the
    ``bs*n*n`` tree cells, so a seq_len of 10^9 costs nothing. ``materialise()`` writes the
    array out (refused above ``max_cells``); ``len()`` and ``shape`` are the stored array's.
    """

    dtype = np.dtype(bool)

    def __init__(self, seq_lens, tree):
        self.seq_lens = tuple(int(v) for v in np.asarray(seq_lens).reshape(-1))
        self.tree = np.asarray(tree, dtype=bool)  # [bs, n, n]
        self.n = int(self.tree.shape[-1])

    @property
    def size(self) -> int:
        return self.n * sum(self.seq_lens) + len(self.seq_lens) * self.n * self.n

    @property
    def shape(self) -> tuple:
        return (self.size,)

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        """Bytes actually held (the tree part only)."""
        return int(self.tree.nbytes)

    def materialise(self, max_cells: int) -> np.ndarray:
        """The stored array build_tree writes; a SpecvizError above ``max_cells`` cells."""
        if self.size > max_cells:
            raise SpecvizError("verified_seq_len", f"makes a full_mask of {self.size:,} cells; at most {max_cells:,} are "
                                                   "written out here (the prefix columns are all True: use qlen_only)")
        parts = []
        for b, sl in enumerate(self.seq_lens):
            rows = np.concatenate([np.ones((self.n, sl), dtype=bool), self.tree[b]], axis=1)  # [n, sl + n]
            parts.append(rows.reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def describe(self, max_rows: int = 8) -> str:
        """One line per row: ``[True × seq_len] tree cells`` (the listing the raw-tensor view prints)."""
        out = []
        for b, sl in enumerate(self.seq_lens):
            for i in range(min(self.n, max_rows)):
                bits = " ".join("1" if v else "0" for v in self.tree[b, i])
                out.append(f"request {b} row {i}: [1 × {sl:,}] {bits}")
            if self.n > max_rows:
                out.append(f"request {b}: … {self.n - max_rows} more rows")
        return "\n".join(out)

    def __eq__(self, other) -> bool:
        return (isinstance(other, FullMask) and self.seq_lens == other.seq_lens
                and np.array_equal(self.tree, other.tree))

    __hash__ = None


def build_tree_described(parent_list, selected_index, verified_seq_len, *, topk, depth, num_draft_tokens) -> TreeBuild:
    """``build_tree(..., tree_mask_mode="full_mask")`` with the mask's prefix described (``FullMask``).

    Why this is the same result: in full_mask mode request b's row i is ``seq_len[b]`` True
    cells, then the tree cells; the tree cells, the links and the depths do not depend on
    seq_len, and positions are seq_len + depth. So build_tree runs with every seq_len 0 (its
    mask is then exactly the tree part) and seq_len is added to the positions afterwards.
    Memory: O(bs*n*n), whatever seq_len (tests/test_hostile_inputs.py pins it).
    """
    sl = int_array("verified_seq_len", verified_seq_len, 1)
    if np.any(sl < 0):
        raise SpecvizError("verified_seq_len", f"holds {int(sl.min())}: prefix lengths cannot be negative")
    n = int(num_draft_tokens)
    zero = np.zeros_like(sl)
    build = build_tree(parent_list, selected_index, zero, topk=topk, depth=depth, num_draft_tokens=n,
                       tree_mask_mode="full_mask")
    bs = sl.shape[0]
    tree = np.asarray(build.tree_mask, dtype=bool).reshape(bs, n, n)
    positions = build.positions + np.repeat(sl, n)
    return TreeBuild(tree_mask=FullMask(sl, tree), positions=positions, retrieve_index=build.retrieve_index,
                     retrieve_next_token=build.retrieve_next_token, retrieve_next_sibling=build.retrieve_next_sibling)
