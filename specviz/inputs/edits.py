"""Scenario edits the pages offer (no streamlit): replace a tree while keeping per-node inputs,
and the quick target predictions of the greedy page.

A structural edit renumbers nodes (``DrawnTree.canonical``), so per-node inputs
(``target_predict``) are carried over by *token path* (the labels from the root to the node):
a node keeps its target prediction as long as its path is unchanged.
"""
from __future__ import annotations

from specviz.inputs.model import DrawnTree
from specviz.inputs.scenario import Scenario, scenario_from_dict


def token_paths(tree: DrawnTree) -> list[tuple]:
    """The token ids from the root to each node."""
    return [tuple(tree.tokens[j] for j in tree.path_to(i)) for i in range(tree.n)]


def free_token(s: Scenario, tree: DrawnTree) -> str:
    """A label the tree does not use (the natural "target disagrees" token); X when present."""
    used = {s.vocab[t] for t in tree.tokens}
    if "X" in s.vocab and "X" not in used:
        return "X"
    return next((v for v in s.vocab if v not in used), s.vocab[-1])


def replace_tree(s: Scenario, tree: DrawnTree, b: int = 0) -> Scenario:
    """``s`` with request b's tree replaced by ``tree``; target_predict carried over by token path.

    Every request of a batch must have the same n, so the other requests are resized to match
    (their trees are kept when the size matches, else they get a copy of the new tree).
    """
    data = s.model_dump(mode="json")
    old = s.tree(b)
    old_paths = token_paths(old)
    new_paths = token_paths(tree)
    fill = free_token(s, tree)
    req = data["requests"][b]
    req["tree"] = {"parents": list(tree.parents), "tokens": [s.vocab[t] for t in tree.tokens]}
    if req.get("target_predict") is not None:
        old_tp = req["target_predict"]
        where = {}
        for i, p in enumerate(old_paths):
            where.setdefault(p, i)
        req["target_predict"] = [old_tp[where[p]] if p in where else fill for p in new_paths]
    for k, other in enumerate(data["requests"]):
        if k != b and other.get("tree") is not None and len(other["tree"]["parents"]) != tree.n:
            other["tree"] = dict(req["tree"])
            if other.get("target_predict") is not None:
                other["target_predict"] = list(req["target_predict"])
    # The width is derived from the edited tree (deepest path + 1), never kept from before the
    # edit: a stored width shrinks on a delete and would silently cut a later, deeper walk.
    data["num_speculative_tokens"] = None
    return _edited(s, data)


def _edited(s: Scenario, data: dict) -> Scenario:
    """The scenario built from ``data``; a preset's prose (title, descriptions) is dropped once the
    inputs differ from it, since it names tokens and rows of the preset's walk, not this one."""
    new = scenario_from_dict(data)
    if same_inputs(new, s):
        return new
    return new.replace(title="", description="", description_zh="")


def same_inputs(a: Scenario, b: Scenario) -> bool:
    """True when a and b give the algorithm the same inputs (names and prose aside)."""
    skip = {"name", "title", "description", "description_zh"}
    da = {k: v for k, v in a.model_dump(mode="json").items() if k not in skip}
    db = {k: v for k, v in b.model_dump(mode="json").items() if k not in skip}
    if da.get("num_speculative_tokens") is None:
        da["num_speculative_tokens"] = a.width
    if db.get("num_speculative_tokens") is None:
        db["num_speculative_tokens"] = b.width
    return da == db


def set_target_predict(s: Scenario, labels: list[str], b: int = 0) -> Scenario:
    data = s.model_dump(mode="json")
    data["requests"][b]["target_predict"] = list(labels)
    return _edited(s, data)


def add_vocab(s: Scenario, label: str) -> Scenario:
    data = s.model_dump(mode="json")
    if label and label not in data["vocab"]:
        data["vocab"].append(label)
    return _edited(s, data)


def branch(tree: DrawnTree, pick: str = "first") -> list[int]:
    """Nodes from the root following the first (or last) child at each level.

    Only a child that is the first of its siblings with its token counts: greedy accept takes the
    first sibling whose token matches, so a later duplicate can never be reached (a "last" branch
    through it would name a walk that greedy cannot make)."""
    path = [0]
    while True:
        kids = tree.children(path[-1])
        seen, reachable = set(), []
        for k in kids:
            if tree.tokens[k] not in seen:
                seen.add(tree.tokens[k])
                reachable.append(k)
        if not reachable:
            return path
        path.append(reachable[0] if pick == "first" else reachable[-1])


def agree_along(s: Scenario, pick: str = "first", b: int = 0) -> list[str]:
    """target_predict labels under which greedy accept follows ``branch(tree, pick)`` to its end.

    Along the branch each row predicts the next node's token; every other row (and the leaf)
    predicts a token the tree does not use, so the bonus is visible.
    """
    tree = s.tree(b)
    path = branch(tree, pick)
    fill = free_token(s, tree)
    out = [fill] * tree.n
    for a, c in zip(path, path[1:]):
        out[a] = s.vocab[tree.tokens[c]]
    return out


def root_mismatch(s: Scenario, b: int = 0) -> list[str]:
    """target_predict labels where the target's token at the root matches no child."""
    tree = s.tree(b)
    cur = list(s.requests[b].target_predict or [free_token(s, tree)] * tree.n)
    cur[0] = free_token(s, tree)
    return cur


def branch_text(s: Scenario, pick: str = "first", b: int = 0) -> str:
    """"A -> C": the drafts along the branch (the root left out)."""
    tree = s.tree(b)
    return " → ".join(s.vocab[tree.tokens[i]] for i in branch(tree, pick)[1:]) or s.vocab[tree.tokens[0]]


def tree_from_table(parents, tokens, s: Scenario, field: str = "tree") -> DrawnTree:
    """A DrawnTree from table columns (parents as ints, tokens as labels); errors name the field."""
    from specviz.base.errors import SpecvizError

    ids = {t: i for i, t in enumerate(s.vocab)}
    tok_ids = []
    for k, t in enumerate(tokens):
        if t not in ids:
            raise SpecvizError(f"{field}.tokens[{k}]", f"is {t!r}, which is not in the vocabulary {s.vocab}: pick a listed token")
        tok_ids.append(ids[t])
    par = []
    for k, p in enumerate(parents):
        try:
            par.append(int(p))
        except (TypeError, ValueError):
            raise SpecvizError(f"{field}.parents[{k}]", f"is {p!r}: a parent is a node number (-1 for the root)") from None
    return DrawnTree(tuple(par), tuple(tok_ids))


def tree_views(s: Scenario, b: int = 0, mode: str = "full_mask") -> dict:
    """What the tree builder shows for request b, computed by SGLang's own path where it can.

    When the drawn tree is an EAGLE rollout, ``build_tree`` (the numpy reference) builds the
    links, positions and mask from its parent_list / selected_index. Otherwise the links come
    from the drawn tree (``DrawnTree.retrieve_arrays``), positions are seq_len + depth and the
    mask row of a node marks itself and its ancestors: what build_tree would give such a tree.

    Returns eagle (EagleForm or None), reason (why not expressible, or None), build (TreeBuild
    of this one request, numpy), matrix ([n, n] bool), inputs (build_tree's arguments, or {}).
    """
    import numpy as np

    from specviz.inputs.model import NotExpressible
    from specviz.reference import build_tree, build_tree_described, tree_mask_matrix
    from specviz.base.results import TreeBuild

    tree = s.tree(b)
    seq_len = int(s.requests[b].seq_len)
    try:
        form = tree.to_eagle()
        reason = None
    except NotExpressible as exc:
        form, reason = None, exc.detail
    n = tree.n
    if form is not None and not (mode == "qlen_only_bitpacking" and n > 32):
        pl = np.asarray([form.parent_list], dtype=np.int64).reshape(1, -1)
        si = np.asarray([form.selected_index], dtype=np.int64).reshape(1, -1)
        sl = np.asarray([seq_len], dtype=np.int64)
        inputs = {"parent_list": pl, "selected_index": si, "verified_seq_len": sl, "topk": form.topk,
                  "depth": form.depth, "num_draft_tokens": n, "tree_mask_mode": mode}
        if mode == "full_mask":  # the prefix (n x seq_len cells, all True) is described, never allocated
            build = build_tree_described(pl, si, sl, topk=form.topk, depth=form.depth, num_draft_tokens=n)
        else:
            build = build_tree(pl, si, sl, topk=form.topk, depth=form.depth, num_draft_tokens=n, tree_mask_mode=mode)
        matrix = tree_mask_matrix(build, sl, n, mode)
        return {"eagle": form, "reason": reason, "build": build, "matrix": matrix, "inputs": inputs}
    ri, nt, ns = tree.retrieve_arrays(0)
    depths = tree.depths()
    matrix = np.zeros((n, n), dtype=bool)
    for i in range(n):
        matrix[i, tree.path_to(i)] = True
    build = TreeBuild(tree_mask=matrix.reshape(-1), positions=np.asarray([seq_len + d for d in depths], dtype=np.int64),
                      retrieve_index=ri[None], retrieve_next_token=nt[None], retrieve_next_sibling=ns[None])
    if reason is None and mode == "qlen_only_bitpacking":
        reason = f"qlen_only_bitpacking holds at most 32 nodes per request; this tree has {n}"
    return {"eagle": form, "reason": reason, "build": build, "matrix": matrix, "inputs": {}}


def tree_from_rollout(s: Scenario, topk, depth, num_draft_tokens, parent_list, selected_index, draft_tokens,
                      root_label: str, b: int = 0) -> Scenario:
    """The scenario with request b's tree replaced by what build_tree makes of an EAGLE rollout.

    ``parent_list`` / ``selected_index`` are lists of ints, ``draft_tokens`` labels (n-1 of them).
    Every failure is a SpecvizError naming the field (build_tree's own checks first).
    """
    import numpy as np

    from specviz.base.errors import SpecvizError
    from specviz.inputs.model import EagleForm
    from specviz.reference import build_tree

    n = int(num_draft_tokens)
    if len(draft_tokens) != n - 1:
        raise SpecvizError("draft tokens", f"has {len(draft_tokens)} tokens but num_draft_tokens - 1 = {n - 1}: give one per draft node")
    ids = {t: i for i, t in enumerate(s.vocab)}
    for k, t in enumerate(draft_tokens):
        if t not in ids:
            raise SpecvizError(f"draft tokens[{k}]", f"is {t!r}, which is not in the vocabulary {s.vocab}: pick a listed token")
    pl = np.asarray([list(parent_list)], dtype=np.int64).reshape(1, -1)
    si = np.asarray([list(selected_index)], dtype=np.int64).reshape(1, -1)
    sl = np.asarray([s.requests[b].seq_len], dtype=np.int64)
    build_tree(pl, si, sl * 0, topk=topk, depth=depth, num_draft_tokens=n,  # SGLang's checks name the field
               tree_mask_mode="qlen_only")  # (the mask's prefix, n x seq_len cells, plays no part in them)
    form = EagleForm(topk=int(topk), depth=int(depth), num_draft_tokens=n, parent_list=tuple(parent_list),
                     selected_index=tuple(selected_index), draft_tokens=tuple(ids[t] for t in draft_tokens),
                     root_token=ids[root_label])
    tree = DrawnTree.from_eagle(form)
    return replace_tree(s, tree, b)


def parse_ints(field: str, text: str) -> list[int]:
    """"0, 1, 2" or "[0 1 2]" -> [0, 1, 2]; a SpecvizError naming ``field`` otherwise."""
    from specviz.base.errors import SpecvizError
    from specviz.base.safety import bounded_int

    parts = [p for p in str(text).replace("[", " ").replace("]", " ").replace(",", " ").split() if p]
    out = []
    for k, p in enumerate(parts):
        try:
            out.append(bounded_int(p, f"{field}[{k}]"))
        except SpecvizError:
            raise SpecvizError(field, f"entry {k} is {p[:20]!r}: give whole numbers (at most 20 digits) separated by commas") from None
    return out


def parse_labels(text: str) -> list[str]:
    """"A, B, C" -> ["A", "B", "C"]."""
    return [p for p in str(text).replace("[", " ").replace("]", " ").replace(",", " ").split() if p]


# -- request edits the sampling pages make (p rows, coins, slots, tree adoption) --------------------------
# Each takes a Scenario and returns a new validated one (a SpecvizError naming the field otherwise).

LOGIT_FIELDS = ("target_logits", "temperature", "top_k", "top_p")


def set_fields(s: Scenario, b: int = 0, top: dict | None = None, **changes) -> Scenario:
    """Request b's fields replaced by ``changes`` (and top-level fields by ``top``). Giving p rows or
    target predictions directly drops the logits they would otherwise be derived from."""
    data = s.model_dump(mode="json")
    data.update(top or {})
    r = data["requests"][b]
    r.update(changes)
    if "target_probs" in changes or "target_predict" in changes:
        for k in LOGIT_FIELDS:
            r.pop(k, None)
    return _edited(s, data)


def set_slot(s: Scenario, field: str, index: int | None, value, b: int = 0) -> Scenario:
    """One entry of a per-slot request field (``coins[i]``, ``chain[i]``, ``target_predict[i]``), or the
    whole field when ``index`` is None. A first edit of target_predict on a logits scenario starts from
    the predictions the logits give."""
    data = s.model_dump(mode="json")
    r = data["requests"][b]
    if field == "target_predict" and r.get("target_predict") is None:
        r["target_predict"] = [s.vocab[t] for t in s.target_predict(b)]
        for k in LOGIT_FIELDS:
            r.pop(k, None)
    if index is None:
        r[field] = value
    else:
        r[field][index] = value
    return _edited(s, data)


def set_coin(s: Scenario, i: int, value: float, b: int = 0) -> Scenario:
    """Coin u[i] of request b; i < 0 sets the final coin (uniform_samples_for_final_sampling)."""
    if i < 0:
        return set_fields(s, b, coin_final=float(value))
    return set_slot(s, "coins", i, float(value), b)


def set_coins(s: Scenario, coins, final: float, b: int = 0) -> Scenario:
    return set_fields(s, b, coins=list(map(float, coins)), coin_final=float(final))


def normalised(s: Scenario, p_rows=None, q_rows=None, b: int = 0) -> Scenario:
    """p (and q, when the algorithm has one) rows normalised: the pending table edits when given, else
    the scenario's own rows (p derived from logits when the scenario gives logits)."""
    from specviz.algorithms.distributions import normalise_rows

    r = s.requests[b]
    p = p_rows if p_rows is not None else s.target_probs(b).tolist()
    changes = {"target_probs": normalise_rows(p)}
    if r.draft_probs is not None or q_rows is not None:
        changes["draft_probs"] = normalise_rows(q_rows if q_rows is not None else r.draft_probs)
    return set_fields(s, b, **changes)


def adopt_tree(s: Scenario, other: Scenario) -> Scenario:
    """``s`` (a tree-sampling scenario) with ``other``'s tree and vocabulary (e.g. the Tree builder's):
    p rows and coins of nodes that still exist are kept (when the vocabulary is the same), new nodes get
    uniform rows and coin 0.5; the width is derived from the new tree."""
    t = other.tree(0)
    data = s.model_dump(mode="json")
    data["vocab"] = list(other.vocab)
    V = len(other.vocab)
    old = s.requests[0]
    old_p = old.target_probs or s.target_probs(0).tolist()
    same_vocab = list(s.vocab) == list(other.vocab)
    uni = [1.0 / V] * V
    rows = [list(old_p[i]) if (same_vocab and i < len(old_p)) else uni for i in range(t.n)]
    coins = [old.coins[i] if old.coins and i < len(old.coins) else 0.5 for i in range(t.n)]
    data["requests"] = [{"tree": {"parents": list(t.parents), "tokens": [other.vocab[x] for x in t.tokens]},
                         "seq_len": other.requests[0].seq_len, "target_probs": rows, "coins": coins,
                         "coin_final": old.coin_final}]
    data["name"] = "from_tree_builder"
    data["num_speculative_tokens"] = None
    return _edited(s, data)
