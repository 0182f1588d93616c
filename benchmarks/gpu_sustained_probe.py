"""Why the chain sampler reads slower when run long: its time per call and the GPU's power and clocks,
second by second (issue 21; benchmarks/README.md, "The shape chosen").

For bs 4096, V 32000 (the benchmark's inputs: ``bench_kernels.probs`` / ``gumbel_sample``), each kernel
(ours, then SGLang's, then ours again, then the read floor: the same bytes read with nothing else,
``gpu_read_floor.floor_kernel``) is replayed in a CUDA graph for ``--seconds`` while
``nvidia-smi`` samples power draw, SM and memory clocks, temperature and the active clock-event
reasons every 100 ms. Prints, per kernel, the time per call over each 0.5 s window and the samples.

    python benchmarks/gpu_sustained_probe.py [--seconds 4] [--out probe.json]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.bench_kernels import GRAPH_REPS, capture_graph, gumbel_sample, probs  # noqa: E402
from benchmarks.gpu_read_floor import floor_kernel  # noqa: E402
from kernels import triton_verify  # noqa: E402
from tests.support import sglang_oracle  # noqa: E402

QUERY = "timestamp,power.draw,clocks.sm,clocks.mem,temperature.gpu,clocks_event_reasons.active"


def replay_for(graph, reps: int, seconds: float) -> list:
    """(seconds since start, us per call) for each window of ~0.5 s of back-to-back replays."""
    out, t_start = [], time.monotonic()
    while time.monotonic() - t_start < seconds:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        n = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.5:
            graph.replay()
            n += 1
            if n % 8 == 0:
                torch.cuda.synchronize()
        end.record()
        end.synchronize()
        out.append((round(time.monotonic() - t_start, 2), round(start.elapsed_time(end) / (n * reps) * 1e3, 2)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    bs, n, V = 4096, 8, 32000
    p = probs((bs, n, V), gen, dev)
    q = torch.softmax(0.8 * p[:, : n - 1].clamp_min(1e-30).log() + 0.5 * torch.randn((bs, n - 1, V), generator=gen, device=dev), -1)
    cand = torch.cat([torch.zeros((bs, 1), dtype=torch.int64, device=dev),
                      torch.stack([gumbel_sample(q[:, j], gen) for j in range(n - 1)], 1)], 1)
    ri = torch.arange(bs * n, device=dev).reshape(bs, n)
    u = torch.rand((bs, n), generator=gen, device=dev)
    uf = torch.rand((bs,), generator=gen, device=dev)
    _, ours = triton_verify.chain_prepare(cand, ri, u, uf, p, q, new=True)
    sgl = sglang_oracle.load()
    pred = torch.zeros(bs * n, dtype=torch.int32, device=dev)
    acc = torch.full((bs, n), -1, dtype=torch.int32, device=dev)
    num = torch.empty(bs, dtype=torch.int32, device=dev)
    theirs = lambda: sgl.chain_sampling(pred, acc, num, cand, ri, None, None, u, uf, p, q, 1.0, 1.0, True)  # noqa: E731
    report = {"bs": bs, "V": V, "n": n, "device": torch.cuda.get_device_name(), "runs": []}
    nb = -(-V // 4096)
    sums, counter = torch.empty(bs * nb, device=dev), torch.zeros(bs, dtype=torch.int32, device=dev)
    floor = lambda: floor_kernel[(bs * nb,)](  # noqa: E731  the bare read of the same bytes, SGLang's block shape
        p, q, sums, counter, cand, u, V, p.stride(0), p.stride(1), q.stride(0), q.stride(1), N=n, NB=nb, BLOCK=4096,
        EVICT_FIRST=False, PREFIX=False, ATOMIC=False, BLOCK_S=8, num_warps=4)
    for name, fn in (("ours", ours), ("sglang", theirs), ("ours", ours), ("floor", floor)):
        graph, reps = capture_graph(fn), GRAPH_REPS
        time.sleep(2.0)  # idle between kernels: each starts from a rested GPU
        smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", "100"],
                               stdout=subprocess.PIPE, text=True)
        windows = replay_for(graph, reps, args.seconds)
        smi.terminate()
        samples = [line.split(", ") for line in smi.communicate()[0].splitlines() if line.strip()]
        report["runs"].append({"kernel": name, "windows_s_us": windows, "smi": samples})
        us = [w[1] for w in windows]
        watts = [float(s[1]) for s in samples if s[1].replace(".", "").isdigit()]
        sm = [int(s[2]) for s in samples if s[2].isdigit()]
        print(f"{name}: us per call by 0.5 s window {us}")
        print(f"   power W min/max {min(watts, default=0):.0f}/{max(watts, default=0):.0f}, SM MHz min/max "
              f"{min(sm, default=0)}/{max(sm, default=0)}, reasons {sorted({s[5] for s in samples if len(s) > 5})}")
        del graph
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
