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


def chain_draw(sgl: types.SimpleNamespace, args: dict, device) -> "np.ndarray":
    """SGLang's chain kernel on a fidelity case (``kernels.fidelity_cases``, no draft accepted): the
    terminal token per request, int64 [bs]. ``device``: where the tensors go ("cuda" runs it compiled)."""
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    def t(x, dtype=torch.int64):
        return torch.as_tensor(np.asarray(x), dtype=dtype, device=device)

    cand = np.asarray(args["candidates"])
    bs, N = cand.shape
    predicts = torch.zeros(bs * N, dtype=torch.int32, device=device)
    accept_index = torch.full((bs, N), -1, dtype=torch.int32, device=device)
    accept_num = torch.empty(bs, dtype=torch.int32, device=device)
    f32 = torch.float32
    sgl.chain_sampling(predicts, accept_index, accept_num, t(cand), t(args["retrieve_index"]), None, None,
                       t(args["uniform_samples"], f32), t(args["uniform_samples_for_final_sampling"], f32),
                       t(args["target_probs"], f32), t(args["draft_probs"], f32), 1.0, 1.0, True)
    assert not accept_num.any(), "the case was built so that no draft is accepted"
    return predicts.cpu().numpy().reshape(bs, N)[:, 0].astype(np.int64)
