"""EAGLE rollout parents: which node each selected candidate hangs under (SEMANTICS.md §3.4).

Below both the model layer (DrawnTree.from_eagle / to_eagle checks) and the numpy reference
(build_tree); pure numpy.
"""
from __future__ import annotations

import numpy as np

INVALID_PARENT = -2  # parent candidate not selected: the node stays unlinked (§3.4)


def parent_nodes(parent_list: np.ndarray, selected_index: np.ndarray, topk: int) -> np.ndarray:
    """Parent node of every node: [bs, n] int64; -1 for the root, INVALID_PARENT when unselected."""
    bs, m = selected_index.shape
    par = np.full((bs, m + 1), -1, dtype=np.int64)
    for b in range(bs):
        where = {int(c): pos for pos, c in enumerate(selected_index[b])}
        for i in range(1, m + 1):
            slot = int(selected_index[b, i - 1]) // topk
            if slot == 0:
                par[b, i] = 0
            else:
                par[b, i] = where.get(int(parent_list[b, slot]), INVALID_PARENT - 1) + 1
    return par
