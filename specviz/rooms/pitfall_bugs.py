"""The pitfall gallery's buggy implementations, each small and readable so that a student can spot
the mistake, and the scenarios they run on (``specviz.rooms.pitfalls`` holds the gallery's words and shows
each bug beside the reference).

Each ``bug_*`` takes a scenario and returns the audit's field names (``accept_index``, ``outputs``,
``correct_len``, ...) as token ids, as a wrong Accept stage would. No streamlit here.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from specviz.rooms.audit import expected_outputs
from specviz.replay.engine import run_scenario
from specviz.base.paths import scenario_dir
from specviz.reference import top_p_renorm
from specviz.inputs.scenario import Scenario, load_scenario, scenario_from_dict

PRESET_DIR = scenario_dir()  # the checkout's scenarios/, or the wheel's copy


@lru_cache(maxsize=None)
def preset(name: str) -> Scenario:
    """A scenario from scenarios/<name>.json."""
    return load_scenario(PRESET_DIR / f"{name}.json")


def _with_request(s: Scenario, b: int, **changes) -> Scenario:
    data = s.model_dump(mode="json")
    data["requests"][b].update(changes)
    return scenario_from_dict(data)


# ---------------------------------------------------------------------------------------------
# Small readable helpers the buggy implementations share
# ---------------------------------------------------------------------------------------------


def _greedy_path(s: Scenario, b: int) -> list[int]:
    """Node ids of the greedy accepted path of request b, root first (written plainly, for the buggy variants)."""
    tree = s.tree(b)
    target = s.ids(s.requests[b].target_predict)
    path = [0]
    while len(path) < s.width:
        want = target[path[-1]]
        nxt = next((c for c in tree.children(path[-1]) if tree.tokens[c] == want), None)
        if nxt is None:
            break
        path.append(nxt)
    return path


def _greedy_predicts(s: Scenario) -> np.ndarray:
    """predicts [bs*n] of a correct greedy walk (accepted child tokens, then the bonus)."""
    n = s.n
    pr = np.zeros(len(s.requests) * n, dtype=np.int64)
    for b in range(len(s.requests)):
        path = _greedy_path(s, b)
        tokens = s.tree(b).tokens
        target = s.ids(s.requests[b].target_predict)
        for a, c in zip(path, path[1:]):
            pr[b * n + a] = tokens[c]
        pr[b * n + path[-1]] = target[path[-1]]
    return pr


# ---------------------------------------------------------------------------------------------
# 1. accept_index without the root row
# ---------------------------------------------------------------------------------------------


def bug_no_root(s: Scenario) -> dict:
    """BUG: only the accepted *draft* rows go into accept_index; the root's row is left out."""
    W, n = s.width, s.n
    pr = _greedy_predicts(s)
    ai, outs = [], []
    for b in range(len(s.requests)):
        rows = [b * n + i for i in _greedy_path(s, b)[1:]]  # <- the bug: [1:] drops the root
        ai.append(rows + [-1] * (W - len(rows)))
        outs.append([int(pr[r]) for r in rows])
    return {"accept_index": ai, "outputs": outs}


# ---------------------------------------------------------------------------------------------
# 2. gathering predicts through a -1 pad
# ---------------------------------------------------------------------------------------------


def pad_scenario() -> Scenario:
    # Request 0 of the batch: the target predicts X after A, so only A is accepted and
    # accept_index[0] = [0, 1, -1]. The -1 then reads predicts[-1] = request 1's last row.
    return _with_request(preset("batch_two_requests"), 0, target_predict=["A", "X", "X", "X", "X"]).replace(
        name="pitfall_pad_gather", title="A -1 pad gathered as an index",
        description="Request 0 accepts only A (the target predicts X after A): accept_index[0] = [0, 1, -1]. Request 1 "
                    "accepts B, F: [5, 6, 9], so the last flat element predicts[9] is request 1's bonus Y.")


def bug_pad_gather(s: Scenario) -> dict:
    """BUG: accept_tokens = predicts[accept_index] over all W slots, and bonus = the last slot."""
    run = run_scenario(s, with_trace=False)
    pr = run.result["predicts"].reshape(-1)
    ai = run.result["accept_index"]
    gathered = pr[ai]  # <- the bug: numpy / torch read index -1 as the LAST element of the whole tensor
    return {"accept_tokens": gathered.tolist(), "outputs": gathered.tolist(), "bonus": gathered[:, -1].tolist()}


# ---------------------------------------------------------------------------------------------
# 3. DSpark: counting a non-leading match in correct_len
# ---------------------------------------------------------------------------------------------


def dspark_scenario() -> Scenario:
    # Drafts A, B, C; the target says A, X, C: B fails, C matches again later.
    return _with_request(preset("dspark_chain"), 0, target_predict=["A", "X", "C", "Y"]).replace(
        name="pitfall_dspark_non_leading", title="A match after the first mismatch",
        description="Anchor R, drafts A, B, C; the target predicts A, X, C, Y. A matches, B does not (X), C matches again. "
                    "correct_len = 1 (the leading run), bonus = target_predict[1] = X, output A X.")


def bug_count_all_matches(s: Scenario) -> dict:
    """BUG: correct_len = the number of matches anywhere, not the leading run."""
    out = {"correct_len": [], "bonus": [], "outputs": []}
    for r in s.requests:
        chain, target = s.ids(r.chain), s.ids(r.target_predict)
        matches = [chain[t + 1] == target[t] for t in range(len(chain) - 1)]
        k = sum(matches)  # <- the bug: should stop at the first False
        bonus = target[k]
        out["correct_len"].append(k)
        out["bonus"].append(bonus)
        out["outputs"].append(chain[1:k + 1] + [bonus])
    return out


# ---------------------------------------------------------------------------------------------
# 4. committing KV by output tokens
# ---------------------------------------------------------------------------------------------


def bug_kv_by_outputs(s: Scenario) -> dict:
    """BUG: the KV commit keeps the *output* tokens (A C X) instead of the input rows (R A C)."""
    pr = _greedy_predicts(s)
    n = s.n
    toks = []
    for b in range(len(s.requests)):
        rows = [b * n + i for i in _greedy_path(s, b)]
        toks.append([int(pr[r]) for r in rows])  # <- the bug: predicts[rows] are outputs, not inputs
    return {"committed_tokens": toks}


# ---------------------------------------------------------------------------------------------
# 5. treating the target-only work buffer as q
# ---------------------------------------------------------------------------------------------


def buffer_scenario() -> Scenario:
    return preset("thresholds_below_1").replace(
        threshold_acc=1.0, name="pitfall_buffer_as_q", title="Target-only sampling with coin u[0] = .9",
        description="Thresholds 1 (exact). Coin u[0] = .9 lies outside A's bucket [0, .5) and B's [.5, .8), so both root "
                    "children are rejected; the terminal token comes from relu(p_R − buffer) = (0 0 0 0 .2 0): X.")


def bug_buffer_as_q(s: Scenario) -> dict:
    """BUG: the zero work buffer passed as draft_probs is used as q in the chain rule u*q < p.

    With q = 0, u*q = 0 < p for every child with p > 0, so the first such child is always
    accepted, whatever the coin; the residual relu(p − 0) is then plain p.
    """
    out = {"accept_index": [], "outputs": []}
    W, n = s.width, s.n
    for b, r in enumerate(s.requests):
        tree = s.tree(b)
        p = np.asarray(r.target_probs, dtype=np.float32)
        buffer_q = np.zeros_like(p)  # what the target-only sampler receives as "draft_probs"
        path, outputs = [0], []
        while len(path) < W:
            node = path[-1]
            coin = np.float32(r.coins[node])
            pick = next((c for c in tree.children(node)
                         if coin * buffer_q[node, tree.tokens[c]] < p[node, tree.tokens[c]]), None)  # <- the bug
            if pick is None:
                break
            outputs.append(tree.tokens[pick])
            path.append(pick)
        dist = np.maximum(p[path[-1]] - buffer_q[path[-1]], 0)
        cums = np.cumsum(dist)
        outputs.append(int(np.argmax(cums > np.float32(r.coin_final) * cums[-1])))
        out["accept_index"].append([b * n + i for i in path] + [-1] * (W - len(path)))
        out["outputs"].append(outputs)
    return out


# ---------------------------------------------------------------------------------------------
# 6. q = 0 for a proposed token
# ---------------------------------------------------------------------------------------------


def q_zero_scenario() -> Scenario:
    # The draft "proposed" A although its q row gives A no mass (a broken draft_probs export).
    s = preset("pq_example")
    return _with_request(s, 0, draft_probs=[[0.0, 0.5, 0.5, 0.0]], coins=[0.7], coin_final=0.25).replace(
        name="pitfall_q_zero", title="q(A) = 0 for the proposed token A",
        description="The draft 'proposed' A but its q row gives A no mass. 0.5.23 rejects (it needs 0 < q <= 1); the "
                    "residual relu(p − q) = (.3 0 0) then gives A as the correction. Earlier releases accept A.")


def bug_q_zero(s: Scenario) -> dict:
    """Earlier releases' rule u*q < p: with q = 0 the product is 0, so any p > 0 accepts."""
    exp = expected_outputs(s.replace(semantics="earlier"))
    return {k: exp[k] for k in ("accept_index", "outputs")}


# ---------------------------------------------------------------------------------------------
# 7. a coin exactly on a bucket boundary (< vs <=)
# ---------------------------------------------------------------------------------------------


def bug_le_boundary(s: Scenario) -> dict:
    """BUG (and earlier releases): coin <= running sum instead of the strict coin < running sum."""
    exp = expected_outputs(s.replace(semantics="earlier"))
    return {k: exp[k] for k in ("accept_index", "outputs")}


# ---------------------------------------------------------------------------------------------
# 8. thresholds below 1
# ---------------------------------------------------------------------------------------------


def bug_thresholds(s: Scenario) -> dict:
    """threshold_acc = 0.5: the test u < running_sum / 0.5 doubles every bucket (lossy)."""
    exp = expected_outputs(s.replace(threshold_acc=0.5))
    return {k: exp[k] for k in ("accept_index", "outputs")}


# ---------------------------------------------------------------------------------------------
# 9. top-p applied to one side only
# ---------------------------------------------------------------------------------------------

TOP_P = 0.8
_P_RAW = [[0.5, 0.35, 0.15, 0.0], [0.2, 0.5, 0.3, 0.0]]  # target rows (root, after A), vocab A B C R
_Q_RAW = [[0.6, 0.3, 0.1, 0.0]]  # the draft's distribution before top-p


def _truncate(rows) -> list:
    return [[float(round(float(v), 6)) for v in top_p_renorm(np.asarray(r, dtype=np.float32), TOP_P)] for r in rows]


def top_p_scenario() -> Scenario:
    # The request asks for top_p = 0.8. The draft sampled A from its top-p distribution, so the
    # q that matches is the truncated one; the target side is truncated as SGLang does.
    s = preset("pq_example")
    return _with_request(s, 0, target_probs=_truncate(_P_RAW), draft_probs=_truncate(_Q_RAW), coins=[0.9],
                         coin_final=0.5).replace(
        name="pitfall_top_p_one_side", title="top_p = 0.8 on both sides",
        description="p = top_p(.5 .35 .15) = (.588 .412 0), q = top_p(.6 .3 .1) = (.667 .333 0). A is accepted iff "
                    "u*q(A) < p(A), i.e. u < .882; the coin .9 rejects it and the residual gives B.")


def bug_top_p_one_side(s: Scenario) -> dict:
    """BUG: top-p truncates the target p, but the raw (untruncated) draft distribution is passed as q."""
    bad = _with_request(s, 0, draft_probs=_Q_RAW)  # <- the bug: q without the request's top-p
    exp = expected_outputs(bad)
    return {k: exp[k] for k in ("accept_index", "outputs")}


# ---------------------------------------------------------------------------------------------
# 10. a batch with per-request offsets forgotten
# ---------------------------------------------------------------------------------------------


def bug_local_ids(s: Scenario) -> dict:
    """BUG: accept_index stores local node ids i instead of global rows b*n + i, and the gather then
    reads request 0's predicts for request 1."""
    W = s.width
    pr = _greedy_predicts(s)
    ai, outs = [], []
    for b in range(len(s.requests)):
        nodes = _greedy_path(s, b)  # <- the bug: no b*n offset
        ai.append(nodes + [-1] * (W - len(nodes)))
        outs.append([int(pr[i]) for i in nodes])
    return {"accept_index": ai, "outputs": outs}
