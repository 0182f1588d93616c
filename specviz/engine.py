"""Run a scenario: SGLang-form inputs -> the chosen backend's result -> the commit view.

The commit view is what the article teaches: which verify rows (root + accepted drafts) keep
their KV, which rows are discarded, the output tokens (predicts over the valid accept_index
prefix), the next root and new_seq_lens. The numpy reference also records the trace that the
app animates (only the reference records traces; other backends are compared with it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import reference as ref
from .scenario import Scenario
from .trace import Trace


@dataclass(frozen=True)
class RequestCommit:
    request: int
    seq_len: int
    num_correct_drafts: int  # k: accepted drafts (accept_token_num / correct_len)
    accept_len: int  # k + 1: emitted tokens = verify rows whose KV is kept
    accept_rows: list  # global rows in accept_index's valid prefix (root first)
    accept_nodes: list  # the same as node ids of this request
    committed_tokens: list  # input tokens of those rows: root + accepted drafts (R A C)
    output_tokens: list  # predicts at those rows: accepted drafts + bonus (A C X)
    committed_positions: list  # positions of the committed rows (seq_len + depth)
    discarded_nodes: list  # every other node: its verify state is thrown away
    next_root: int  # the bonus; it has no KV yet
    new_seq_len: int
    raw_gather: list  # predicts[accept_index] including -1 pads (the hazard), EAGLE only
    pad_slots: list  # accept_index slots holding -1


@dataclass
class Run:
    scenario: Scenario
    backend: str
    inputs: dict  # SGLang-form numpy arrays passed to the algorithm
    result: dict  # the backend's outputs as numpy arrays
    commits: list  # [RequestCommit] per request
    trace: Trace | None = None
    warnings: list = field(default_factory=list)

    @property
    def commit(self) -> RequestCommit:
        return self.commits[0]

    # Jupyter rich display: the accepted path, outputs and committed rows (escaped HTML, SVG tree).
    def _repr_html_(self) -> str:
        from .notebook import run_html

        return run_html(self)

    def _repr_svg_(self) -> str | None:
        from .notebook import run_svg

        return run_svg(self)


def scenario_inputs(s: Scenario) -> dict:
    """The algorithm's inputs in SGLang's tensor form (numpy, SGLang dtypes), batch-major."""
    bs, n = len(s.requests), s.n
    trees = [s.tree(b) for b in range(bs)]
    cand = np.array([t.tokens for t in trees], dtype=np.int64)  # [bs, n]
    ri = np.zeros((bs, n), np.int64)
    nt = np.zeros((bs, n), np.int64)
    ns = np.zeros((bs, n), np.int64)
    for b, t in enumerate(trees):
        ri[b], nt[b], ns[b] = t.retrieve_arrays(b)
    seq = np.array([r.seq_len for r in s.requests], dtype=np.int64)
    out = {"candidates": cand, "retrieve_index": ri, "retrieve_next_token": nt, "retrieve_next_sibling": ns,
           "seq_lens": seq}
    if s.algorithm in ("greedy", "dspark_greedy"):
        out["target_predict"] = np.array([s.target_predict(b) for b in range(bs)], dtype=np.int64)
    if s.algorithm in ("target_only", "chain_rejection", "dspark_sampling"):
        out["target_probs"] = np.stack([s.target_probs(b) for b in range(bs)]).astype(np.float32)
        out["uniform_samples"] = np.array([r.coins for r in s.requests], dtype=np.float32)
        out["uniform_samples_for_final_sampling"] = np.array([r.coin_final for r in s.requests], dtype=np.float32)
    if s.algorithm in ("chain_rejection", "dspark_sampling"):
        out["draft_probs"] = np.array([r.draft_probs for r in s.requests], dtype=np.float32)
    if s.algorithm.startswith("dspark"):
        out["verify_lens"] = np.array([r.verify_len if r.verify_len is not None else n for r in s.requests], dtype=np.int64)
    return out


def _np(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def call_algorithm(s: Scenario, inputs: dict, ops, trace: Trace | None = None) -> dict:
    """Run the scenario's algorithm on one backend (``ops``: reference module or a backend namespace)."""
    kw = {} if trace is None else {"trace": trace}
    W = s.width
    tree_args = (inputs["candidates"], inputs["retrieve_index"], inputs["retrieve_next_token"], inputs["retrieve_next_sibling"])
    if ops is not ref and not hasattr(ops, "__file__"):
        import torch  # noqa: PLC0415  backends take torch tensors

        def conv(a):
            return torch.from_numpy(np.ascontiguousarray(a))
        tree_args = tuple(conv(a) for a in tree_args)
        inputs = {k: conv(v) for k, v in inputs.items()}
    if s.algorithm == "greedy":
        r = ops.verify_tree_greedy(*tree_args, inputs["target_predict"], num_speculative_tokens=W,
                                   predicts_init=s.predicts_init, **kw)
        return {k: _np(v) for k, v in r.as_dict().items()}
    if s.algorithm == "target_only":
        r = ops.tree_sampling_target_only(*tree_args, inputs["uniform_samples"], inputs["uniform_samples_for_final_sampling"],
                                          inputs["target_probs"], num_speculative_tokens=W,
                                          threshold_single=s.threshold_single, threshold_acc=s.threshold_acc,
                                          semantics=s.semantics, **kw)
        return {k: _np(v) for k, v in r.as_dict().items()}
    if s.algorithm in ("chain_rejection", "dspark_sampling"):
        r = ops.chain_rejection_sampling(tree_args[0], tree_args[1], inputs["uniform_samples"],
                                         inputs["uniform_samples_for_final_sampling"], inputs["target_probs"],
                                         inputs["draft_probs"], num_speculative_tokens=W, semantics=s.semantics, **kw)
        out = {k: _np(v) for k, v in r.as_dict().items()}
        if s.algorithm == "dspark_sampling":
            out.update(_dspark_lengths(s, _np(inputs["candidates"]), _np(inputs["seq_lens"]), _np(inputs["verify_lens"]),
                                       out["accept_token_num"], predicts=out["predicts"], accept_index=out["accept_index"]))
        return out
    if s.algorithm == "dspark_greedy":
        correct_len, _bonus = ops.dspark_accept_greedy(tree_args[0], inputs["target_predict"], **kw)
        out = {"raw_correct_len": _np(correct_len)}
        out.update(_dspark_lengths(s, _np(inputs["candidates"]), _np(inputs["seq_lens"]), _np(inputs["verify_lens"]),
                                   _np(correct_len), target_predict=_np(inputs["target_predict"])))
        return out
    raise ValueError(s.algorithm)


def _dspark_lengths(s, cand, prefix, verify_lens, correct_len, **bonus_src) -> dict:
    """Window cap, bonus at the capped length, finalize, out tokens (SEMANTICS §8)."""
    capped, trim = ref.cap_correct_len(correct_len, verify_lens)
    bonus = ref.dspark_bonus_at(capped, **bonus_src)
    commit_lens, new_seq_lens = ref.finalize_accept_lens(capped, prefix)
    out_tokens = ref.build_out_tokens(cand[:, 1:], capped, bonus)
    T = cand.shape[1]
    kv_columns = np.where(np.arange(T)[None, :] < commit_lens[:, None], prefix[:, None] + np.arange(T)[None, :], -1)
    return {"correct_len": capped, "cap_trim_lens": trim, "bonus": bonus, "commit_lens": commit_lens,
            "new_seq_lens": new_seq_lens, "out_tokens": out_tokens, "kv_columns": kv_columns,
            "raw_correct_len": np.asarray(correct_len)}


def commit_view(s: Scenario, inputs: dict, result: dict) -> list[RequestCommit]:
    bs, n = len(s.requests), s.n
    commits = []
    for b in range(bs):
        tree = s.tree(b)
        depths = tree.depths()
        seq = int(s.requests[b].seq_len)
        cand = inputs["candidates"][b]
        if s.algorithm.startswith("dspark"):
            k = int(result["correct_len"][b])
            nodes = list(range(k + 1))
            rows = [b * n + i for i in nodes]
            outputs = [int(t) for t in result["out_tokens"][b][:k + 1]]
            raw, pads = [], []
            next_root = int(result["bonus"][b])
        else:
            k = int(result["accept_token_num"][b])
            ai = result["accept_index"][b]
            rows = [int(r) for r in ai[:k + 1]]
            nodes = [r - b * n for r in rows]
            pr = result["predicts"].reshape(-1)
            outputs = [int(pr[r]) for r in rows]
            raw = [int(v) for v in pr[ai]]
            pads = [j for j, r in enumerate(ai) if r == -1]
            next_root = outputs[-1]
        commits.append(RequestCommit(
            request=b, seq_len=seq, num_correct_drafts=k, accept_len=k + 1, accept_rows=rows, accept_nodes=nodes,
            committed_tokens=[int(cand[i]) for i in nodes], output_tokens=outputs,
            committed_positions=[seq + depths[i] for i in nodes],
            discarded_nodes=[i for i in range(n) if i not in nodes], next_root=next_root, new_seq_len=seq + k + 1,
            raw_gather=raw, pad_slots=pads))
    return commits


def run_scenario(s: Scenario, backend: str = "numpy", *, with_trace: bool = True) -> Run:
    """Run on one backend; the numpy reference also records the trace for the animation."""
    import warnings as _w

    inputs = scenario_inputs(s)
    trace = Trace() if with_trace else None
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        ref_result = call_algorithm(s, inputs, ref, trace)
    if backend == "numpy":
        result = ref_result
    else:
        from .backends import get_backend

        result = call_algorithm(s, inputs, get_backend(backend))
    return Run(scenario=s, backend=backend, inputs=inputs, result=result, commits=commit_view(s, inputs, result),
               trace=trace, warnings=[str(w.message) for w in caught])


def compare_backends(s: Scenario, backends) -> dict:
    """Backend -> None when it matches the reference exactly on integer outputs (and floats within 1e-6), else what differs."""
    from .backends import get_backend

    inputs = scenario_inputs(s)
    want = call_algorithm(s, inputs, ref)
    out = {}
    for name in backends:
        if name == "numpy":
            out[name] = None
            continue
        try:
            got = call_algorithm(s, inputs, get_backend(name))
        except Exception as exc:  # noqa: BLE001  a broken backend is reported, not raised, on the badge
            out[name] = f"failed: {exc}"
            continue
        diff = None
        for key, w in want.items():
            g = got.get(key)
            if g is None:
                continue
            g = np.asarray(g)
            same = np.allclose(g, w, atol=1e-6) if np.issubdtype(np.asarray(w).dtype, np.floating) else np.array_equal(g, w)
            if not same:
                diff = f"{key} differs: {g.tolist()} vs reference {np.asarray(w).tolist()}"
                break
        out[name] = diff
    return out
