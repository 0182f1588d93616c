"""How each registered algorithm is called: on a backend (the engine) and in an exported pytest.

Keyed by the registry's keys (specviz.algorithms.REGISTRY); above the numpy reference.
"""
from __future__ import annotations

from specviz.base.errors import SpecvizError
from specviz.algorithms import REGISTRY


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
    if kw.get("trace") is not None:
        trace_dspark_tail(kw["trace"], inputs, out, greedy=False)
    return out


def _dspark_greedy(s, inputs, ops, kw):
    correct_len, _bonus = ops.dspark_accept_greedy(inputs["candidates"], inputs["target_predict"], **kw)
    out = {"raw_correct_len": _np(correct_len)}
    out.update(dspark_lengths(s, inputs, _np(correct_len), target_predict=_np(inputs["target_predict"])))
    if kw.get("trace") is not None:
        trace_dspark_tail(kw["trace"], inputs, out, greedy=True)
    return out


def trace_dspark_tail(trace, inputs, out: dict, *, greedy: bool) -> None:
    """Record the steps after the accept kernel (SEMANTICS §8) in the one trace, once per request.

    The accept kernel's trace (AcceptGreedy, or the chain sampler) ends each request with its
    ``commit`` at the uncapped length. After it: ``cap`` (CapCorrectLen, only when the request's
    verify window is shorter than T: capped = min(correct_len, verify_lens - 1), the bonus re-read
    at capped) and ``finalize`` (FinalizeAcceptLens: commit_lens, new_seq_lens). Their writes
    leave the traced arrays equal to the result, so every frame and caption reads the capped
    values from the events, never from a second computation. A kernel ``terminal`` that the cap
    overrides is marked ``provisional``."""
    import dataclasses

    import numpy as np

    cand, prefix, vlens = _np(inputs["candidates"]), _np(inputs["seq_lens"]), _np(inputs["verify_lens"])
    bs, T = cand.shape
    for name in ("correct_len", "bonus", "cap_trim_lens", "commit_lens", "new_seq_lens"):
        if name not in trace.initial:
            trace.initial[name] = np.zeros(bs, dtype=np.asarray(out[name]).dtype)
    raw = [int(x) for x in out["raw_correct_len"]]
    events = []
    for ev in trace.events:
        b = ev.request
        if ev.kind == "terminal" and int(out["correct_len"][b]) != raw[b]:
            ev = dataclasses.replace(ev, data={**ev.data, "provisional": True})
        events.append(ev)
        if ev.kind != "commit":
            continue
        k, bonus, trim = int(out["correct_len"][b]), int(out["bonus"][b]), int(out["cap_trim_lens"][b])
        gather_row = None if greedy else int(np.asarray(out["accept_index"])[b, k])
        writes = [("correct_len", b, k), ("bonus", b, bonus), ("cap_trim_lens", b, trim)]
        if int(vlens[b]) < T:
            trace.emit("cap", b, k, writes, raw=raw[b], capped=k, verify_len=int(vlens[b]), trim=trim, bonus=bonus,
                       greedy=greedy, gather_row=gather_row, T=T)
            events.append(trace.events.pop())
        commit = int(out["commit_lens"][b])
        trace.emit("finalize", b, k, writes + [("commit_lens", b, commit), ("new_seq_lens", b, int(out["new_seq_lens"][b]))],
                   k=k, commit_len=commit, prefix=int(prefix[b]), new_seq_len=int(out["new_seq_lens"][b]), bonus=bonus,
                   output=[int(x) for x in np.asarray(out["out_tokens"])[b][:commit]],
                   greedy=greedy, gather_row=gather_row, T=T)
        events.append(trace.events.pop())
    trace.events = events


def dspark_lengths(s, inputs, correct_len, **bonus_src) -> dict:
    """Window cap, bonus at the capped length, finalize, out tokens (SEMANTICS §8)."""
    import numpy as np

    from specviz import reference as ref

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

# (scenario, inputs, ops, trace_kwargs) -> dict of numpy arrays
CALLS = {"greedy": _greedy, "target_only": _target_only, "chain_rejection": _chain,
         "dspark_greedy": _dspark_greedy, "dspark_sampling": _dspark_sampling}

# (scenario) -> Python source of the reference call in an exported test
EXPORT_CALLS = {
    "greedy": lambda s: (f"ref.verify_tree_greedy({_TREE}, TARGET_PREDICT,\n"
                         f"                                 num_speculative_tokens={s.width}, predicts_init={s.predicts_init})"),
    "target_only": lambda s: (f"ref.tree_sampling_target_only({_TREE},\n"
                              f"        UNIFORM_SAMPLES, UNIFORM_SAMPLES_FOR_FINAL_SAMPLING, TARGET_PROBS, num_speculative_tokens={s.width},\n"
                              f"        threshold_single={s.threshold_single!r}, threshold_acc={s.threshold_acc!r}, semantics={s.semantics!r})"),
    "chain_rejection": lambda s: ("ref.chain_rejection_sampling(CANDIDATES, RETRIEVE_INDEX, UNIFORM_SAMPLES, UNIFORM_SAMPLES_FOR_FINAL_SAMPLING,\n"
                                  f"        TARGET_PROBS, DRAFT_PROBS, num_speculative_tokens={s.width}, semantics={s.semantics!r})"),
    "dspark_greedy": lambda s: "ref.dspark_accept_greedy(CANDIDATES, TARGET_PREDICT)",
    "dspark_sampling": lambda s: ("ref.dspark_accept_sampling(CANDIDATES, TARGET_PROBS, DRAFT_PROBS, UNIFORM_SAMPLES, "
                                  "UNIFORM_SAMPLES_FOR_FINAL_SAMPLING)"),
}
assert set(CALLS) == set(EXPORT_CALLS) == set(REGISTRY), "every registered algorithm needs its calls"


def call(s, inputs: dict, ops, trace_kwargs: dict) -> dict:
    """Run scenario ``s``'s algorithm with ``ops`` (the reference module or a backend namespace)."""
    if s.algorithm not in CALLS:
        raise SpecvizError("algorithm", f"is {s.algorithm!r}: choose one of {', '.join(CALLS)}")
    return CALLS[s.algorithm](s, inputs, ops, trace_kwargs)


def export_call(s) -> str:
    if s.algorithm not in EXPORT_CALLS:
        raise SpecvizError("algorithm", f"is {s.algorithm!r}: choose one of {', '.join(EXPORT_CALLS)}")
    return EXPORT_CALLS[s.algorithm](s)
