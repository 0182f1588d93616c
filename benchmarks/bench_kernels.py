"""Benchmark every specviz kernel against SGLang 0.5.23's own Triton kernels and an empty Triton kernel.

Usage (on a CUDA GPU; see benchmarks/README.md for the command and the results):

    python benchmarks/bench_kernels.py --out results.json --markdown table.md

Each kernel is timed two ways:
* ``python``: the Python call as a user makes it (allocation, pre-fills, launch), CUDA events
  around back-to-back calls (at least 200 a round for a fast call) after 50 ms of warm-up calls,
  averaged per call; the median of 7 rounds, the op's implementations alternated round by round
  (``Timer.python_rounds``; every round in ``python_us_rounds``); two empty Triton launches through
  the JIT are timed in the same rounds (impl ``two_empty_launches``: issue 36's goal-1 allowance);
* ``graph``: the kernel alone (outputs pre-allocated) captured GRAPH_REPS times in one CUDA graph and
  replayed, averaged per launch; the median of GRAPH_ROUNDS timings of an op's implementations
  alternated (``Timer.alternated``), each after an idle rest of 20x its own burst, so that every
  implementation is timed from the same GPU state. ``graph_us_back_to_back`` is the timing taken right
  after the implementation's own Python rounds (the tables' only figure until 2026-12-02 16:15 UTC):
  a kernel reading 4+ TB/s holds the H200 at its 700 W cap, and whatever runs next starts throttled.
  For the torch backend "the kernel" is the whole function.

Every figure is also given as a ratio to SGLang's Triton kernel on the same inputs (where SGLang
has one: tree build, greedy verify, chain sampler; loaded by path, see specviz/rooms/engines/sglang_engine.py)
and to an empty Triton kernel timed the same way. ``--smoke`` runs tiny sizes on the CPU
(Triton interpreter, wall clock, no graphs) to check the script itself.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernels import torch_backend, triton_dspark, triton_sampling, triton_tree, triton_verify  # noqa: E402
from tests.support import sglang_oracle  # noqa: E402
from tests.support.random_cases import eagle_rollout  # noqa: E402

SHAPES = [(1, 7, 8), (4, 5, 64), (8, 4, 64)]  # (topk, depth, n)
BATCHES = [1, 64, 512, 4096]
VOCABS = [32000, 128256]
MAX_PROB_BYTES = 17e9  # skip sampler configs whose target_probs tensor is larger (bs 4096 x n 64 x V)
MAX_TORCH_PROB_BYTES = 4.3e9  # the torch backend's sampler keeps several [bs, n, V] temporaries
GRAPH_REPS = 20
PY_ROUNDS = 7  # rounds of a Python-call timing (Timer.python_rounds); the table gives their median
PY_MIN_CALLS = 200  # calls a round at least, for calls under PY_MIN_ROUND_US / PY_MIN_CALLS us
PY_MIN_ROUND_US = 20000
PY_WARM_S = 0.05  # calls before the rounds, to wake a host that idled through the graph rests
GRAPH_ROUNDS = 5  # --rounds: alternated graph timings of each implementation (the table gives their median)
REST_FACTOR = 20.0  # idle before a graph burst, in multiples of the burst's own time (a <= 5% duty cycle)
MAX_REST_S = 0.5
ONLY_OPS: set = set()  # --ops: time only these ops (empty: all)
ONLY_IMPLS: set = set()  # --impls: time only these implementations (empty: all)
EMPTY_X: list = []  # the empty kernel's argument, once run() made it
# --impls NAME: the target-only call with one launcher knob of kernels/triton_verify.py set to another value
TARGET_ONLY_KNOB_IMPLS = {"triton_walker_warps4": ("TARGET_ONLY_WALKER_WARPS", 4),
                          "triton_draw_chunks1": ("TARGET_ONLY_DRAW_CHUNKS", 1),
                          "triton_draw_chunks4": ("TARGET_ONLY_DRAW_CHUNKS", 4),
                          "triton_maxnreg_none": ("TARGET_ONLY_MAXNREG", None),
                          "triton_maxnreg96": ("TARGET_ONLY_MAXNREG", 96),
                          "triton_draw_maxnreg64": ("TARGET_ONLY_DRAW_MAXNREG", 64),
                          "triton_draw_maxnreg128": ("TARGET_ONLY_DRAW_MAXNREG", 128),
                          "triton_draw_maxnreg_none": ("TARGET_ONLY_DRAW_MAXNREG", None),
                          "triton_draw_maxnreg80": ("TARGET_ONLY_DRAW_MAXNREG", 80),
                          "triton_pdl_off": ("TARGET_ONLY_PDL", False),
                          "triton_pdl_walker": ("TARGET_ONLY_PDL_WALKER", True)}
EMPTY_PAIR = "two_empty_launches"  # two empty Triton launches through the JIT, timed in every op's Python rounds
BEFORE = None  # --before DIR: the kernels package of an earlier commit (DIR/kernels_before), timed as impl "before"


def load_before(path):
    """An earlier commit's kernels in DIR/kernels_before, beside that commit's own library in DIR/specviz_before
    (made by benchmarks/make_before.sh), so the earlier kernels validate with the helpers they were written against,
    whatever the library's layout is today."""
    import importlib
    sys.path.insert(0, str(Path(path).resolve()))
    mods = {name: importlib.import_module(f"kernels_before.{name}") for name in ("triton_tree", "triton_verify", "triton_sampling")}
    return type("Before", (), mods)


def torch_user_probs(logits, temperature, top_k, top_p):
    """What a user writes in torch for temperature + top-k + top-p (the sort-based filter): softmax, one
    descending sort, top-k cut, top-p cut on the cumulative sum (a token is kept while the mass before it
    is under top_p), renormalised, scattered back."""
    probs = torch.softmax(logits / temperature, dim=-1)
    sorted_p, idx = probs.sort(dim=-1, descending=True)
    sorted_p[:, top_k:] = 0.0
    sorted_p = sorted_p / sorted_p.sum(-1, keepdim=True)
    before = sorted_p.cumsum(-1) - sorted_p
    sorted_p = torch.where(before < top_p, sorted_p, 0.0)
    sorted_p = sorted_p / sorted_p.sum(-1, keepdim=True)
    return torch.empty_like(probs).scatter_(-1, idx, sorted_p)


def check_before(results, op, meta, ours, before):
    """Record whether our outputs equal the earlier commit's (tensors, or tuples / dataclasses of them)."""
    def flat(x):
        if hasattr(x, "as_dict"):
            return [flat(v) for v in x.as_dict().values()]
        if isinstance(x, (tuple, list)):
            return [flat(v) for v in x]
        return x
    a, b = flat(ours), flat(before)
    pairs = list(zip(a, b)) if isinstance(a, list) else [(a, b)]
    row = dict(op=op, impl="check_vs_before", same=all(torch.equal(x, y) for x, y in pairs), **meta)
    if not row["same"]:
        diffs = [(x != y).sum().item() for x, y in pairs]
        row["mismatches"] = diffs
        if len(pairs) == 1 and pairs[0][0].is_floating_point():
            row["max_abs_diff"] = float((pairs[0][0] - pairs[0][1]).abs().max())
    record(results, **row)


@triton.jit
def empty_kernel(x_ptr):
    pass


class Timer:
    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def python(self, fn, iters):
        return float(np.median(self.python_rounds({"fn": fn}, iters)["fn"]))

    def python_round(self, fn, iters) -> float:
        """us a call over ``iters`` back-to-back calls: CUDA events around them (host-bound calls: the host's
        time; GPU-bound ones: the GPU's)."""
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            return (time.perf_counter() - t0) / iters * 1e6
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / iters * 1e3

    def python_rounds(self, fns: dict, iters) -> dict:
        """{name: [us a call, one a round]}: PY_ROUNDS rounds, each timing every fn once (``iters`` calls, at
        least PY_MIN_CALLS when a call is host-bound), names in order in even rounds and reversed in odd
        ones, after PY_WARM_S of calls: the graph timings rest the host between bursts, and a host that
        idled runs the next calls slower (the Python figures jumped +-30 us between neighbouring rows
        when the warm-up was 3 calls and the implementations were timed one after the other)."""
        for fn in fns.values():
            for _ in range(3):
                fn()
        if self.cuda:
            torch.cuda.synchronize()
        per_call = {name: self.python_round(fn, 3) for name, fn in fns.items()}
        n = {name: max(iters, min(PY_MIN_CALLS, int(PY_MIN_ROUND_US / max(us, 1.0)))) for name, us in per_call.items()}
        if not self.cuda:
            n = {name: iters for name in fns}
        t_end = time.perf_counter() + (PY_WARM_S if self.cuda else 0.0)
        while time.perf_counter() < t_end:
            for fn in fns.values():
                fn()
        out = {name: [] for name in fns}
        for r in range(PY_ROUNDS if self.cuda else 1):  # the interpreter (--smoke): one round
            for name in (list(fns) if r % 2 == 0 else list(reversed(fns))):
                out[name].append(round(self.python_round(fns[name], n[name]), 2))
        return out

    def capture(self, fn):
        """fn warmed up on a side stream, then GRAPH_REPS launches of it captured in one CUDA graph."""
        if not self.cuda:
            return None
        return capture_graph(fn)

    @staticmethod
    def replay_us(graph, replays=5) -> float:
        """us per launch over ``replays`` back-to-back replays of a captured graph."""
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / (replays * GRAPH_REPS) * 1e3

    def graph(self, fn, replays=5):
        if not self.cuda:
            return None
        graph = self.capture(fn)
        us = self.replay_us(graph, replays)
        del graph
        return us

    def alternated(self, graphs: dict, rounds: int, replays=5, burst_us=None) -> dict:
        """{name: [us per launch, one a round]}: every round times each graph once (``replays`` replays), the
        names in order in even rounds and reversed in odd ones, each burst after an idle rest of
        REST_FACTOR x its own burst time (at most MAX_REST_S): each implementation is timed from the same
        rested state as the others. (Run back to back, a kernel that reads 4+ TB/s holds the H200 at its
        700 W cap and is timed slowed, while the next one starts half-throttled: benchmarks/README.md.)"""
        out = {name: [] for name in graphs}
        burst_us = dict(burst_us or {})
        for r in range(rounds):
            names = list(graphs) if r % 2 == 0 else list(reversed(graphs))
            for name in names:
                rest = min(MAX_REST_S, REST_FACTOR * burst_us.get(name, 1e5) * replays * GRAPH_REPS * 1e-6)
                torch.cuda.synchronize()
                time.sleep(rest)
                us = self.replay_us(graphs[name], replays)
                burst_us[name] = us
                out[name].append(round(us, 2))
        return out


def capture_graph(fn, reps=None):
    """fn warmed up (3 calls on a side stream, as CUDA graphs need), then ``reps`` (GRAPH_REPS) calls captured
    in one graph, replayed once; returns the graph."""
    reps = reps or GRAPH_REPS
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def iters_for(bytes_touched: float) -> int:
    return 40 if bytes_touched < 1e8 else 10 if bytes_touched < 2e9 else 4


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def tree_inputs(shape, bs, device, rollouts):
    topk, depth, n = shape
    pl, si = rollouts[shape]
    rng = np.random.default_rng(bs)
    seq_lens = rng.integers(64, 513, size=bs)
    return (torch.as_tensor(pl[:bs], device=device), torch.as_tensor(si[:bs], device=device),
            torch.as_tensor(seq_lens, device=device), int(seq_lens.sum()))


def follow_targets(cand, nt, ns, V, gen, follow=0.9):
    """target_predict [bs, n]: mostly the token of a random child of each node (long accepted paths)."""
    bs, n = cand.shape
    child = nt.clone()
    hops = torch.randint(0, 8, (bs, n), generator=gen, device=cand.device)
    for h in range(8):
        nxt = torch.where(child >= 0, ns.gather(1, child.clamp(min=0)), child)
        child = torch.where((hops > h) & (nxt >= 0), nxt, child)
    follow_tok = cand.gather(1, child.clamp(min=0))
    rand_tok = torch.randint(0, V, (bs, n), generator=gen, device=cand.device)
    keep = (child >= 0) & (torch.rand((bs, n), generator=gen, device=cand.device) < follow)
    return torch.where(keep, follow_tok, rand_tok)


def probs(shape, gen, device, scale=3.0):
    x = torch.randn(shape, generator=gen, device=device) * scale
    return torch.softmax(x, dim=-1)


def gumbel_sample(rows, gen):
    """One token per row drawn from ``rows`` [..., V] (Gumbel-max, no multinomial over huge V)."""
    g = -torch.log(-torch.log(torch.rand(rows.shape, generator=gen, device=rows.device).clamp_(1e-20, 1.0)))
    return (rows.clamp_min(1e-30).log() + g).argmax(dim=-1)


# ---------------------------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------------------------

def record(results, **row):
    results.append(row)
    print(json.dumps(row), flush=True)


def bench_impls(results, timer, op, meta, impls, bytes_touched=0.0):
    """impls: {name: (python_fn, kernel_fn)}; returns {name: (python_us, graph_us)}.

    Per implementation: the Python call (``Timer.python``), then its graph captured and timed at once
    (``graph_us_back_to_back``: right after its own Python rounds, the tables' only protocol until
    2026-12-02 16:15 UTC). Then every implementation's graph is timed GRAPH_ROUNDS times, alternated,
    each from a rest (``Timer.alternated``); ``graph_us`` is the median of those rounds."""
    out = {}
    if ONLY_OPS and op not in ONLY_OPS:
        return out
    timed, graphs, back_to_back, py_fns = {}, {}, {}, {}
    for name, (py_fn, kernel_fn) in impls.items():
        if ONLY_IMPLS and name not in ONLY_IMPLS:
            continue
        try:
            py_fn()  # fails here, not inside the alternated rounds
            py_fns[name] = py_fn
        except Exception as exc:  # report, keep going
            record(results, op=op, impl=name, error=f"{type(exc).__name__}: {exc}"[:300], **meta)
    if py_fns and EMPTY_X:  # goal 1's bound, timed in the same rounds: the host's speed drifts over seconds
        x = EMPTY_X[0]
        py_fns[EMPTY_PAIR] = lambda: (empty_kernel[(1,)](x), empty_kernel[(1,)](x))
    py_rounds = timer.python_rounds(py_fns, iters_for(bytes_touched)) if py_fns else {}
    for name in py_fns:
        timed[name] = float(np.median(py_rounds[name]))
        try:
            if timer.cuda and name != EMPTY_PAIR:
                graphs[name] = timer.capture(impls[name][1])
                back_to_back[name] = timer.replay_us(graphs[name])
        except Exception as exc:  # report, keep going
            record(results, op=op, impl=name, error=f"{type(exc).__name__}: {exc}"[:300], **meta)
            timed.pop(name, None)
            graphs.pop(name, None)
    rounds = timer.alternated(graphs, GRAPH_ROUNDS, burst_us=back_to_back) if graphs else {}
    graphs.clear()
    for name, py in timed.items():
        gr = float(np.median(rounds[name])) if name in rounds else None
        out[name] = (py, gr)
        row = dict(op=op, impl=name, python_us=round(py, 2), graph_us=None if gr is None else round(gr, 2), **meta)
        row["python_us_rounds"] = py_rounds[name]
        if gr is not None:
            row["graph_us_rounds"] = rounds[name]
            row["graph_us_back_to_back"] = round(back_to_back[name], 2)
        if bytes_touched and gr:
            row["graph_TBps"] = round(bytes_touched / (gr * 1e-6) / 1e12, 3)
            row["python_TBps"] = round(bytes_touched / (py * 1e-6) / 1e12, 3)
        record(results, **row)
    return out


def run(args):
    device = torch.device("cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu")
    timer = Timer(device)
    results = []
    env = dict(op="environment", torch=torch.__version__, triton=triton.__version__,
               device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu (Triton interpreter)")
    try:
        sgl = sglang_oracle.load()
        env["sglang"] = sgl.source
    except ImportError as exc:
        sgl = None
        env["sglang"] = f"absent: {exc}"
    record(results, **env)
    shapes, batches, vocabs = SHAPES, args.batches or BATCHES, args.vocabs or VOCABS
    if args.smoke:
        shapes, batches, vocabs = [(1, 3, 4), (2, 3, 6)], [1, 3], [50]
    gen = torch.Generator(device=device).manual_seed(0)

    x = torch.zeros(1, device=device)
    EMPTY_X[:] = [x]
    empty = dict(python_us=round(timer.python(lambda: empty_kernel[(1,)](x), 200), 2), graph_us=None)
    if timer.cuda:  # the same protocol as every kernel's graph figure (rested rounds), so "x empty" compares like with like
        graph = timer.capture(lambda: empty_kernel[(1,)](x))
        back = timer.replay_us(graph)
        rounds = timer.alternated({"empty": graph}, GRAPH_ROUNDS, burst_us={"empty": back})["empty"]
        empty.update(graph_us=round(float(np.median(rounds)), 2), graph_us_rounds=rounds,
                     graph_us_back_to_back=round(back, 2))
        del graph
    record(results, op="empty_triton_kernel", impl="triton", **empty)
    from kernels.triton_common import FastLaunch
    fast_empty = FastLaunch(empty_kernel)
    record(results, op="empty_triton_kernel", impl="triton_fast_launch",
           python_us=round(timer.python(lambda: fast_empty((1,), x), 200), 2), graph_us=None)
    bf = BEFORE

    rng = np.random.default_rng(0)
    rollouts = {s: eagle_rollout(rng, max(batches), *s) for s in shapes}
    tb = torch_backend.FUNCTIONS
    for shape in shapes:
        topk, depth, n = shape
        W = depth + 1
        for bs in batches:
            meta = dict(topk=topk, depth=depth, n=n, bs=bs)
            pl, si, sl, sl_sum = tree_inputs(shape, bs, device, rollouts)
            kw = dict(topk=topk, depth=depth, num_draft_tokens=n, tree_mask_mode="full_mask", seq_lens_sum=sl_sum)
            ours_build, ours_launch = triton_tree.build_prepare(pl, si, sl, **kw)
            impls = {
                "triton": (lambda: triton_tree.build_tree(pl, si, sl, validate=False, **kw), ours_launch),
                "torch": (lambda: tb["build_tree"](pl, si, sl, validate=False, **kw),
                          lambda: tb["build_tree"](pl, si, sl, validate=False, **kw)),
            }
            if bf is not None:
                impls["before"] = (lambda: bf.triton_tree.build_tree(pl, si, sl, validate=False, **kw),
                                   bf.triton_tree.build_prepare(pl, si, sl, **kw)[1])
            if sgl is not None:
                mask_size = sl_sum * n + n * n * bs
                s_mask = torch.ones(mask_size, dtype=torch.bool, device=device)
                s_pos = torch.empty(bs * n, dtype=torch.int64, device=device)
                s_links = torch.full((3, bs, n), -1, dtype=torch.int64, device=device)
                s_prefix = torch.cumsum(sl, 0) - sl

                def sgl_call():
                    mask = torch.ones(mask_size, dtype=torch.bool, device=device)
                    pos = torch.empty(bs * n, dtype=torch.int64, device=device)
                    links = torch.full((3, bs, n), -1, dtype=torch.int64, device=device)
                    sgl.build_tree(pl, si, sl, mask, pos, links[0], links[1], links[2], topk, depth, n,
                                   sgl.TreeMaskMode.FULL_MASK)

                def sgl_kernel():  # the launch SGLang's wrapper makes, minus its cumsum
                    sgl.build_tree_kernel[(bs,)](pl, si, sl, s_prefix, s_mask, s_pos, s_links[0], s_links[1], s_links[2],
                                                 topk=topk, depth=depth, draft_token_num=n, tree_mask_mode=0,
                                                 batch_size=bs, parent_list_stride=pl.stride(0),
                                                 selected_index_stride=si.stride(0))
                impls["sglang"] = (sgl_call, sgl_kernel)
            bench_impls(results, timer, "build_tree", meta, impls)
            ours_launch()
            if sgl is not None:
                s_links.fill_(-1)  # SGLang's kernel needs the -1 pre-fill (replays above left links behind)
                sgl_kernel()
                fields = dict(retrieve_index=(ours_build.retrieve_index, s_links[0]),
                              retrieve_next_token=(ours_build.retrieve_next_token, s_links[1]),
                              retrieve_next_sibling=(ours_build.retrieve_next_sibling, s_links[2]),
                              positions=(ours_build.positions, s_pos), tree_mask=(ours_build.tree_mask, s_mask))
                diff = {}
                for name, (a, b) in fields.items():
                    bad = (a.reshape(-1) != b.reshape(-1)).nonzero()
                    if bad.numel():
                        j = int(bad[0, 0])
                        diff[name] = dict(count=int(bad.numel()), first=j, ours=a.reshape(-1)[j].item(),
                                          sglang=b.reshape(-1)[j].item(), size=a.numel())
                record(results, op="build_tree", impl="check", same_as_sglang=not diff, diff=diff, **meta)

            # Greedy verify on the tree just built.
            ri, nt, ns = ours_build.retrieve_index, ours_build.retrieve_next_token, ours_build.retrieve_next_sibling
            cand = torch.randint(0, 32000, (bs, n), generator=gen, device=device)
            tp = follow_targets(cand, nt, ns, 32000, gen)
            res, launch = triton_verify.greedy_prepare(cand, ri, nt, ns, tp, W=W)
            impls = {
                "triton": (lambda: triton_verify.verify_tree_greedy(cand, ri, nt, ns, tp, num_speculative_tokens=W,
                                                                    validate=False), launch),
                "torch": (lambda: tb["verify_tree_greedy"](cand, ri, nt, ns, tp, num_speculative_tokens=W, validate=False),
                          lambda: tb["verify_tree_greedy"](cand, ri, nt, ns, tp, num_speculative_tokens=W, validate=False)),
            }
            if bf is not None:
                impls["before"] = (lambda: bf.triton_verify.verify_tree_greedy(
                    cand, ri, nt, ns, tp, num_speculative_tokens=W, validate=False),
                    bf.triton_verify.greedy_prepare(cand, ri, nt, ns, tp, W=W)[1])
            if sgl is not None:
                g_pred = torch.zeros(bs * n, dtype=torch.int32, device=device)
                g_acc = torch.full((bs, W), -1, dtype=torch.int32, device=device)
                g_num = torch.empty(bs, dtype=torch.int32, device=device)

                def sgl_greedy_call():
                    pred = torch.zeros(bs * n, dtype=torch.int32, device=device)
                    acc = torch.full((bs, W), -1, dtype=torch.int32, device=device)
                    num = torch.empty(bs, dtype=torch.int32, device=device)
                    sgl.verify_tree_greedy(pred, acc, num, cand, ri, nt, ns, tp)

                impls["sglang"] = (sgl_greedy_call,
                                   lambda: sgl.verify_tree_greedy(g_pred, g_acc, g_num, cand, ri, nt, ns, tp))
            bench_impls(results, timer, "verify_tree_greedy", meta, impls)
            launch()
            if sgl is not None:
                sgl.verify_tree_greedy(g_pred, g_acc, g_num, cand, ri, nt, ns, tp)
                same = torch.equal(res.accept_index, g_acc) and torch.equal(res.predicts, g_pred)
                record(results, op="verify_tree_greedy", impl="check", same_as_sglang=bool(same),
                       mean_accept_len=round(float(res.accept_token_num.float().mean()) + 1, 2), **meta)

            for V in vocabs:
                p_bytes = bs * n * V * 4
                if p_bytes > MAX_PROB_BYTES:
                    record(results, op="samplers", impl="skipped", V=V, reason=f"target_probs would take {p_bytes / 1e9:.0f} GB",
                           **meta)
                    continue
                vmeta = dict(meta, V=V)
                torch.cuda.empty_cache() if device.type == "cuda" else None
                p = probs((bs, n, V), gen, device)
                # Tree sampler: each child drawn from its parent's target row (a plausible draft).
                par_row = torch.zeros((bs, n), dtype=torch.int64, device=device)
                for node in range(n):
                    kids_mask = torch.zeros((bs, n), dtype=torch.bool, device=device)
                    c = nt[:, node].clone()
                    for _ in range(n):
                        live = c >= 0
                        kids_mask.scatter_(1, c.clamp(min=0)[:, None], live[:, None])
                        c = torch.where(live, ns.gather(1, c.clamp(min=0)[:, None])[:, 0], c)
                    par_row = torch.where(kids_mask, node, par_row)
                tree_cand = torch.stack([gumbel_sample(p[:, j], gen) for j in range(n)], 1)  # token drawn from row j
                tree_cand = tree_cand.gather(1, par_row)  # node c takes a draw from its parent's row
                u = torch.rand((bs, n), generator=gen, device=device)
                uf = torch.rand((bs,), generator=gen, device=device)
                skw = dict(W=W, threshold_single=1.0, threshold_acc=1.0, new=True)
                _, launch = triton_verify.tree_sampling_prepare(tree_cand, ri, nt, ns, u, uf, p, **skw)
                impls = {"triton": (lambda: triton_verify.tree_sampling_target_only(
                    tree_cand, ri, nt, ns, u, uf, p, num_speculative_tokens=W, validate=False), launch)}
                if p_bytes <= MAX_TORCH_PROB_BYTES:
                    call = lambda: tb["tree_sampling_target_only"](tree_cand, ri, nt, ns, u, uf, p,  # noqa: E731
                                                                   num_speculative_tokens=W, validate=False)
                    impls["torch"] = (call, call)
                if triton_verify.target_only_walk_first(bs, -(-V // 4096)) or ONLY_IMPLS & {"triton_one_launch"}:
                    # the same kernel without its first (walk) launch: the rule's other side, measured
                    saved = triton_verify.TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS
                    triton_verify.TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS = None
                    one = triton_verify.tree_sampling_prepare(tree_cand, ri, nt, ns, u, uf, p, **skw)[1]
                    triton_verify.TARGET_ONLY_WALK_FIRST_MIN_PROGRAMS = saved
                    impls["triton_one_launch"] = (one, one)
                parts = getattr(launch, "parts", None)
                if parts and ONLY_IMPLS & {"triton_walker", "triton_draw"}:  # a walk-first call's two launches alone
                    impls["triton_walker"], impls["triton_draw"] = (parts[0], parts[0]), (parts[1], parts[1])
                for c in (0, 1):  # the walk's extremes: coins 0 accept each level's first child, coins 1 reject every root child
                    if ONLY_IMPLS & {f"triton_coins{c}", f"triton_walker_coins{c}"}:
                        uc = torch.full_like(u, float(c))
                        (_, _, k_c, _), other = triton_verify.tree_sampling_prepare(tree_cand, ri, nt, ns, uc, uf, p, **skw)
                        impls[f"triton_coins{c}"] = (other, other)
                        if getattr(other, "parts", None):
                            impls[f"triton_walker_coins{c}"] = (other.parts[0], other.parts[0])
                        other()
                        record(results, op="tree_sampling_target_only", impl=f"coins{c}_accept_len",
                               mean_accept_len=round(float(k_c.float().mean()) + 1, 2), **vmeta)
                if ONLY_IMPLS & {"triton_walker"}:
                    (_, _, k_u, _), one_more = triton_verify.tree_sampling_prepare(tree_cand, ri, nt, ns, u, uf, p, **skw)
                    one_more()
                    record(results, op="tree_sampling_target_only", impl="bench_coins_accept_len",
                           mean_accept_len=round(float(k_u.float().mean()) + 1, 2), **vmeta)
                for name, (knob, value) in TARGET_ONLY_KNOB_IMPLS.items():  # the launcher's knobs, other values
                    if name in ONLY_IMPLS:
                        saved = getattr(triton_verify, knob)
                        setattr(triton_verify, knob, value)
                        other = triton_verify.tree_sampling_prepare(tree_cand, ri, nt, ns, u, uf, p, **skw)[1]
                        setattr(triton_verify, knob, saved)
                        impls[name] = (other, other)
                if bf is not None:
                    impls["before"] = (lambda: bf.triton_verify.tree_sampling_target_only(
                        tree_cand, ri, nt, ns, u, uf, p, num_speculative_tokens=W, validate=False),
                        bf.triton_verify.tree_sampling_prepare(tree_cand, ri, nt, ns, u, uf, p, **skw)[1])
                bench_impls(results, timer, "tree_sampling_target_only", vmeta, impls, bytes_touched=bs * V * 4)
                del launch, impls
                if bf is not None and (not ONLY_OPS or "tree_sampling_target_only" in ONLY_OPS):
                    kw_t = dict(num_speculative_tokens=W, validate=False)
                    new_r = triton_verify.tree_sampling_target_only(tree_cand, ri, nt, ns, u, uf, p, **kw_t)
                    old_r = bf.triton_verify.tree_sampling_target_only(tree_cand, ri, nt, ns, u, uf, p, **kw_t)
                    check_before(results, "tree_sampling_target_only", vmeta,
                                 (new_r.predicts, new_r.accept_index, new_r.accept_token_num),
                                 (old_r.predicts, old_r.accept_index, old_r.accept_token_num))
                    if p_bytes <= 2e9:  # the work buffer rebuilt from the record == the one the earlier kernel wrote
                        check_before(results, "tree_sampling_target_only.draft_probs", vmeta, new_r.draft_probs,
                                     old_r.draft_probs)
                    del new_r, old_r

                if topk == 1:  # the chain sampler needs a chain: N = n slots
                    # The draft's proposals resemble the target's rows (a useful draft): q ~ softmax(0.8 log p + noise).
                    q = torch.softmax(0.8 * p[:, : n - 1].clamp_min(1e-30).log()
                                      + 0.5 * torch.randn((bs, n - 1, V), generator=gen, device=device), dim=-1)
                    chain_cand = torch.cat([torch.zeros((bs, 1), dtype=torch.int64, device=device),
                                            torch.stack([gumbel_sample(q[:, j], gen) for j in range(n - 1)], 1)], 1)
                    cri = torch.arange(bs * n, device=device).reshape(bs, n)
                    (c_pred, c_acc, c_num), launch = triton_verify.chain_prepare(chain_cand, cri, u, uf, p, q, new=True)
                    call = lambda: triton_verify.chain_rejection_sampling(  # noqa: E731
                        chain_cand, cri, u, uf, p, q, num_speculative_tokens=n, validate=False)
                    impls = {"triton": (call, launch)}
                    if bf is not None:
                        impls["before"] = (lambda: bf.triton_verify.chain_rejection_sampling(
                            chain_cand, cri, u, uf, p, q, num_speculative_tokens=n, validate=False),
                            bf.triton_verify.chain_prepare(chain_cand, cri, u, uf, p, q, new=True)[1])
                    if p_bytes <= MAX_TORCH_PROB_BYTES:
                        tcall = lambda: tb["chain_rejection_sampling"](chain_cand, cri, u, uf, p, q,  # noqa: E731
                                                                       num_speculative_tokens=n, validate=False)
                        impls["torch"] = (tcall, tcall)
                    sgl_chain = sgl is not None and p.numel() < 2**31
                    if sgl is not None and not sgl_chain:
                        record(results, op="chain_rejection_sampling", impl="sglang", V=V, **meta,
                               error="not run: target_probs has >= 2^31 elements; SGLang's kernel computes offsets in "
                                     "int32 and faults (illegal memory access) here, which would end the process")
                    if sgl_chain:
                        s_pred = torch.zeros(bs * n, dtype=torch.int32, device=device)
                        s_acc = torch.full((bs, n), -1, dtype=torch.int32, device=device)
                        s_num = torch.empty(bs, dtype=torch.int32, device=device)

                        def sgl_chain_call():
                            pred = torch.zeros(bs * n, dtype=torch.int32, device=device)
                            acc = torch.full((bs, n), -1, dtype=torch.int32, device=device)
                            num = torch.empty(bs, dtype=torch.int32, device=device)
                            sgl.chain_sampling(pred, acc, num, chain_cand, cri, None, None, u, uf, p, q, 1.0, 1.0, True)

                        impls["sglang"] = (sgl_chain_call, lambda: sgl.chain_sampling(
                            s_pred, s_acc, s_num, chain_cand, cri, None, None, u, uf, p, q, 1.0, 1.0, True))
                    # bytes counted: one full p row and one q row per request
                    bench_impls(results, timer, "chain_rejection_sampling", vmeta, impls, bytes_touched=2 * bs * V * 4)
                    launch()
                    if bf is not None and (not ONLY_OPS or "chain_rejection_sampling" in ONLY_OPS):
                        old_r = bf.triton_verify.chain_rejection_sampling(chain_cand, cri, u, uf, p, q,
                                                                         num_speculative_tokens=n, validate=False)
                        check_before(results, "chain_rejection_sampling", vmeta, (c_pred, c_acc, c_num),
                                     (old_r.predicts, old_r.accept_index, old_r.accept_token_num))
                    if sgl_chain:
                        sgl.chain_sampling(s_pred, s_acc, s_num, chain_cand, cri, None, None, u, uf, p, q, 1.0, 1.0, True)
                        record(results, op="chain_rejection_sampling", impl="check",
                               same_as_sglang=bool(torch.equal(c_acc, s_acc) and torch.equal(c_pred, s_pred)),
                               accept_index_mismatches=int((c_acc != s_acc).any(1).sum()),
                               final_token_mismatches=int((c_pred != s_pred).view(bs, n).any(1).sum()),
                               mean_accept_len=round(float(c_num.float().mean()) + 1, 2), **vmeta)
                    del q, launch, impls
                    if bs <= 512:  # the logits -> probabilities kernel (temperature 0.7, no top-k/p)
                        logits = torch.randn((bs * n, V), generator=gen, device=device)
                        call = lambda: triton_sampling.target_probs_from_logits(logits, temperature=0.7,  # noqa: E731
                                                                                validate=False)
                        tcall = lambda: tb["target_probs_from_logits"](logits, temperature=0.7,  # noqa: E731
                                                                       validate=False)
                        impls = {"triton": (call, call), "torch": (tcall, tcall)}
                        if bf is not None:
                            bcall = lambda: bf.triton_sampling.target_probs_from_logits(  # noqa: E731
                                logits, temperature=0.7, validate=False)
                            impls["before"] = (bcall, bcall)
                        bench_impls(results, timer, "target_probs_from_logits", vmeta, impls,
                                    bytes_touched=bs * n * V * 4 * 2)
                        # with top-k 50 and top-p 0.9: ours, the earlier kernel, and the torch a user would write
                        kcall = lambda: triton_sampling.target_probs_from_logits(  # noqa: E731
                            logits, temperature=0.7, top_k=50, top_p=0.9, validate=False)
                        ucall = lambda: torch_user_probs(logits, 0.7, 50, 0.9)  # noqa: E731
                        impls = {"triton": (kcall, kcall), "torch_user": (ucall, ucall)}
                        if bf is not None:
                            bkcall = lambda: bf.triton_sampling.target_probs_from_logits(  # noqa: E731
                                logits, temperature=0.7, top_k=50, top_p=0.9, validate=False)
                            impls["before"] = (bkcall, bkcall)
                        bench_impls(results, timer, "target_probs_top_k_top_p", vmeta, impls,
                                    bytes_touched=bs * n * V * 4 * 2)
                        if bf is not None and (not ONLY_OPS or "target_probs_from_logits" in ONLY_OPS):
                            check_before(results, "target_probs_from_logits", vmeta, call(), bcall())
                            check_before(results, "target_probs_top_k_top_p", vmeta, kcall(), bkcall())
                            ref = tb["target_probs_from_logits"](logits[:64], temperature=0.7, top_k=50, top_p=0.9,
                                                                 validate=False)
                            ours = kcall()[:64]
                            record(results, op="target_probs_top_k_top_p", impl="check_vs_torch_backend",
                                   max_abs_diff=float((ours - ref).abs().max()),
                                   same_support=bool(torch.equal(ours > 0, ref > 0)), **vmeta)
                        del logits
                del p
            if topk == 1:  # DSpark window = the chain; small per-request kernels
                dtp = torch.where(torch.rand((bs, n), generator=gen, device=device) < 0.8, cand.roll(-1, 1), cand)
                call = lambda: triton_dspark.dspark_accept_greedy(cand, dtp, validate=False)  # noqa: E731
                tcall = lambda: tb["dspark_accept_greedy"](cand, dtp, validate=False)  # noqa: E731
                bench_impls(results, timer, "dspark_accept_greedy", meta, {"triton": (call, call), "torch": (tcall, tcall)})
                at = res.predicts.view(bs, n)[:, :W].contiguous()
                lens = res.accept_token_num + 1
                call = lambda: triton_sampling.fill_bonus_tokens(at, lens, stride=n, validate=False)  # noqa: E731
                tcall = lambda: tb["fill_bonus_tokens"](at, lens, stride=n, validate=False)  # noqa: E731
                bench_impls(results, timer, "fill_bonus_tokens", meta, {"triton": (call, call), "torch": (tcall, tcall)})
    return results


def markdown(results) -> str:
    """The README table: every figure with its ratio to SGLang's Triton kernel and to an empty kernel; the graph
    figure is the median of the alternated rested rounds, and the back-to-back figure is given beside it."""
    empty = next(r for r in results if r["op"] == "empty_triton_kernel")
    key = lambda r: (r["op"], r.get("topk"), r.get("depth"), r.get("n"), r.get("bs"), r.get("V"))  # noqa: E731
    sgl = {key(r): r for r in results if r.get("impl") == "sglang" and "python_us" in r}
    lines = ["| op | topk,depth,n | bs | V | impl | python us | x SGLang | x empty | graph us | x SGLang | x empty "
             "| TB/s (graph) | graph us, back to back | x SGLang |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "-"

    def fixed(x):
        return "-" if x is None else f"{x:.2f}"
    for r in results:
        if "python_us" not in r or r["op"] == "empty_triton_kernel":
            continue
        s = sgl.get(key(r), {})
        b2b = r.get("graph_us_back_to_back")
        lines.append("| {op} | {shape} | {bs} | {V} | {impl} | {py:.1f} | {rps} | {rpe} | {gr} | {rgs} | {rge} | {bw} "
                     "| {b2b} | {rb2b} |".format(
                         op=r["op"], shape=f'{r["topk"]},{r["depth"]},{r["n"]}', bs=r["bs"], V=r.get("V", "-"),
                         impl=r["impl"], py=r["python_us"], rps=ratio(r["python_us"], s.get("python_us")),
                         rpe=ratio(r["python_us"], empty["python_us"]), gr=fixed(r["graph_us"]),
                         rgs=ratio(r["graph_us"], s.get("graph_us")), rge=ratio(r["graph_us"], empty["graph_us"]),
                         bw=r.get("graph_TBps", "-"), b2b=fixed(b2b),
                         rb2b=ratio(b2b, s.get("graph_us_back_to_back"))))
    return "\n".join(lines)


def main():
    global GRAPH_ROUNDS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write every measurement as JSON here")
    ap.add_argument("--markdown", help="write the README table here")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (CPU interpreter check of the script)")
    ap.add_argument("--ops", nargs="*", default=[], help="time only these ops (e.g. chain_rejection_sampling)")
    ap.add_argument("--bits", action="store_true",
                    help="also count chain-sampler draws bit-identical to SGLang's kernel (tests.support.sglang_oracle.chain_bits)")
    ap.add_argument("--batches", type=int, nargs="*", default=[], help=f"batch sizes (default {BATCHES})")
    ap.add_argument("--vocabs", type=int, nargs="*", default=[], help=f"vocabulary sizes (default {VOCABS})")
    ap.add_argument("--impls", nargs="*", default=[], help="time only these implementations (triton, torch, sglang)")
    ap.add_argument("--rounds", type=int, default=GRAPH_ROUNDS,
                    help="alternated, rested graph timings of each implementation (the table gives their median)")
    ap.add_argument("--before", help="DIR holding kernels_before/ (an earlier commit's kernels), timed as impl 'before'")
    ap.add_argument("--chain-bpp", type=int, choices=(1, 2, 4, 8), default=None,
                    help="blocks per program of the chain sampler (triton_verify.CHAIN_BLOCKS_PER_PROGRAM)")
    args = ap.parse_args()
    ONLY_OPS.update(args.ops)
    ONLY_IMPLS.update(args.impls)
    GRAPH_ROUNDS = args.rounds
    global BEFORE
    if args.before:
        BEFORE = load_before(args.before)
    if args.chain_bpp:
        triton_verify.CHAIN_BLOCKS_PER_PROGRAM = args.chain_bpp
    results = run(args)
    if args.bits:
        sgl = sglang_oracle.load()
        for V, bs, N in ((1000, 8192, 4), (32000, 8192, 8), (50257, 4096, 4), (128256, 4096, 4)):
            record(results, op="chain_bits", impl="triton_vs_sglang", **sglang_oracle.chain_bits(sgl, V=V, bs=bs, N=N, seed=V))
            torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    table = markdown(results)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
