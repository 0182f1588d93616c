"""The verify tree as a person draws it, and its SGLang forms.

A ``DrawnTree`` is a list of nodes: ``parents[i]`` (``-1`` for the root, node 0) and
``tokens[i]`` (token ids). Node i is verify row i of its request. Siblings are ordered by node
index, which is SGLang's order (first child = lowest index, next sibling = next higher index).

Two SGLang forms:
- the retrieve_* arrays (``retrieve_arrays``): any drawn tree goes there directly;
- the EAGLE rollout form (``EagleForm``: topk, depth, num_draft_tokens, parent_list,
  selected_index, draft tokens): only trees an EAGLE rollout can produce. ``to_eagle`` finds the
  smallest topk that fits, or raises ``NotExpressible`` with one sentence saying why.

No torch and no streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specviz.base.errors import SpecvizError

from specviz.base.limits import MAX_DEPTH, MAX_TREE_NODES  # noqa: E402,F401  (one set of limits: specviz.base.limits)


class NotExpressible(SpecvizError):
    """The drawn tree cannot come out of an EAGLE rollout (with the requested topk)."""

    def __init__(self, message: str):
        super().__init__("tree", message)


@dataclass(frozen=True)
class EagleForm:
    """One request's tree in SGLang's rollout form (SEMANTICS.md §2)."""

    topk: int
    depth: int  # S = speculative_num_steps
    num_draft_tokens: int  # n, including the root
    parent_list: tuple  # [topk*(depth-1)+1]; empty when depth == 1 (SGLang's [bs, 0])
    selected_index: tuple  # [n-1], ascending
    draft_tokens: tuple  # [n-1] tokens of nodes 1..n-1
    root_token: int

    @property
    def candidates(self) -> tuple:
        return (self.root_token,) + tuple(self.draft_tokens)


@dataclass(frozen=True)
class DrawnTree:
    parents: tuple
    tokens: tuple

    def __post_init__(self):
        object.__setattr__(self, "parents", tuple(int(p) for p in self.parents))
        object.__setattr__(self, "tokens", tuple(int(t) for t in self.tokens))
        self.validate()

    # -- checks ------------------------------------------------------------------------------
    def validate(self, field: str = "tree") -> None:
        n = len(self.parents)
        if n == 0:
            raise SpecvizError(f"{field}.parents", "is empty: a tree has at least the root (parents = [-1])")
        if n > MAX_TREE_NODES:
            raise SpecvizError(f"{field}.parents", f"has {n} nodes; specviz draws at most {MAX_TREE_NODES} per request: use a smaller tree")
        if len(self.tokens) != n:
            raise SpecvizError(f"{field}.tokens", f"has {len(self.tokens)} entries for {n} nodes: give one token per node")
        if self.parents[0] != -1:
            raise SpecvizError(f"{field}.parents", f"entry 0 is {self.parents[0]}: node 0 is the root and its parent must be -1")
        for i, p in enumerate(self.parents[1:], start=1):
            if p == -1:
                raise SpecvizError(f"{field}.parents", f"node {i} has parent -1: only node 0 is the root; give it a parent in 0..{n - 1}")
            if not 0 <= p < n:
                raise SpecvizError(f"{field}.parents", f"node {i} has parent {p}, which is not a node (0..{n - 1})")
            if p == i:
                raise SpecvizError(f"{field}.parents", f"node {i} is its own parent: that is a cycle")
        for i in range(1, n):  # every node must reach the root
            seen, cur = {i}, self.parents[i]
            while cur != 0:
                if cur in seen:
                    raise SpecvizError(f"{field}.parents", f"node {i}'s parents go round a cycle ({' -> '.join(map(str, sorted(seen)))}): "
                                       "every chain of parents must end at the root")
                seen.add(cur)
                cur = self.parents[cur]
        if any(t < 0 for t in self.tokens):
            raise SpecvizError(f"{field}.tokens", "holds a negative token id")
        if max(self.depths()) > MAX_DEPTH:
            raise SpecvizError(f"{field}.parents", f"the tree is {max(self.depths())} levels deep; specviz draws at most {MAX_DEPTH}")

    # -- structure ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.parents)

    def children(self, i: int) -> list[int]:
        return [c for c in range(1, self.n) if self.parents[c] == i]

    def depths(self) -> list[int]:
        d = [0] * self.n
        for i in range(1, self.n):
            cur, k = i, 0
            while cur != 0:
                cur, k = self.parents[cur], k + 1
            d[i] = k
        return d

    @property
    def max_depth(self) -> int:
        return max(self.depths())

    def path_to(self, i: int) -> list[int]:
        """Nodes from the root to i, inclusive."""
        path = [i]
        while path[-1] != 0:
            path.append(self.parents[path[-1]])
        return path[::-1]

    def retrieve_arrays(self, request: int = 0):
        """(retrieve_index, retrieve_next_token, retrieve_next_sibling) as int64 [n] for request b."""
        n = self.n
        ri = np.arange(n, dtype=np.int64) + request * n
        nt = np.full(n, -1, dtype=np.int64)
        ns = np.full(n, -1, dtype=np.int64)
        for i in range(n):
            kids = self.children(i)
            if kids:
                nt[i] = kids[0]
                for a, b in zip(kids, kids[1:]):
                    ns[a] = b
        return ri, nt, ns

    @staticmethod
    def from_retrieve(retrieve_next_token, retrieve_next_sibling, tokens) -> "DrawnTree":
        """The drawn tree behind one request's links (node i = row i)."""
        nt = [int(x) for x in retrieve_next_token]
        ns = [int(x) for x in retrieve_next_sibling]
        n = len(nt)
        parents = [-2] * n
        parents[0] = -1
        stack = [0]
        steps = 0
        while stack:
            p = stack.pop()
            c = nt[p]
            while c != -1:
                steps += 1
                if not 0 < c < n or parents[c] != -2 or steps > n:
                    raise SpecvizError("retrieve_next_token", f"the links reach node {c} twice or out of range: they do not form a tree")
                parents[c] = p
                stack.append(c)
                c = ns[c]
        missing = [i for i in range(n) if parents[i] == -2]
        if missing:
            raise SpecvizError("retrieve_next_token", f"nodes {missing} are not reachable from the root: every drawn node needs a parent")
        return DrawnTree(tuple(parents), tuple(tokens))

    # -- EAGLE rollout form -----------------------------------------------------------------
    def to_eagle(self, topk: int | None = None) -> EagleForm:
        """The rollout (parent_list, selected_index) that build_tree turns back into this tree.

        Requirements, from how SGLang numbers candidates (§2): nodes are ordered by depth; at each
        depth the children of one parent are contiguous; at depth 2 they follow their parents'
        order (step 0's beams are the root's children in rank order); a node has at most topk
        children; at most topk nodes of one depth have children.
        """
        n, depths = self.n, self.depths()
        S = max(depths) if n > 1 else 1
        for i in range(1, n):
            if depths[i] < depths[i - 1]:
                raise NotExpressible(f"node {i} (depth {depths[i]}) comes after node {i - 1} (depth {depths[i - 1]}); "
                                     "an EAGLE rollout numbers all nodes of one depth before the next depth")
        by_depth = [[i for i in range(n) if depths[i] == d] for d in range(S + 1)]
        for d in range(1, S + 1):
            order = [self.parents[i] for i in by_depth[d]]
            groups = [p for k, p in enumerate(order) if k == 0 or order[k - 1] != p]
            if len(groups) != len(set(groups)):
                p = next(g for g in groups if groups.count(g) > 1)
                raise NotExpressible(f"the children of node {p} at depth {d} are not next to each other; "
                                     "an EAGLE rollout numbers one parent's children together")
            if d == 2 and groups != sorted(groups):
                raise NotExpressible("at depth 2 the children must follow their parents' order, because step 0's beams are the root's "
                                     "children in rank order; reorder the depth-2 nodes")
        need_children = max(len(self.children(i)) for i in range(n))
        need_parents = max((len({self.parents[i] for i in by_depth[d]}) for d in range(2, S + 1)), default=1)
        smallest = max(1, need_children, need_parents)
        if topk is None:
            topk = smallest
        elif topk < need_children:
            node = max(range(n), key=lambda i: len(self.children(i)))
            raise NotExpressible(f"node {node} has {need_children} children but topk is {topk}")
        elif topk < need_parents:
            d = next(d for d in range(2, S + 1) if len({self.parents[i] for i in by_depth[d]}) == need_parents)
            raise NotExpressible(f"depth {d} has children under {need_parents} parents but topk is {topk}")
        cand = [0] * n  # flat candidate index of each node
        parent_list = [-1] + list(range(topk)) if S >= 2 else []
        beam_of: dict[int, int] = {}
        for d in range(1, S + 1):
            rank: dict[int, int] = {}
            if d >= 3:  # step d-1's beams: parents with children at depth d, in the order their children appear
                beam_of = {}
                for i in by_depth[d]:
                    beam_of.setdefault(self.parents[i], len(beam_of))
            for i in by_depth[d]:
                p = self.parents[i]
                j = rank.get(p, 0)
                rank[p] = j + 1
                if d == 1:
                    cand[i] = j
                elif d == 2:
                    cand[i] = topk + cand[p] * topk + j
                else:
                    cand[i] = topk + topk * topk * (d - 2) + beam_of[p] * topk + j
            if 2 <= d <= S - 1:
                # step d-1's parents: the flat index of each beam k (step d-1's top-k), for depth d+1.
                beams = [None] * topk
                nxt = {}
                for i in by_depth[d + 1]:
                    nxt.setdefault(self.parents[i], len(nxt))
                for p, k in nxt.items():
                    beams[k] = cand[p]
                # Beams without selected children are unselected candidates; use unused flat indices.
                used = {b for b in beams if b is not None}
                base = topk + topk * topk * (d - 2)
                spare = (c for c in range(base, base + topk * topk) if c not in used)
                parent_list += [b if b is not None else next(spare) for b in beams]
        si = [cand[i] for i in range(1, n)]
        assert si == sorted(si) and len(set(si)) == len(si), (si, "internal: rollout numbering must ascend")
        return EagleForm(topk=topk, depth=S, num_draft_tokens=n, parent_list=tuple(parent_list), selected_index=tuple(si),
                         draft_tokens=self.tokens[1:], root_token=self.tokens[0])

    @staticmethod
    def from_eagle(form: EagleForm) -> "DrawnTree":
        """build_tree's links for this rollout, read back as a drawn tree (unlinked nodes are an error)."""
        from specviz.base.rollout import INVALID_PARENT, parent_nodes

        si = np.asarray([form.selected_index], dtype=np.int64).reshape(1, -1)
        pl = np.asarray([form.parent_list], dtype=np.int64).reshape(1, -1)
        par = parent_nodes(pl, si, form.topk)[0]
        bad = [i for i in range(1, form.num_draft_tokens) if par[i] == INVALID_PARENT]
        if bad:
            raise SpecvizError("selected_index", f"nodes {bad} have a parent candidate that is not selected (SGLang: 'invalid eagle tree'); "
                               "they cannot be drawn")
        return DrawnTree(tuple(int(p) for p in par), form.candidates)

    # -- edits (each returns a new tree, renumbered in rollout order) ------------------------
    def canonical(self) -> tuple["DrawnTree", list[int]]:
        """Renumber breadth-first: by depth, then by the parent's new number, then sibling order.
        Returns the tree and ``old_of_new`` (old node id of each new node)."""
        order = [0]
        frontier = [0]
        while frontier:
            nxt = []
            for p in frontier:
                nxt += self.children(p)
            order += nxt
            frontier = nxt
        new_of_old = {old: new for new, old in enumerate(order)}
        parents = [-1] + [new_of_old[self.parents[old]] for old in order[1:]]
        return DrawnTree(tuple(parents), tuple(self.tokens[o] for o in order)), order

    def add_child(self, node: int, token: int) -> "DrawnTree":
        self._check_node(node)
        return DrawnTree(self.parents + (node,), self.tokens + (token,)).canonical()[0]

    def add_sibling(self, node: int, token: int) -> "DrawnTree":
        self._check_node(node)
        if node == 0:
            raise SpecvizError("node", "the root has no siblings: add a child instead")
        return self.add_child(self.parents[node], token)

    def delete_subtree(self, node: int) -> "DrawnTree":
        self._check_node(node)
        if node == 0:
            raise SpecvizError("node", "the root cannot be deleted: every verify tree starts at the root")
        gone = {node}
        for i in range(self.n):
            if any(a in gone for a in self.path_to(i)):
                gone.add(i)
        keep = [i for i in range(self.n) if i not in gone]
        new_of_old = {old: new for new, old in enumerate(keep)}
        parents = [-1] + [new_of_old[self.parents[i]] for i in keep[1:]]
        return DrawnTree(tuple(parents), tuple(self.tokens[i] for i in keep)).canonical()[0]

    def relabel(self, node: int, token: int) -> "DrawnTree":
        self._check_node(node)
        toks = list(self.tokens)
        toks[node] = int(token)
        return DrawnTree(self.parents, tuple(toks))

    def move_sibling(self, node: int, step: int) -> "DrawnTree":
        """Move ``node`` one place earlier (step=-1) or later (+1) among its siblings."""
        self._check_node(node)
        if node == 0:
            raise SpecvizError("node", "the root has no siblings")
        sibs = self.children(self.parents[node])
        k = sibs.index(node)
        j = k + step
        if not 0 <= j < len(sibs):
            return self
        other = sibs[j]
        # Swap the two nodes' numbers (and with them their subtrees' order), then renumber.
        perm = list(range(self.n))
        perm[node], perm[other] = other, node
        inv = {v: i for i, v in enumerate(perm)}
        parents = [-1] * self.n
        tokens = [0] * self.n
        for old in range(self.n):
            new = inv[old]
            parents[new] = -1 if old == 0 else inv[self.parents[old]]
            tokens[new] = self.tokens[old]
        return DrawnTree(tuple(parents), tuple(tokens)).canonical()[0]

    def _check_node(self, node: int) -> None:
        if not 0 <= int(node) < self.n:
            raise SpecvizError("node", f"is {node}: nodes are 0..{self.n - 1}")


def chain_tree(tokens) -> DrawnTree:
    """A chain (topk = 1): node i's parent is node i-1."""
    tokens = tuple(tokens)
    return DrawnTree(tuple([-1] + list(range(len(tokens) - 1))), tokens)
