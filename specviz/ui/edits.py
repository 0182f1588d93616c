"""Scenario edits the pages offer (no streamlit): replace a tree while keeping per-node inputs,
and the quick target predictions of the greedy page.

A structural edit renumbers nodes (``DrawnTree.canonical``), so per-node inputs
(``target_predict``) are carried over by *token path* (the labels from the root to the node):
a node keeps its target prediction as long as its path is unchanged.
"""
from __future__ import annotations

from specviz.model import DrawnTree
from specviz.scenario import Scenario, scenario_from_dict


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
    W = data.get("num_speculative_tokens")
    if W is not None and W > tree.n:
        data["num_speculative_tokens"] = tree.n
    return scenario_from_dict(data)


def set_target_predict(s: Scenario, labels: list[str], b: int = 0) -> Scenario:
    data = s.model_dump(mode="json")
    data["requests"][b]["target_predict"] = list(labels)
    return scenario_from_dict(data)


def add_vocab(s: Scenario, label: str) -> Scenario:
    data = s.model_dump(mode="json")
    if label and label not in data["vocab"]:
        data["vocab"].append(label)
    return scenario_from_dict(data)


def branch(tree: DrawnTree, pick: str = "first") -> list[int]:
    """Nodes from the root following the first (or last) child at each level."""
    path = [0]
    while True:
        kids = tree.children(path[-1])
        if not kids:
            return path
        path.append(kids[0] if pick == "first" else kids[-1])


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
    from specviz.errors import SpecvizError

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
