"""Time the decoding loop (issue 13 targets: one round <= 50 ms, 64 rounds <= 3 s at default sizes, torch, CPU)
and print the measured tau next to the closed forms for a few settings.

    .venv/bin/python benchmarks/bench_loop.py [--repeats 5] [--rounds 64]
    python3 benchmarks/bench_loop.py --round-only --backends torch triton   (on a GPU machine: the round with
        the accept kernels on the CPU (torch) and on the GPU (compiled Triton), each algorithm; issue 36)

Default sizes = the page's defaults: greedy, topk 2, depth 4, num_draft_tokens 8, the default prompt.
The loop runs torch on one thread (specviz.rooms.loop.model.one_thread). On a shared machine compare the
figures within one run; the median over repeats is printed with the spread.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere: the repo root holds specviz/

from specviz.rooms.loop import metrics as M  # noqa: E402
from specviz.rooms.loop.decode import Decoder, LoopSettings, run_loop  # noqa: E402
from specviz.rooms.loop.train import load_models  # noqa: E402

PROMPT = "The target model verifies the draft tree. "
TAU_SETTINGS = [
    dict(algorithm="greedy", topk=1, depth=4),
    dict(algorithm="greedy", topk=2, depth=4, num_draft_tokens=8),
    dict(algorithm="greedy", topk=3, depth=5, num_draft_tokens=16),
    dict(algorithm="target_only", topk=2, depth=4, num_draft_tokens=8, temperature=0.8),
    dict(algorithm="target_only", topk=4, depth=3, num_draft_tokens=12, temperature=0.8),
    dict(algorithm="chain", topk=1, depth=4, temperature=0.8),
]


def spread(xs):
    return f"median {statistics.median(xs) * 1e3:8.1f} ms  (min {min(xs) * 1e3:.1f}, max {max(xs) * 1e3:.1f})"


ROUND_SETTINGS = [dict(algorithm="greedy", topk=2, depth=4, num_draft_tokens=8),
                  dict(algorithm="target_only", topk=2, depth=4, num_draft_tokens=8, temperature=0.8),
                  dict(algorithm="chain", topk=1, depth=4, temperature=0.8)]


def round_table(models, backends, repeats) -> None:
    """One round's time (median of repeats x 8 rounds after a warm-up loop) per algorithm and backend: the
    models run on the CPU either way; the backend runs build_tree, target_probs_from_logits and the accept
    kernel (compiled Triton on a GPU: inputs cross to it and results back once a round)."""
    for backend in backends:
        for kw in ROUND_SETTINGS:
            s = LoopSettings(rounds=16, backend=backend, **kw)
            run_loop(PROMPT, s, models)  # warm-up: compiles, first calls
            one = []
            for _ in range(repeats):
                dec = Decoder(PROMPT, s, models)
                for _ in range(8):
                    t0 = time.perf_counter()
                    dec.step()
                    one.append(time.perf_counter() - t0)
            print(f"one round ({kw['algorithm']:11s} topk {kw['topk']} depth {kw['depth']}, {backend:6s}): {spread(one)}",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=64)
    ap.add_argument("--round-only", action="store_true",
                    help="time one round per algorithm and backend only (no 64-round runs, no tau table)")
    ap.add_argument("--backends", nargs="*", default=["torch"], help="accept-step backends for --round-only")
    args = ap.parse_args()
    models = load_models()
    if args.round_only:
        round_table(models, args.backends, args.repeats)
        return
    s = LoopSettings(rounds=args.rounds, backend="torch")
    run_loop(PROMPT, s, models)                                   # warm-up (imports, first calls)

    one = []
    for _ in range(args.repeats):
        dec = Decoder(PROMPT, s, models)
        for _ in range(8):
            t0 = time.perf_counter()
            dec.step()
            one.append(time.perf_counter() - t0)
    full = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        run_loop(PROMPT, s, models)
        full.append(time.perf_counter() - t0)
    print(f"one round (greedy, topk 2, depth 4, n 8, torch):  {spread(one)}   target <= 50 ms")
    print(f"{args.rounds} rounds incl. prefill:                    {spread(full)}   target <= 3000 ms")

    print("\nmeasured tau vs models (64 rounds each; 'tree E' = mean over rounds of 1 + sum of path products of "
          "per-node acceptance probabilities; 'chain' = (1 - a^(K+1)) / (1 - a) with a = measured 1-alpha, K = depth)")
    print(f"{'setting':58s} {'tau':>5s} {'tree E':>7s} {'chain':>6s} {'1-a':>5s} {'tok rate':>8s} {'sys eff':>7s}")
    for kw in TAU_SETTINGS:
        st = LoopSettings(rounds=64, backend="torch", **kw).checked()
        run = run_loop(PROMPT, st, models)
        m = M.run_metrics(run)
        a1 = m.alpha_per_depth[0]
        label = f"{st.algorithm} topk {st.topk} depth {st.depth} n {st.num_draft_tokens} T {st.temperature:g}"
        print(f"{label:58s} {m.tau:5.2f} {M.expected_tau(run):7.2f} {M.chain_tau(a1, st.depth):6.2f} {a1:5.2f} "
              f"{m.token_acceptance_rate:8.1%} {m.system_efficiency:7.1%}")


if __name__ == "__main__":
    main()
