"""The invariants of SEMANTICS.md, checked on a scenario's recomputed result (``python -m specviz check``).

Each check returns (name, ok, detail). They hold by construction for the reference; they are
what a person debugging their own implementation should verify, and the CLI shows them all.
"""
from __future__ import annotations

import numpy as np

from specviz import algorithms
from specviz import reference as ref
from specviz.replay.engine import compare_backends, run_scenario
from specviz.inputs.scenario import Scenario


def _eagle_checks(s: Scenario, run) -> list:
    out = []
    r = run.result
    n, W = s.n, s.width
    ai = np.asarray(r["accept_index"])
    k = np.asarray(r["accept_token_num"])
    pr = np.asarray(r["predicts"]).reshape(-1)
    accept_lens = k + 1

    def add(name, ok, detail=""):
        out.append((name, bool(ok), detail))

    valid = (ai != -1).sum(axis=1)
    add("valid accept_index entries = accept_lens", np.array_equal(valid, accept_lens), f"{valid.tolist()} vs {accept_lens.tolist()}")
    add("accept_lens = accepted drafts + 1", np.array_equal(accept_lens, k + 1))
    pads_ok = all(np.all(ai[b, k[b] + 1:] == -1) and np.all(ai[b, :k[b] + 1] >= 0) for b in range(len(k)))
    add("accept_index: valid prefix, then -1 padding", pads_ok)
    add("accept_index[b][0] = the root's global row b*n", np.array_equal(ai[:, 0], np.arange(len(k)) * n), f"{ai[:, 0].tolist()}")
    add("accept_index width W = num_speculative_tokens", ai.shape[1] == W, f"{ai.shape[1]} vs {W}")
    add("at most W-1 drafts accepted", np.all(k <= W - 1))
    for c in run.commits:
        b = c.request
        tree = s.tree(b)
        path_ok = all(tree.parents[c.accept_nodes[j]] == c.accept_nodes[j - 1] for j in range(1, len(c.accept_nodes)))
        add(f"request {b}: accept_index rows are a root-to-node path (rows b*n+i)", path_ok and all(r_ // n == b for r_ in c.accept_rows),
            f"nodes {c.accept_nodes}")
        drafts = [tree.tokens[i] for i in c.accept_nodes[1:]]
        add(f"request {b}: predicts[accept_index] = accepted drafts + bonus", c.output_tokens[:-1] == drafts,
            f"{c.output_tokens} vs drafts {drafts}")
        add(f"request {b}: committed KV rows = root + accepted drafts (one-position shift)",
            c.committed_tokens == [tree.tokens[0]] + drafts)
        add(f"request {b}: committed positions = seq_len .. seq_len + k", c.committed_positions == list(range(c.seq_len, c.seq_len + c.accept_len)),
            f"{c.committed_positions}")
        add(f"request {b}: new_seq_len = seq_len + accept_len", c.new_seq_len == c.seq_len + c.accept_len)
    accept_tokens = ref.gather_accept_tokens(pr, ai, accept_lens)
    bonus = ref.fill_bonus_tokens(accept_tokens, accept_lens, stride=W)
    add("fill_bonus_tokens (stride W) = last output = next root", [int(x) for x in bonus] == [c.next_root for c in run.commits])
    if s.algorithm == "greedy":
        tp = run.inputs["target_predict"].reshape(-1)
        ok = all(pr[ai[b, j]] == tp[ai[b, j]] if j == k[b] else pr[ai[b, j]] == s.tree(b).tokens[ai[b, j + 1] - b * n]
                 for b in range(len(k)) for j in range(k[b] + 1))
        add("greedy: every accepted child equals target_predict at the last accepted row; bonus = target_predict there", ok)
    return out


def _dspark_checks(s: Scenario, run) -> list:
    r = run.result
    out = []
    cl, raw = np.asarray(r["correct_len"]), np.asarray(r["raw_correct_len"])
    prefix = run.inputs["seq_lens"]
    out.append(("commit_lens = correct_len + 1", bool(np.array_equal(r["commit_lens"], cl + 1)), ""))
    out.append(("new_seq_lens = prefix_lens + commit_lens", bool(np.array_equal(r["new_seq_lens"], prefix + r["commit_lens"])), ""))
    out.append(("cap_trim_lens = correct_len before the cap - after", bool(np.array_equal(r["cap_trim_lens"], raw - cl)), ""))
    out.append(("correct_len <= verify_lens - 1 (the window cap)", bool(np.all(cl <= run.inputs["verify_lens"] - 1)), ""))
    cand = run.inputs["candidates"]
    if s.algorithm == "dspark_greedy":
        tp = run.inputs["target_predict"]
        lead = all(np.all(cand[b, 1:raw[b] + 1] == tp[b, :raw[b]]) and (raw[b] == cand.shape[1] - 1 or cand[b, raw[b] + 1] != tp[b, raw[b]])
                   for b in range(len(cl)))
        out.append(("correct_len is the leading run of matches (later matches ignored)", bool(lead), ""))
    ot = r["out_tokens"]
    ok = all(np.array_equal(ot[b, :cl[b]], cand[b, 1:cl[b] + 1]) and ot[b, cl[b]] == r["bonus"][b] for b in range(len(cl)))
    out.append(("out_tokens[:commit_lens] = accepted drafts + bonus", bool(ok), ""))
    kv = r["kv_columns"]
    ok = all(np.all(kv[b, :r["commit_lens"][b]] >= 0) and np.all(kv[b, r["commit_lens"][b]:] == -1) for b in range(len(cl)))
    out.append(("KV inject: columns < commit_lens kept, the rest -1", bool(ok), ""))
    return out


def check_invariants(s: Scenario, backends=("numpy",)) -> list:
    run = run_scenario(s, "numpy")
    checks = _dspark_checks(s, run) if algorithms.get(s.algorithm).family == "dspark" else _eagle_checks(s, run)
    from specviz.replay.frames import final_arrays

    if run.trace is not None and run.trace.initial:
        final = final_arrays(run.trace)
        same = all(np.array_equal(np.asarray(v).reshape(-1), np.asarray(run.result[name]).reshape(-1))
                   for name, v in final.items() if name in run.result and name not in ("bonus", "correct_len"))
        checks.append(("trace replay ends at the result", same, ""))
    others = [b for b in backends if b != "numpy"]
    if others:
        for name, diff in compare_backends(s, others).items():
            checks.append((f"backend {name} equals the numpy reference", diff is None, diff or ""))
    return checks
