"""The algorithm registry: every Accept algorithm declared once.

Each entry says its key (the scenario's ``algorithm``), titles, topology (tree or chain), family
(EAGLE's accept_index outputs or DSpark's correct_len outputs), decision (greedy or sampling),
the SGLang-form inputs it takes beyond the tree arrays, the reference function it runs, the
Monte Carlo sampler key (``sample_many``) when it samples, its page and preset, and how to call
it on a backend and in an exported pytest. The engine, scenario inputs, invariants, CLI, export,
audit and both Monte Carlo drivers read from here; an unknown key is a ``SpecvizError`` naming the
field, never a fallback to another algorithm.

Adding an algorithm: an entry here (with its ``call`` and ``export_call``), a reference function,
the kernels, a preset and a page.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import SpecvizError


@dataclass(frozen=True)
class Algorithm:
    key: str
    title: tuple  # (English, 简体中文)
    topology: str  # "tree" | "chain"
    family: str  # "eagle" (accept_index / predicts / accept_token_num) | "dspark" (correct_len / out_tokens)
    decision: str  # "greedy" | "sampling"
    inputs: tuple  # SGLang-form inputs beyond candidates / retrieve_* / seq_lens
    reference: str  # the numpy reference function (specviz.reference.<name>)
    call: Callable  # (scenario, inputs, ops, trace_kwargs) -> dict of numpy arrays
    export_call: Callable  # (scenario) -> Python source of the reference call in an exported test
    page: str  # pages/<page>.py
    preset: str  # scenarios/<preset>.json
    montecarlo: str | None = None  # sample_many's algorithm key, for samplers

    @property
    def is_tree(self) -> bool:
        return self.topology == "tree"

    @property
    def samples(self) -> bool:
        return self.decision == "sampling"


def _np(x):
    import numpy as np

    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _tree_args(inputs):
    return (inputs["candidates"], inputs["retrieve_index"], inputs["retrieve_next_token"], inputs["retrieve_next_sibling"])


def _greedy(s, inputs, ops, kw):
    r = ops.verify_tree_greedy(*_tree_args(inputs), inputs["target_predict"], num_speculative_tokens=s.width,
                               predicts_init=s.predicts_init, **kw)
    return {k: _np(v) for k, v in r.as_dict().items()}


def _target_only(s, inputs, ops, kw):
    r = ops.tree_sampling_target_only(*_tree_args(inputs), inputs["uniform_samples"], inputs["uniform_samples_for_final_sampling"],
                                      inputs["target_probs"], num_speculative_tokens=s.width,
                                      threshold_single=s.threshold_single, threshold_acc=s.threshold_acc,
                                      semantics=s.semantics, **kw)
    return {k: _np(v) for k, v in r.as_dict().items()}


def _chain(s, inputs, ops, kw):
    r = ops.chain_rejection_sampling(inputs["candidates"], inputs["retrieve_index"], inputs["uniform_samples"],
                                     inputs["uniform_samples_for_final_sampling"], inputs["target_probs"],
                                     inputs["draft_probs"], num_speculative_tokens=s.width, semantics=s.semantics, **kw)
    return {k: _np(v) for k, v in r.as_dict().items()}


def _dspark_sampling(s, inputs, ops, kw):
    out = _chain(s, inputs, ops, kw)
    out.update(dspark_lengths(s, inputs, out["accept_token_num"], predicts=out["predicts"], accept_index=out["accept_index"]))
    return out


def _dspark_greedy(s, inputs, ops, kw):
    correct_len, _bonus = ops.dspark_accept_greedy(inputs["candidates"], inputs["target_predict"], **kw)
    out = {"raw_correct_len": _np(correct_len)}
    out.update(dspark_lengths(s, inputs, _np(correct_len), target_predict=_np(inputs["target_predict"])))
    return out


def dspark_lengths(s, inputs, correct_len, **bonus_src) -> dict:
    """Window cap, bonus at the capped length, finalize, out tokens (SEMANTICS §8)."""
    import numpy as np

    from .. import reference as ref

    cand, prefix, verify_lens = _np(inputs["candidates"]), _np(inputs["seq_lens"]), _np(inputs["verify_lens"])
    capped, trim = ref.cap_correct_len(correct_len, verify_lens)
    bonus = ref.dspark_bonus_at(capped, **bonus_src)
    commit_lens, new_seq_lens = ref.finalize_accept_lens(capped, prefix)
    out_tokens = ref.build_out_tokens(cand[:, 1:], capped, bonus)
    T = cand.shape[1]
    kv_columns = np.where(np.arange(T)[None, :] < commit_lens[:, None], prefix[:, None] + np.arange(T)[None, :], -1)
    return {"correct_len": capped, "cap_trim_lens": trim, "bonus": bonus, "commit_lens": commit_lens,
            "new_seq_lens": new_seq_lens, "out_tokens": out_tokens, "kv_columns": kv_columns,
            "raw_correct_len": np.asarray(correct_len)}


_TREE = "CANDIDATES, RETRIEVE_INDEX, RETRIEVE_NEXT_TOKEN, RETRIEVE_NEXT_SIBLING"

REGISTRY: dict[str, Algorithm] = {a.key: a for a in (
    Algorithm("greedy", ("Greedy accept", "贪心接受"), "tree", "eagle", "greedy", ("target_predict",),
              "verify_tree_greedy", _greedy,
              lambda s: (f"ref.verify_tree_greedy({_TREE}, TARGET_PREDICT,\n"
                         f"                                 num_speculative_tokens={s.width}, predicts_init={s.predicts_init})"),
              "greedy", "running_example"),
    Algorithm("target_only", ("Target-only tree sampling", "仅目标模型的树采样"), "tree", "eagle", "sampling",
              ("target_probs", "uniform_samples", "uniform_samples_for_final_sampling"), "tree_sampling_target_only",
              _target_only,
              lambda s: (f"ref.tree_sampling_target_only({_TREE},\n"
                         f"        UNIFORM_SAMPLES, UNIFORM_SAMPLES_FOR_FINAL_SAMPLING, TARGET_PROBS, num_speculative_tokens={s.width},\n"
                         f"        threshold_single={s.threshold_single!r}, threshold_acc={s.threshold_acc!r}, semantics={s.semantics!r})"),
              "target_only", "target_only_sampling", montecarlo="tree_sampling_target_only"),
    Algorithm("chain_rejection", ("Chain rejection sampling", "链式拒绝采样"), "chain", "eagle", "sampling",
              ("target_probs", "uniform_samples", "uniform_samples_for_final_sampling", "draft_probs"),
              "chain_rejection_sampling", _chain,
              lambda s: ("ref.chain_rejection_sampling(CANDIDATES, RETRIEVE_INDEX, UNIFORM_SAMPLES, UNIFORM_SAMPLES_FOR_FINAL_SAMPLING,\n"
                         f"        TARGET_PROBS, DRAFT_PROBS, num_speculative_tokens={s.width}, semantics={s.semantics!r})"),
              "chain_sampling", "pq_example", montecarlo="chain_rejection_sampling"),
    Algorithm("dspark_greedy", ("DSpark chain (greedy)", "DSpark 链（贪心）"), "chain", "dspark", "greedy",
              ("target_predict", "verify_lens"), "dspark_accept_greedy", _dspark_greedy,
              lambda s: "ref.dspark_accept_greedy(CANDIDATES, TARGET_PREDICT)", "dspark", "dspark_chain"),
    Algorithm("dspark_sampling", ("DSpark chain (sampling)", "DSpark 链（采样）"), "chain", "dspark", "sampling",
              ("target_probs", "uniform_samples", "uniform_samples_for_final_sampling", "draft_probs", "verify_lens"),
              "dspark_accept_sampling", _dspark_sampling,
              lambda s: ("ref.dspark_accept_sampling(CANDIDATES, TARGET_PROBS, DRAFT_PROBS, UNIFORM_SAMPLES, "
                         "UNIFORM_SAMPLES_FOR_FINAL_SAMPLING)"),
              "dspark", "dspark_sampling"),
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
