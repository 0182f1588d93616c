"""Target logits -> target probabilities: softmax(logits / T), then top-k renorm, then top-p renorm
(ties kept), as SGLang's sampler does (SEMANTICS.md §5). Pure numpy; below the scenario layer,
which turns a scenario's logits into p rows with it. specviz.reference re-exports it.
"""
from __future__ import annotations

import numpy as np

from specviz.base.errors import SpecvizError
from specviz.base.validate import logits_array

F32 = np.float32
GREEDY_TEMPERATURE = 1e-6  # SGLang rewrites T < 1e-6 as greedy (top_k 1 at T 1)


def per_row(name: str, value, rows: int, kind: str) -> np.ndarray:
    """A scalar for every row, or one value per row. None -> NaN (off)."""
    if value is None:
        return np.full(rows, np.nan)
    arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(rows, float(arr))
    if arr.shape != (rows,):
        raise SpecvizError(name, f"has shape {list(arr.shape)}: give one number, or one per row ({rows})")
    if np.any(np.isnan(arr)) and kind != "optional":
        raise SpecvizError(name, "contains NaN: give a number for every row")
    return arr


def top_k_renorm(probs: np.ndarray, k: int) -> np.ndarray:
    """Keep every probability >= the k-th largest (ties kept), renormalise. [V] -> [V]."""
    V = probs.shape[0]
    k = min(max(int(k), 1), V)
    pivot = np.sort(probs)[::-1][k - 1]
    kept = np.where(probs >= pivot, probs, F32(0)).astype(F32)
    return (kept / kept.sum(dtype=F32)).astype(F32)


def top_p_renorm(probs: np.ndarray, top_p: float) -> np.ndarray:
    """Pivot = first ascending-sorted prob whose cumulative sum >= 1 - top_p; keep probs >= pivot."""
    asc = np.sort(probs)
    cums = np.cumsum(asc, dtype=F32)
    hit = np.nonzero(cums >= F32(1.0) - F32(top_p))[0]
    pivot = asc[hit[0]] if hit.size else asc[-1]
    kept = np.where(probs >= pivot, probs, F32(0)).astype(F32)
    return (kept / kept.sum(dtype=F32)).astype(F32)


def target_probs_from_logits(logits, *, temperature, top_k=None, top_p=None) -> np.ndarray:
    """logits [rows, V] -> target_probs [rows, V] float32.

    temperature: scalar or [rows]; 0 (below 1e-6) means greedy, which SGLang turns into
    top_k 1 at temperature 1. top_k: None or >= V is off. top_p: None or 1.0 is off.
    """
    lg = logits_array("logits", logits, 2)
    rows, V = lg.shape
    if V < 1:
        raise SpecvizError("logits", "has an empty vocabulary axis")
    temp = per_row("temperature", temperature, rows, "required")
    if np.any(temp < 0):
        raise SpecvizError("temperature", f"holds {temp.min()}: temperatures cannot be negative (0 = greedy)")
    tk = per_row("top_k", top_k, rows, "optional")
    tpp = per_row("top_p", top_p, rows, "optional")
    if np.any(~np.isnan(tk) & ((tk < 1) | (tk != np.round(tk)))):
        raise SpecvizError("top_k", "must be a whole number >= 1 (or None for off)")
    if np.any(~np.isnan(tpp) & ((tpp <= 0) | (tpp > 1))):
        raise SpecvizError("top_p", "must lie in (0, 1] (or None / 1.0 for off)")
    greedy = temp < GREEDY_TEMPERATURE
    temp = np.where(greedy, 1.0, temp)
    tk = np.where(greedy, 1.0, tk)
    scaled = (lg / temp[:, None].astype(F32)).astype(F32)
    scaled = scaled - scaled.max(axis=1, keepdims=True)
    # exp correctly rounded to float32 (float64 exp, then one rounding) on every backend: float32 exp
    # libraries disagree in the last bit, which decides near-ties at the top-k / top-p cut.
    e = np.exp(scaled.astype(np.float64)).astype(F32)
    probs = (e / e.sum(axis=1, keepdims=True, dtype=F32)).astype(F32)
    for r in range(rows):
        if not np.isnan(tk[r]) and tk[r] < V:
            probs[r] = top_k_renorm(probs[r], int(tk[r]))
        if not np.isnan(tpp[r]) and tpp[r] < 1.0:
            probs[r] = top_p_renorm(probs[r], float(tpp[r]))
    return probs
