"""The torch backend: every API function (spec/API.md) vectorised over the batch, CPU or CUDA.

Every function takes an extra keyword ``validate=True``: the checks run on numpy copies (a
device-to-host sync on a GPU), so benchmarks pass ``validate=False`` to time the computation alone.
"""
from __future__ import annotations

from types import SimpleNamespace

from specviz.reference import API_FUNCTIONS

from . import torch_dspark, torch_sampling, torch_tree, torch_verify
from .torch_common import chain_pick, chain_running_table, pick_device
from .torch_montecarlo import sample_many_with
from .torch_verify import chain_core, check_chain_inputs, check_tree_sampling_args, tree_sampling_core


def validate_one(algorithm: str, one: dict) -> None:
    """Check request 0 of a sample_many scenario once, with the sampler's own checks."""
    n = one["candidates"].shape[1]
    u = [[0.5] * n]
    if algorithm == "chain_rejection_sampling":
        check_chain_inputs(one["candidates"], one["retrieve_index"], u, [0.5], one["target_probs"],
                           one.get("draft_probs"), one["num_speculative_tokens"], one.get("semantics", "0.5.23"))
    else:
        check_tree_sampling_args(one["candidates"], one["retrieve_index"], one["retrieve_next_token"],
                                 one["retrieve_next_sibling"], u, [0.5], one["target_probs"],
                                 one["num_speculative_tokens"], one.get("threshold_single", 1.0),
                                 one.get("threshold_acc", 1.0), one.get("semantics", "0.5.23"))


def _run_chain(batch, u, uf):
    return chain_core(batch["candidates"], batch["retrieve_index"], u, uf, batch["target_probs"], batch["draft_probs"],
                      new=batch.get("semantics", "0.5.23") == "0.5.23")


def _run_tree(batch, u, uf):
    predicts, accept_index, k, _ = tree_sampling_core(
        batch["candidates"], batch["retrieve_index"], batch["retrieve_next_token"], batch["retrieve_next_sibling"], u, uf,
        batch["target_probs"], W=int(batch["num_speculative_tokens"]), threshold_single=batch.get("threshold_single", 1.0),
        threshold_acc=batch.get("threshold_acc", 1.0), new=batch.get("semantics", "0.5.23") == "0.5.23", want_buffer=False)
    return predicts, accept_index, k


def sample_many(algorithm, inputs, *, num_trials, seed, device=None):
    """``num_trials`` independent draws of request 0 of ``inputs`` as one torch batch (fresh coins per trial).

    inputs: the sampler's keyword inputs without coins (candidates, retrieve_*, target_probs,
    draft_probs for the chain, num_speculative_tokens, thresholds, semantics). Returns SampleCounts.
    The chain takes a shortcut that is exact for a repeated request: its outcome is fixed by
    (accepted drafts k, final token), so the accept tests use request 0's p/q values broadcast over
    the trials, the final token is a search in the N possible terminal rows' cumulative sums, and the
    sequences are counted with one bincount over k*V + token.
    """
    dev = device if device is not None else pick_device(*inputs.values())
    if algorithm == "chain_rejection_sampling":
        return sample_many_with(_run_chain, _run_tree, validate_one, algorithm, inputs, num_trials=num_trials,
                                seed=seed, device=dev, counts_from=_chain_counts)
    return sample_many_with(_run_chain, _run_tree, validate_one, algorithm, inputs, num_trials=num_trials, seed=seed,
                            device=dev)


def _chain_counts(one, u, uf):
    """SampleCounts of the chain rule over coins u [T, N], uf [T] for the single request ``one``."""
    import numpy as np
    import torch

    from specviz.base.results import SampleCounts

    cand = one["candidates"][0]
    p = one["target_probs"][0]  # [N, V]
    q = one["draft_probs"][0]  # [N-1, V]
    N, V = p.shape
    new = one.get("semantics", "0.5.23") == "0.5.23"
    trials = u.shape[0]
    if N > 1:
        tok = cand[1:].clamp(0, V - 1)
        slots = torch.arange(N - 1, device=p.device)
        pt, qt = p[slots, tok], q[slots, tok]
        ok = u[:, : N - 1] * qt < pt
        if new:
            ok &= (qt > 0) & (qt <= 1)
        k = torch.cumprod(ok.to(torch.int32), dim=1).sum(dim=1)
        qc = torch.where((q >= 0) & (q <= 1), q, torch.zeros((), device=q.device)) if new else q
        rows = torch.cat([torch.clamp(p[:-1] - qc, min=0.0), p[-1:]])  # terminal row after k accepted drafts
    else:
        k = torch.zeros(trials, dtype=torch.int64, device=p.device)
        rows = p
    # SGLang's float32 order (torch_common.chain_running_table): the N terminal rows once, then a search.
    running, total = chain_running_table(rows)  # [N, V], [N]
    final = chain_pick(running[k], uf.to(torch.float32) * total[k])  # none: V-1 (chain, every release)
    k = k.to(torch.int64)
    first = torch.where(k > 0, cand[min(1, N - 1)].expand(trials), final)
    joint = torch.bincount(k * V + final, minlength=N * V).cpu().numpy()
    drafts = [int(t) for t in cand[1:].cpu()]
    seqs = {tuple(drafts[:kk]) + (t,): int(c) for (kk, t), c in np.ndenumerate(joint.reshape(N, V)) if c}
    return SampleCounts(num_trials=trials, first_token_counts=torch.bincount(first, minlength=V).cpu().numpy(),
                        sequence_counts=seqs, accept_len_counts=torch.bincount(k + 1, minlength=N + 1).cpu().numpy())


FUNCTIONS = {
    "build_tree": torch_tree.build_tree,
    "verify_tree_greedy": torch_verify.verify_tree_greedy,
    "tree_sampling_target_only": torch_verify.tree_sampling_target_only,
    "chain_rejection_sampling": torch_verify.chain_rejection_sampling,
    "target_probs_from_logits": torch_sampling.target_probs_from_logits,
    "eagle_sample": torch_sampling.eagle_sample,
    "fill_bonus_tokens": torch_sampling.fill_bonus_tokens,
    "dspark_accept_greedy": torch_dspark.dspark_accept_greedy,
    "dspark_accept_sampling": torch_dspark.dspark_accept_sampling,
    "cap_correct_len": torch_dspark.cap_correct_len,
    "finalize_accept_lens": torch_dspark.finalize_accept_lens,
    "build_out_tokens": torch_dspark.build_out_tokens,
    "sample_many": sample_many,
}
assert set(FUNCTIONS) == set(API_FUNCTIONS)


def backend() -> SimpleNamespace:
    """The registry entry (specviz.algorithms.backends): name, label and every API function."""
    return SimpleNamespace(name="torch", label="torch", **FUNCTIONS)
