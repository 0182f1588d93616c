"""The backend registry: numpy (the reference), torch and Triton, with one set of function names.

    from specviz.algorithms.backends import available_backends, get_backend
    available_backends()   # {"numpy": None, "torch": None, "triton": "no CUDA GPU; ..."}  None = usable
    ops = get_backend("torch")
    ops.verify_tree_greedy(candidates, ..., num_speculative_tokens=3)

Every backend returns torch tensors (API.md). The numpy backend converts at its boundary.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from dataclasses import fields, is_dataclass, replace
from types import SimpleNamespace

import numpy as np

from specviz import reference
from specviz.base.errors import BackendUnavailable

BACKENDS = ("numpy", "torch", "triton")
API_FUNCTIONS = reference.API_FUNCTIONS


def _torch():
    import torch  # noqa: PLC0415  (kept lazy: the model layer never needs torch)

    return torch


def to_torch(value):
    """numpy arrays (and tuples / result dataclasses of them) -> torch tensors: the one conversion.
    torch is imported only when there is an array to convert (the numpy backend's Monte Carlo
    counts stay numpy, so a page running it never waits seconds for torch)."""
    if isinstance(value, np.ndarray):
        return _torch().from_numpy(np.ascontiguousarray(value))
    if isinstance(value, tuple):
        return tuple(to_torch(v) for v in value)
    if is_dataclass(value) and type(value).__name__ != "SampleCounts":
        return replace(value, **{f.name: to_torch(getattr(value, f.name)) for f in fields(value)})
    return value


def _numpy_backend() -> SimpleNamespace:
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            return to_torch(fn(*args, **kwargs))

        return call

    return SimpleNamespace(name="numpy", label="numpy (reference)",
                           **{name: wrap(getattr(reference, name)) for name in API_FUNCTIONS})


def triton_mode() -> str | None:
    """'gpu', 'interpreter', or None when Triton cannot run here."""
    if os.environ.get("TRITON_INTERPRET") == "1":  # decided without importing torch (seconds): a label needs no GPU probe
        return "interpreter" if importlib.util.find_spec("torch") is not None else None
    try:
        torch = _torch()
    except ImportError:
        return None
    if torch.cuda.is_available():
        return "gpu"
    return None


def cdf_order(name: str) -> str:
    """The float32 order of operations a backend's inverse-CDF draws follow (``specviz.reference.cdf``):
    "gpu" for the Triton kernels compiled for a GPU, else "interpreter" (numpy, torch, Triton under
    TRITON_INTERPRET=1, SGLang's Triton kernels under the interpreter). Use it to ask the reference
    for the tokens a backend must draw: ``with cdf.summation_order(cdf_order(name)): ...``."""
    return "gpu" if name == "triton" and triton_mode() == "gpu" else "interpreter"


def _reason(name: str) -> str | None:
    if name == "numpy":
        return None
    try:
        _torch()
    except ImportError as exc:
        return f"torch could not be imported ({exc}): pip install -r requirements.txt"
    if name == "torch":
        try:
            importlib.import_module("kernels.torch_backend")
        except ImportError as exc:
            return f"the torch backend failed to import ({exc})"
        return None
    if triton_mode() is None:
        return ("no CUDA GPU, and TRITON_INTERPRET=1 was not set before triton was imported; "
                "start with TRITON_INTERPRET=1 to run the kernels under the Triton interpreter, or use numpy / torch")
    try:
        importlib.import_module("kernels.triton_backend")
    except ImportError as exc:
        return f"the Triton backend failed to import ({exc})"
    return None


def available_backends() -> dict[str, str | None]:
    """Backend name -> None when usable here, else the reason it is not."""
    return {name: _reason(name) for name in BACKENDS}


@functools.lru_cache(maxsize=None)
def get_backend(name: str) -> SimpleNamespace:
    """The backend's functions (API.md). Raises BackendUnavailable naming the reason and the alternatives."""
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    reason = _reason(name)
    if reason is not None:
        others = [b for b, r in available_backends().items() if r is None and b != name]
        raise BackendUnavailable(f"backend {name!r} is unavailable: {reason}. Available: {', '.join(others)}")
    if name == "numpy":
        return _numpy_backend()
    module = importlib.import_module(f"kernels.{name}_backend")
    return module.backend()


def backend_label(name: str) -> str:
    """How the app names a backend: the Triton one says whether it runs on a GPU or the interpreter."""
    if name == "triton":
        mode = triton_mode()
        return "triton (GPU)" if mode == "gpu" else "triton (CPU interpreter)"
    return {"numpy": "numpy (reference)", "torch": "torch"}.get(name, name)
