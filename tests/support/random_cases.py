"""Random valid inputs for the differential tests and the benchmarks (numpy only, seeded).

* ``eagle_rollout``: parent_list / selected_index exactly as SGLang's draft stage produces them
  (SEMANTICS.md §2): per step top-k beams by cumulative score, then the top n-1 candidates sorted.
* ``links_from_parent_array``: retrieve_* links of a random tree given as a parent array (first
  child = lowest index, siblings ascending, as the builder makes them; optionally shuffled
  sibling order, which the accept rules also accept).
* coins kept >= ``margin`` away from every decision boundary they meet (SEMANTICS.md §6.4).
"""
from __future__ import annotations

import numpy as np


def eagle_rollout(rng: np.random.Generator, bs: int, topk: int, depth: int, n: int):
    """(parent_list [bs, topk*(depth-1)+1], selected_index [bs, n-1]) int64 from random draft scores."""
    ncand = topk + (depth - 1) * topk * topk
    assert 1 <= n <= ncand + 1
    pl = np.zeros((bs, topk * (depth - 1) + 1), dtype=np.int64)
    si = np.zeros((bs, n - 1), dtype=np.int64)
    for b in range(bs):
        scores = np.zeros(ncand)
        root = np.sort(rng.dirichlet(np.ones(topk + 1))[:topk])[::-1]  # root's top-k children, best first
        scores[:topk] = root
        parents = [-1] + list(range(topk))
        beams = root.copy()  # beam scores in rank order
        for s in range(1, depth):
            child = np.sort(rng.dirichlet(np.ones(topk + 1), size=topk)[:, :topk], axis=1)[:, ::-1]  # [beam, rank]
            block = beams[:, None] * child  # [topk, topk]
            off = topk + topk * topk * (s - 1)
            scores[off:off + topk * topk] = block.reshape(-1)
            order = np.argsort(-block.reshape(-1), kind="stable")[:topk]
            beams = block.reshape(-1)[order]
            if s < depth - 1:
                parents += list(order + off)
        pl[b] = parents[: pl.shape[1]]  # depth 1: SGLang has no parents at all; [-1] is never read
        si[b] = np.sort(np.argsort(-scores, kind="stable")[: n - 1])
    return pl, si


def corrupt_selection(rng, parent_list, selected_index, topk, depth):
    """Replace one selected candidate by an unselected one, which may orphan nodes (SEMANTICS.md §3.4)."""
    ncand = topk + (depth - 1) * topk * topk
    si = selected_index.copy()
    for b in range(si.shape[0]):
        free = np.setdiff1d(np.arange(ncand), si[b])
        if si.shape[1] and free.size:
            si[b, rng.integers(si.shape[1])] = rng.choice(free)
            si[b] = np.sort(si[b])
    return si


def random_parent_array(rng, n: int, max_depth: int | None = None) -> np.ndarray:
    """par[0] = -1, par[i] < i (depth at most max_depth)."""
    par = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for i in range(1, n):
        ok = np.arange(i) if max_depth is None else np.nonzero(depth[:i] < max_depth)[0]
        par[i] = rng.choice(ok)
        depth[i] = depth[par[i]] + 1
    return par


def links_from_parent_array(par: np.ndarray, rng=None, shuffle_siblings=False):
    """(next_token, next_sibling) [n] int64 of one tree; siblings ascending unless shuffled."""
    n = par.shape[0]
    nt = np.full(n, -1, dtype=np.int64)
    ns = np.full(n, -1, dtype=np.int64)
    for p in range(n):
        kids = list(np.nonzero(par == p)[0])
        if shuffle_siblings and rng is not None:
            rng.shuffle(kids)
        if kids:
            nt[p] = kids[0]
            for a, c in zip(kids, kids[1:]):
                ns[a] = c
    return nt, ns


def random_tree_batch(rng, bs: int, n: int, *, max_depth=None, shuffle_siblings=False):
    """retrieve_index / next_token / next_sibling [bs, n] and the parent arrays [bs, n]."""
    pars = np.stack([random_parent_array(rng, n, max_depth) for _ in range(bs)])
    links = [links_from_parent_array(p, rng, shuffle_siblings) for p in pars]
    nt = np.stack([l[0] for l in links])
    ns = np.stack([l[1] for l in links])
    ri = np.arange(bs * n, dtype=np.int64).reshape(bs, n)
    return ri, nt, ns, pars


def random_probs(rng, shape, V: int, *, sparse_fraction=0.5) -> np.ndarray:
    """float32 rows summing to 1: sparse rows (a few tokens carry all mass) or peaked dense rows."""
    rows = int(np.prod(shape))
    out = np.zeros((rows, V), dtype=np.float64)
    for r in range(rows):
        if V > 1 and rng.random() < sparse_fraction:
            k = int(rng.integers(1, min(V, 6) + 1))
            idx = rng.choice(V, size=k, replace=False)
            out[r, idx] = rng.dirichlet(np.ones(k))
        else:
            logits = rng.normal(size=V) * rng.uniform(0.5, 4.0)
            e = np.exp(logits - logits.max())
            out[r] = e / e.sum()
    out = out.astype(np.float32)
    out /= out.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
    return out.reshape(*shape, V)


def greedy_targets(rng, candidates, next_token, next_sibling, V: int, follow=0.75):
    """target_predict [bs, n]: at each node, with probability ``follow`` one of its children's tokens."""
    bs, n = candidates.shape
    tp = rng.integers(0, V, size=(bs, n)).astype(np.int64)
    for b in range(bs):
        for i in range(n):
            kids = []
            c = next_token[b, i]
            while c != -1:
                kids.append(c)
                c = next_sibling[b, c]
            if kids and rng.random() < follow:
                tp[b, i] = candidates[b, rng.choice(kids)]
    return tp


def tree_level_edges(parents_row: np.ndarray, tokens_row: np.ndarray, next_token_row, next_sibling_row, p_req,
                     node: int, t_acc: float) -> list[float]:
    """Running-sum bucket edges acc_i / t_acc of ``node``'s children (the target-only accept test)."""
    edges, acc = [], np.float32(0)
    c = next_token_row[node]
    while c != -1:
        acc = np.float32(acc + p_req[node, tokens_row[c]])
        edges.append(float(acc) / max(t_acc, 1e-9))
        c = next_sibling_row[c]
    return edges


def coins_away_from(rng, edges_per_coin: list[list[float]], margin=1e-4) -> np.ndarray:
    """One float32 coin per entry, each >= margin away from every edge of its list."""
    out = np.zeros(len(edges_per_coin), dtype=np.float32)
    for j, edges in enumerate(edges_per_coin):
        e = np.asarray(edges, dtype=np.float64)
        for _ in range(1000):
            c = np.float32(rng.random())
            if e.size == 0 or np.min(np.abs(e - float(c))) >= margin:
                break
        out[j] = c
    return out


def centred_final_coin(rng, dist: np.ndarray, margin=1e-4) -> np.float32:
    """A final coin in the middle of a token's bucket of ``dist`` (a random token whose bucket is wide enough)."""
    d = np.asarray(dist, dtype=np.float64)
    total = d.sum()
    if total <= 0:
        return np.float32(rng.random())
    cum = np.cumsum(d) / total
    width = d / total
    wide = np.nonzero(width > 4 * margin)[0]
    t = rng.choice(wide) if wide.size else int(np.argmax(width))
    return np.float32(cum[t] - width[t] / 2)


def plausible_candidates(rng, next_token, next_sibling, p, V: int, follow=0.85):
    """candidates [bs, n]: each node's children are mostly drawn from the node's target row (distinct
    siblings when possible), as a good draft proposes likely tokens; the rest uniform. Root: random."""
    bs, n = next_token.shape
    cand = rng.integers(0, V, size=(bs, n)).astype(np.int64)
    for b in range(bs):
        for x in range(n):
            kids = []
            c = next_token[b, x]
            while c != -1:
                kids.append(c)
                c = next_sibling[b, c]
            if not kids:
                continue
            row = p[b, x].astype(np.float64)
            support = int(np.count_nonzero(row))
            if support and rng.random() < follow:
                picks = rng.choice(V, size=len(kids), replace=len(kids) > support, p=row / row.sum())
                cand[b, kids] = picks
    return cand
