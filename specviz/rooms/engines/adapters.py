"""Run each engine's own code, from its own pip package, on a chain (issue 22).

- SGLang 0.5.23: ``chain_speculative_sampling_triton`` and ``verify_tree_greedy_triton`` from the
  installed wheel, loaded by ``specviz.rooms.engines.sglang_engine`` (SEMANTICS.md §12);
- vLLM 0.33.0: the launchers of ``v1/sample/rejection_sampler.py`` loaded by
  ``specviz.rooms.engines.vllm_engine`` (stand-ins listed there);
- transformers: ``transformers.generation.utils._speculative_sampling``, imported normally (it is
  installed with its dependencies), one request at a time (assisted generation runs batch size 1).

Every runner returns, per request, ``EngineOut``: the tokens the engine emitted (accepted drafts,
then its terminal token), the number of accepted drafts, or the error it raised. A runner raises
``EngineMissing`` (with the reason) when the package is not installed.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util

import numpy as np

from specviz.rooms.engines import chain as C
from specviz.rooms.engines import rules

TRANSFORMERS_FUNC = "transformers.generation.utils._speculative_sampling"


class EngineMissing(RuntimeError):
    """The engine's package is not installed (the message says which and how to install it)."""


@dataclasses.dataclass(frozen=True)
class EngineOut:
    tokens: tuple          # emitted tokens (accepted drafts + terminal), empty on error
    accepted: int          # accepted drafts (-1 on error)
    error: str = ""        # the engine's own exception, "Type: message"
    ran: bool = True       # False where the engine's code cannot run this case (described only)
    note: str = ""


# --------------------------------------------------------------------------------------------
# Availability
# --------------------------------------------------------------------------------------------

def availability() -> dict[str, tuple[bool, str]]:
    """engine -> (installed, how it was found / why not); imports nothing heavy."""
    from specviz.rooms.engines import sglang_engine  # noqa: PLC0415
    from specviz.rooms.engines import vllm_engine  # noqa: PLC0415

    if _SGL is not None:  # loaded: its stand-ins now sit in sys.modules, so locate() cannot look again
        out = {"sglang": (True, _SGL.source)}
    else:
        root, how = sglang_engine.locate()
        out = {"sglang": (root is not None, how)}
    path, how = vllm_engine.locate()
    out["vllm"] = (path is not None, how)
    try:
        found = importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        try:
            v = importlib.metadata.version("transformers")
            # Before 5.20 _speculative_sampling takes other arguments (is_done_candidate, ...; seen in 5.17):
            # not the contract run here (requirements-dev.txt asks for >=5.20,<6).
            from packaging.version import InvalidVersion, Version  # noqa: PLC0415
            try:
                ok = Version("5.20") <= Version(v) < Version("6")
            except InvalidVersion:
                ok = False
            out["transformers"] = (ok, f"installed transformers {v}" if ok else
                                   f"transformers {v} is installed; specviz runs the _speculative_sampling of transformers "
                                   f">=5.20,<6: pip install -c constraints.txt transformers")
        except importlib.metadata.PackageNotFoundError:
            out["transformers"] = (False, "transformers is importable but has no package metadata")
    else:
        out["transformers"] = (False, "transformers is not installed (pip install transformers)")
    return out


def transformers_version() -> str:
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return "missing"


# --------------------------------------------------------------------------------------------
# SGLang
# --------------------------------------------------------------------------------------------

_SGL = None


def _sgl():
    global _SGL
    if _SGL is None:
        from specviz.rooms.engines import sglang_engine  # noqa: PLC0415
        try:
            _SGL = sglang_engine.load()
        except ImportError as exc:
            raise EngineMissing(str(exc)) from None
    return _SGL


def _sglang_device() -> str:
    """Where SGLang's Triton kernels run: the CPU under the interpreter, else the GPU (compiled)."""
    import os  # noqa: PLC0415

    import torch  # noqa: PLC0415

    return "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1" else "cpu"


def run_sglang(ch: C.Chain, draws: list[C.Draws]) -> list[EngineOut]:
    """All greedy: verify_tree_greedy on the chain's links with target_predict = argmax p.
    Otherwise the chain sampler for the whole batch (greedy rows as top_k = 1, ties kept)."""
    import torch  # noqa: PLC0415

    sgl = _sgl()
    dev = _sglang_device()
    bs, n, V = ch.bs, ch.n, ch.V
    N = n + 1
    i64, i32, f32 = torch.int64, torch.int32, torch.float32
    cand = torch.tensor([[0] + list(r.draft_tokens) for r in ch.requests], dtype=i64, device=dev)
    ri = torch.arange(bs * N, dtype=i64, device=dev).reshape(bs, N)
    predicts = torch.zeros(bs * N, dtype=i32, device=dev)
    accept_index = torch.full((bs, N), -1, dtype=i32, device=dev)
    accept_num = torch.empty(bs, dtype=i32, device=dev)
    if all(r.greedy for r in ch.requests):
        nxt = torch.tensor([[s + 1 if s < n else -1 for s in range(N)]] * bs, dtype=i64, device=dev)
        sib = torch.full((bs, N), -1, dtype=i64, device=dev)
        target_predict = torch.tensor(np.stack([r.p().argmax(axis=1) for r in ch.requests]), dtype=i64, device=dev)
        sgl.verify_tree_greedy(predicts, accept_index, accept_num, cand, ri, nxt, sib, target_predict)
    else:
        p = torch.tensor(np.stack([rules.sglang_p(r, mixed_greedy=True) for r in ch.requests]), dtype=f32, device=dev)
        q = torch.tensor(np.stack([r.q() for r in ch.requests]), dtype=f32, device=dev)
        u = torch.zeros((bs, N), dtype=f32, device=dev)
        u[:, :n] = torch.tensor(np.stack([d.coins for d in draws]), dtype=f32, device=dev)
        uf = torch.tensor([d.final for d in draws], dtype=f32, device=dev)
        sgl.chain_sampling(predicts, accept_index, accept_num, cand, ri, None, None, u, uf, p, q, 1.0, 1.0, True)
    out = []
    for b in range(bs):
        k = int(accept_num[b].item())
        rows = accept_index[b, : k + 1].tolist()
        out.append(EngineOut(tuple(int(predicts[r]) for r in rows), k))
    return out


# --------------------------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------------------------

def _vllm():
    from specviz.rooms.engines import vllm_engine  # noqa: PLC0415
    try:
        return vllm_engine.load()
    except ImportError as exc:
        raise EngineMissing(str(exc)) from None


def run_vllm(ch: C.Chain, draws: list[C.Draws]) -> list[EngineOut]:
    """The flow of vLLM's ``rejection_sample``: the greedy kernel for greedy requests (all of them
    when the batch is all greedy, ``is_greedy = None``), then the recovered-token kernel and the
    random kernel. Inputs: ``uniform_probs`` = the coins (float64), ``inv_q`` = 1 / E,
    ``bonus_token_ids`` = what vLLM's Sampler would draw (argmax p, or argmax p / E)."""
    import torch  # noqa: PLC0415

    vl = _vllm()
    bs, n, V = ch.bs, ch.n, ch.V
    out_ids = torch.full((bs, n + 1), vl.PLACEHOLDER_TOKEN_ID, dtype=torch.int32)
    cu = torch.tensor([n * (b + 1) for b in range(bs)], dtype=torch.int32)
    draft_ids = torch.tensor([t for r in ch.requests for t in r.draft_tokens], dtype=torch.int32)
    target_probs = torch.tensor(np.concatenate([r.p()[:n] for r in ch.requests]), dtype=torch.float32)
    draft_probs = torch.tensor(np.concatenate([r.q() for r in ch.requests]), dtype=torch.float32)
    bonus = []
    for r, d in zip(ch.requests, draws):
        last = r.p()[n]
        bonus.append(int(np.argmax(last)) if r.greedy else int(np.argmax((last / d.expo).astype(C.F32))))
    bonus_ids = torch.tensor(bonus, dtype=torch.int64).reshape(bs, 1)
    uniform = torch.tensor(np.concatenate([d.coins for d in draws]).astype(np.float64), dtype=torch.float64)
    greedy = torch.tensor([r.greedy for r in ch.requests], dtype=torch.bool)
    all_greedy, all_random = bool(greedy.all()), not bool(greedy.any())
    if not all_random:
        target_argmax = target_probs.argmax(dim=-1)
        vl.greedy(out_ids, cu, draft_ids, target_argmax, bonus_ids, None if all_greedy else greedy, n, None, None)
    if not all_greedy:
        inv_q = torch.tensor(np.stack([d.expo for d in draws]), dtype=torch.float32).reciprocal()
        recovered = torch.empty_like(draft_ids)
        vl.recovered(recovered, cu, draft_ids, draft_probs, target_probs, inv_q, max_spec_len=n)
        vl.random(out_ids, cu, draft_ids, draft_probs, target_probs, bonus_ids, recovered, uniform, greedy, n, None)
    res = []
    for b in range(bs):
        row = [int(x) for x in out_ids[b].tolist() if x != vl.PLACEHOLDER_TOKEN_ID]
        res.append(EngineOut(tuple(row), len(row) - 1))
    return res


# --------------------------------------------------------------------------------------------
# transformers
# --------------------------------------------------------------------------------------------

def _hf():
    import inspect  # noqa: PLC0415

    try:
        from transformers.generation import utils  # noqa: PLC0415
    except ImportError as exc:
        raise EngineMissing(f"transformers cannot be imported ({exc}); pip install transformers") from None
    sig = inspect.signature(utils._speculative_sampling).parameters
    params = [name for name, prm in sig.items() if prm.default is inspect.Parameter.empty]  # the required ones
    if params != ["candidate_input_ids", "candidate_logits", "candidate_length", "new_logits"]:
        # Older releases take more arguments (is_done_candidate, ...): another contract than the one described here.
        raise EngineMissing(f"transformers {transformers_version()} has another _speculative_sampling signature "
                            f"({', '.join(params)}); specviz runs the one of transformers 5.2x: pip install -c constraints.txt transformers")
    return utils


def temperature_zero_error() -> str:
    """What transformers says to temperature 0 with sampling on (its own TemperatureLogitsWarper)."""
    _hf()
    from transformers.generation.logits_process import TemperatureLogitsWarper  # noqa: PLC0415
    try:
        TemperatureLogitsWarper(0.0)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return ""


def run_transformers(ch: C.Chain, draws: list[C.Draws]) -> list[EngineOut]:
    """``_speculative_sampling(candidate_input_ids [1, n], candidate_logits [1, n, V] = log q,
    candidate_length n, new_logits [1, n+1, V] = log p)`` under ``torch.manual_seed(seed + b)``
    (inside ``fork_rng``, so the caller's generator is untouched). A greedy request takes
    transformers' inline argmax path of ``_assisted_decoding`` (do_sample=False), which is no
    callable function: it is described, not run."""
    import torch  # noqa: PLC0415

    utils = _hf()
    res = []
    for r, d in zip(ch.requests, draws):
        if r.greedy:
            res.append(EngineOut((), -1, ran=False, note="hf_greedy"))
            continue
        ids = torch.tensor([list(r.draft_tokens)], dtype=torch.int64)
        cand_logits = torch.log(torch.from_numpy(r.q()))[None]
        new_logits = torch.log(torch.from_numpy(r.p()))[None]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(d.seed)
            try:
                valid, n_matches = utils._speculative_sampling(ids, cand_logits, r.n, new_logits)
            except RuntimeError as exc:
                res.append(EngineOut((), -1, error=f"{type(exc).__name__}: {exc}"))
                continue
        res.append(EngineOut(tuple(int(x) for x in valid[0].tolist()), int(n_matches)))
    return res


RUNNERS = {"sglang": run_sglang, "vllm": run_vllm, "transformers": run_transformers}


def run(engine: str, ch: C.Chain, draws: list[C.Draws] | None = None) -> list[EngineOut]:
    """The engine's own code on the chain (raises EngineMissing when its package is absent)."""
    return RUNNERS[engine](ch, C.randomness(ch) if draws is None else draws)
