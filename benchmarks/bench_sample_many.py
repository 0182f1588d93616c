"""Time sample_many on the CPU: 10^6 chain-rejection trials (depth 4, V 8), torch and numpy backends.

    .venv/bin/python benchmarks/bench_sample_many.py [--trials 1000000] [--repeats 7]

Prints the median and the spread over repeats (issue 3 target: torch under 1 s).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere: the repo root holds specviz/

from specviz.algorithms.backends import get_backend  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    V, N = 8, 5
    p = rng.dirichlet(np.ones(V), size=N)
    q = rng.dirichlet(np.ones(V), size=N - 1)
    inputs = dict(candidates=np.array([[0, 1, 2, 3, 4]]), retrieve_index=np.arange(N)[None],
                  target_probs=p[None].astype(np.float32), draft_probs=q[None].astype(np.float32),
                  num_speculative_tokens=N)
    for name, trials in (("torch", args.trials), ("numpy", min(args.trials, 100_000))):
        ops = get_backend(name)
        ops.sample_many("chain_rejection_sampling", inputs, num_trials=1000, seed=0)  # warm-up
        times = []
        for r in range(args.repeats):
            t = time.perf_counter()
            ops.sample_many("chain_rejection_sampling", inputs, num_trials=trials, seed=r)
            times.append(time.perf_counter() - t)
        print(f"{name:6s} {trials:>9,d} trials: median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}) over {args.repeats} runs")


if __name__ == "__main__":
    main()
