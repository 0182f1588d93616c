"""The host work of each Triton op's Python call, without a GPU (issue 36, goal 1).

    python benchmarks/host_stub_profile.py [--calls 3000] [--ops chain_rejection_sampling ...] [--json out.json]
    python benchmarks/host_stub_profile.py --before .before      # also an earlier commit's kernels (make_before.sh),
                                                                 # timed in the same rounds, alternated

Runs every op of ``bench_kernels`` with ``validate=False`` on CPU tensors, compiled-launch path on
(FastLaunch, no interpreter), with Triton's driver and the compiled kernel replaced by stubs: the
launch itself (Triton's C launcher and cuLaunchKernel) is the only step left out. Reports per call:
CPU microseconds (``time.process_time`` over ``--calls`` calls, min / median / max of 5 rounds: CPU time,
so other processes on the machine do not count), the aten operators it dispatches (allocations
included; a CPU ``torch.empty`` is cheaper than a CUDA one, so count them too) and the arguments of
the launches. The stubs live here, never in the product. On the H200's host the same code runs
slower (a VM), so read the figures as shares and differences, not as that host's times.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.pop("TRITON_INTERPRET", None)  # the compiled-launch path (FastLaunch), stubbed below
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from kernels import triton_common, triton_dspark, triton_sampling, triton_tree, triton_verify  # noqa: E402
from tests.support.random_cases import eagle_rollout  # noqa: E402

LAUNCHES = []  # (kernel name, number of arguments) of the stubbed launches, while counting


class _StubDriver:
    @staticmethod
    def get_current_device():
        return 0

    @staticmethod
    def get_current_stream(device=None):
        return 0


class _StubCompiled:
    """Stands for Triton's CompiledKernel: the launch does nothing (records its arity while counting)."""

    def __init__(self, name):
        self.name, self.function, self.packed_metadata = name, None, None

    def run(self, gx, gy, gz, stream, function, packed, meta, enter, exit_, *args, how="direct"):
        if COUNTING:
            LAUNCHES.append((self.name, len(args), how))

    def __getitem__(self, grid):
        return lambda *args, stream=None: self.run(*grid, stream, None, None, None, None, None, *args, how="runner")


class _StubJit:
    """Stands for the @triton.jit function behind a FastLaunch: ``fn[grid](*args)`` "compiles" (a stub)."""

    def __init__(self, fn):
        self.fn, self.params = fn, getattr(fn, "params", None)
        self.compiled = _StubCompiled(getattr(fn, "__name__", "kernel"))

    def __getitem__(self, grid):
        def first(*args, **options):
            self.compiled[grid](*args)
            return self.compiled
        return first


COUNTING = False


def install_stubs(modules=None):
    modules = modules or (triton_common, triton_verify, triton_tree, triton_sampling, triton_dspark)
    modules[0]._ACTIVE[:] = [_StubDriver()]
    cpu = torch.device("cpu")
    for mod in modules[1:]:
        mod.triton_device = lambda *values: cpu
        for name, value in vars(mod).items():
            if isinstance(value, modules[0].FastLaunch) and not isinstance(value.fn, _StubJit):
                value.fn = _StubJit(value.fn)
                value.compiled.clear()
    modules[1]._regs = lambda cap: {}


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def calls(bs: int, shape=(1, 7, 8), V=32000, mods=None):
    """{op: zero-argument call} on CPU inputs shaped as bench_kernels' (probabilities small: no kernel reads them).
    mods: (triton_verify, triton_tree, triton_sampling, triton_dspark) of another commit (``--before``)."""
    triton_verify, triton_tree, triton_sampling, triton_dspark = mods or (
        globals()["triton_verify"], globals()["triton_tree"], globals()["triton_sampling"], globals()["triton_dspark"])
    topk, depth, n = shape
    W = depth + 1
    rng = np.random.default_rng(0)
    pl, si = eagle_rollout(rng, bs, *shape)
    pl, si = torch.as_tensor(pl), torch.as_tensor(si)
    sl = torch.as_tensor(rng.integers(64, 513, size=bs))
    kw = dict(topk=topk, depth=depth, num_draft_tokens=n, tree_mask_mode="full_mask", seq_lens_sum=int(sl.sum()))
    build = triton_tree.build_tree(pl, si, sl, validate=False, **kw)
    ri, nt, ns = build.retrieve_index, build.retrieve_next_token, build.retrieve_next_sibling
    # build_tree's stub wrote nothing: give the links real values (a chain) so shapes and dtypes are right
    ri.copy_(torch.arange(bs * n).reshape(bs, n))
    cand = torch.randint(0, V, (bs, n))
    p = torch.empty((bs, n, V)).uniform_()
    q = torch.empty((bs, n - 1, V)).uniform_()
    u, uf = torch.rand((bs, n)), torch.rand(bs)
    logits = torch.randn((bs * n, V))
    res = triton_verify.verify_tree_greedy(cand, ri, nt, ns, cand, num_speculative_tokens=W, validate=False)
    at = res.predicts.view(bs, n)[:, :W].contiguous()
    lens = torch.ones(bs, dtype=torch.int32)
    tv = triton_verify
    return {
        "build_tree": lambda: triton_tree.build_tree(pl, si, sl, validate=False, **kw),
        "verify_tree_greedy": lambda: tv.verify_tree_greedy(cand, ri, nt, ns, cand, num_speculative_tokens=W,
                                                            validate=False),
        "tree_sampling_target_only": lambda: tv.tree_sampling_target_only(cand, ri, nt, ns, u, uf, p,
                                                                          num_speculative_tokens=W, validate=False),
        "chain_rejection_sampling": lambda: tv.chain_rejection_sampling(cand, ri, u, uf, p, q, num_speculative_tokens=n,
                                                                        validate=False),
        "target_probs_from_logits": lambda: triton_sampling.target_probs_from_logits(logits, temperature=0.7,
                                                                                     validate=False),
        "target_probs_top_k_top_p": lambda: triton_sampling.target_probs_from_logits(
            logits, temperature=0.7, top_k=50, top_p=0.9, validate=False),
        "dspark_accept_greedy": lambda: triton_dspark.dspark_accept_greedy(cand, cand, validate=False),
        "fill_bonus_tokens": lambda: triton_sampling.fill_bonus_tokens(at, lens, stride=n, validate=False),
    }


def triton_python_calls(fn) -> list:
    """The Python functions of Triton's own package that one call of ``fn`` runs (the stubs excluded):
    after its first call, a call should run none (the launch goes straight to the compiled kernel)."""
    import triton
    root = str(Path(triton.__file__).parent)
    seen = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(root):
            seen.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}")
    sys.setprofile(tracer)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return sorted(set(seen))


def cpu_us(fn, n_calls: int, rounds: int = 5):
    for _ in range(min(50, n_calls)):
        fn()
    out = []
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(n_calls):
            fn()
        out.append((time.process_time() - t0) / n_calls * 1e6)
    out.sort()
    return round(out[0], 2), round(out[len(out) // 2], 2), round(out[-1], 2)


def main():
    global COUNTING
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--bs", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--shape", type=int, nargs=3, default=[1, 7, 8], metavar=("TOPK", "DEPTH", "N"),
                    help="the tree's shape (4 5 64 at bs 1: the target-only record is a misaligned view)")
    ap.add_argument("--ops", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--before", help="a make_before.sh folder: its kernels' calls are timed in the same rounds")
    args = ap.parse_args()
    torch.set_num_threads(1)
    install_stubs()
    if args.before:
        return compare(args)
    rows = []
    print("| op | bs | host CPU us (min / median / max) | aten ops a call | launches (arguments) |")
    print("|---|---|---|---|---|")
    for bs in args.bs:
        for op, fn in calls(bs, tuple(args.shape)).items():
            if args.ops and op not in args.ops:
                continue
            fn()
            mode = _CountOps()
            LAUNCHES.clear()
            COUNTING = True
            with mode:
                fn()
            COUNTING = False
            launches = list(LAUNCHES)
            us = cpu_us(fn, args.calls, args.rounds)
            rows.append(dict(op=op, bs=bs, cpu_us_min=us[0], cpu_us_median=us[1], cpu_us_max=us[2],
                             aten_ops=dict(mode.ops), launches=launches, triton_python_calls=triton_python_calls(fn)))
            ops = ", ".join(f"{k} {v}" for k, v in sorted(mode.ops.items()))
            print(f"| {op} | {bs} | {us[0]} / {us[1]} / {us[2]} | {sum(mode.ops.values())}: {ops} | "
                  f"{len(launches)} ({', '.join(f'{a} {how}' for _, a, how in launches)}) |", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


def compare(args):
    """CPU us a call of today's kernels and of ``--before``'s, alternated in the same rounds (the machine's
    speed drifts over seconds): min / median / max of ``--rounds`` rounds of ``--calls`` calls each."""
    sys.path.insert(0, str(Path(args.before).resolve()))
    import importlib
    old = [importlib.import_module(f"kernels_before.{m}") for m in
           ("triton_common", "triton_verify", "triton_tree", "triton_sampling", "triton_dspark")]
    install_stubs(old)
    rows = []
    print("| op | bs | after CPU us (min / median / max) | before | after / before (median) |")
    print("|---|---|---|---|---|")
    for bs in args.bs:
        after, before = calls(bs, tuple(args.shape)), calls(bs, tuple(args.shape), mods=old[1:])
        for op in after:
            if args.ops and op not in args.ops:
                continue
            fns = {"after": after[op], "before": before[op]}
            times = {name: [] for name in fns}
            for fn in fns.values():
                for _ in range(min(50, args.calls)):
                    fn()
            for r in range(args.rounds):
                for name in (fns if r % 2 == 0 else reversed(list(fns))):
                    t0 = time.process_time()
                    for _ in range(args.calls):
                        fns[name]()
                    times[name].append(round((time.process_time() - t0) / args.calls * 1e6, 2))
            stat = {k: (min(v), float(np.median(v)), max(v)) for k, v in times.items()}
            rows.append(dict(op=op, bs=bs, cpu_us_rounds=times))
            a, b = stat["after"], stat["before"]
            print(f"| {op} | {bs} | {a[0]} / {a[1]:.2f} / {a[2]} | {b[0]} / {b[1]:.2f} / {b[2]} | {a[1] / b[1]:.2f} |",
                  flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
