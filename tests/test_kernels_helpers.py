"""Helpers shared by the kernel differential tests (not a conftest: plain imports).

Backends under test: torch and Triton (the interpreter on a CPU machine, the GPU when CUDA is
present and TRITON_INTERPRET is not 1). Inputs go to the backends as torch tensors on DEVICE; the
numpy reference gets numpy arrays. Integers must match exactly; floats within FLOAT_ATOL /
FLOAT_RTOL (float32 sums in a different order: a few ulp).
"""
from __future__ import annotations

import os

import numpy as np
import torch

from specviz.algorithms.backends import get_backend

FLOAT_ATOL = 2e-6
FLOAT_RTOL = 2e-5
KERNEL_BACKENDS = ("torch", "triton")
DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
REF = get_backend("numpy")


def on_device(x):
    """numpy / nested lists -> a torch tensor on DEVICE (scalars and None pass through)."""
    if x is None or isinstance(x, (int, float, str, bool)):
        return x
    if isinstance(x, torch.Tensor):
        return x.to(DEVICE)
    return torch.from_numpy(np.ascontiguousarray(np.asarray(x))).to(DEVICE)


def assert_same(expected, actual, where=""):
    """Recursive comparison of results (dataclasses, tuples, tensors): dtype, shape, values."""
    if hasattr(expected, "as_dict"):
        for name, value in expected.as_dict().items():
            assert_same(value, getattr(actual, name), f"{where}.{name}")
        return
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(expected) == len(actual), where
        for j, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{where}[{j}]")
        return
    e = torch.as_tensor(expected)
    a = actual.detach().cpu() if isinstance(actual, torch.Tensor) else torch.as_tensor(actual)
    assert e.dtype == a.dtype, f"{where}: dtype {a.dtype}, expected {e.dtype}"
    assert e.shape == a.shape, f"{where}: shape {tuple(a.shape)}, expected {tuple(e.shape)}"
    if e.dtype.is_floating_point:
        assert torch.allclose(e, a, atol=FLOAT_ATOL, rtol=FLOAT_RTOL), f"{where}: max diff {(e - a).abs().max()}"
    else:
        bad = (e.to(torch.int64) != a.to(torch.int64)).nonzero()
        assert bad.numel() == 0, f"{where}: first mismatch at {bad[0].tolist()}: {a.reshape(-1)[:64]} vs {e.reshape(-1)[:64]}"


def run_all(fn_name, *args, **kwargs):
    """(reference result, {backend: result}) with the backends given DEVICE tensors."""
    expected = getattr(REF, fn_name)(*args, **kwargs)
    dev_args = [on_device(a) for a in args]
    dev_kwargs = {k: (on_device(v) if not isinstance(v, (int, float, str, bool)) else v) for k, v in kwargs.items()}
    return expected, {name: getattr(get_backend(name), fn_name)(*dev_args, **dev_kwargs) for name in KERNEL_BACKENDS}


def check_all(fn_name, *args, **kwargs):
    expected, results = run_all(fn_name, *args, **kwargs)
    for name, res in results.items():
        assert_same(expected, res, f"{name}.{fn_name}")
    return expected
