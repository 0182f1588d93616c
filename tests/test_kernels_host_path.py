"""The host work of a Triton op's Python call (issue 36, goal 1), on the compiled-launch path with the launch
stubbed (benchmarks/host_stub_profile.py, in a subprocess: its stubs replace the kernels' launchers and must
not leak into other tests). No timing here: what a call does, counted."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]

# aten operators a call dispatches (allocations and views), at most; every op launches one kernel.
ATEN_BUDGET = {"build_tree": 4, "verify_tree_greedy": 3, "tree_sampling_target_only": 3, "chain_rejection_sampling": 3,
               "target_probs_from_logits": 1, "target_probs_top_k_top_p": 1, "dspark_accept_greedy": 2,
               "fill_bonus_tokens": 2}

# The accept ops' outputs (and the target-only record, and the samplers' written-before-read scratch) are one
# allocation, and its one pointer is the only output argument of the launch: each allocation is ~4.4 us of an
# H200 host's time, each argument costs in FastLaunch's key and Triton's launcher (issue 36, fifth stop:
# 3-4 allocations, 13 / 29 / 28 arguments before).
ONE_ALLOCATION = ("verify_tree_greedy", "tree_sampling_target_only", "chain_rejection_sampling")
LAUNCH_ARGUMENTS = {"verify_tree_greedy": 11, "tree_sampling_target_only": 26, "chain_rejection_sampling": 24}


@pytest.fixture(scope="module")
def host_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("host") / "rows.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    subprocess.run([sys.executable, str(ROOT / "benchmarks/host_stub_profile.py"), "--calls", "2", "--rounds", "1",
                    "--bs", "3", "--json", str(out)], check=True, env=env, cwd=ROOT, capture_output=True, timeout=300)
    return {row["op"]: row for row in json.loads(out.read_text())}


def test_every_op_is_measured(host_rows):
    assert set(host_rows) == set(ATEN_BUDGET)


@pytest.mark.parametrize("op", sorted(ATEN_BUDGET))
def test_a_call_runs_no_triton_python_after_its_first(host_rows, op):
    """After the first call, no Python function of Triton's package runs before the launch
    (``triton.next_power_of_2`` on every call cost more host time than the rest of a sampler's call together),
    and the launch goes to the compiled kernel's launcher directly, not through ``CompiledKernel[grid]``
    (a closure and a launch-metadata dict every launch)."""
    assert host_rows[op]["triton_python_calls"] == []
    assert [how for _, _, how in host_rows[op]["launches"]] == ["direct"]


@pytest.mark.parametrize("op", sorted(ATEN_BUDGET))
def test_a_call_allocates_little_and_launches_once(host_rows, op):
    row = host_rows[op]
    assert sum(row["aten_ops"].values()) <= ATEN_BUDGET[op], row["aten_ops"]
    assert len(row["launches"]) == 1, row["launches"]


def test_an_installed_launch_hook_takes_the_launch_through_triton():
    """A profiler's launch hook (proton adds one to triton's hook chain) must see every launch: then FastLaunch
    launches through ``CompiledKernel[grid]``, which builds the hook's metadata."""
    from kernels import triton_common
    if not triton_common._DIRECT:
        pytest.skip("this triton has no hook chains in triton.knobs (FastLaunch launches through CompiledKernel)")
    from triton import knobs
    assert triton_common._no_launch_hooks()
    hook = lambda metadata: None  # noqa: E731
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert not triton_common._no_launch_hooks()
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert triton_common._no_launch_hooks()


@pytest.mark.parametrize("op", ONE_ALLOCATION)
def test_accept_outputs_are_one_allocation_and_one_argument(host_rows, op):
    row = host_rows[op]
    assert row["aten_ops"].get("empty") == 1 and "zeros" not in row["aten_ops"], row["aten_ops"]
    assert [arity for _, arity, _ in row["launches"]] == [LAUNCH_ARGUMENTS[op]], row["launches"]


class _Param:
    def __init__(self, is_constexpr):
        self.is_constexpr = is_constexpr


class _FakeCompiled:
    def __init__(self, spec):
        self.spec, self.function, self.packed_metadata, self.launches = spec, None, None, []

    def run(self, gx, gy, gz, stream, function, packed, meta, enter, exit_, *args):
        self.launches.append(args)

    def __getitem__(self, grid):
        return lambda *args, stream=None: self.launches.append(args)


class _FakeJit:
    """A @triton.jit stand-in with parameters (ptr, ptr, n, x, FLAG: constexpr): ``fn[grid](*args)`` "compiles"
    one kernel a call (as the JIT would for a specialization FastLaunch has not seen) and launches it."""

    params = [_Param(False), _Param(False), _Param(False), _Param(False), _Param(True)]

    def __init__(self):
        self.built = []

    def __getitem__(self, grid):
        def first(*args, **options):
            ck = _FakeCompiled(args)
            ck.launches.append(args)
            self.built.append(ck)
            return ck
        return first


class _Driver:
    get_current_device = staticmethod(lambda: 0)
    get_current_stream = staticmethod(lambda device: 0)


def test_fast_launch_reuses_a_kernel_only_for_the_same_specialization(monkeypatch):
    """The compiled-launch path's key (FastLaunch.__call__): a call launches the kernel compiled for its own
    specialization (tensor dtypes and 16-byte alignment, an int's == 1 / % 16 / 64-bit, a constexpr's value,
    1 vs 1.0 vs True), and the leading tensors go to the launcher as their pointers (ints) once the fast key
    holds them. No GPU: the driver and the compiled kernel are stand-ins."""
    from kernels import triton_common
    if not triton_common._DIRECT:
        pytest.skip("this triton launches through CompiledKernel[grid]")
    monkeypatch.setattr(triton_common, "_ACTIVE", [_Driver()])
    monkeypatch.setattr(triton_common, "_FAST", True)
    fn = _FakeJit()
    fast = triton_common.FastLaunch(fn)
    fast.interpreted = False
    a, b = torch.zeros(64, dtype=torch.int64), torch.zeros(64, dtype=torch.float32)

    def kernel_of(*args):
        before = len(fn.built)
        ck = fast((1,), *args)
        return ck, len(fn.built) > before

    ck, new = kernel_of(a, b, 8, 0.5, True)
    assert new and fast.lead == 2
    again, new = kernel_of(a, b, 8, 0.5, True)
    assert again is ck and not new
    assert ck.launches[-1] == (a.data_ptr(), b.data_ptr(), 8, 0.5, True)  # pointers as ints, the rest as given
    assert kernel_of(torch.zeros(64, dtype=torch.int64), b, 24, 0.25, True)[0] is ck  # 24 % 16 != 0 like 8; any float
    for other in ((a.int(), b, 8, 0.5, True),  # dtype
                  (a[1:], b, 8, 0.5, True),  # misaligned pointer
                  (a, b, 1, 0.5, True),  # an int == 1
                  (a, b, 16, 0.5, True),  # an int % 16 == 0
                  (a, b, 2**40, 0.5, True),  # a 64-bit int
                  (a, b, 8, 0.5, False),  # a constexpr
                  (a, b, 8, 1, True),  # an int where a float was (1 == 1.0 as a dict key)
                  (a, b, True, 0.5, True)):  # a bool where an int was (True == 1)
        got, new = kernel_of(*other)
        assert got is not ck and new, other
        assert kernel_of(*other) == (got, False), other  # and reused for itself
    # A misaligned pointer (a view into one allocation) is remembered too, with which pointers are aligned in
    # its key: its calls go as pointers, and an aligned call never gets its kernel.
    misaligned, _ = kernel_of(a[1:], b, 8, 0.5, True)
    assert misaligned.launches[-1] == (a[1:].data_ptr(), b.data_ptr(), 8, 0.5, True)
    assert kernel_of(a[3:], b, 8, 0.5, True) == (misaligned, False)  # another misaligned view of a: the same
    both, new = kernel_of(a[1:], b[1:], 8, 0.5, True)
    assert both is not misaligned and new
    assert kernel_of(a, b[1:], 8, 0.5, True)[0] not in (ck, misaligned, both)
    assert kernel_of(a, b, 8, 0.5, True) == (ck, False)
