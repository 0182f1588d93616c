"""Load SGLang 0.5.23's own Triton kernels by file path, for the optional oracle test and the benchmarks.

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
    if "sglang" not in sys.modules:
        spec = importlib.util.find_spec("sglang")
    elif getattr(sys.modules["sglang"], "__specviz_stub__", False):
        # Our own stand-in from an earlier load(): look on sys.path itself, past sys.modules.
        spec = importlib.machinery.PathFinder.find_spec("sglang")
    else:
        spec = None
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
    from specviz.wheels import extract  # noqa: PLC0415

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
    from .triton_common import one_launch_at_a_time  # SGLang's kernels share the interpreter too

    _LOADED = types.SimpleNamespace(
        source=how,
        build_tree=one_launch_at_a_time(tree.sgl_build_tree_kernel_triton),
        build_tree_kernel=one_launch_at_a_time(tree.sgl_build_tree_kernel_efficient_triton),
        verify_tree_greedy=one_launch_at_a_time(tree.verify_tree_greedy_triton),
        chain_sampling=one_launch_at_a_time(rs.chain_speculative_sampling_triton),
        TreeMaskMode=tree.TreeMaskMode,
    )
    return _LOADED


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


def as_rejected_slot(args: dict) -> dict:
    """A one-slot chain case (no draft, the bonus drawn from p) as SGLang's two-slot kernel draws the same
    token: one draft slot whose q row is all zero is rejected (0.5.23 rejects a proposal with q = 0), and the
    terminal row relu(1.0 * p - 0) is p itself, the same float32 values in the same blocks. For stacks where
    SGLang's one-slot kernel does not compile (Triton 3.6: see ``one_slot_compile_error``)."""
    import numpy as np  # noqa: PLC0415

    cand = np.asarray(args["candidates"])
    bs, N = cand.shape
    assert N == 1, "a one-slot case"
    p = np.asarray(args["target_probs"], np.float32)
    V = p.shape[-1]
    return dict(args, candidates=np.zeros((bs, 2), np.int64), retrieve_index=np.arange(2 * bs, dtype=np.int64).reshape(bs, 2),
                uniform_samples=np.full((bs, 2), 0.5, np.float32), target_probs=np.concatenate([p, p], axis=1),
                draft_probs=np.zeros((bs, 1, V), np.float32), num_speculative_tokens=2)


def is_compile_error(exc: BaseException) -> bool:
    """True for Triton's compiler refusing a kernel (not for a wrong answer or a runtime fault): a
    front-end CompilationError, or the MLIR pass pipeline failing (Triton 3.6 on SGLang's one-slot chain
    kernel: RuntimeError "PassManager::run failed")."""
    try:
        from triton.compiler.errors import CompilationError  # noqa: PLC0415
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, CompilationError) or (isinstance(exc, RuntimeError) and "PassManager::run failed" in str(exc))


def chain_bits(sgl: types.SimpleNamespace, *, V: int, bs: int, N: int, seed: int, device="cuda") -> dict:
    """SGLang's chain kernel and specviz's Triton chain sampler on the same random batch, compiled on a GPU:
    counts of requests whose predicts / accept_index / accept_token_num agree bit for bit.

    Rows: target ``softmax(3 * randn)``, draft ``softmax(0.8 log p + 0.5 randn)``, candidates drawn from the
    draft (so k covers 0..N-1, all-accepted rows included). Half the final coins are uniform, half are
    boundary coins: thr = coin * total lands within 3 float32 ulps of a random token's running sum of the
    request's terminal row (relu(p_k - q_k), or p_k when all drafts are accepted), where two summation
    orders disagree."""
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    from . import triton_verify  # noqa: PLC0415

    g = torch.Generator(device=device).manual_seed(seed)
    f32 = torch.float32
    p = torch.softmax(3 * torch.randn(bs, N, V, generator=g, device=device), dim=-1)
    q = torch.softmax(0.8 * torch.log(p[:, : N - 1].clamp_min(1e-30)) + 0.5 * torch.randn(bs, N - 1, V, generator=g,
                      device=device), dim=-1)
    cand = torch.zeros(bs, N, dtype=torch.int64, device=device)
    cand[:, 1:] = torch.multinomial(q.reshape(-1, V), 1, generator=g).reshape(bs, N - 1)
    ri = torch.arange(bs * N, dtype=torch.int64, device=device).reshape(bs, N)
    u = torch.rand(bs, N, generator=g, device=device, dtype=f32)

    def run_sglang(uf):
        pr = torch.zeros(bs * N, dtype=torch.int32, device=device)
        ai = torch.full((bs, N), -1, dtype=torch.int32, device=device)
        an = torch.empty(bs, dtype=torch.int32, device=device)
        sgl.chain_sampling(pr, ai, an, cand, ri, None, None, u, uf, p, q, 1.0, 1.0, True)
        return pr, ai, an

    def run_ours(uf):
        return triton_verify.chain_launch(cand, ri, u, uf, p, q, new=True)

    uf = torch.rand(bs, generator=g, device=device, dtype=f32)
    k = run_sglang(uf)[2].long()
    rows = torch.arange(bs, device=device)
    pk = p[rows, k]
    dist = torch.where((k < N - 1)[:, None], torch.clamp(pk - q[rows, k.clamp_max(N - 2)], min=0), pk)
    cs = torch.cumsum(dist.double(), dim=1)
    tok = torch.randint(V // 8, V - V // 8, (bs,), generator=g, device=device)
    edge = (cs[rows, tok] / cs[:, -1]).float().cpu().numpy()
    steps = np.random.default_rng(seed).integers(-3, 4, size=bs)
    for i in range(bs):
        for _ in range(abs(int(steps[i]))):
            edge[i] = np.nextafter(edge[i], np.float32(0) if steps[i] < 0 else np.float32(1))
    boundary = torch.as_tensor(np.minimum(edge, np.float32(1 - 2 ** -24)), device=device)
    uf = torch.where(rows % 2 == 0, boundary, uf)
    want, got = run_sglang(uf), run_ours(uf)
    same = torch.ones(bs, dtype=torch.bool, device=device)
    for a, b in zip(want, got):
        same &= (a.reshape(bs, -1) == b.reshape(bs, -1)).all(dim=1)
    return dict(V=V, bs=bs, N=N, seed=seed, rows=bs, same=int(same.sum()), boundary_rows=int((rows % 2 == 0).sum()),
                same_boundary=int(same[rows % 2 == 0].sum()), accepted_hist=torch.bincount(k, minlength=N).tolist())
