"""Load SGLang 0.5.23's own Triton kernels by file path, for the optional oracle test and the benchmarks.

Nothing of SGLang is copied into specviz: the files are read from an installed ``sglang==0.5.23``
wheel (``pip install sglang==0.5.23 --no-deps``), or from a git-ignored folder holding the two
files extracted from that wheel (``.sglang/sglang/kernels/ops/speculative/``), e.g. carried to a
GPU machine. SEMANTICS.md §12: locate without importing, stub ``sglang``, ``sglang.srt``,
``sglang.srt.platforms(.interface)`` and ``sglang.srt.utils`` so the package code never runs, then
execute the single files under private module names.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

VERSION = "0.5.23"
FILES = ("spec_tree.py", "reject_sampling.py")
EXTRACTED = Path(__file__).resolve().parents[1] / ".sglang" / "sglang"


def locate() -> tuple[Path | None, str]:
    """(package folder or None, how it was found / why not)."""
    spec = importlib.util.find_spec("sglang") if "sglang" not in sys.modules else None
    if spec is not None and spec.submodule_search_locations:
        try:
            version = importlib.metadata.version("sglang")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        if version != VERSION:
            return None, f"sglang {version} is installed; the oracle needs exactly {VERSION}"
        return Path(spec.submodule_search_locations[0]), f"installed sglang {version}"
    if all((EXTRACTED / "kernels/ops/speculative" / f).is_file() for f in FILES):
        return EXTRACTED, f"files extracted from the sglang {VERSION} wheel into {EXTRACTED.parent}"
    return None, f"sglang=={VERSION} is not installed (pip install sglang=={VERSION} --no-deps)"


def _install_stubs() -> None:
    def module(name, **attrs):
        mod = sys.modules.get(name) or types.ModuleType(name)
        for k, v in attrs.items():
            setattr(mod, k, v)
        sys.modules[name] = mod
        return mod

    no = staticmethod(lambda: False).__func__
    module("sglang", __path__=[])
    module("sglang.srt", __path__=[])
    module("sglang.srt.platforms", __path__=[], current_platform=None)
    module("sglang.srt.platforms.interface", reject_out_of_tree_path=lambda *a, **k: None)
    module("sglang.srt.utils", is_cpu=no, is_cuda=no, is_hip=no, is_musa=no, is_npu=no, is_xpu=no,
           next_power_of_2=lambda x: 1 if x <= 1 else 1 << (int(x) - 1).bit_length())


def load() -> types.SimpleNamespace:
    """SGLang's Triton tree builder, greedy verifier and chain sampler (raises ImportError when absent)."""
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
    return types.SimpleNamespace(
        source=how,
        build_tree=tree.sgl_build_tree_kernel_triton,
        build_tree_kernel=tree.sgl_build_tree_kernel_efficient_triton,
        verify_tree_greedy=tree.verify_tree_greedy_triton,
        chain_sampling=rs.chain_speculative_sampling_triton,
        TreeMaskMode=tree.TreeMaskMode,
    )
