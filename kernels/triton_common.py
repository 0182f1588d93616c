"""Launcher helpers shared by the Triton backend modules (device choice, block sizes)."""
from __future__ import annotations

import functools
import math
import operator
import os
import threading
from functools import reduce as _reduce
from operator import or_ as _or

import torch
import triton

from specviz.base.errors import BackendUnavailable

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


_NEW = object.__new__


def filled(cls, fields: dict):
    """``cls(**fields)`` for a frozen dataclass of ``specviz.base.results`` (every field given, no __post_init__):
    the fields go straight into the new instance's __dict__, without the generated __init__'s
    ``object.__setattr__`` a field (TreeBuild's five: 0.84 -> 0.32 us on the CPU machine, more on an H200's
    host). Equal, printed, hashed and pickled as the one __init__ builds (tests/test_kernels_calls.py)."""
    obj = _NEW(cls)
    obj.__dict__.update(fields)
    return obj


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
    """The smallest power of 2 >= x, at least ``minimum``. Plain Python: ``triton.next_power_of_2`` is a
    wrapped callable (constexpr handling, an environment lookup) that cost more host time than the rest
    of a sampler's call together (benchmarks/host_stub_profile.py)."""
    return max(minimum, 1 << (max(int(x), 1) - 1).bit_length())


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


# ---------------------------------------------------------------------------------------------
# Launch without the JIT's per-call dispatch
# ---------------------------------------------------------------------------------------------
# ``kernel[grid](*args)`` binds the arguments, computes the specialization key, checks globals and
# builds launch metadata on every call. ``FastLaunch`` skips those steps. Measured on an H200 (triton 3.6,
# host time a call, benchmarks/gpu_host_profile.py -> results_h200_host_profile.json, 2026-12-03): an empty
# one-argument kernel 15.1 us direct vs 15.5 through the JIT (the launch itself is the cost; 18.9 vs 18.5
# on another machine start), 20 arguments 27.9 vs 29.9 us; of 28 real calls (bs 1 / 64) 26 took less
# (median 2.9 us; greedy verify bs 1: 36.8 vs 52.1 us), chain bs 64 2.8 us more, one equal. Not the ~14 us
# on the empty kernel that commit b6ce07d's message claimed.
# It goes through the JIT once per specialization (that call compiles if
# need be and returns the CompiledKernel), then launches the compiled kernel directly
# (``CompiledKernel[grid](*args)``, Triton's own launcher for a compiled kernel). The specialization
# key is computed here the way Triton specializes arguments (dtype and 16-byte alignment of a tensor,
# int == 1 / % 16 == 0 / 64-bit, constexpr values, launch options), so a call that Triton would compile
# differently never reuses a kernel built for other arguments; the compiled kernel's launcher calls
# Triton's launch hooks (profilers) as the JIT would. Under the interpreter, or with
# SPECVIZ_FAST_LAUNCH=0, every launch goes through the JIT.
# It uses Triton's compiled-kernel objects below the JIT's public ``kernel[grid](...)``, working around the
# per-launch dispatch cost that upstream tracks in triton-lang/triton#10140 (an RFC for frozen launch handles)
# and, for the hook metadata built on every launch with no hook installed, triton-lang/triton#11881. Drop it
# (set _FAST to False, then delete) once the JIT's own launch is as cheap; tests/test_kernels_host_path.py
# checks the shape it relies on (no Triton Python after a call's first; a launch hook still sees launches).
_FAST = os.environ.get("SPECVIZ_FAST_LAUNCH", "1") != "0"
_Tensor = torch.Tensor


def _spec(a):
    if isinstance(a, torch.Tensor):
        return a.dtype, a.data_ptr() & 15 == 0
    t = type(a)
    if t is int:
        return a == 1, a & 15 == 0, not -0x80000000 <= a <= 0x7FFFFFFF
    if t is float:
        return float
    return a  # constexpr values (bool, None, str, ...) are part of the kernel


_ACTIVE = []  # triton's active driver, looked up once (an import and a lookup a launch otherwise)


def _driver():
    if not _ACTIVE:
        from triton.runtime import driver
        _ACTIVE.append(driver.active)
    return _ACTIVE[0]


def current_device_getter(driver):
    """What a launch calls for the current device: the driver's ``get_current_device``, except where that is
    ``torch.cuda.current_device`` (triton's GPU driver with torch): then torch's C getter behind it, which
    initializes CUDA itself if need be (``device_lazy_init``) and returns the same index, without the Python
    ``_lazy_init`` checks that ``current_device`` runs first on every launch. ``torch._C._cuda_getDevice`` is
    torch's private binding (the one ``current_device`` itself returns through): where a torch lacks it, the
    public function is used. To drop this: return ``driver.get_current_device`` when torch's own call gets cheap,
    or whenever ``benchmarks/host_stub_profile.py`` on a GPU host shows no difference."""
    fn = driver.get_current_device
    if fn is getattr(torch.cuda, "current_device", None) and hasattr(torch._C, "_cuda_getDevice"):
        return torch._C._cuda_getDevice
    return fn


def _constexpr_flags(fn) -> tuple:
    """Which of a @triton.jit function's parameters are constexprs (a JITFunction lists its params; the
    interpreter's function is read from the annotations, as the JIT reads them)."""
    if hasattr(fn, "params"):
        return tuple(p.is_constexpr for p in fn.params)
    import inspect

    import triton.language as tl
    sig = inspect.signature(fn.fn)
    return tuple(p.annotation is tl.constexpr or p.annotation in ("tl.constexpr", "constexpr")
                 for p in sig.parameters.values())


def _no_launch_hooks() -> bool:
    """Whether no launch hook (a profiler such as proton) is installed: triton's hook chains are empty."""
    rt = _KNOBS[0].runtime if _KNOBS else None
    for hook in (rt.launch_enter_hook, rt.launch_exit_hook) if rt is not None else (0,):
        if hook is not None and (type(hook).__name__ != "HookChain" or hook.calls):
            return False
    return True


try:  # triton's knobs (3.4+): where the launch hooks live; older releases launch through CompiledKernel[grid]
    from triton import knobs as _knobs_module
    _KNOBS = [_knobs_module] if hasattr(_knobs_module.runtime, "launch_enter_hook") else []
except ImportError:  # pragma: no cover
    _KNOBS = []
_DIRECT = bool(_KNOBS)


_FAST_KEYS_MAX = 256
_DATA_PTR = torch.Tensor.data_ptr  # map(_DATA_PTR, tensors): the pointers in one C loop
_DTYPE = operator.attrgetter("dtype")


class FastLaunch:
    """``FastLaunch(jit_fn)(grid, *args, **options)`` == ``jit_fn[grid](*args, **options)``, minus the JIT's
    per-call dispatch after the first call with the same specialization. ``args`` are every parameter
    of the kernel in order, constexprs included (positionally); ``options``: num_warps, maxnreg, ..."""

    def __init__(self, fn):
        self.fn = fn
        self.compiled = {}
        self.constexpr = None  # which parameters are constexprs (keyed by value), read on first use
        self.interpreted = None  # TRITON_INTERPRET=1, read on first use (an environment lookup a call otherwise)
        self.device_of = None  # (driver, its current-device getter): current_device_getter, once a driver
        self.lead = None  # how many leading parameters took a tensor (not a constexpr) on the first call
        # (device, the leading tensors' dtypes, the other arguments as given, options) -> (their types, kernel):
        # the compiled kernel of a call whose leading tensors are all 16-byte aligned (_remember)
        self.fast = {}

    def _key(self, args):
        if self.constexpr is None:
            self.constexpr = _constexpr_flags(self.fn)
        assert len(args) == len(self.constexpr), "FastLaunch takes every kernel parameter, positionally"
        if self.lead is None:
            self.lead = next((i for i, (a, c) in enumerate(zip(args, self.constexpr)) if c or type(a) is not _Tensor),
                             len(args))
        # A plain tensor's and an int's spec inline (a list comprehension, no function call an argument):
        # ~30% less host time a key than a call to _spec each. Same values as _spec.
        return tuple([a if c else (a.dtype, a.data_ptr() & 15 == 0) if type(a) is _Tensor
                      else (a == 1, a & 15 == 0, not -0x80000000 <= a <= 0x7FFFFFFF) if type(a) is int else _spec(a)
                      for a, c in zip(args, self.constexpr)])

    def __call__(self, grid, *args, **options):
        if self.interpreted is None:
            self.interpreted = interpreting()
        if not _FAST or self.interpreted:
            return self.fn[grid](*args, **options)
        driver = _ACTIVE[0] if _ACTIVE else _driver()  # looked up once a call, not twice
        if self.device_of is None or self.device_of[0] is not driver:
            self.device_of = (driver, current_device_getter(driver))
        device = self.device_of[1]()
        constexpr = self.constexpr
        if constexpr is None:
            return self._first(grid, device, args, options)
        if len(args) != len(constexpr):
            raise TypeError("FastLaunch takes every kernel parameter, positionally")
        # The key of a call: the leading tensors' pointers (read once: the launch takes them, below), their dtypes,
        # the other arguments as they are and, only when a pointer is not 16-byte aligned (a view into one
        # allocation, e.g. the target-only record), which ones are: one dict lookup. The types of the other
        # arguments are compared on a hit (1, 1.0 and True are one dict key, three Triton specializations).
        # A miss: _key's full spec, and the kernel remembered under this key.
        lead = self.lead
        head, tail = args[:lead], args[lead:]
        opts = tuple(options.items())
        try:
            ptrs = tuple(map(_DATA_PTR, head))
            fast_key = (device, tuple(map(_DTYPE, head)), tail, opts)
            if _reduce(_or, ptrs, 0) & 15:
                fast_key += (tuple([p & 15 == 0 for p in ptrs]),)
            hit = self.fast.get(fast_key)
        except TypeError:  # not a tensor where the first call had one; an unhashable argument
            hit = None
        if hit is None or hit[0] != tuple(map(type, tail)):
            key = (device, self._key(args), opts)
            ck = self.compiled.get(key)
            if ck is None:
                return self._first(grid, device, args, options, key)
            self._remember(device, args, opts, ck)
            ptrs = head  # the launcher reads each tensor's pointer itself
        else:
            ck = hit[1]
        g = (grid[0], 1, 1) if len(grid) == 1 else (grid[0], grid[1], grid[2] if len(grid) > 2 else 1)
        stream = driver.get_current_stream(device)
        if _DIRECT and _no_launch_hooks():
            # What CompiledKernel[grid](*args, stream=stream) runs (triton 3.4-3.8, compiler.py), minus the
            # closure it builds and the launch metadata it builds for the hooks (a LazyDict every launch:
            # the hook chains are never None since triton 3.5, so its "no hook" early return never fires).
            # The leading tensors go as their pointers (ints): Triton's C launcher takes an int pointer as it
            # is, where for a tensor it calls data_ptr() and then cuPointerGetAttribute (a driver call each
            # tensor: the check that it is device memory, which triton_device and as_tensor already made).
            ck.run(*g, stream, ck.function, ck.packed_metadata, None, None, None, *ptrs, *tail)
        else:
            ck[g](*args, stream=stream)  # a launch hook (a profiler) sees the tensors
        return ck

    def _remember(self, device, args, opts, ck):
        """Keep ``ck`` under the fast key of ``args`` (see __call__) when nothing after the leading tensors is a
        tensor (a tensor's alignment may change with the same object). At most _FAST_KEYS_MAX keys a kernel:
        float arguments that change every call would grow it."""
        lead = self.lead
        head, tail = args[:lead], args[lead:]
        if any(isinstance(a, torch.Tensor) for a in tail) or not all(type(a) is _Tensor for a in head):
            return
        key = (device, tuple(a.dtype for a in head), tail, opts)
        ptrs = [a.data_ptr() for a in head]
        if _reduce(_or, ptrs, 0) & 15:  # which pointers are aligned: part of the kernel's specialization
            key += (tuple([p & 15 == 0 for p in ptrs]),)
        try:
            hash(key)
        except TypeError:
            return
        if len(self.fast) >= _FAST_KEYS_MAX:
            self.fast.clear()
        self.fast[key] = (tuple(map(type, tail)), ck)

    def _first(self, grid, device, args, options, key=None):
        """The first launch of a specialization: through the JIT (compiles if need be), its kernel kept."""
        key = key or (device, self._key(args), tuple(options.items()))
        ck = self.compiled.get(key)
        if ck is not None:  # the constexpr flags were read just now, and this specialization was seen before
            return self(grid, *args, **options)
        ck = self.fn[grid](*args, **options)  # compiles if need be, launches
        self.compiled[key] = ck
        self._remember(device, args, key[2], ck)
        return ck

    def __getitem__(self, grid):
        return functools.partial(self, grid)


class DeviceCache:
    """Zeroed int32 scratch a kernel leaves zero after each launch (counters), one per (device, stream),
    grown when a call needs more and reused otherwise: no allocation or fill per call. Calls on one
    stream run in order, so they may share it; another stream gets its own."""

    def __init__(self):
        self.buffers = {}

    def get(self, numel: int, device) -> torch.Tensor:
        if device.type == "cuda":
            index = device.index if device.index is not None else torch.cuda.current_device()
            stream = _driver().get_current_stream(index)
        else:
            stream = 0
        key = (device, stream)
        buf = self.buffers.get(key)
        if buf is None or buf.numel() < numel:
            buf = torch.zeros(max(numel, 2 * (0 if buf is None else buf.numel())), dtype=torch.int32, device=device)
            self.buffers[key] = buf
        return buf
