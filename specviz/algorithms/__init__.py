"""The algorithm registry: every Accept algorithm declared once.

Each entry says its key (the scenario's ``algorithm``), titles, topology (tree or chain), family
(EAGLE's accept_index outputs or DSpark's correct_len outputs), decision (greedy or sampling),
the SGLang-form inputs it takes beyond the tree arrays, the reference function it runs, the
Monte Carlo sampler key (``sample_many``) when it samples, its page and preset, and how to call
it on a backend and in an exported pytest. The engine, scenario inputs, invariants, CLI, export,
audit and both Monte Carlo drivers read from here; an unknown key is a ``SpecvizError`` naming the
field, never a fallback to another algorithm.

This module is metadata only (it sits beside the scenario and imports no reference code); how an
entry is called on a backend and in an exported test lives in ``specviz.algorithms.calls``,
keyed the same way (a test checks the keys match). Adding an algorithm: an entry here and in
calls.py, a reference function, the kernels, a preset and a page. The package also holds the
backends over kernels/ (``backends``: one set of function names for numpy, torch and Triton) and the
samplers' closed-form output distributions (``distributions``); it may import specviz.base,
specviz.reference and kernels/.
"""
from __future__ import annotations

from dataclasses import dataclass
from specviz.base.errors import SpecvizError


@dataclass(frozen=True)
class Algorithm:
    key: str
    title: tuple  # (English, 简体中文)
    topology: str  # "tree" | "chain"
    family: str  # "eagle" (accept_index / predicts / accept_token_num) | "dspark" (correct_len / out_tokens)
    decision: str  # "greedy" | "sampling"
    inputs: tuple  # SGLang-form inputs beyond candidates / retrieve_* / seq_lens
    reference: str  # the numpy reference function (specviz.reference.<name>)
    page: str  # pages/<page>.py
    preset: str  # scenarios/<preset>.json
    montecarlo: str | None = None  # sample_many's algorithm key, for samplers

    @property
    def is_tree(self) -> bool:
        return self.topology == "tree"

    @property
    def samples(self) -> bool:
        return self.decision == "sampling"


REGISTRY: dict[str, Algorithm] = {a.key: a for a in (
    Algorithm("greedy", ("Greedy accept", "贪心接受"), "tree", "eagle", "greedy", ("target_predict",),
              "verify_tree_greedy", "greedy", "running_example"),
    Algorithm("target_only", ("Target-only tree sampling", "仅目标模型的树采样"), "tree", "eagle", "sampling",
              ("target_probs", "uniform_samples", "uniform_samples_for_final_sampling"), "tree_sampling_target_only",
              "target_only", "target_only_sampling", montecarlo="tree_sampling_target_only"),
    Algorithm("chain_rejection", ("Chain rejection sampling", "链式拒绝采样"), "chain", "eagle", "sampling",
              ("target_probs", "uniform_samples", "uniform_samples_for_final_sampling", "draft_probs"),
              "chain_rejection_sampling", "chain_sampling", "pq_example", montecarlo="chain_rejection_sampling"),
    Algorithm("dspark_greedy", ("DSpark chain (greedy)", "DSpark 链（贪心）"), "chain", "dspark", "greedy",
              ("target_predict", "verify_lens"), "dspark_accept_greedy", "dspark", "dspark_chain"),
    Algorithm("dspark_sampling", ("DSpark chain (sampling)", "DSpark 链（采样）"), "chain", "dspark", "sampling",
              ("target_probs", "uniform_samples", "uniform_samples_for_final_sampling", "draft_probs", "verify_lens"),
              "dspark_accept_sampling", "dspark", "dspark_sampling"),
)}

KEYS = tuple(REGISTRY)


def get(key: str) -> Algorithm:
    """The registry entry for ``key``; a SpecvizError naming the field for an unknown one."""
    try:
        return REGISTRY[key]
    except (KeyError, TypeError):
        raise SpecvizError("algorithm", f"is {key!r}: choose one of {', '.join(KEYS)}") from None


def by_montecarlo(key: str) -> Algorithm:
    """The entry whose Monte Carlo sampler key is ``key`` (sample_many's ``algorithm``)."""
    for a in REGISTRY.values():
        if a.montecarlo == key:
            return a
    raise SpecvizError("algorithm", f"is {key!r}: choose one of "
                       + ", ".join(a.montecarlo for a in REGISTRY.values() if a.montecarlo))
