"""Batched Monte Carlo over one scenario (API.md ``sample_many``) on the torch / Triton backends.

Request 0 of ``inputs`` is repeated ``num_trials`` times as one batch with fresh coins per
trial (a seeded ``torch.Generator``, so the draws differ from the numpy backend's but follow the
same distribution). The large probability tensors are *expanded* (stride 0 over the trials), not
copied, so 10^6 trials cost the coins and the outputs only.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import torch

from specviz.reference.montecarlo import check_sample_many_args
from specviz.base.results import SampleCounts

from .torch_common import F32, INT64, as_tensor

SCALARS = ("num_speculative_tokens", "threshold_single", "threshold_acc", "semantics")
TREE_KEYS = ("candidates", "retrieve_index", "retrieve_next_token", "retrieve_next_sibling")


def first_request(inputs: dict, device) -> dict:
    """Request 0 of every batched input as a tensor with a batch of 1 (retrieve_index rebased to 0)."""
    out = {}
    for key, value in inputs.items():
        if key in SCALARS:
            out[key] = value
            continue
        dtype = F32 if key in ("target_probs", "draft_probs") else INT64
        out[key] = as_tensor(key, value, dtype, device)[:1]
    out["retrieve_index"] = out["retrieve_index"] - out["retrieve_index"][:, :1]
    return out


def tile(one: dict, num_trials: int) -> dict:
    """Expand request 0 to ``num_trials`` requests; retrieve_index gets each trial's own row block."""
    out = {}
    for key, value in one.items():
        out[key] = value if key in SCALARS else value.expand(num_trials, *value.shape[1:])
    n = one["candidates"].shape[1]
    dev = one["candidates"].device
    out["retrieve_index"] = one["retrieve_index"] + (torch.arange(num_trials, dtype=INT64, device=dev) * n)[:, None]
    return out


def count_outcomes(predicts, accept_index, accept_token_num, vocab_size: int) -> SampleCounts:
    """Counts of first tokens, accept lengths and emitted sequences (computed with torch, returned as numpy)."""
    pr = predicts.reshape(-1).to(INT64)
    ai = accept_index.to(INT64)
    k = accept_token_num.to(INT64)
    num_trials, W = ai.shape
    first = pr[ai[:, 0]]
    first_counts = torch.bincount(first, minlength=vocab_size)
    lens = torch.bincount(k + 1, minlength=W + 1)
    valid = torch.arange(W, device=ai.device)[None, :] <= k[:, None]
    toks = torch.where(valid, pr[torch.where(valid, ai, 0)], torch.full_like(ai, -1))
    base = vocab_size + 1
    if W * np.log2(base) < 62:  # encode each sequence as one int64 (digits token+1, 0 = none)
        weights = base ** torch.arange(W - 1, -1, -1, device=ai.device, dtype=INT64)
        codes, counts = torch.unique(((toks + 1) * weights).sum(dim=1), return_counts=True)
        codes, counts = codes.cpu().numpy(), counts.cpu().numpy()
        seqs = Counter()
        for code, c in zip(codes, counts):
            digits = [(int(code) // int(base) ** (W - 1 - j)) % base for j in range(W)]
            seqs[tuple(d - 1 for d in digits if d > 0)] += int(c)
    else:
        uniq, counts = torch.unique(toks, dim=0, return_counts=True)
        seqs = Counter()
        for row, c in zip(uniq.cpu().numpy(), counts.cpu().numpy()):
            seqs[tuple(int(t) for t in row if t >= 0)] += int(c)
    return SampleCounts(num_trials=num_trials, first_token_counts=first_counts.cpu().numpy().astype(np.int64),
                        sequence_counts=dict(seqs), accept_len_counts=lens.cpu().numpy().astype(np.int64))


def sample_many_with(run_chain, run_tree, validate_one, algorithm: str, inputs: dict, *, num_trials: int, seed: int,
                     device, counts_from=None) -> SampleCounts:
    """Shared driver: validate request 0 once, tile it, draw coins, run the backend's batch sampler.

    ``run_chain(batch, u, uf)`` / ``run_tree(batch, u, uf)`` return (predicts, accept_index, k);
    ``counts_from(one, u, uf)``, when given, computes the SampleCounts from request 0 directly.
    """
    check_sample_many_args(algorithm, inputs, num_trials)
    one = first_request(inputs, device)
    validate_one(algorithm, one)
    n = one["candidates"].shape[1]
    gen = torch.Generator(device=device).manual_seed(int(seed))
    u = torch.rand((num_trials, n), generator=gen, dtype=F32, device=device)
    uf = torch.rand((num_trials,), generator=gen, dtype=F32, device=device)
    if counts_from is not None:
        return counts_from(one, u, uf)
    batch = tile(one, int(num_trials))
    # explicit per sampler (check_sample_many_args refused any other key): never a fallback
    runner = {"chain_rejection_sampling": run_chain, "tree_sampling_target_only": run_tree}[algorithm]
    predicts, accept_index, k = runner(batch, u, uf)
    return count_outcomes(predicts, accept_index, k, one["target_probs"].shape[-1])
