"""Run a scenario: SGLang-form inputs -> the chosen backend's result -> the commit view.

The commit view is what the article teaches: which verify rows (root + accepted drafts) keep
their KV, which rows are discarded, the output tokens (predicts over the valid accept_index
prefix), the next root and new_seq_lens. The numpy reference also records the trace that the
app animates (only the reference records traces; other backends are compared with it).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import numpy as np

from specviz import algorithms
from specviz.algorithms import calls
from specviz import reference as ref
from specviz.inputs.scenario import Scenario
from specviz.base.trace import Trace


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

    # Jupyter rich display: the accepted path, outputs and committed rows (escaped HTML, SVG tree), and the
    # step player widget (of the numpy reference's run: the only backend with a trace). From run_display,
    # a module below this one (specviz.rooms.notebook, which runs scenarios, sits above).
    def _repr_html_(self) -> str:
        from specviz.replay.run_display import run_html

        return run_html(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        from specviz.replay.run_display import run_mimebundle

        traced = self if self.trace is not None else run_scenario(self.scenario, "numpy")
        return run_mimebundle(self, traced, include, exclude)

    def _repr_svg_(self) -> str | None:
        from specviz.replay.run_display import run_svg

        return run_svg(self)


# Fields that name or describe a scenario but never change what it computes (an edit drops the
# preset's title, so a key that kept them would miss on a scenario the server has already run).
PRESENTATION_FIELDS = ("title", "description", "description_zh")  # and the name, which a scenario must have:
_KEY_CACHE_MAX_CHARS = 1 << 20  # scenario texts above this are keyed afresh each time (never held twice)


def scenario_key(s: Scenario, *, zero_coins: bool = False) -> str:
    """The canonical JSON of what ``s`` computes: a cache key shared by every session.

    Sorted keys, defaults left out, titles/descriptions dropped and one name for all; a valid scenario text
    (``scenario_from_json`` reads it back). ``zero_coins``: every coin set to 0, for results that
    draw their own coins (Monte Carlo), so moving a coin slider keeps them cached."""
    text = s.compact_json
    if len(text) > _KEY_CACHE_MAX_CHARS:
        return _canonical(text, zero_coins)
    return _canonical_cached(text, zero_coins)


def _canonical(text: str, zero_coins: bool) -> str:
    data = json.loads(text)
    for k in PRESENTATION_FIELDS:
        data.pop(k, None)
    data["name"] = "key"  # the same name for all
    if zero_coins:
        for r in data.get("requests", ()):
            if r.get("coins") is not None:
                r["coins"] = [0.0] * len(r["coins"])
            if r.get("coin_final") is not None:
                r["coin_final"] = 0.0
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


_canonical_cached = functools.lru_cache(maxsize=64)(_canonical)


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
    makers = {
        "target_predict": lambda: np.array([s.target_predict(b) for b in range(bs)], dtype=np.int64),
        "target_probs": lambda: np.stack([s.target_probs(b) for b in range(bs)]).astype(np.float32),
        "uniform_samples": lambda: np.array([r.coins for r in s.requests], dtype=np.float32),
        "uniform_samples_for_final_sampling": lambda: np.array([r.coin_final for r in s.requests], dtype=np.float32),
        "draft_probs": lambda: np.array([r.draft_probs for r in s.requests], dtype=np.float32),
        "verify_lens": lambda: np.array([r.verify_len if r.verify_len is not None else n for r in s.requests], dtype=np.int64),
    }
    for name in algorithms.get(s.algorithm).inputs:  # what the algorithm declares, nothing else
        out[name] = makers[name]()
    return out


def call_algorithm(s: Scenario, inputs: dict, ops, trace: Trace | None = None) -> dict:
    """Run the scenario's algorithm on one backend (``ops``: reference module or a backend namespace)."""
    algorithms.get(s.algorithm)  # a SpecvizError for an unknown algorithm
    kw = {} if trace is None else {"trace": trace}
    if ops is not ref and not hasattr(ops, "__file__"):
        from specviz.algorithms.backends import to_torch  # noqa: PLC0415  backends take torch tensors

        inputs = {k: to_torch(v) for k, v in inputs.items()}
    return calls.call(s, inputs, ops, kw)


def commit_view(s: Scenario, inputs: dict, result: dict) -> list[RequestCommit]:
    bs, n = len(s.requests), s.n
    commits = []
    for b in range(bs):
        tree = s.tree(b)
        depths = tree.depths()
        seq = int(s.requests[b].seq_len)
        cand = inputs["candidates"][b]
        if algorithms.get(s.algorithm).family == "dspark":
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
        from specviz.algorithms.backends import get_backend

        result = call_algorithm(s, inputs, get_backend(backend))
    return Run(scenario=s, backend=backend, inputs=inputs, result=result, commits=commit_view(s, inputs, result),
               trace=trace, warnings=[str(w.message) for w in caught])


def compare_backends(s: Scenario, backends) -> dict:
    """Backend -> None when it matches the reference exactly on integer outputs (and floats within 1e-6), else what differs."""
    from specviz.algorithms.backends import get_backend

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
        diff = result_difference(want, got)
        out[name] = diff
    return out


def result_difference(want: dict, got) -> str | None:
    """None when ``got`` has every field of ``want`` with the same shape and values (integers exact,
    floats within 1e-6); otherwise one sentence saying what differs. A missing field, an empty
    result or a wrong shape is a difference: a backend that returns nothing never "agrees"."""
    if not isinstance(got, dict):
        return f"returned {type(got).__name__}, not a result"
    if not got and want:
        return "returned nothing"
    for key, w in want.items():
        if key not in got or got[key] is None:
            return f"{key} missing from the result"
        w = np.asarray(w)
        g = np.asarray(got[key])
        if g.shape != w.shape:
            return f"{key} has shape {list(g.shape)}, the reference {list(w.shape)}"
        same = np.allclose(g, w, atol=1e-6) if np.issubdtype(w.dtype, np.floating) else np.array_equal(g, w)
        if not same:
            return f"{key} differs: {g.tolist()} vs reference {w.tolist()}"
    return None
