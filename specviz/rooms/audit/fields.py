"""The auditable field names, their aliases and shapes: normalise_claimed turns a claim into
canonical names, canonical shapes and token ids (or a SpecvizError naming the field)."""
from __future__ import annotations

import math

import numpy as np

from specviz import algorithms
from specviz.base.errors import SpecvizError
from specviz.inputs.scenario import Scenario
from specviz.rooms.audit.parse import parse_array

ALIASES = {"num_correct_drafts": "accept_token_num", "accept_length": "accept_lens", "accept_length_per_req": "accept_lens",
           "output_tokens": "outputs", "output": "outputs", "verified_id": "outputs", "kv_rows": "committed_rows"}
EAGLE_FIELDS = ("accept_index", "accept_token_num", "accept_lens", "commit_lens", "predicts", "accept_tokens", "outputs",
                "bonus", "new_seq_lens", "committed_rows", "committed_tokens")
DSPARK_FIELDS = ("correct_len", "commit_lens", "accept_lens", "out_tokens", "outputs", "bonus", "new_seq_lens",
                 "committed_rows", "committed_tokens")
DSPARK_SAMPLING_EXTRA = ("accept_index", "accept_token_num", "predicts")
TOKEN_FIELDS = ("predicts", "accept_tokens", "outputs", "out_tokens", "bonus", "committed_tokens")
ALL_FIELDS = tuple(dict.fromkeys(EAGLE_FIELDS + DSPARK_FIELDS))


def auditable_fields(s: Scenario) -> tuple:
    """The fields ``audit`` can check for this scenario's algorithm, in checking order."""
    if algorithms.get(s.algorithm).family == "dspark":
        extra = DSPARK_SAMPLING_EXTRA if s.algorithm == "dspark_sampling" else ()
        return ("correct_len",) + extra + DSPARK_FIELDS[1:]
    return EAGLE_FIELDS


def _to_ids(s: Scenario, name: str, value):
    """Labels -> token ids (recursively); ints stay."""
    if isinstance(value, list):
        return [_to_ids(s, name, v) for v in value]
    if isinstance(value, str):
        if value in s.vocab:
            return s.vocab.index(value)
        raise SpecvizError(name, f"holds the label {value!r}, which is not in the vocabulary {s.vocab[:12]}")
    return value


def _check_ints(name: str, value):
    if isinstance(value, list):
        for v in value:
            _check_ints(name, v)
        return
    if isinstance(value, bool) or value is None:
        raise SpecvizError(name, f"holds {value!r}: give whole numbers (or token labels)")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise SpecvizError(name, f"holds {value!r}: give whole numbers (these are indices, tokens or lengths)")
    elif not isinstance(value, (int, np.integer)):
        raise SpecvizError(name, f"holds {value!r}: give whole numbers (or token labels)")


def _ints(value):
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return int(value)


def _depth(value) -> int:
    d = 0
    while isinstance(value, list):
        d += 1
        value = value[0] if value else None
    return d


def _per_request(name: str, value, bs: int) -> list:
    """[bs] field: scalar ok when bs == 1; [bs, 1] flattened."""
    if not isinstance(value, list):
        value = [value]
    if value and all(isinstance(v, list) and len(v) == 1 for v in value):
        value = [v[0] for v in value]
    if _depth(value) != 1:
        raise SpecvizError(name, f"must be one number per request ([bs] = [{bs}])")
    if len(value) != bs:
        raise SpecvizError(name, f"has {len(value)} entries but the batch has bs = {bs} requests: one per request")
    return value


def _matrix(name: str, value, bs: int, width: int | None, what: str) -> list:
    """[bs, width] field: a flat list is accepted when bs == 1."""
    if not isinstance(value, list):
        raise SpecvizError(name, f"must be a list ({what})")
    if bs == 1 and _depth(value) == 1:
        value = [value]
    if _depth(value) != 2 or any(not isinstance(r, list) for r in value):
        raise SpecvizError(name, f"must be a 2-D list [bs, ...] ({what})")
    if len(value) != bs:
        raise SpecvizError(name, f"has {len(value)} rows but the batch has bs = {bs} requests ({what})")
    if width is not None:
        for b, r in enumerate(value):
            if len(r) != width:
                raise SpecvizError(f"{name}[{b}]", f"has {len(r)} entries but should have {width} ({what})")
    return value


def _ragged(name: str, value, bs: int, what: str) -> list:
    """Per request a list of any length; a flat list is accepted when bs == 1."""
    if not isinstance(value, list):
        raise SpecvizError(name, f"must be a list ({what})")
    if bs == 1 and _depth(value) <= 1:
        value = [value]
    if len(value) != bs or any(not isinstance(r, list) for r in value):
        raise SpecvizError(name, f"must hold one list per request (bs = {bs}) ({what})")
    return value


def normalise_claimed(s: Scenario, claimed: dict) -> dict:
    """Canonical names and shapes, labels -> ids; raises SpecvizError naming the field."""
    if not isinstance(claimed, dict):
        raise SpecvizError("claimed", "must be an object {field: array}")
    allowed = auditable_fields(s)
    bs, n, W = len(s.requests), s.n, s.width
    out = {}
    for raw_name, value in claimed.items():
        name = ALIASES.get(raw_name, raw_name)
        if name == "commit_lens" and "accept_lens" in allowed and not algorithms.get(s.algorithm).family == "dspark":
            name = "accept_lens"
        if name == "accept_lens" and algorithms.get(s.algorithm).family == "dspark":
            name = "commit_lens"
        if name not in allowed:
            raise SpecvizError(f"claimed.{raw_name}", f"is not an output of {s.algorithm}: audit one of {', '.join(allowed)}")
        if name in out:
            raise SpecvizError(f"claimed.{raw_name}", f"is given twice (as {name!r} under another name)")
        if isinstance(value, str) and not (name in TOKEN_FIELDS and value in s.vocab):
            value = parse_array(value, raw_name)
        if name in TOKEN_FIELDS:
            value = _to_ids(s, raw_name, value)
        _check_ints(raw_name, value)
        value = _ints(value)
        if name in ("accept_token_num", "accept_lens", "commit_lens", "correct_len", "bonus", "new_seq_lens"):
            value = _per_request(raw_name, value, bs)
        elif name == "accept_index":
            width = n if s.algorithm == "dspark_sampling" else W
            value = _matrix(raw_name, value, bs, None, f"[bs, W] = [{bs}, {width}]: global rows, -1 padded")
        elif name == "accept_tokens":
            value = _matrix(raw_name, value, bs, None, f"[bs, W] = [{bs}, {W}]")
        elif name == "out_tokens":
            value = _matrix(raw_name, value, bs, None, f"[bs, T] = [{bs}, {n}]")
        elif name == "predicts":
            if _depth(value) == 2:
                value = [v for r in value for v in r]
            if _depth(value) != 1:
                raise SpecvizError(raw_name, f"must be the flat [bs*n] = [{bs * n}] list (or [bs, n])")
            if len(value) != bs * n:
                raise SpecvizError(raw_name, f"has {len(value)} entries but bs*n = {bs * n}: one per verify row, request-major")
        else:  # outputs, committed_rows, committed_tokens
            value = _ragged(raw_name, value, bs, "one list per request")
        out[name] = value
    return out
