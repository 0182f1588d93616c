"""Batched Monte Carlo over one scenario (API.md ``sample_many``), numpy flavour.

The same request is repeated ``num_trials`` times as one batch with fresh coins per trial, and
the emitted token sequences (predicts over the valid accept_index prefix) are counted.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.base.results import SampleCounts
from specviz.base.validate import to_numpy

SAMPLERS = ("chain_rejection_sampling", "tree_sampling_target_only")
MAX_TRIALS = 10_000_000


def check_sample_many_args(algorithm: str, inputs: dict, num_trials) -> None:
    if algorithm not in SAMPLERS:
        raise SpecvizError("algorithm", f"is {algorithm!r}: choose one of {', '.join(SAMPLERS)}")
    if isinstance(num_trials, bool) or not isinstance(num_trials, (int, np.integer)) or not 1 <= num_trials <= MAX_TRIALS:
        raise SpecvizError("num_trials", f"is {num_trials!r}: give a whole number in [1, {MAX_TRIALS}]")
    for key in ("uniform_samples", "uniform_samples_for_final_sampling"):
        if key in inputs:
            raise SpecvizError(key, "must not be given to sample_many: it draws fresh coins for every trial")


def tile_request(inputs: dict, num_trials: int) -> dict:
    """Repeat request 0 of every batched input ``num_trials`` times (retrieve_index rebased per trial)."""
    out = {}
    for key, value in inputs.items():
        if key in ("num_speculative_tokens", "threshold_single", "threshold_acc", "semantics"):
            out[key] = value
            continue
        arr = to_numpy(key, value)
        out[key] = np.repeat(arr[:1], num_trials, axis=0)
    n = out["candidates"].shape[1]
    rebase = (np.arange(num_trials, dtype=np.int64) * n)[:, None]
    out["retrieve_index"] = out["retrieve_index"] - out["retrieve_index"][:, :1] + rebase
    return out


def count_outcomes(predicts, accept_index, accept_token_num, vocab_size: int, width: int) -> SampleCounts:
    pr = np.asarray(predicts).reshape(-1)
    ai = np.asarray(accept_index)
    k = np.asarray(accept_token_num).astype(np.int64)
    num_trials = ai.shape[0]
    first = pr[ai[:, 0]]
    first_counts = np.bincount(first, minlength=vocab_size).astype(np.int64)
    lens = np.bincount(k + 1, minlength=width + 1).astype(np.int64)
    valid = np.arange(ai.shape[1])[None, :] <= k[:, None]
    toks = np.where(valid, pr[np.where(valid, ai, 0)], -1)
    uniq, counts = np.unique(toks, axis=0, return_counts=True)
    seqs = Counter()
    for row, c in zip(uniq, counts):
        seqs[tuple(int(t) for t in row if t >= 0)] += int(c)
    return SampleCounts(num_trials=num_trials, first_token_counts=first_counts, sequence_counts=dict(seqs),
                        accept_len_counts=lens)


def sample_many(algorithm: str, inputs: dict, *, num_trials: int, seed: int) -> SampleCounts:
    """Run ``num_trials`` independent draws of request 0 of ``inputs`` with the numpy reference."""
    from specviz.reference.chain_sampling import chain_rejection_sampling
    from specviz.reference.target_only import tree_sampling_target_only

    check_sample_many_args(algorithm, inputs, num_trials)
    batch = tile_request(inputs, num_trials)
    rng = np.random.default_rng(seed)
    n = batch["candidates"].shape[1]
    u = rng.random((num_trials, n), dtype=np.float32)
    uf = rng.random(num_trials, dtype=np.float32)
    if algorithm == "chain_rejection_sampling":
        res = chain_rejection_sampling(batch["candidates"], batch["retrieve_index"], u, uf, batch["target_probs"],
                                       batch["draft_probs"], num_speculative_tokens=batch["num_speculative_tokens"],
                                       semantics=batch.get("semantics", "0.5.23"))
    else:
        res = tree_sampling_target_only(batch["candidates"], batch["retrieve_index"], batch["retrieve_next_token"],
                                        batch["retrieve_next_sibling"], u, uf, batch["target_probs"],
                                        num_speculative_tokens=batch["num_speculative_tokens"],
                                        threshold_single=batch.get("threshold_single", 1.0),
                                        threshold_acc=batch.get("threshold_acc", 1.0),
                                        semantics=batch.get("semantics", "0.5.23"))
    V = np.asarray(batch["target_probs"]).shape[-1]
    return count_outcomes(res.predicts, res.accept_index, res.accept_token_num, V, res.accept_index.shape[1])
