"""Step 1 of a round, the Draft (SEMANTICS.md §2): expand the root ``depth`` times, score by the
cumulative path probability, keep the best ``topk`` beams, and pick ``selected_index`` / ``parent_list``
(chain rejection sampling samples each draft token from the Draft's q instead). ``specviz.rooms.loop.decode``
runs the rest of the round.
"""
from __future__ import annotations

import numpy as np
import torch

from specviz.rooms.loop.model import KVCache, TinyLM
from specviz.rooms.loop.settings import DraftTree, LoopSettings


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

def _softmax(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    return torch.softmax(logits.to(torch.float32) / float(temperature), dim=-1)


def _top(values: torch.Tensor, k: int) -> list:
    """Indices of the k largest values, descending; ties go to the lower index (§2)."""
    order = torch.sort(-values, stable=True).indices
    return [int(i) for i in order[:k]]


def _draw(probs: np.ndarray, coin: float) -> int:
    """Inverse-CDF draw (first token whose running sum exceeds coin * total)."""
    from specviz.reference import inverse_cdf

    return inverse_cdf(np.asarray(probs, dtype=np.float32), float(coin), last_valid_fallback=True)


# ---------------------------------------------------------------------------------------------
# Draft rollout (§2)
# ---------------------------------------------------------------------------------------------

def draft_rollout(draft: TinyLM, dcache: KVCache, root: int, s: LoopSettings, draft_coins: list) -> DraftTree:
    """Expand ``root`` ``s.depth`` times with the Draft; the Draft cache is left as it was."""
    topk, S, n = s.topk, s.depth, s.num_draft_tokens
    L = dcache.length
    chain_sampling = s.algorithm == "chain"
    q_temp = s.temperature if chain_sampling else 1.0
    forwards = 0

    # Scratch rows appended to the Draft cache during the rollout: cache row -> its ancestor rows.
    anc = {L: [L]}
    logits = draft.forward(dcache, [root], [L], torch.ones(1, L + 1, dtype=torch.bool))
    forwards += 1
    q_root = _softmax(logits[0], q_temp)

    cand_tok, cand_score, cand_qrow, cand_row = [], [], [], []   # per flat candidate index
    q_rows = [q_root]              # distinct draft distributions computed (index = q row id)
    cand_parent_q = []             # q row id each candidate was drawn/ranked from
    node_q_of_row = {L: 0}         # Draft cache row -> its q row id

    # step 0
    if chain_sampling:
        tops = [_draw(q_root.numpy(), draft_coins[0])]
    else:
        tops = _top(q_root, topk)
    for t in tops:
        cand_tok.append(t)
        cand_score.append(float(q_root[t]))
        cand_parent_q.append(0)
        cand_row.append(None)
    parent_list = [-1] + list(range(topk))
    beams = list(range(topk))      # flat candidate indices of the current beams, best first

    for step in range(1, S):
        # Feed the beams' tokens: each attends to the prefix, its ancestors' scratch rows and itself.
        base = dcache.length
        m = len(beams)
        mask = torch.zeros(m, base + m, dtype=torch.bool)
        mask[:, :L] = True
        toks, poss = [], []
        for r, c in enumerate(beams):
            parent_row = L if step == 1 else cand_row[_parent_cand(c, topk, parent_list)]
            rows = anc[parent_row] + [base + r]
            anc[base + r] = rows
            cand_row[c] = base + r
            mask[r, rows] = True
            toks.append(cand_tok[c])
            poss.append(L + step)
        logits = draft.forward(dcache, toks, poss, mask)
        forwards += 1
        block_scores, block_tok, block_q = [], [], []
        for r, c in enumerate(beams):
            q = _softmax(logits[r], q_temp)
            q_rows.append(q)
            node_q_of_row[base + r] = len(q_rows) - 1
            kids = [_draw(q.numpy(), draft_coins[step])] if chain_sampling else _top(q, topk)
            for t in kids:
                block_scores.append(cand_score[c] * float(q[t]))
                block_tok.append(t)
                block_q.append(len(q_rows) - 1)
        offset = topk + topk * topk * (step - 1)
        for j in range(len(block_tok)):
            cand_tok.append(block_tok[j])
            cand_score.append(np.float32(block_scores[j]).item())
            cand_parent_q.append(block_q[j])
            cand_row.append(None)
        new_beams = _top(torch.tensor(block_scores, dtype=torch.float32), topk)
        beams = [offset + j for j in new_beams]
        if step < S - 1:
            parent_list.extend(beams)

    dcache.truncate(L)
    scores = torch.tensor(cand_score, dtype=torch.float32)
    selected = sorted(_top(scores, n - 1))
    parents = [-1]
    where = {c: i + 1 for i, c in enumerate(selected)}
    for c in selected:
        slot = c // topk
        parents.append(0 if slot == 0 else where[parent_list[slot]])
    V = q_root.shape[0]
    node_q = np.zeros((n, V), dtype=np.float32)
    node_q[0] = q_root.numpy()
    for i, c in enumerate(selected):
        row = cand_row[c]
        if row is not None:
            node_q[i + 1] = q_rows[node_q_of_row[row]].numpy()
    proposal_q = np.zeros((n, V), dtype=np.float32)
    for i, c in enumerate(selected):
        proposal_q[i + 1] = q_rows[cand_parent_q[c]].numpy()
    return DraftTree(candidates=[root] + [cand_tok[c] for c in selected], parents=parents,
                     parent_list=parent_list[: topk * (S - 1) + 1], selected_index=selected,
                     scores=[1.0] + [cand_score[c] for c in selected], node_q=node_q, proposal_q=proposal_q,
                     draft_forwards=forwards)


def _parent_cand(c: int, topk: int, parent_list: list) -> int:
    """Flat candidate index of candidate c's parent (c at step >= 1)."""
    return parent_list[c // topk]
