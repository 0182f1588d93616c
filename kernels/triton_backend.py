"""The Triton backend: every API function (spec/API.md) on Triton kernels, one program per request.

Runs on a CUDA GPU, or on the CPU under ``TRITON_INTERPRET=1`` (set before triton is imported).
Accept, build and sampling steps are Triton kernels; eagle_sample and sample_many are glue over
them (argmax, tiling, counting in torch). Every function takes ``validate=True`` as the torch
backend does; benchmarks pass ``validate=False``.
"""
from __future__ import annotations

from types import SimpleNamespace

from specviz.reference import API_FUNCTIONS

from . import triton_dspark, triton_sampling, triton_tree, triton_verify
from .torch_backend import validate_one
from .torch_montecarlo import sample_many_with
from .triton_common import one_launch_at_a_time, triton_device


def _run_chain(batch, u, uf):
    return triton_verify.chain_launch(batch["candidates"], batch["retrieve_index"], u, uf, batch["target_probs"],
                                      batch["draft_probs"], new=batch.get("semantics", "0.5.23") == "0.5.23")


def _run_tree(batch, u, uf):
    predicts, accept_index, k, _ = triton_verify.tree_sampling_launch(
        batch["candidates"].contiguous(), batch["retrieve_index"], batch["retrieve_next_token"].contiguous(),
        batch["retrieve_next_sibling"].contiguous(), u, uf, batch["target_probs"],
        W=int(batch["num_speculative_tokens"]), threshold_single=batch.get("threshold_single", 1.0),
        threshold_acc=batch.get("threshold_acc", 1.0), new=batch.get("semantics", "0.5.23") == "0.5.23")
    return predicts, accept_index, k


def sample_many(algorithm, inputs, *, num_trials, seed, device=None):
    """``num_trials`` draws of request 0 of ``inputs`` as one Triton launch (fresh coins per trial).

    The probability tables are expanded with a batch stride of 0 (no copy). Under the interpreter
    every trial is a Python-level program: keep num_trials in the thousands there.
    """
    dev = device if device is not None else triton_device(*inputs.values())

    def run_chain(batch, u, uf):
        batch = dict(batch, candidates=batch["candidates"].contiguous())
        return _run_chain(batch, u, uf)

    return sample_many_with(run_chain, _run_tree, validate_one, algorithm, inputs, num_trials=num_trials, seed=seed,
                            device=dev)


FUNCTIONS = {
    "build_tree": triton_tree.build_tree,
    "verify_tree_greedy": triton_verify.verify_tree_greedy,
    "tree_sampling_target_only": triton_verify.tree_sampling_target_only,
    "chain_rejection_sampling": triton_verify.chain_rejection_sampling,
    "target_probs_from_logits": triton_sampling.target_probs_from_logits,
    "eagle_sample": triton_sampling.eagle_sample,
    "fill_bonus_tokens": triton_sampling.fill_bonus_tokens,
    "dspark_accept_greedy": triton_dspark.dspark_accept_greedy,
    "dspark_accept_sampling": triton_dspark.dspark_accept_sampling,
    "cap_correct_len": triton_dspark.cap_correct_len,
    "finalize_accept_lens": triton_dspark.finalize_accept_lens,
    "build_out_tokens": triton_dspark.build_out_tokens,
    "sample_many": sample_many,
}
assert set(FUNCTIONS) == set(API_FUNCTIONS)


def backend() -> SimpleNamespace:
    """The registry entry (specviz.algorithms.backends): name, label ('triton (GPU)' / 'triton (CPU interpreter)'), functions."""
    import os

    label = "triton (CPU interpreter)" if os.environ.get("TRITON_INTERPRET") == "1" else "triton (GPU)"
    return SimpleNamespace(name="triton", label=label, **{k: one_launch_at_a_time(f) for k, f in FUNCTIONS.items()})
