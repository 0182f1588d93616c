"""Input checks shared by every backend. Each failure is a SpecvizError naming the field.

Everything here works on numpy arrays; torch tensors and nested lists are converted first
(``to_numpy``), so the torch and Triton backends can run the same checks on what a user pastes.
"""
from __future__ import annotations

import numpy as np

from specviz.base.errors import SpecvizError

# Probability rows must sum to 1 within this tolerance (float32 softmax over a 128k vocabulary
# stays well inside it; a hand-typed row that is off by a typo does not).
PROB_SUM_ATOL = 1e-4

SEMANTICS = ("0.5.23", "earlier")


def to_numpy(name: str, x) -> np.ndarray:
    """Convert a torch tensor, numpy array, scalar or nested list to a numpy array."""
    if x is None:
        raise SpecvizError(name, "is missing: pass an array")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise SpecvizError(name, f"is not a rectangular array ({exc}): give every row the same length") from None
    if arr.dtype == object:
        raise SpecvizError(name, "is not a rectangular array of numbers: give every row the same length")
    return arr


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def check_shape(name: str, arr: np.ndarray, expected: tuple, what: str = "") -> None:
    """``expected`` may hold None for a free dimension."""
    ok = arr.ndim == len(expected) and all(e is None or e == s for e, s in zip(expected, arr.shape))
    if not ok:
        want = _shape_text(["*" if e is None else e for e in expected])
        raise SpecvizError(name, f"has shape {_shape_text(arr.shape)} but must be {want}{' ' + what if what else ''}")


INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def entry_name(name: str, idx) -> str:
    """The field and entry a person can find: ``candidates[0][1]``."""
    return name + "".join(f"[{int(i)}]" for i in idx)


def _wide_int(x, path=()):
    """(index, value) of the first Python int in nested lists outside int64, else None."""
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            hit = _wide_int(v, path + (i,))
            if hit is not None:
                return hit
        return None
    if isinstance(x, int) and not isinstance(x, bool) and not INT64_MIN <= x <= INT64_MAX:
        return path, x
    return None


def int_array(name: str, x, ndim: int | None = None) -> np.ndarray:
    """An integer array (int64). Floats are accepted only when they hold whole numbers; a value
    outside int64 (SGLang's widest integer dtype) is an error naming the entry."""
    if x is None:
        raise SpecvizError(name, "is missing: pass an array")
    if isinstance(x, (list, tuple, int)):
        hit = _wide_int(x)
        if hit is not None:
            raise SpecvizError(entry_name(name, hit[0]), f"is {hit[1]}: outside int64 [-2**63, 2**63 - 1], the widest "
                               "integer SGLang stores")
    arr = to_numpy(name, x)
    if arr.dtype == bool:
        raise SpecvizError(name, "holds booleans: it must hold integers")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating):
            raise SpecvizError(name, f"has dtype {arr.dtype}: it must hold integers")
        if not np.all(np.isfinite(arr)):
            raise SpecvizError(name, "contains NaN or inf: it must hold integers")
        if not np.all(arr == np.round(arr)):
            bad = tuple(int(i) for i in np.argwhere(arr != np.round(arr))[0])
            raise SpecvizError(entry_name(name, bad), f"is {arr[bad]}: it must hold whole numbers")
        wide = (arr >= 2.0 ** 63) | (arr < -(2.0 ** 63))
        if np.any(wide):
            bad = tuple(int(i) for i in np.argwhere(wide)[0])
            raise SpecvizError(entry_name(name, bad), f"is {arr[bad]:.6g}: outside int64, the widest integer SGLang stores")
    elif arr.dtype == np.uint64 and np.any(arr > INT64_MAX):
        bad = tuple(int(i) for i in np.argwhere(arr > INT64_MAX)[0])
        raise SpecvizError(entry_name(name, bad), f"is {int(arr[bad])}: outside int64, the widest integer SGLang stores")
    arr = arr.astype(np.int64)
    if ndim is not None and arr.ndim != ndim:
        raise SpecvizError(name, f"has {arr.ndim} dimensions (shape {_shape_text(arr.shape)}) but must have {ndim}")
    return arr


def check_range(name: str, arr: np.ndarray, lo: int, hi: int, rule: str, offset=()) -> None:
    """Every entry in [lo, hi]; else a SpecvizError naming ``name[i][j]`` (``offset`` shifts the index
    when ``arr`` is a slice, e.g. (0, 1) for candidates[:, 1:])."""
    arr = np.asarray(arr)
    bad = (arr < lo) | (arr > hi)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
        shown = tuple(i + (offset[k] if k < len(offset) else 0) for k, i in enumerate(idx))
        raise SpecvizError(entry_name(name, shown), f"is {int(arr[idx])}: {rule}")


def check_int32(name: str, arr, rule: str = "") -> None:
    """Values SGLang stores as int32 (predicts, accept_index, lengths)."""
    check_range(name, arr, INT32_MIN, INT32_MAX,
                f"outside int32 [-2**31, 2**31 - 1], the dtype SGLang stores it in{'; ' + rule if rule else ''}")


def float_array(name: str, x, ndim: int | None = None) -> np.ndarray:
    """A finite float32 array."""
    arr = to_numpy(name, x)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise SpecvizError(name, f"has dtype {arr.dtype}: it must hold numbers")
    arr = arr.astype(np.float32)
    if ndim is not None and arr.ndim != ndim:
        raise SpecvizError(name, f"has {arr.ndim} dimensions (shape {_shape_text(arr.shape)}) but must have {ndim}")
    if arr.size and not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise SpecvizError(name, f"entry {list(bad)} is {arr[bad]}: every value must be a finite number")
    return arr


def logits_array(name: str, x, ndim: int = 2) -> np.ndarray:
    """Float32 logits. ``-inf`` is a masked token (vocabulary / grammar masks hand SGLang's verify
    softmax -inf logits), so it is accepted; NaN and +inf are errors, and so is a row with no finite
    logit (every token masked: the softmax would be 0/0, NaN in SGLang)."""
    arr = to_numpy(name, x)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise SpecvizError(name, f"has dtype {arr.dtype}: it must hold numbers")
    arr = arr.astype(np.float32)
    if arr.ndim != ndim:
        raise SpecvizError(name, f"has {arr.ndim} dimensions (shape {_shape_text(arr.shape)}) but must have {ndim}")
    bad = np.isnan(arr) | (arr == np.inf)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SpecvizError(name, f"entry {list(idx)} is {arr[idx]}: logits must be finite numbers or -inf (a masked token); "
                           "NaN and +inf are not allowed")
    if arr.size and arr.shape[-1] > 0:
        none = ~np.any(np.isfinite(arr), axis=-1)
        if np.any(none):
            idx = tuple(int(i) for i in np.argwhere(none)[0])
            raise SpecvizError(name, f"row {list(idx)} has no finite logit: every token is masked (-inf), so the softmax "
                               "is 0/0 (NaN in SGLang); leave at least one token unmasked")
    return arr


def prob_array(name: str, x, ndim: int, role: str = "probabilities") -> np.ndarray:
    """Finite, non-negative float32 rows over the last axis, each summing to 1 +- PROB_SUM_ATOL."""
    arr = float_array(name, x, ndim)
    if arr.shape[-1] < 1:
        raise SpecvizError(name, "has an empty vocabulary axis: V must be at least 1")
    if np.any(arr < 0):
        bad = tuple(int(i) for i in np.argwhere(arr < 0)[0])
        raise SpecvizError(name, f"entry {list(bad)} is {arr[bad]:.6g}: {role} cannot be negative")
    sums = arr.astype(np.float64).sum(axis=-1)
    off = np.abs(sums - 1.0) > PROB_SUM_ATOL
    if np.any(off):
        bad = tuple(int(i) for i in np.argwhere(off)[0])
        raise SpecvizError(
            name,
            f"row {list(bad)} sums to {sums[bad]:.6g}; rows must sum to 1 +- {PROB_SUM_ATOL:g}: "
            "normalise it (divide by its sum)",
        )
    return arr


def coin_array(name: str, x, ndim: int) -> np.ndarray:
    """Uniform coins: float32 in [0, 1)."""
    arr = float_array(name, x, ndim)
    bad = (arr < 0) | (arr >= 1)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SpecvizError(name, f"entry {list(idx)} is {arr[idx]:.6g}: coins must lie in [0, 1)")
    return arr


def check_tokens(name: str, tokens: np.ndarray, vocab_size: int | None, *, offset=(), int32: bool = True) -> None:
    """Token ids: >= 0, < V when the vocabulary is known, and (``int32``) within int32, because an
    accepted token is written into SGLang's int32 ``predicts``. The error names ``name[b][i]``;
    ``offset`` shifts the index when ``tokens`` is a slice (``(0, 1)`` for ``candidates[:, 1:]``)."""
    check_range(name, tokens, 0, INT64_MAX, "token ids cannot be negative", offset)
    if vocab_size is not None:
        check_range(name, tokens, 0, vocab_size - 1,
                    f"outside the vocabulary of size {vocab_size} (token ids 0..{vocab_size - 1})", offset)
    if int32:
        check_range(name, tokens, 0, INT32_MAX, "a token id must fit int32 (SGLang writes it into the int32 predicts)", offset)


def check_semantics(semantics: str) -> None:
    if semantics not in SEMANTICS:
        raise SpecvizError("semantics", f"is {semantics!r}: choose '0.5.23' or 'earlier'")


def check_width(name: str, width, n: int) -> int:
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)):
        raise SpecvizError(name, f"is {width!r}: it must be a whole number")
    width = int(width)
    if width < 1:
        raise SpecvizError(name, f"is {width}: it must be at least 1 (the root's row)")
    return width


def check_tree_arrays(candidates, retrieve_index, next_token, next_sibling):
    """Validate the tree tensors of a verify call and return them as int64 numpy arrays.

    Rules: all four are [bs, n]; retrieve_index holds rows in [0, bs*n); links hold -1 or a
    node in [1, n); no node is linked to twice (a node has one parent or one previous sibling);
    no link points at the root; and no chain of links comes back on itself (a cycle).
    """
    cand = int_array("candidates", candidates, 2)
    bs, n = cand.shape
    if bs < 1:
        raise SpecvizError("candidates", "has no requests (batch size 0): give at least one row")
    if n < 1:
        raise SpecvizError("candidates", "has no columns: each request needs at least the root")
    check_tokens("candidates", cand, None)
    ri = int_array("retrieve_index", retrieve_index, 2)
    nt = int_array("retrieve_next_token", next_token, 2)
    ns = int_array("retrieve_next_sibling", next_sibling, 2)
    for nm, arr in (("retrieve_index", ri), ("retrieve_next_token", nt), ("retrieve_next_sibling", ns)):
        check_shape(nm, arr, (bs, n), "(like candidates)")
    if np.any((ri < 0) | (ri >= bs * n)):
        idx = tuple(int(i) for i in np.argwhere((ri < 0) | (ri >= bs * n))[0])
        raise SpecvizError("retrieve_index", f"entry {list(idx)} is {ri[idx]}: rows must lie in [0, bs*n) = [0, {bs * n})")
    check_links(nt, ns)
    return cand, ri, nt, ns


def check_links(nt: np.ndarray, ns: np.ndarray) -> None:
    bs, n = nt.shape
    for nm, arr in (("retrieve_next_token", nt), ("retrieve_next_sibling", ns)):
        bad = (arr != -1) & ((arr < 1) | (arr >= n))
        if np.any(bad):
            b, i = (int(v) for v in np.argwhere(bad)[0])
            what = "the root (node 0) cannot be anyone's child or sibling" if arr[b, i] == 0 else f"nodes are 1..{n - 1}"
            raise SpecvizError(nm, f"request {b} node {i} links to {arr[b, i]}: use -1 for none; {what}")
    # In-degree: every node is reached through at most one link.
    for b in range(bs):
        targets = np.concatenate([nt[b][nt[b] >= 0], ns[b][ns[b] >= 0]])
        if targets.size:
            counts = np.bincount(targets, minlength=n)
            if counts.max() > 1:
                node = int(np.argmax(counts))
                raise SpecvizError(
                    "retrieve_next_token",
                    f"request {b}: node {node} is linked to {int(counts.max())} times (as a first child or a next "
                    "sibling); each node has exactly one parent, so it is reached by one link",
                )
    # Cycles: with in-degree <= 1, following 'who links to me' from any node must end; after n
    # steps a walk that has not ended is going round a cycle.
    linker = np.full((bs, n), -1, dtype=np.int64)
    rows = np.arange(bs)[:, None].repeat(n, 1)
    src = np.arange(n)[None, :].repeat(bs, 0)
    for arr in (nt, ns):
        m = arr >= 0
        linker[rows[m], arr[m]] = src[m]
    cur = np.broadcast_to(np.arange(n), (bs, n)).copy()
    for _ in range(n):
        alive = cur >= 0
        cur[alive] = linker[rows[alive], cur[alive]]
    if np.any(cur >= 0):
        b, i = (int(v) for v in np.argwhere(cur >= 0)[0])
        raise SpecvizError(
            "retrieve_next_token",
            f"request {b}: the links through node {i} form a cycle; a tree's first-child/next-sibling links never come back",
        )
