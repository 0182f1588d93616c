"""Launcher helpers shared by the Triton backend modules (device choice, block sizes)."""
from __future__ import annotations

import functools
import math
import os
import threading

import torch
import triton

from specviz.errors import BackendUnavailable

from .torch_common import pick_device


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


# The Triton interpreter is not thread-safe: while a kernel runs it swaps triton.language's functions for
# its own, process-wide, so a second launch on another thread (another student's session on the same
# server) can meet a half-swapped module and fail with "Did you forget to add @triton.jit ?". Under the
# interpreter every launch through a backend holds this lock (re-entrant: eagle_sample calls the others).
INTERPRETER_LOCK = threading.RLock()


def _locked(fn, *args, **kwargs):
    """fn(*args, **kwargs), holding INTERPRETER_LOCK under the interpreter."""
    if not interpreting():
        return fn(*args, **kwargs)
    with INTERPRETER_LOCK:
        return fn(*args, **kwargs)


def one_launch_at_a_time(fn):
    """``fn`` holding INTERPRETER_LOCK while TRITON_INTERPRET=1 (compiled kernels run unlocked). A
    kernel (``fn[grid](...)``) stays subscriptable: its launchers are locked the same way."""
    if hasattr(type(fn), "__getitem__"):
        return _LockedKernel(fn)
    return functools.wraps(fn)(functools.partial(_locked, fn))


class _LockedKernel:
    """A @triton.jit kernel whose launches ``kernel[grid](...)`` and calls hold INTERPRETER_LOCK."""

    def __init__(self, kernel):
        self.kernel = kernel
        functools.update_wrapper(self, kernel, updated=())

    def __getitem__(self, grid):
        return one_launch_at_a_time(self.kernel[grid])

    def __call__(self, *args, **kwargs):
        return _locked(self.kernel, *args, **kwargs)


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


def chain_cdf_block(V: int) -> int:
    """SGLang's chain kernel scans the vocabulary in blocks of 4096 for every V (BLOCK_V = 4096); the
    block length fixes tl.sum's reduction tree, so a smaller block for a small V would round differently."""
    return 4096


def target_only_chunk(V: int) -> int:
    """The target-only kernel's chunk: 1024 threads x gcd(4, V) floats (FlashInfer's VEC_SIZE)."""
    return 1024 * math.gcd(4, int(V))


def sampler_warps(V: int) -> int:
    """Warps of the sampling kernels: 4, as SGLang launches its chain kernel (the warp count shapes
    a GPU's reduction tree, so matching it keeps the GPU's last bits equal to SGLang's)."""
    return 4
