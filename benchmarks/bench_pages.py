"""Page script run time with AppTest on the CPU path: the running example and a 64-node tree.

    .venv/bin/python benchmarks/bench_pages.py [--reruns 15] [--pages overview greedy ...]

For each page and scenario: one warm-up run (fills st.cache_data: the engine run, the backend
comparison), then ``--reruns`` reruns of the script, as a person clicking a widget causes.
Prints the median and the 90th percentile per rerun; the target is a median <= 150 ms.

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

from specviz.model import DrawnTree  # noqa: E402
from specviz.scenario import load_scenario  # noqa: E402
from specviz.ui.edits import agree_along, replace_tree, set_target_predict  # noqa: E402

# page file -> scenario slot it reads (the 64-node case applies to the tree pages)
CORE_PAGES = {"overview": "tree", "tree_builder": "tree", "greedy": "tree", "batch_kv": "batch"}


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
    return {"running example": {"tree": run, "batch": batch}, "64-node tree": {"tree": big, "batch": bbig}}


def time_page(page: str, slot: str, scenario, reruns: int) -> tuple[float, float]:
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=300)
    at.session_state[f"sv_scn::{slot}"] = scenario.to_json()
    at.run()  # warm-up: caches filled
    if at.exception or at.error:
        raise RuntimeError(f"{page}: {at.exception[0].message if at.exception else at.error[0].value}")
    times = []
    for _ in range(reruns):
        t0 = time.perf_counter()
        at.run()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reruns", type=int, default=15)
    ap.add_argument("--pages", nargs="*", default=list(CORE_PAGES))
    args = ap.parse_args()
    cases = scenarios()
    rows = []
    for page in args.pages:
        slot = CORE_PAGES.get(page, "tree")
        for case, by_slot in cases.items():
            med, p90 = time_page(page, slot, by_slot[slot], args.reruns)
            rows.append((page, case, by_slot[slot].n, med, p90))
    print(f"AppTest script run time per rerun (median of {args.reruns}; CPU; TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')})")
    print(f"{'page':<14} {'scenario':<18} {'n':>3} {'median ms':>10} {'p90 ms':>8}  target <= 150 ms")
    for page, case, n, med, p90 in rows:
        print(f"{page:<14} {case:<18} {n:>3} {med:>10.1f} {p90:>8.1f}  {'ok' if med <= 150 else 'SLOW'}")
    return 0 if all(r[3] <= 150 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
