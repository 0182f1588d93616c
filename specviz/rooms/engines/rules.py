"""specviz's description of each engine's rule: given a request and its random numbers, what
the engine decides at every slot, the numbers of its test, and the token it emits at the end.

These are written from the engines' sources (docs/SEMANTICS.md, "Engines compared") and checked
against each engine's own code (tests/test_engines.py): the tokens must agree exactly.

Each rule returns a ``Decision``: ``slots`` (one ``SlotTest`` per draft reached), ``terminal``
(the recovered, bonus or greedy token, or an error the engine raises), ``tokens`` (what the
request emits: the accepted drafts, then the terminal token).
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from specviz.rooms.engines.chain import F32, Draws, Request

ENGINES = ("sglang", "vllm", "transformers")
NAMES = {"sglang": "SGLang 0.5.23", "vllm": "vLLM 0.33.0", "transformers": "transformers"}


@dataclasses.dataclass(frozen=True)
class SlotTest:
    slot: int            # 1..n
    token: int
    p: float             # the target probability the engine reads for the token
    q: float             # the draft probability
    coin: float          # the coin it compares against (nan for a greedy test)
    test: str            # the test with the engine's numbers, e.g. "0.3·0.5 = 0.15 < 0.2"
    accepted: bool
    rule: str            # the rule's key (see RULE_TEXT), e.g. "strict", "q_zero"


@dataclasses.dataclass(frozen=True)
class Terminal:
    kind: str            # "recovered" | "bonus" | "greedy" | "error"
    token: int | None    # None when the engine raises
    why: str             # a rule key (see RULE_TEXT)
    detail: str          # the numbers that decided it


@dataclasses.dataclass(frozen=True)
class Decision:
    engine: str
    slots: tuple
    terminal: Terminal
    p_seen: np.ndarray   # [n+1, V] the p the engine works on (after its own renorm / softmax)
    q_seen: np.ndarray   # [n, V]
    described_only: bool = False   # True where the engine's code cannot run this case (see note)
    note: str = ""

    @property
    def accepted(self) -> int:
        return sum(1 for s in self.slots if s.accepted)

    @property
    def tokens(self) -> tuple:
        acc = tuple(s.token for s in self.slots if s.accepted)
        return acc + ((self.terminal.token,) if self.terminal.token is not None else ())


def _g(x) -> str:
    return f"{float(x):.5g}"


# --------------------------------------------------------------------------------------------
# SGLang 0.5.23: chain_speculative_sampling_triton (sampling), verify_tree_greedy (all greedy)
# --------------------------------------------------------------------------------------------

def sglang_p(req: Request, mixed_greedy: bool) -> np.ndarray:
    """The p SGLang samples from: a greedy request in a mixed batch arrives at temperature 1 with
    top_k = 1, ties kept (sampling_params.py; FlashInfer's top-k renorm)."""
    from specviz.base.probs import top_k_renorm  # noqa: PLC0415

    p = req.p()
    if req.greedy and mixed_greedy:
        p = np.stack([top_k_renorm(row, 1) for row in p]).astype(F32)
    return p


def sglang(req: Request, d: Draws, *, all_greedy: bool) -> Decision:
    if req.greedy and all_greedy:
        return _argmax_rule("sglang", req, "greedy_verify")
    from specviz import reference as REF  # noqa: PLC0415

    p, q = sglang_p(req, mixed_greedy=True), req.q()
    n, V = req.n, req.V
    slots = []
    for s in range(1, n + 1):
        t = req.draft_tokens[s - 1]
        pt, qt, c = p[s - 1, t], q[s - 1, t], d.coins[s - 1]
        prod = F32(c) * F32(qt)
        if not (F32(0) < qt <= F32(1)):
            ok, rule, test = False, "q_zero", f"q = {_g(qt)}: 0 < q ≤ 1 ✗"
        else:
            ok = bool(prod < pt)
            rule = "strict" if prod != pt else "equal_strict"
            test = f"{_g(c)}·{_g(qt)} = {_g(prod)} {'<' if ok else '≥'} {_g(pt)}"
        slots.append(SlotTest(s, t, float(pt), float(qt), float(c), test, ok, rule))
        if not ok:
            break
    k = sum(x.accepted for x in slots)
    cand = np.array([[0] + list(req.draft_tokens)], np.int64)
    u = np.zeros((1, n + 1), F32)
    u[0, :n] = d.coins
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = REF.chain_rejection_sampling(cand, np.arange(n + 1)[None], u, np.array([d.final], F32), p[None], q[None],
                                           num_speculative_tokens=n + 1)
    tok = int(np.asarray(res.predicts)[k])
    dist = p[n] if k == n else np.maximum(p[k] - np.where((q[k] > 0) & (q[k] <= 1), q[k], 0), 0).astype(F32)
    mass = float(dist.sum(dtype=F32))
    if k == n:
        why, kind = "sglang_bonus", "bonus"
    elif mass == 0:
        why, kind = "sglang_zero_mass", "recovered"
    else:
        why, kind = "sglang_inverse_cdf", "recovered"
    detail = f"u_final = {_g(d.final)}, mass = {_g(mass)}, threshold u_final·mass = {_g(F32(d.final) * F32(mass))}"
    return Decision("sglang", tuple(slots), Terminal(kind, tok, why, detail), p, q)


def _argmax_rule(engine: str, req: Request, rule: str, described_only: bool = False, note: str = "") -> Decision:
    """Greedy: accept while the draft equals argmax(p) (first index on ties), then emit argmax."""
    p = req.p()
    slots = []
    for s in range(1, req.n + 1):
        t = req.draft_tokens[s - 1]
        am = int(np.argmax(p[s - 1]))
        ok = t == am
        slots.append(SlotTest(s, t, float(p[s - 1, t]), float(req.q()[s - 1, t]), float("nan"),
                              f"draft {t} {'=' if ok else '≠'} argmax p = {am}", ok, rule))
        if not ok:
            break
    k = sum(x.accepted for x in slots)
    tok = int(np.argmax(p[k]))
    return Decision(engine, tuple(slots), Terminal("greedy" if k < req.n else "bonus", tok, "argmax",
                                                   f"argmax p[{k}] = {tok}"), p, req.q(), described_only, note)


# --------------------------------------------------------------------------------------------
# vLLM 0.33.0: rejection_greedy_sample_kernel / rejection_random_sample_kernel / sample_recovered_tokens_kernel
# --------------------------------------------------------------------------------------------

def vllm(req: Request, d: Draws) -> Decision:
    if req.greedy:
        return _argmax_rule("vllm", req, "greedy_kernel")
    p, q = req.p(), req.q()
    n = req.n
    slots = []
    for s in range(1, n + 1):
        t = req.draft_tokens[s - 1]
        pt, qt, c = p[s - 1, t], q[s - 1, t], np.float64(d.coins[s - 1])
        if not qt > 0:
            ok, rule, test = False, "q_zero", f"q = {_g(qt)}: q > 0 ✗"
        else:
            ratio = F32(pt) / F32(qt)          # float32 division, compared with the float64 coin
            ok = bool(np.float64(ratio) >= c)
            rule = "p_zero_accept" if (ok and pt == 0) else ("equal_accept" if np.float64(ratio) == c else "ratio_ge")
            test = f"{_g(pt)}/{_g(qt)} = {_g(ratio)} {'≥' if ok else '<'} {_g(c)}"
        slots.append(SlotTest(s, t, float(pt), float(qt), float(c), test, ok, rule))
        if not ok:
            break
    k = sum(x.accepted for x in slots)
    inv_e = (F32(1) / d.expo).astype(F32)
    if k == n:
        score = (p[n] / d.expo).astype(F32)   # vLLM's Sampler: probs / Exp(1), argmax
        tok = int(np.argmax(score))
        return Decision("vllm", tuple(slots), Terminal("bonus", tok, "race_bonus", f"argmax p/E = {tok}"), p, q)
    resid = np.maximum(p[k] - q[k], F32(0)).astype(F32)
    score = (resid * inv_e).astype(F32)
    tok = min(int(np.argmax(score)), req.V - 1)
    why = "vllm_zero_mass" if not resid.any() else "race"
    return Decision("vllm", tuple(slots), Terminal("recovered", tok, why,
                                                   f"argmax relu(p − q)·(1/E) = {tok}, score {_g(score[tok])}"), p, q)


# --------------------------------------------------------------------------------------------
# transformers: _speculative_sampling (generation/utils.py)
# --------------------------------------------------------------------------------------------

def transformers_probs(req: Request) -> tuple[np.ndarray, np.ndarray]:
    """p' = softmax(log p), q' = softmax(log q): transformers takes logits; the adapter hands it
    log p and log q (float32), and these are the probabilities it works on."""
    import torch  # noqa: PLC0415

    pt = torch.log(torch.from_numpy(req.p())).softmax(-1).numpy()
    qt = torch.log(torch.from_numpy(req.q())).softmax(-1).numpy()
    return pt, qt


def transformers(req: Request, d: Draws) -> Decision:
    if req.greedy:
        return _argmax_rule("transformers", req, "hf_greedy", described_only=True, note="hf_greedy")
    p, q = transformers_probs(req)
    n = req.n
    slots = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in range(1, n + 1):
            t = req.draft_tokens[s - 1]
            pt, qt, r = p[s - 1, t], q[s - 1, t], d.seeded_coins[s - 1]
            ratio = F32(pt) / F32(qt)
            ok = bool(F32(r) <= ratio)
            if qt == 0:
                rule = "hf_q_zero_accept" if ok else "hf_nan"
            elif ok and pt == 0:   # a float32 coin of exactly 0.0 (about 1 in 2^24 draws): 0 <= 0/q accepts
                rule = "p_zero_accept"
            else:
                rule = "equal_accept" if ratio == F32(r) else "ratio_le"
            test = f"{_g(r)} {'≤' if ok else '>'} {_g(pt)}/{_g(qt)} = {_g(ratio)}"
            slots.append(SlotTest(s, t, float(pt), float(qt), float(r), test, ok, rule))
            if not ok:
                break
    k = sum(x.accepted for x in slots)
    if k == n:
        tok = int(np.argmax((p[n] / d.expo).astype(F32)))
        return Decision("transformers", tuple(slots), Terminal("bonus", tok, "race_bonus", f"multinomial(p) = argmax p/E = {tok}"), p, q)
    resid = np.maximum(p[k] - q[k], F32(0)).astype(F32)
    mass = resid.sum(dtype=F32)
    if mass == 0:
        return Decision("transformers", tuple(slots), Terminal("error", None, "hf_zero_mass",
                                                               "relu(p − q)/0 = NaN: torch.multinomial raises"), p, q)
    tok = int(np.argmax(((resid / mass).astype(F32) / d.expo).astype(F32)))
    return Decision("transformers", tuple(slots), Terminal("recovered", tok, "race",
                                                           f"multinomial(relu(p − q)/Σ) = argmax ·/E = {tok}"), p, q)


def describe(engine: str, req: Request, d: Draws, *, all_greedy: bool) -> Decision:
    if engine == "sglang":
        return sglang(req, d, all_greedy=all_greedy)
    if engine == "vllm":
        return vllm(req, d)
    return transformers(req, d)
