"""Triton kernels for DSpark / DFlash chain accept (SEMANTICS.md §8) and the small EAGLE hand-off ops.

DSpark's sampling accept is the chain kernel of ``triton_chain_kernels`` (it stores the bonus
itself); the kernels here are the greedy accept (one program per request, the window in lanes)
and elementwise kernels over the batch (BLOCK requests per program).
"""
import triton
import triton.language as tl


@triton.jit
def dspark_accept_greedy_kernel(candidates_ptr, target_predict_ptr, correct_len_ptr, bonus_ptr, T,
                                BLOCK_T: tl.constexpr):
    """correct_len[b] = leading run of candidates[b, t+1] == target_predict[b, t]; bonus = target_predict[b, correct_len]."""
    b = tl.program_id(0).to(tl.int64)
    t = tl.arange(0, BLOCK_T)
    m = t < T - 1
    draft = tl.load(candidates_ptr + b * T + t + 1, mask=m, other=0)
    target = tl.load(target_predict_ptr + b * T + t, mask=m, other=0)
    correct = tl.min(tl.where(m & (draft != target), t, T - 1), axis=0)  # index of the first mismatch
    tl.store(correct_len_ptr + b, correct.to(tl.int32))
    tl.store(bonus_ptr + b, tl.load(target_predict_ptr + b * T + correct))


@triton.jit
def cap_correct_len_kernel(correct_len_ptr, verify_lens_ptr, capped_ptr, trim_ptr, bs, BLOCK: tl.constexpr):
    """capped = min(correct_len, verify_lens - 1); cap_trim_lens = correct_len - capped."""
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < bs
    cl = tl.load(correct_len_ptr + r, mask=m, other=0)
    vl = tl.load(verify_lens_ptr + r, mask=m, other=1)
    capped = tl.minimum(cl, vl - 1)
    tl.store(capped_ptr + r, capped.to(tl.int32), mask=m)
    tl.store(trim_ptr + r, (cl - capped).to(tl.int32), mask=m)


@triton.jit
def finalize_accept_lens_kernel(correct_len_ptr, prefix_lens_ptr, commit_ptr, new_seq_ptr, bs, BLOCK: tl.constexpr):
    """commit_lens = correct_len + 1 (i32); new_seq_lens = prefix_lens + commit_lens (i64)."""
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < bs
    commit = tl.load(correct_len_ptr + r, mask=m, other=0) + 1
    tl.store(commit_ptr + r, commit.to(tl.int32), mask=m)
    tl.store(new_seq_ptr + r, tl.load(prefix_lens_ptr + r, mask=m, other=0) + commit, mask=m)


@triton.jit
def build_out_tokens_kernel(draft_tokens_ptr, correct_len_ptr, bonus_ptr, out_ptr, gamma, BLOCK_T: tl.constexpr):
    """out[b] = drafts, then 0 in column gamma, then out[b, correct_len] = bonus (one program per request)."""
    b = tl.program_id(0).to(tl.int64)
    t = tl.arange(0, BLOCK_T)
    T = gamma + 1
    drafts = tl.load(draft_tokens_ptr + b * gamma + t, mask=t < gamma, other=0)
    cl = tl.load(correct_len_ptr + b)
    row = tl.where(t == cl, tl.load(bonus_ptr + b), drafts)
    tl.store(out_ptr + b * T + t, row, mask=t < T)


@triton.jit
def fill_bonus_tokens_kernel(accept_tokens_ptr, accept_lens_ptr, bonus_ptr, bs, stride, BLOCK: tl.constexpr):
    """bonus[b] = accept_tokens_flat[b*stride + accept_lens[b] - 1] (stride = W = S+1, not n)."""
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < bs
    lens = tl.load(accept_lens_ptr + r, mask=m, other=1)
    tok = tl.load(accept_tokens_ptr + r.to(tl.int64) * stride + lens - 1, mask=m, other=0)
    tl.store(bonus_ptr + r, tok.to(tl.int32), mask=m)
