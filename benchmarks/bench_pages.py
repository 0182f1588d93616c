"""Page script run time with AppTest on the CPU path: the running example and a 64-node tree.

    .venv/bin/python benchmarks/bench_pages.py [--reruns 15] [--pages overview greedy ...]

For each page and scenario: one warm-up run (fills st.cache_data: the engine run, the backend
comparison), then ``--reruns`` reruns of the script, as a person clicking a widget causes.
Prints the median and the 90th percentile per rerun; the target is a median <= 150 ms.
A rerun includes the sidebar's share box (the link is encoded on every run) and export box; the
export files themselves (HTML animation, SVG / PNG through Graphviz or kaleido) are built only
when a button is clicked, so no rerun pays for them.

The 64-node tree is an EAGLE rollout with topk 4 (4 children of the root, then up to 4 parents
x 4 children per depth: 1 + 4 + 16 + 16 + 16 + 11 nodes, depth 5), so the tree builder runs
build_tree itself; the target agrees along the first branch (accept_index [0, 1, 5, 21, 37, 53]).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from specviz.inputs.model import DrawnTree  # noqa: E402
from specviz.inputs.scenario import load_scenario  # noqa: E402
from specviz.inputs.edits import agree_along, replace_tree, set_target_predict  # noqa: E402

# page file -> scenario slot it reads (the 64-node case applies to the tree pages)
CORE_PAGES = {"overview": "tree", "tree_builder": "tree", "greedy": "tree", "batch_kv": "batch"}
# The sampling pages (engineer B). Their large case: the 64-node tree with p rows for target-only
# sampling; the longest chain each chain page offers (8 slots, a 10-row DSpark window).
SAMPLING_PAGES = {"chain_sampling": "chain", "target_only": "target_only", "dspark": "dspark"}
# The classroom pages: audit and quiz read their own slots (given the tree scenarios here); the
# pitfall gallery and the tour run on their own presets, so both cases time the same page.
CLASSROOM_PAGES = {"pitfalls": "tree", "audit": "audit", "quiz": "quiz", "tour": "tree"}


def tree_64(topk: int = 4, n: int = 64) -> DrawnTree:
    """An EAGLE-expressible tree of n nodes: at each depth the first topk nodes get topk children."""
    parents = [-1]
    level = [0]
    while len(parents) < n:
        nxt = []
        for p in level[:topk]:
            for _ in range(topk):
                if len(parents) == n:
                    break
                parents.append(p)
                nxt.append(len(parents) - 1)
        level = nxt
    tokens = [5] + [i % 4 for i in range(1, n)]  # R, then A B C D repeating (vocab of the running example)
    return DrawnTree(tuple(parents), tuple(tokens))


def scenarios() -> dict:
    run = load_scenario(ROOT / "scenarios/running_example.json")
    batch = load_scenario(ROOT / "scenarios/batch_two_requests.json")
    big = replace_tree(run, tree_64()).replace(num_speculative_tokens=None)
    big = set_target_predict(big, agree_along(big, "first"))
    bbig = replace_tree(batch, tree_64(), 0).replace(num_speculative_tokens=None)
    bbig = set_target_predict(bbig, agree_along(bbig, "first", 0), 0)
    bbig = set_target_predict(bbig, agree_along(bbig, "last", 1), 1)
    cases = {"running example": {"tree": run, "batch": batch}, "64-node tree": {"tree": big, "batch": bbig}}
    for case, by_slot in sampling_scenarios().items():
        cases[case].update(by_slot)
    return cases


def _row(V: int, hot: int | None, mass: float = 0.5) -> list[float]:
    """A p/q row: ``mass`` on token ``hot``, the rest spread evenly (exact in binary: V = 6 or 4)."""
    if hot is None:
        return [1.0 / V] * V
    rest = (1.0 - mass) / (V - 1)
    return [mass if t == hot else rest for t in range(V)]


def sampling_scenarios() -> dict:
    """Slots chain / target_only / dspark: the presets, and the large cases described at SAMPLING_PAGES."""
    pq = load_scenario(ROOT / "scenarios/pq_example.json")
    to = load_scenario(ROOT / "scenarios/target_only_sampling.json")
    ds = load_scenario(ROOT / "scenarios/dspark_chain.json")
    t = tree_64()
    V = len(to.vocab)
    kids = [t.children(i) for i in range(t.n)]
    # p puts .5 on each node's first child: with coins .3 the walk accepts a first child at every level.
    rows = [_row(V, t.tokens[k[0]] if k else None) for k in kids]
    big_to = to.replace(num_speculative_tokens=None, requests=[{
        "tree": {"parents": list(t.parents), "tokens": [to.vocab[x] for x in t.tokens]}, "seq_len": 10,
        "target_probs": rows, "coins": [0.3] * t.n, "coin_final": 0.5}])
    Vc = len(pq.vocab)
    chain = ["R"] + [pq.vocab[i % 3] for i in range(7)]  # R A B C A B C A
    long_chain = pq.replace(requests=[{
        "chain": chain, "seq_len": 10, "target_probs": [_row(Vc, pq.vocab.index(chain[i + 1]) if i + 1 < 8 else None) for i in range(8)],
        "draft_probs": [_row(Vc, pq.vocab.index(chain[i + 1]), 0.625) for i in range(7)], "coins": [0.5] * 7, "coin_final": 0.5}])
    drafts = [ds.vocab[i % 3] for i in range(9)]  # A B C A B C A B C
    target = drafts[:6] + ["X", "Y", "X", "Y"]
    long_ds = ds.replace(requests=[{"chain": ["R"] + drafts, "seq_len": 10, "target_predict": target}])
    return {"running example": {"chain": pq, "target_only": to, "dspark": ds},
            "64-node tree": {"chain": long_chain, "target_only": big_to, "dspark": long_ds}}


def time_page(page: str, slot: str, scenario, reruns: int) -> tuple[float, float, float]:
    """(median wall ms, p90 wall ms, median CPU ms) per rerun.

    CPU time is the whole process's (the script runs on AppTest's thread in this process), so it
    stays meaningful when other work shares the machine; wall time is what a person waits.
    """
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=300)
    at.session_state[f"sv_scn::{slot}"] = scenario.to_json()
    at.run()  # warm-up: caches filled
    if at.exception or at.error:
        raise RuntimeError(f"{page}: {at.exception[0].message if at.exception else at.error[0].value}")
    times, cpu = [], []
    for _ in range(reruns):
        t0, c0 = time.perf_counter(), time.process_time()
        at.run()
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))], statistics.median(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reruns", type=int, default=15)
    ap.add_argument("--pages", nargs="*", default=list(CORE_PAGES) + list(SAMPLING_PAGES) + list(CLASSROOM_PAGES))
    args = ap.parse_args()
    cases = scenarios()
    rows = []
    for page in args.pages:
        slot = CORE_PAGES.get(page) or SAMPLING_PAGES.get(page) or CLASSROOM_PAGES.get(page, "tree")
        for case, by_slot in cases.items():
            scenario = by_slot.get(slot, by_slot["tree"])
            med, p90, cpu = time_page(page, slot, scenario, args.reruns)
            rows.append((page, case, scenario.n, med, p90, cpu))
    print(f"AppTest script run time per rerun (median of {args.reruns}; CPU; TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')})")
    print(f"load average over the last minute: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times grow with it)")
    print(f"{'page':<14} {'scenario':<18} {'n':>3} {'median ms':>10} {'p90 ms':>8} {'CPU ms':>7}  target: median <= 150 ms")
    for page, case, n, med, p90, cpu in rows:
        print(f"{page:<14} {case:<18} {n:>3} {med:>10.1f} {p90:>8.1f} {cpu:>7.1f}  {'ok' if med <= 150 else 'SLOW'}")
    return 0 if all(r[3] <= 150 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
