"""Result types shared by every backend (fields exactly as in spec/API.md).

Arrays are numpy arrays when returned by ``specviz.reference`` directly, and torch tensors
when returned through ``specviz.algorithms.backends.get_backend(...)``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


def _as_dict(obj) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


@dataclass(frozen=True)
class TreeBuild:
    tree_mask: Any  # full_mask: bool [n*sum(seq_lens) + bs*n*n]; qlen_only: bool [bs*n*n]; bitpacking: uint [bs*n]
    positions: Any  # int64 [bs*n]
    retrieve_index: Any  # int64 [bs, n], global rows b*n+i
    retrieve_next_token: Any  # int64 [bs, n], first child or -1
    retrieve_next_sibling: Any  # int64 [bs, n], next sibling or -1

    as_dict = _as_dict


@dataclass(frozen=True)
class VerifyResult:
    predicts: Any  # int32 [bs*n], token emitted after each global row
    accept_index: Any  # int32 [bs, W], global rows of root + accepted nodes, -1 padded
    accept_token_num: Any  # int32 [bs], accepted drafts (bonus not counted)

    as_dict = _as_dict


@dataclass(frozen=True)
class TreeSampleResult:
    predicts: Any  # int32 [bs*n]
    accept_index: Any  # int32 [bs, W]
    accept_token_num: Any  # int32 [bs]
    draft_probs: Any  # float32 [bs, n, V]: the work buffer after the run (not q!)

    as_dict = _as_dict


@dataclass(frozen=True)
class EagleSampleResult:
    predicts: Any  # int32 [bs*n]
    accept_index: Any  # int32 [bs, W]
    accept_lens: Any  # int32 [bs] = accept_token_num + 1
    accept_tokens: Any  # int32 [bs, W] = predicts[accept_index] on the valid prefix, -1 beyond
    bonus: Any  # int32 [bs], the next round's root

    as_dict = _as_dict


@dataclass(frozen=True)
class SampleCounts:
    """What ``sample_many`` returns: how often each outcome occurred over ``num_trials``."""

    num_trials: int
    first_token_counts: Any  # int64 [V]: the first emitted token of each trial
    sequence_counts: dict  # {tuple(emitted tokens): count}
    accept_len_counts: Any  # int64 [W+1]: how many trials emitted 1, 2, ... tokens (index = length)

    as_dict = _as_dict
