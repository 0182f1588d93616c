"""How fast can an H200 read the bytes the chain sampler must read? (issue 21, goal 3)

The chain sampler reads one p row and one q row per request. This script times, in a CUDA graph
(the same Timer as bench_kernels.py), kernels that read exactly those bytes with no accept logic:

* ``floor_4096x4``: SGLang's block shape (4096 tokens, 4 warps), one program per block, the
  sum of relu(p - q) stored per block: the shape the bit-exact sampler is tied to;
* ``floor_4096x4_evict_first``: the same with streaming loads (evict_first);
* ``floor_8192x8``: a freer shape (8192 tokens, 8 warps);
* ``specviz_chain_one`` / ``specviz_chain_split``: our sampler as one launch, and with the accept
  tests in a first small launch (``triton_verify.CHAIN_SPLIT_MIN_PROGRAMS``); ``sglang_chain``: SGLang's.

Usage on a CUDA GPU: ``python benchmarks/gpu_read_floor.py [--out floor.json]``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernels import triton_verify  # noqa: E402
from tests.support import sglang_oracle  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_kernels import Timer  # noqa: E402


@triton.jit
def floor_kernel(p_ptr, q_ptr, out_ptr, count_ptr, cand_ptr, coins_ptr, V: tl.constexpr, stride_p_b, stride_p_row,
                 stride_q_b, stride_q_row, N: tl.constexpr, NB: tl.constexpr, BLOCK: tl.constexpr,
                 EVICT_FIRST: tl.constexpr, PREFIX: tl.constexpr, ATOMIC: tl.constexpr, BLOCK_S: tl.constexpr):
    """One block of relu(p_k - q_k) per program, its sum stored. PREFIX: k from the accept tests first
    (the sampler's two dependent loads); else k = 0. ATOMIC: then the sampler's barrier and acq_rel
    counter. Parts of the sampler's work, to attribute its time; not a sampler."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid // NB
    j = pid % NB
    k = 0
    if PREFIX:
        offs = tl.arange(0, BLOCK_S)
        m = offs < N - 1
        tok = tl.load(cand_ptr + b * N + offs + 1, mask=m, other=0)
        pt = tl.load(p_ptr + b * stride_p_b + offs * stride_p_row + tok, mask=m, other=0.0)
        qt = tl.load(q_ptr + b * stride_q_b + offs * stride_q_row + tok, mask=m, other=0.0)
        coin = tl.load(coins_ptr + b * N + offs, mask=m, other=0.0)
        k = tl.min(tl.where(m & ~(coin * qt < pt), offs, N - 1), axis=0)
        k = tl.minimum(k, N - 2)
    v = j * BLOCK + tl.arange(0, BLOCK)
    m = v < V
    p_row = p_ptr + b * stride_p_b + k * stride_p_row
    q_row = q_ptr + b * stride_q_b + k * stride_q_row
    if EVICT_FIRST:
        x = tl.load(p_row + v, mask=m, other=0.0, eviction_policy="evict_first")
        s = tl.load(q_row + v, mask=m, other=0.0, eviction_policy="evict_first")
    else:
        x = tl.load(p_row + v, mask=m, other=0.0)
        s = tl.load(q_row + v, mask=m, other=0.0)
    tl.store(out_ptr + pid, tl.sum(tl.maximum(x - s, 0.0), axis=0))
    if ATOMIC:
        tl.debug_barrier()
        last = tl.atomic_add(count_ptr + b, 1, sem="acq_rel", scope="gpu") == NB - 1
        if last:
            tl.store(count_ptr + b, 0)


def kernel_facts(compiled) -> dict:
    """Registers, spills and shared memory of a compiled kernel (what bounds its occupancy)."""
    if compiled is None:
        return {}
    md = getattr(compiled, "metadata", None)
    return dict(regs=getattr(compiled, "n_regs", None), spills=getattr(compiled, "n_spills", None),
                shared=getattr(md, "shared", None), warps=getattr(md, "num_warps", None))


def sglang_chain_launch(sgl, cand, ri, u, uf, p, q):
    """SGLang's chain kernel on these inputs, its outputs allocated once (a launch to time or replay).
    Its offsets are int32: only for p with fewer than 2**31 elements."""
    bs, n = cand.shape
    pred = torch.zeros(bs * n, dtype=torch.int32, device=p.device)
    acc = torch.full((bs, n), -1, dtype=torch.int32, device=p.device)
    num = torch.empty(bs, dtype=torch.int32, device=p.device)
    return lambda: sgl.chain_sampling(pred, acc, num, cand, ri, None, None, u, uf, p, q, 1.0, 1.0, True)


def configs():
    return [(512, 32000), (4096, 32000), (512, 128256), (2048, 128256)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--n", type=int, default=8, help="chain slots N (rows of p per request)")
    args = ap.parse_args()
    dev = torch.device("cuda")
    timer = Timer(dev)
    try:
        sgl = sglang_oracle.load()
    except ImportError as exc:
        print(f"SGLang's kernels not loaded: {exc}")
        sgl = None
    rows = []
    gen = torch.Generator(device=dev).manual_seed(0)
    n = args.n
    saved = triton_verify.CHAIN_SPLIT_MIN_PROGRAMS
    saved_regs = triton_verify.CHAIN_MAXNREG, triton_verify.TARGET_ONLY_MAXNREG
    for bs, V in configs():
        p = torch.softmax(3 * torch.randn((bs, n, V), generator=gen, device=dev), -1)
        q = torch.softmax(0.8 * p[:, : n - 1].log() + 0.5 * torch.randn((bs, n - 1, V), generator=gen, device=dev), -1)
        cand = torch.cat([torch.zeros((bs, 1), dtype=torch.int64, device=dev),
                          torch.randint(0, V, (bs, n - 1), generator=gen, device=dev)], 1)
        ri = torch.arange(bs * n, device=dev).reshape(bs, n)
        u = torch.rand((bs, n), generator=gen, device=dev)
        uf = torch.rand((bs,), generator=gen, device=dev)
        gbytes = 2 * bs * V * 4
        runs = {}
        counter = torch.zeros(bs, dtype=torch.int32, device=dev)
        for block, warps, evict, prefix, atomic in ((4096, 4, False, False, False), (4096, 4, True, False, False),
                                                    (8192, 8, False, False, False), (4096, 4, False, True, False),
                                                    (4096, 4, False, False, True), (4096, 4, False, True, True)):
            nb = triton.cdiv(V, block)
            out = torch.empty(bs * nb, dtype=torch.float32, device=dev)
            name = (f"floor_{block}x{warps}" + ("_evict_first" if evict else "") + ("_prefix" if prefix else "")
                    + ("_atomic" if atomic else ""))
            runs[name] = lambda nb=nb, out=out, block=block, warps=warps, evict=evict, prefix=prefix, atomic=atomic: \
                floor_kernel[(bs * nb,)](p, q, out, counter, cand, u, V, p.stride(0), p.stride(1), q.stride(0),
                                         q.stride(1), N=n, NB=nb, BLOCK=block, EVICT_FIRST=evict, PREFIX=prefix,
                                         ATOMIC=atomic, BLOCK_S=triton.next_power_of_2(n), num_warps=warps)
        chain_nt = torch.where(ri % n == n - 1, -1, ri % n + 1)  # a chain-shaped tree for the target-only sampler
        chain_ns = torch.full_like(ri, -1)
        for regs in (None, 64):
            triton_verify.CHAIN_MAXNREG = triton_verify.TARGET_ONLY_MAXNREG = regs
            tag = "" if regs is None else f"_maxnreg{regs}"
            for name, min_bs in (("specviz_chain_one", None), ("specviz_chain_split", 0)):
                triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = min_bs
                runs[name + tag] = triton_verify.chain_prepare(cand, ri, u, uf, p, q, new=True)[1]
            runs["specviz_target_only" + tag] = triton_verify.tree_sampling_prepare(
                cand, ri, chain_nt, chain_ns, u, uf, p, W=n, threshold_single=1.0, threshold_acc=1.0, new=True)[1]
        triton_verify.CHAIN_SPLIT_MIN_PROGRAMS = saved
        triton_verify.CHAIN_MAXNREG, triton_verify.TARGET_ONLY_MAXNREG = saved_regs
        if sgl is not None and p.numel() < 2**31:
            runs["sglang_chain"] = sglang_chain_launch(sgl, cand, ri, u, uf, p, q)
        for name, fn in runs.items():
            compiled = fn()
            us = [timer.graph(fn) for _ in range(3)]
            row = dict(bs=bs, V=V, kernel=name, graph_us=sorted(round(x, 2) for x in us),
                       tb_s=round(gbytes / (min(us) * 1e-6) / 1e12, 3), **kernel_facts(compiled))
            rows.append(row)
            print(json.dumps(row), flush=True)
        del p, q
        torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), rows=rows), indent=1))


if __name__ == "__main__":
    main()
