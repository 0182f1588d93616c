"""Triton kernel for the tree build (SEMANTICS.md §2-§3): one program per request, its lanes the nodes.

SGLang's Triton builder walks nodes one at a time and searches ``selected_index`` linearly for
every parent (O(n^2) dependent loads per request, plus an O(n * depth * n) mask walk). Here the
whole request is a handful of [n, n] register tiles:

* parent of node i: match its parent candidate against every selected candidate at once;
* first child of p = the lowest i whose parent is p; next sibling of i = the next higher node with
  i's parent (the closed form of SGLang's reverse-order push-front loop);
* ancestors: the reflexive-transitive closure of "is the parent of", by ceil(log2(depth))
  squarings of a 0/1 matrix on the tensor cores (``tl.dot``). A node lies at most ``depth``
  steps below the root (its candidate's draft step), and an orphan's chain (§3.4) ends at the
  orphan, so the closure is exactly the set SGLang's bounded walk marks; positions count it.
  (The launcher's validation enforces that precondition: a parent slot names a candidate of the
  step before, see ``torch_common.check_parent_steps``.)
"""
import triton
import triton.language as tl


@triton.jit
def build_tree_kernel(parent_list_ptr, selected_index_ptr, seq_lens_ptr, seq_cumsum_ptr,
                      tree_mask_ptr, links_ptr,
                      parent_list_stride: tl.constexpr, topk: tl.constexpr, depth: tl.constexpr, n: tl.constexpr,
                      MASK_MODE: tl.constexpr, BLOCK_N: tl.constexpr, SQUARINGS: tl.constexpr,
                      BLOCK_S: tl.constexpr, PREFIX_BLOCK: tl.constexpr):
    """Request b = program_id(0).

    parent_list [bs, *] i64 (row stride parent_list_stride), selected_index [bs, n-1] i64,
    seq_lens / seq_cumsum (inclusive prefix sum; FULL_MASK only) [bs] i64; outputs links [4, bs, n] i64 =
    (retrieve_index, retrieve_next_token, retrieve_next_sibling, positions) in one buffer (one pointer
    argument and one allocation instead of four; bs = the grid), tree_mask: MASK_MODE 0 = FULL_MASK bool
    (every cell written: the prefix cells True, BLOCK_S columns a store), 1 = QLEN_ONLY bool,
    2 = QLEN_ONLY_BITPACKING (a signed view of the uint buffer). BLOCK_N >= 16 (tl.dot); SQUARINGS = ceil(log2(depth)). PREFIX_BLOCK > 0 (FULL_MASK,
    small batches): the program sums the lengths of the requests before it itself, PREFIX_BLOCK a load,
    and seq_cumsum is unread (the launcher's cumsum, a kernel of its own, is saved; integer sums are exact).
    """
    b = tl.program_id(0).to(tl.int64)
    bs = tl.num_programs(0).to(tl.int64)
    i = tl.arange(0, BLOCK_N)
    valid = i < n
    draft = valid & (i >= 1)
    sel = tl.load(selected_index_ptr + b * (n - 1) + i - 1, mask=draft, other=-1).to(tl.int32)  # candidate of node i
    slot = sel // topk
    parent_cand = tl.load(parent_list_ptr + b * parent_list_stride + slot, mask=draft & (slot > 0), other=-1).to(tl.int32)
    # parent node = the node whose candidate equals parent_cand (candidates are distinct)
    same_cand = (sel[None, :] == parent_cand[:, None]) & draft[None, :] & (slot[:, None] > 0)
    holder = tl.max(tl.where(same_cand, i[None, :], -1), axis=1)
    par = tl.where(slot == 0, 0, tl.where(holder >= 1, holder, -2))  # -2: parent not selected (§3.4)
    par = tl.where(draft, par, -1)

    big = BLOCK_N + 1
    # first child: lowest i with parent p  (rows p, columns i)
    is_child = (par[None, :] == i[:, None]) & draft[None, :]
    first = tl.min(tl.where(is_child, i[None, :], big), axis=1)
    # next sibling: lowest j > i with the same valid parent (rows i, columns j)
    sib = (par[:, None] == par[None, :]) & (i[None, :] > i[:, None]) & (par[:, None] >= 0) & draft[None, :]
    nxt = tl.min(tl.where(sib, i[None, :], big), axis=1)
    row0 = b * n
    tl.store(links_ptr + bs * n + row0 + i, tl.where(first < big, first, -1).to(tl.int64), mask=valid)
    tl.store(links_ptr + 2 * bs * n + row0 + i, tl.where(nxt < big, nxt, -1).to(tl.int64), mask=valid)
    tl.store(links_ptr + row0 + i, row0 + i, mask=valid)

    # Ancestor sets: closure of (self | parent) by repeated squaring (0/1 counts are exact in fp32).
    reach = ((i[:, None] == i[None, :]) | (par[:, None] == i[None, :])) & valid[:, None]
    for _ in tl.static_range(SQUARINGS):
        r16 = reach.to(tl.float16)
        reach = tl.dot(r16, r16) > 0.0
    anc = reach | ((i[None, :] == 0) & valid[:, None])
    # steps = non-root nodes on the chain (the reference's walk count)
    steps = tl.sum(reach.to(tl.int32), axis=1) - tl.sum(tl.where(i[None, :] == 0, reach.to(tl.int32), 0), axis=1)
    seq_len = tl.load(seq_lens_ptr + b)
    tl.store(links_ptr + 3 * bs * n + row0 + i, seq_len + steps, mask=valid)
    cell_ok = valid[:, None] & valid[None, :]
    if MASK_MODE == 0:
        if PREFIX_BLOCK > 0:
            before = tl.zeros([PREFIX_BLOCK], tl.int64)
            for s in range(0, b, PREFIX_BLOCK):
                j = s + tl.arange(0, PREFIX_BLOCK)
                before += tl.load(seq_lens_ptr + j, mask=j < b, other=0)
            seq_prefix = tl.sum(before, axis=0)  # tokens of the requests before b
        else:
            seq_prefix = tl.load(seq_cumsum_ptr + b) - seq_len  # tokens of the requests before b
        start = n * n * b + n * seq_prefix + i * (seq_len + n) + seq_len  # [BLOCK_N] row starts
        tl.store(tree_mask_ptr + start[:, None] + i[None, :], anc, mask=cell_ok)
        # The prefix cells (every row sees the whole verified prefix): True, written here instead of a
        # separate fill of the whole mask before the launch (SGLang's wrapper pre-fills with ones).
        offs_s = tl.arange(0, BLOCK_S)
        row_prefix = start - seq_len
        for s0 in range(0, seq_len, BLOCK_S):
            cols = s0 + offs_s
            tl.store(tree_mask_ptr + row_prefix[:, None] + cols[None, :],
                     tl.full([BLOCK_N, BLOCK_S], 1, tl.int1), mask=valid[:, None] & (cols < seq_len)[None, :])
    elif MASK_MODE == 1:
        tl.store(tree_mask_ptr + b * n * n + i[:, None] * n + i[None, :], anc, mask=cell_ok)
    else:
        bits = tl.where(anc & cell_ok, tl.full([BLOCK_N, BLOCK_N], 1, tl.int64) << i[None, :].to(tl.int64), 0)
        value = tl.sum(bits, axis=1)
        tl.store(tree_mask_ptr + row0 + i, value.to(tree_mask_ptr.dtype.element_ty), mask=valid)
