"""Where does the chain sampler's time go past the read floor? (issue 21, goal 3)

Times variants of ``chain_rejection_sampling_kernel`` in a CUDA graph (bench_kernels.Timer) on the
sampler configs of the benchmark, and counts each shipping candidate's draws bit-identical to SGLang's
kernel (``sglang_oracle.chain_bits``, half the rows with boundary coins):

* knobs of ``kernels/triton_verify.py``: blocks a program (``CHAIN_BLOCKS_PER_PROGRAM`` 1/2/4/8) and
  the accept tests in a first launch or not (``CHAIN_SPLIT_MIN_PROGRAMS`` 0 / None);
* source variants, the kernel module patched into a temporary file:
  ``no_draw`` (the last program skips the terminal draw; attribution only, wrong tokens),
  ``draw_last`` (the last program's bookkeeping stores before the draw's loads, the order before
  2026-12-02 08:40 UTC), ``scalar_sums`` (the draw reads the block sums as NB scalar loads, not one
  vector load taken apart by one-hot sums), ``cheap_clean`` (0.5.23's clean of q in one comparison fewer;
  measured 2% slower at bs 4096, V 32000, 2026-12-02 16:11 UTC).

``--alternate R`` times every variant, SGLang's kernel and the read floor (bare, and with the accept tests
and the counter) in R rounds alternated from rests (``bench_kernels.Timer.alternated``), the protocol
of bench_kernels.py's table, and keeps one back-to-back timing beside them.

Data as in bench_kernels.py: target rows softmax(3 randn), draft rows softmax(0.8 log p + 0.5 randn),
drafts drawn from the draft rows. Measured variants no longer here (gains within the spread, results in
benchmarks/README.md): the scan in a ``while`` loop from the first possible block; the block sums' carries
folded into a vector once; ptxas caps of 80 registers.

Usage on a CUDA GPU: ``python benchmarks/gpu_chain_variants.py [--out variants.json] [--only NAME ...]
[--configs BS:V ...] [--ballast-gb GB]``. Each variant's three graph timings are kept (sorted): a
bandwidth-bound kernel's later timings can read ~4% slower than its first ones (the GPU's sustained
state), so compare like with like, and read the largest for what a long run sees.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kernels import triton_chain_kernels, triton_verify, triton_verify_kernels  # noqa: E402
from tests.support import sglang_oracle  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_kernels import GRAPH_REPS, Timer, gumbel_sample  # noqa: E402
from gpu_read_floor import floor_kernel, sglang_chain_launch  # noqa: E402

# The last program's part as it was before 2026-12-02 08:40 UTC (bookkeeping first).
_TAIL_DRAW_LAST = """    if is_last:
        if NB > 1:
            tl.store(count_ptr + b * (NB + 1) + NB, 0)  # zero again for the next launch
        tl.store(predicts_ptr + base + offs, tl.full([BLOCK_S], 0, tl.int32), mask=offs < N)
        rows = tl.load(retrieve_index_ptr + base + offs, mask=offs < N, other=-1)
        tl.store(accept_index_ptr + base + offs, tl.where(offs <= k, rows, -1).to(tl.int32), mask=offs < N)
        tl.store(accept_token_num_ptr + b, k.to(tl.int32))
        if K_GIVEN:
            tok = tl.load(candidates_ptr + base + offs + 1, mask=m, other=0)
        tl.debug_barrier()  # predicts' zero fill above vs the scattered writes below
        tl.store(predicts_ptr + rows, tok.to(tl.int32), mask=offs < k)  # predicts[ri[s-1]] = cand[s], s = 1..k
        last = tl.load(retrieve_index_ptr + base + k)
        coin_final = tl.load(final_coins_ptr + b)
        if NB > 1:
            final = chain_inverse_cdf_row_from_sums(p_row_ptr, q_row_ptr, use_sub, coin_final, sums_ptr + b * (NB + 1), V,
                                                    CLEAN_SUB=NEW_SEMANTICS, BLOCK_V=BLOCK_V, NB=NB, NB_P2=NB_P2)
        else:
            final = chain_inverse_cdf_row(p_row_ptr, q_row_ptr, use_sub, coin_final, V, CLEAN_SUB=NEW_SEMANTICS,
                                          BLOCK_V=BLOCK_V)
        tl.debug_barrier()
        tl.store(predicts_ptr + last, final)
        if WRITE_BONUS:
            tl.store(bonus_ptr + b, final.to(tl.int64))


"""
# The draw's reading of the block sums as NB scalar loads (an unrolled loop) instead of one vector load and
# one-hot sums (no CTA-wide reduction per block): measured 2026-12-02 11:50 UTC, 0.5-1.5% slower where
# it matters (bs 4096 / V 32000, V 128256 from bs 512) though it needs fewer registers; kept as a variant.
_FROM_SUMS_SCALAR = '@triton.jit\ndef chain_inverse_cdf_row_from_sums(p_row_ptr, sub_row_ptr, use_sub, coin, sums_row_ptr, V: tl.constexpr,\n                                   CLEAN_SUB: tl.constexpr, BLOCK_V: tl.constexpr, NB: tl.constexpr,\n                                   NB_P2: tl.constexpr):\n    """``chain_inverse_cdf_row`` given the row\'s block sums (sums_row_ptr[j] = tl.sum of block j, computed\n    by other programs with the same block shape): the same token, bit for bit, reading one block.\n\n    The NB sums are NB scalar loads issued together (an unrolled loop: one round trip, and no CTA-wide\n    reduction to take a value out of a vector). total = the sums folded in block order (SGLang\'s\n    ``norm_sum += tl.sum(val)``, the same additions in the same order, so the same float32). thr = coin *\n    total. SGLang\'s scan adds carry + tl.cumsum(block) block by block and stops at the first running sum\n    > thr; a block j cannot hold it when carry_j + s_j * (1 + 2**-9) + 1e-37 <= thr: every running sum of a\n    block is at most s_j * (1 + 4.9e-4) (4096 non-negative float32 terms, any order of additions, relative\n    error <= 4095 * 2**-24 each way) and carry + x is monotone in x. The scan starts at the first block that\n    can, with carry_j folded from the sums: the earlier blocks\' comparisons are all false in SGLang\'s kernel too."""\n    total = tl.zeros([], dtype=tl.float32)\n    for j in tl.static_range(NB):\n        total += tl.load(sums_row_ptr + j, volatile=True)\n    thr = coin * total\n    carry = tl.zeros([], dtype=tl.float32)\n    first_blk = tl.full([], NB, dtype=tl.int32)\n    carry_at = tl.zeros([], dtype=tl.float32)\n    for j in tl.static_range(NB):\n        s = tl.load(sums_row_ptr + j, volatile=True)\n        can = (first_blk == NB) & (carry + (s * 1.001953125 + 1e-37) > thr)\n        carry_at = tl.where(can, carry, carry_at)\n        first_blk = tl.where(can, j, first_blk)\n        carry += s\n    offs = tl.arange(0, BLOCK_V)\n    carry = carry_at\n    result = tl.full([], -1, dtype=tl.int32)\n    for j in range(0, NB):\n        if (result < 0) & (j >= first_blk):\n            v = j * BLOCK_V + offs\n            m = v < V\n            x = terminal_block(p_row_ptr, sub_row_ptr, use_sub, v, m, CLEAN_SUB)\n            running = carry + tl.cumsum(x, axis=0)\n            first = tl.min(tl.where((running > thr) & m, v, 2147483647), axis=0)\n            result = tl.where(first < 2147483647, first, result)\n            carry += tl.load(sums_row_ptr + j, volatile=True)\n    return tl.where(result >= 0, result, V - 1)\n\n\n'
_FROM_SUMS_START, _FROM_SUMS_END = "@triton.jit\ndef chain_inverse_cdf_row_from_sums(", "@triton.jit\ndef _chain_accept_len("


def _current_from_sums() -> str:
    src = inspect.getsource(triton_chain_kernels)
    return src[src.index(_FROM_SUMS_START):src.index(_FROM_SUMS_END)]


_TAIL_START = "    if is_last:  # the draw's loads go out first"  # to the end of the file (the sampler kernel is last)


def _current_tail() -> str:
    """The last program's part of today's kernel, as its source has it (what ``draw_last`` replaces)."""
    src = inspect.getsource(triton_chain_kernels)
    return src[src.index(_TAIL_START):]
# 0.5.23's clean of q (values outside [0, 1], NaN included, count as 0) in one compare fewer: max(s, 0) where
# s <= 1, else 0; the same terminal values (p - (+-0) is p) and so the same block sums and tokens.
_CLEAN = "        s = tl.where((s >= 0.0) & (s <= 1.0), s, 0.0)\n"
_CLEAN_CHEAP = "        s = tl.where(s <= 1.0, tl.maximum(s, 0.0), 0.0)\n"
_DRAW = "        if NB > 1:\n            final = chain_inverse_cdf_row_from_sums("
_NO_DRAW = "        if NB > 1:\n            final = k + 0 * chain_inverse_cdf_row_from_sums("


def patched(name: str, pairs) -> object:
    """The chain kernel module with each (old, new) text replaced, loaded from a temporary file (Triton reads
    a kernel's source from its file). The shared row helper it imports (``terminal_block``) is pasted in
    its place, so that a variant may patch it too."""
    helper = inspect.getsource(triton_verify_kernels.terminal_block.fn)
    src = inspect.getsource(triton_chain_kernels).replace("from .triton_verify_kernels import terminal_block\n",
                                                          "\n" + helper)
    for old, new in pairs:
        assert src.count(old) == 1, (name, old[:60])
        src = src.replace(old, new)
    path = Path(tempfile.mkdtemp()) / f"chain_variant_{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"chain_variant_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def variants():
    """name -> (kernel module, blocks a program, split threshold (0 always, None never), ptxas register cap,
    counted for bits?)."""
    out = {}
    for bpp in (1, 2, 4):
        for split, tag in ((None, "one"), (0, "split")):
            out[f"bpp{bpp}_{tag}"] = (triton_chain_kernels, bpp, split, None, True)
    mods = {"no_draw": patched("no_draw", [(_DRAW, _NO_DRAW)]),
            "draw_last": patched("draw_last", [(_current_tail(), _TAIL_DRAW_LAST)]),
            "scalar_sums": patched("scalar_sums", [(_current_from_sums(), _FROM_SUMS_SCALAR)]),
            "cheap_clean": patched("cheap_clean", [(_CLEAN, _CLEAN_CHEAP)])}
    for regs in (72, 80):  # ptxas caps: 6 (80) or 7 (72) programs an SM instead of 5 at 96 registers
        out[f"bpp2_one_r{regs}"] = (triton_chain_kernels, 2, None, regs, True)
    for name, mod in mods.items():
        for bpp in (1, 2, 4):
            for split, tag in ((None, "one"), (0, "split")):
                out[f"{name}_bpp{bpp}_{tag}"] = (mod, bpp, split, None, name != "no_draw")
    return out


def configs():
    return [(1, 32000), (64, 32000), (512, 32000), (4096, 32000), (64, 128256), (512, 128256), (2048, 128256)]


def use(mod, bpp, split, regs):
    """Point triton_verify at a kernel (a module holding it, or the kernel itself) and its knobs."""
    triton_verify.chain_rejection_sampling_kernel = getattr(mod, "chain_rejection_sampling_kernel", mod)
    triton_verify.CHAIN_BLOCKS_PER_PROGRAM = bpp
    triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = split
    triton_verify.CHAIN_MAXNREG = regs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--n", type=int, default=8, help="chain slots N (rows of p per request)")
    ap.add_argument("--only", nargs="*", default=[], help="variant names to run (default: all)")
    ap.add_argument("--ballast-gb", type=float, default=0.0,
                    help="hold this many GB of GPU memory allocated before the inputs (does placement matter?)")
    ap.add_argument("--configs", nargs="*", default=[], help="bs:V pairs to run (default: all)")
    ap.add_argument("--alternate", type=int, default=0,
                    help="time the variants (and the read floor) in this many alternated rounds, each burst from "
                         "a rest (bench_kernels.Timer.alternated), instead of three back-to-back timings each")
    ap.add_argument("--bits", action="store_true", help="count the draws against SGLang's even with --configs")
    ap.add_argument("--sustain", type=float, default=0.0,
                    help="with --alternate: also replay each kernel for this many seconds after a 2 s rest and "
                         "report its mean time over the second half (the GPU at its power cap)")
    args = ap.parse_args()
    dev = torch.device("cuda")
    timer = Timer(dev)
    sgl = sglang_oracle.load()
    saved = (triton_verify.chain_rejection_sampling_kernel, triton_verify.CHAIN_BLOCKS_PER_PROGRAM,
             triton_verify.CHAIN_SPLIT_MIN_PROGRAMS, triton_verify.CHAIN_MAXNREG)
    todo = {k: v for k, v in variants().items() if not args.only or k in args.only}
    rows, bits = [], []
    ballast = torch.empty(int(args.ballast_gb * 2**30), dtype=torch.uint8, device=dev) if args.ballast_gb else None
    gen = torch.Generator(device=dev).manual_seed(0)
    n = args.n
    chosen = [tuple(int(x) for x in c.split(":")) for c in args.configs] or configs()
    for bs, V in chosen:
        p = torch.softmax(3 * torch.randn((bs, n, V), generator=gen, device=dev), -1)
        q = torch.softmax(0.8 * p[:, : n - 1].log() + 0.5 * torch.randn((bs, n - 1, V), generator=gen, device=dev), -1)
        cand = torch.cat([torch.zeros((bs, 1), dtype=torch.int64, device=dev),
                          torch.stack([gumbel_sample(q[:, j], gen) for j in range(n - 1)], 1)], 1)
        ri = torch.arange(bs * n, device=dev).reshape(bs, n)
        u = torch.rand((bs, n), generator=gen, device=dev)
        uf = torch.rand((bs,), generator=gen, device=dev)
        gbytes = 2 * bs * V * 4
        runs = {}
        for name, (mod, bpp, split, regs, _) in todo.items():
            use(mod, bpp, split, regs)
            runs[name] = triton_verify.chain_prepare(cand, ri, u, uf, p, q, new=True)[1]
        use(*saved)
        if p.numel() < 2**31:
            runs["sglang_chain"] = sglang_chain_launch(sgl, cand, ri, u, uf, p, q)
        if args.alternate:
            alternate(timer, runs, args.alternate, bs, V, n, p, q, cand, u, gbytes, rows, args.sustain)
            del p, q, runs
            torch.cuda.empty_cache()
            save(args.out, rows, bits)
            continue
        for name, fn in runs.items():
            out = fn()
            compiled = out if hasattr(out, "n_regs") else None
            us = sorted(round(timer.graph(fn), 2) for _ in range(3))
            row = dict(bs=bs, V=V, kernel=name, graph_us=us, tb_s=round(gbytes / (us[0] * 1e-6) / 1e12, 3),
                       regs=getattr(compiled, "n_regs", None), spills=getattr(compiled, "n_spills", None))
            rows.append(row)
            print(json.dumps(row), flush=True)
        del p, q, runs
        torch.cuda.empty_cache()
        save(args.out, rows, bits)
    del ballast
    for name, (mod, bpp, split, regs, ships) in todo.items():
        if not ships or (args.configs and not args.bits):
            continue
        use(mod, bpp, split, regs)
        for V, bs, N in ((32000, 4096, 8), (128256, 2048, 4)):
            row = dict(kernel=name, **sglang_oracle.chain_bits(sgl, V=V, bs=bs, N=N, seed=V))
            bits.append(row)
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()
        save(args.out, rows, bits)
    use(*saved)


def sustained_us(graph, seconds: float) -> float:
    """Mean us per launch over the second half of ``seconds`` of back-to-back replays after a 2 s rest."""
    torch.cuda.synchronize()
    time.sleep(2.0)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds / 2:
        graph.replay()
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    count = 0
    t1 = time.monotonic()
    while time.monotonic() - t1 < seconds / 2:
        graph.replay()
        count += 1
        if count % 8 == 0:
            torch.cuda.synchronize()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (count * GRAPH_REPS) * 1e3


def alternate(timer, runs, rounds, bs, V, n, p, q, cand, u, gbytes, rows, sustain=0.0):
    """The runs and the read floor (one block of relu(p_k - q_k) a program, with the sampler's prefix and
    counter: ``gpu_read_floor.floor_kernel``) timed back to back once, then alternated from rests."""
    nb = -(-V // 4096)
    out = torch.empty(bs * nb, dtype=torch.float32, device=p.device)
    counter = torch.zeros(bs, dtype=torch.int32, device=p.device)
    for name, prefix, atomic in (("floor_read", False, False), ("floor_prefix_counter", True, True)):
        runs[name] = lambda prefix=prefix, atomic=atomic: floor_kernel[(bs * nb,)](
            p, q, out, counter, cand, u, V, p.stride(0), p.stride(1), q.stride(0), q.stride(1), N=n, NB=nb, BLOCK=4096,
            EVICT_FIRST=False, PREFIX=prefix, ATOMIC=atomic, BLOCK_S=max(2, 1 << (n - 1).bit_length()), num_warps=4)
    facts, graphs, back = {}, {}, {}
    for name, fn in runs.items():
        compiled = fn()
        facts[name] = dict(regs=getattr(compiled, "n_regs", None), spills=getattr(compiled, "n_spills", None))
        graphs[name] = timer.capture(fn)
        back[name] = round(timer.replay_us(graphs[name]), 2)
    timed = timer.alternated(graphs, rounds, burst_us=back)
    held = {name: round(sustained_us(g, sustain), 2) for name, g in graphs.items()} if sustain else {}
    for name, us in timed.items():
        med = sorted(us)[len(us) // 2]
        row = dict(bs=bs, V=V, kernel=name, alternated_us=us, median_us=med, back_to_back_us=back[name],
                   tb_s=round(gbytes / (med * 1e-6) / 1e12, 3), **facts[name])
        if name in held:
            row["sustained_us"] = held[name]
        rows.append(row)
        print(json.dumps(row), flush=True)
    graphs.clear()


def save(out, rows, bits):
    """Everything measured so far (a run cut short by a time limit keeps its rows)."""
    if out:
        Path(out).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), rows=rows, bits=bits), indent=1))


if __name__ == "__main__":
    main()
