"""SGLang 0.5.23 oracle helpers for the tests and benchmarks (issue 34 moved them out of ``kernels/``).

The loader itself (``locate``, ``load``: SGLang's own Triton files read by path, nothing copied) is product
code, used by the engines page, and lives in ``specviz.rooms.engines.sglang_engine``; ``locate``/``load`` here call it, so
``sglang_oracle.load()`` reads as before. What follows only compares SGLang's kernel with specviz's.
"""
from __future__ import annotations

import types


def locate():
    """``specviz.rooms.engines.sglang_engine.locate`` (imported on call: this file also loads by path, see
    benchmarks/bench_fidelity.py, where specviz may come from an older checkout)."""
    from specviz.rooms.engines import sglang_engine  # noqa: PLC0415
    return sglang_engine.locate()


def load() -> types.SimpleNamespace:
    """``specviz.rooms.engines.sglang_engine.load``: SGLang's own kernels, loaded by path."""
    from specviz.rooms.engines import sglang_engine  # noqa: PLC0415
    return sglang_engine.load()


def chain_draw(sgl: types.SimpleNamespace, args: dict, device) -> "np.ndarray":
    """SGLang's chain kernel on a fidelity case (``tests.support.fidelity_cases``, no draft accepted): the
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

    from kernels import triton_verify  # noqa: PLC0415

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
