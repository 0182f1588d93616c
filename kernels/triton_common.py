"""Launcher helpers shared by the Triton backend modules (device choice, block sizes)."""
from __future__ import annotations

import os

import torch
import triton

from specviz.errors import BackendUnavailable

from .torch_common import pick_device


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def triton_device(*values) -> torch.device:
    """Where the kernels run: the inputs' CUDA device; else the CPU under the interpreter; else cuda:0."""
    first = values[0] if values else None
    if isinstance(first, torch.Tensor) and first.is_cuda:  # the common case, kept cheap
        return first.device
    dev = pick_device(*values)
    if dev.type == "cuda":
        return dev
    if interpreting():
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda")
    raise BackendUnavailable("the Triton backend needs a CUDA GPU, or TRITON_INTERPRET=1 set before triton is imported")


def pow2(x: int, minimum: int = 2) -> int:
    return max(minimum, triton.next_power_of_2(max(int(x), 1)))


def vocab_blocks(V: int) -> tuple[int, int]:
    """(BLOCK_V, NUM_VBLOCKS) for a one-pass row scan: blocks of up to 4096 tokens, a power-of-2 slot count."""
    block = min(4096, pow2(V, 16))
    return block, pow2(triton.cdiv(V, block))


def sampler_warps(V: int) -> int:
    return 4 if V <= 4096 else 8
