"""Load SGLang 0.5.23's own Triton kernels by file path, for the engines page, the optional oracle test and the
benchmarks (the comparison helpers that only tests and benchmarks use are in ``tests/support/sglang_oracle.py``).

Nothing of SGLang is copied into specviz: the files are read from an installed ``sglang==0.5.23``
wheel (``pip install sglang==0.5.23 --no-deps``), from the wheel downloaded into ``.wheels/`` (``pip download
--no-deps -d .wheels sglang==0.5.23``, what the test command does), or from a git-ignored folder holding the two
files extracted from that wheel (``.sglang/sglang/kernels/ops/speculative/``), e.g. carried to a
GPU machine. SEMANTICS.md §12: locate without importing, stub ``sglang``, ``sglang.srt``,
``sglang.srt.platforms(.interface)`` and ``sglang.srt.utils`` so the package code never runs, then
execute the single files under private module names.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path

from specviz.base.wheels import installed_version

VERSION = "0.5.23"
FILES = ("spec_tree.py", "reject_sampling.py")
EXTRACTED = Path(__file__).resolve().parents[3] / ".sglang" / "sglang"  # the repository root


def locate() -> tuple[Path | None, str]:
    """(package folder or None, how it was found / why not)."""
    if "sglang" not in sys.modules:
        spec = importlib.util.find_spec("sglang")
    elif getattr(sys.modules["sglang"], "__specviz_stub__", False):
        # Our own stand-in from an earlier load(): look on sys.path itself, past sys.modules.
        spec = importlib.machinery.PathFinder.find_spec("sglang")
    else:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        version = installed_version("sglang")
        if version != VERSION:
            return None, f"sglang {version} is installed; the oracle needs exactly {VERSION}"
        return Path(spec.submodule_search_locations[0]), f"installed sglang {version}"
    if all((EXTRACTED / "kernels/ops/speculative" / f).is_file() for f in FILES):
        return EXTRACTED, f"files extracted from the sglang {VERSION} wheel into {EXTRACTED.parent}"
    from specviz.base.wheels import extract  # noqa: PLC0415

    root, how = extract("sglang", VERSION, tuple(f"sglang/kernels/ops/speculative/{f}" for f in FILES))
    if root is not None:
        return root / "sglang", f"{FILES[0]} and {FILES[1]} from the {how}"
    return None, f"sglang=={VERSION} is not installed (pip install sglang=={VERSION} --no-deps), and {how}"


def _install_stubs() -> None:
    def module(name, **attrs):
        mod = sys.modules.get(name) or types.ModuleType(name)
        for k, v in attrs.items():
            setattr(mod, k, v)
        sys.modules[name] = mod
        return mod

    no = staticmethod(lambda: False).__func__
    module("sglang", __path__=[], __specviz_stub__=True)
    module("sglang.srt", __path__=[])
    module("sglang.srt.platforms", __path__=[], current_platform=None)
    module("sglang.srt.platforms.interface", reject_out_of_tree_path=lambda *a, **k: None)
    module("sglang.srt.utils", is_cpu=no, is_cuda=no, is_hip=no, is_musa=no, is_npu=no, is_xpu=no,
           next_power_of_2=lambda x: 1 if x <= 1 else 1 << (int(x) - 1).bit_length())


_LOADED: types.SimpleNamespace | None = None


def load() -> types.SimpleNamespace:
    """SGLang's Triton tree builder, greedy verifier and chain sampler (raises ImportError when absent).
    Loaded once per process: the engines page and the oracle tests share it."""
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    root, how = locate()
    if root is None:
        raise ImportError(how)
    _install_stubs()
    mods = {}
    for fname in FILES:
        path = root / "kernels/ops/speculative" / fname
        spec = importlib.util.spec_from_file_location(f"_specviz_sglang_{fname[:-3]}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # triton resolves globals through the module
        spec.loader.exec_module(mod)
        mods[fname[:-3]] = mod
    tree, rs = mods["spec_tree"], mods["reject_sampling"]
    from kernels.triton_common import one_launch_at_a_time  # SGLang's kernels share the interpreter too

    _LOADED = types.SimpleNamespace(
        source=how,
        build_tree=one_launch_at_a_time(tree.sgl_build_tree_kernel_triton),
        build_tree_kernel=one_launch_at_a_time(tree.sgl_build_tree_kernel_efficient_triton),
        verify_tree_greedy=one_launch_at_a_time(tree.verify_tree_greedy_triton),
        chain_sampling=one_launch_at_a_time(rs.chain_speculative_sampling_triton),
        TreeMaskMode=tree.TreeMaskMode,
    )
    return _LOADED
