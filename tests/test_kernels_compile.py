"""Every @triton.jit kernel compiles for a real GPU (sm_90), not only under the interpreter.

The interpreter accepts code that the compiler rejects (``break``, mismatched branch types, ...).
``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`` runs the whole compiler
down to a cubin without a GPU, so it runs on this CPU machine. It must run in a subprocess with
TRITON_INTERPRET unset: the root conftest switches the interpreter on for this process.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

I64, I32, F32 = "*i64", "*i32", "*fp32"

# Which constexpr combinations compile. A cold compile of one variant costs 1-4 s of CPU (LLVM, then ptxas), and
# the full products of the three kernels below were 68 of 93 variants (~230 s of a cold CI run, on one
# worker). Their constexprs are independent branches, so each list is pairwise-covering instead: every value
# of every constexpr, and every pair of values of any two, is compiled at least once (a failure that needs
# one branch, or two branches meeting, is still found); the single-value and small kernels keep every variant.
_TARGET_ONLY_SHAPES = ((128256, 4096, 32), (50257, 1024, 50), (1000, 4096, 1))  # (V, CHUNK, NC)
_TARGET_ONLY_SPLIT_VARIANTS = (
    # NEW_SEMANTICS=True: 9 rows hold every (shape, walk), (shape, n) and (n, walk) pair of the 18-row product;
    # BPP (chunks a draw program, the launcher's rule) is 2 with walk 2, else 1; GDC (the griddepcontrol
    # instructions, the launcher's rule on sm_90+) with walk 1 and 2
    *((True, _TARGET_ONLY_SHAPES[v], n, walk) for v, walk, n in (
        (0, 0, 8), (0, 1, 64), (0, 2, 8), (1, 0, 64), (1, 1, 8), (1, 2, 64), (2, 0, 8), (2, 1, 64), (2, 2, 64))),
    # 0.5.22 semantics walks in registers only (walk 0): every shape and both n
    *((False, _TARGET_ONLY_SHAPES[v], n, 0) for v, n in ((0, 64), (1, 8), (2, 64), (0, 8))),
)
_CHAIN_SHAPES = ((8, 128256, 1, False), (1, 1000, 1, False), (4, 50257, 2, False), (8, 32000, 1, True),
                 (4, 128256, 2, True), (8, 32000, 4, False), (2, 16385, 8, True))  # (N, V, BPP, K_GIVEN)
# every shape with both NEW_SEMANTICS and both WRITE_BONUS values; the four (new, bonus) pairs all occur
_CHAIN_VARIANTS = tuple((shape, new, bonus) for i, shape in enumerate(_CHAIN_SHAPES)
                        for new, bonus in (((True, True), (False, False)) if i % 2 else ((True, False), (False, True))))
# (HAS_TOP_K, HAS_TOP_P, SCALARS): an orthogonal array (every pair of the three, both values) per kernel, the two
# kernels taking complementary halves so that all eight combinations compile once
_TARGET_PROBS_VARIANTS = tuple(
    (name, 4096, k, p, sc) for name, half in (("target_probs_kernel", 0), ("target_probs_row_kernel", 1))
    for k in (True, False) for p in (True, False) for sc in (True, False) if (k + p + sc) % 2 == half)

# kernel module -> kernel name -> (signature, constexprs); every variant of a constexpr branch.
KERNELS = {
    "kernels.triton_tree_kernels": {
        f"build_tree_kernel[mode={mode},bits={bits},prefix={prefix}]": ("build_tree_kernel", {
            "parent_list_ptr": I64, "selected_index_ptr": I64, "seq_lens_ptr": I64, "seq_cumsum_ptr": I64,
            "tree_mask_ptr": {0: "*i1", 1: "*i1", 2: f"*i{bits}"}[mode], "links_ptr": I64,
            "parent_list_stride": "constexpr", "topk": "constexpr", "depth": "constexpr", "n": "constexpr",
            "MASK_MODE": "constexpr", "BLOCK_N": "constexpr", "SQUARINGS": "constexpr", "BLOCK_S": "constexpr",
            "PREFIX_BLOCK": "constexpr"},
            {"parent_list_stride": 17, "topk": 4, "depth": 5, "n": 64, "MASK_MODE": mode, "BLOCK_N": 64, "SQUARINGS": 3,
             "BLOCK_S": 32, "PREFIX_BLOCK": prefix})
        for mode, bits, prefix in ((0, 8, 0), (0, 8, 128), (1, 8, 0), (2, 8, 0), (2, 16, 0), (2, 32, 0))
    },
    "kernels.triton_verify_kernels": {
        "verify_tree_greedy_kernel": ("verify_tree_greedy_kernel", {
            "out_ptr": I32, "candidates_ptr": I64,
            "retrieve_index_ptr": I64, "next_token_ptr": I64, "next_sibling_ptr": I64, "target_predict_ptr": I64,
            "N": "constexpr", "W": "constexpr", "PREDICTS_INIT": "constexpr", "BLOCK_N": "constexpr",
            "BLOCK_W": "constexpr"}, {"N": 64, "W": 6, "PREDICTS_INIT": 0, "BLOCK_N": 64, "BLOCK_W": 8}),
    },
    "kernels.triton_target_only_kernels": {
        **{f"tree_sampling_target_only_kernel[new={new},zero={zero}]": ("tree_sampling_target_only_kernel", {
            "out_ptr": I32, "buf_ptr": I32 if zero else F32,
            "candidates_ptr": I64, "retrieve_index_ptr": I64, "next_token_ptr": I64, "next_sibling_ptr": I64,
            "coins_ptr": F32, "final_coins_ptr": F32, "target_probs_ptr": F32, "n": "constexpr", "W": "constexpr",
            "V": "constexpr",
            "stride_p_b": "i64", "stride_p_row": "i32", "threshold_single": "fp32", "threshold_acc": "fp32",
            "NEW_SEMANTICS": "constexpr", "BLOCK_N": "constexpr", "BLOCK_W": "constexpr", "BLOCK_V": "constexpr",
            "ZERO_BUF": "constexpr"},
            {"n": 64, "W": 6, "V": 128256, "NEW_SEMANTICS": new, "BLOCK_N": 64, "BLOCK_W": 8, "BLOCK_V": 4096,
             "ZERO_BUF": zero})
            for new in (True, False) for zero in (True, False)},
        **{f"tree_sampling_target_only_split_kernel[new={new},NC={nc},n={n},walk={walk}]": ("tree_sampling_target_only_split_kernel", {
            "out_ptr": I32,
            "count_ptr": I32,
            "candidates_ptr": I64, "retrieve_index_ptr": I64, "next_token_ptr": I64, "next_sibling_ptr": I64,
            "coins_ptr": F32, "final_coins_ptr": F32, "target_probs_ptr": F32, "n": "constexpr", "W": "constexpr",
            "V": "constexpr",
            "stride_p_b": "i64", "stride_p_row": "i32", "threshold_single": "fp32", "threshold_acc": "fp32",
            "NEW_SEMANTICS": "constexpr", "BLOCK_N": "constexpr", "BLOCK_W": "constexpr", "CHUNK": "constexpr",
            "NC": "constexpr", "NC_P2": "constexpr", "WALK_IN_REGISTERS": "constexpr",
            "WALK": "constexpr", "BPP": "constexpr", "GDC": "constexpr"},
            {"n": n, "W": 6, "V": V, "NEW_SEMANTICS": new, "BLOCK_N": n, "BLOCK_W": 8, "CHUNK": chunk,
             "NC": nc, "NC_P2": max(2, 1 << (nc - 1).bit_length()), "WALK_IN_REGISTERS": n <= 16, "WALK": walk,
             "BPP": 2 if walk == 2 else 1, "GDC": walk > 0})
            for new, (V, chunk, nc), n, walk in _TARGET_ONLY_SPLIT_VARIANTS},
    },
    "kernels.triton_chain_kernels": {
        **{f"chain_rejection_sampling_kernel[new={new},bonus={bonus},N={N},V={V},bpp={bpp}]": ("chain_rejection_sampling_kernel", {
            "out_ptr": I32, "bonus_ptr": I64,
            "count_ptr": I32, "candidates_ptr": I64, "retrieve_index_ptr": I64, "coins_ptr": F32, "final_coins_ptr": F32,
            "target_probs_ptr": F32, "draft_probs_ptr": F32, "N": "constexpr", "V": "constexpr", "stride_coin_b": "i32",
            "stride_p_b": "i64", "stride_p_row": "i32", "stride_q_b": "i64", "stride_q_row": "i32",
            "NEW_SEMANTICS": "constexpr", "WRITE_BONUS": "constexpr", "BLOCK_S": "constexpr", "BLOCK_V": "constexpr",
            "NB": "constexpr", "NB_P2": "constexpr", "BPP": "constexpr", "K_GIVEN": "constexpr"},
            {"N": N, "V": V, "NEW_SEMANTICS": new, "WRITE_BONUS": bonus, "BLOCK_S": max(2, N), "BLOCK_V": 4096,
             "NB": -(-V // 4096), "NB_P2": max(2, 1 << (-(-V // 4096) - 1).bit_length()), "BPP": bpp,
             "K_GIVEN": given})
            for (N, V, bpp, given), new, bonus in _CHAIN_VARIANTS},
        **{f"chain_accept_len_kernel[new={new},N={N}]": ("chain_accept_len_kernel", {
            "k_ptr": I32, "candidates_ptr": I64, "coins_ptr": F32, "target_probs_ptr": F32, "draft_probs_ptr": F32,
            "bs": "i32", "N": "constexpr", "stride_coin_b": "i32", "stride_p_b": "i64", "stride_p_row": "i32",
            "stride_q_b": "i64", "stride_q_row": "i32", "NEW_SEMANTICS": "constexpr", "BLOCK_R": "constexpr",
            "BLOCK_S": "constexpr"},
            {"N": N, "NEW_SEMANTICS": new, "BLOCK_R": 32, "BLOCK_S": max(2, N)})
            for new in (True, False) for N in (2, 8)},
    },
    "kernels.triton_sampling_kernels": {
        f"{name}[k={k},p={p},scalars={sc}]": (name, {
            "logits_ptr": F32, "temperature_ptr": F32, "top_k_ptr": F32, "top_p_ptr": F32, "probs_ptr": F32,
            "V": "i32", "temp_s": "fp32", "k_s": "fp32", "p_s": "fp32", "HAS_TOP_K": "constexpr",
            "HAS_TOP_P": "constexpr", "SCALARS": "constexpr", "BLOCK_V": "constexpr"},
            {"HAS_TOP_K": k, "HAS_TOP_P": p, "SCALARS": sc, "BLOCK_V": block})
        for name, block, k, p, sc in _TARGET_PROBS_VARIANTS
    } | {
        f"target_probs_split_kernel[NC={nc}]": ("target_probs_split_kernel", {
            "logits_ptr": F32, "probs_ptr": F32, "part_ptr": I32, "count_ptr": I32, "V": "i32", "temperature": "fp32",
            "CHUNK": "constexpr", "NC": "constexpr", "NC_P2": "constexpr", "BLOCK_V": "constexpr"},
            {"CHUNK": 8192, "NC": nc, "NC_P2": p2, "BLOCK_V": 4096})
        for nc, p2 in ((16, 16), (7, 8))
    },
    "kernels.triton_dspark_kernels": {
        "dspark_accept_greedy_kernel": ("dspark_accept_greedy_kernel", {
            "candidates_ptr": I64, "target_predict_ptr": I64, "correct_len_ptr": I32, "bonus_ptr": I64, "T": "i32",
            "BLOCK_T": "constexpr"}, {"BLOCK_T": 8}),
        "cap_correct_len_kernel": ("cap_correct_len_kernel", {
            "correct_len_ptr": I64, "verify_lens_ptr": I64, "capped_ptr": I32, "trim_ptr": I32, "bs": "i32",
            "BLOCK": "constexpr"}, {"BLOCK": 256}),
        "finalize_accept_lens_kernel": ("finalize_accept_lens_kernel", {
            "correct_len_ptr": I64, "prefix_lens_ptr": I64, "commit_ptr": I32, "new_seq_ptr": I64, "bs": "i32",
            "BLOCK": "constexpr"}, {"BLOCK": 256}),
        "build_out_tokens_kernel": ("build_out_tokens_kernel", {
            "draft_tokens_ptr": I64, "correct_len_ptr": I64, "bonus_ptr": I64, "out_ptr": I64, "gamma": "i32",
            "BLOCK_T": "constexpr"}, {"BLOCK_T": 8}),
        **{f"fill_bonus_tokens_kernel[{tok},{lens}]": ("fill_bonus_tokens_kernel", {
            "accept_tokens_ptr": tok, "accept_lens_ptr": lens, "bonus_ptr": I32, "bs": "i32", "stride": "i32",
            "BLOCK": "constexpr"}, {"BLOCK": 256}) for tok in (I64, I32) for lens in (I64, I32)},
    },
}

SCRIPT = r"""
import importlib, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
specs = json.loads(sys.argv[1])
target = GPUTarget("cuda", 90, 32)
done = []
for module, kernels in specs.items():
    mod = importlib.import_module(module)
    for label, (name, signature, constexprs) in kernels.items():
        compiled = triton.compile(ASTSource(fn=getattr(mod, name), signature=signature, constexprs=constexprs),
                                  target=target)
        assert compiled.asm.get("cubin"), label
        done.append(label)
print(json.dumps(done))
"""


def _jit_kernels():
    """Every @triton.jit function defined in the kernel modules, by module."""
    import importlib

    from triton.runtime.jit import JITFunction

    try:  # under TRITON_INTERPRET=1, @triton.jit makes an InterpretedFunction
        from triton.runtime.interpreter import InterpretedFunction
        kinds = (JITFunction, InterpretedFunction)
    except ImportError:
        kinds = (JITFunction,)
    found = {}
    for module in KERNELS:
        mod = importlib.import_module(module)
        found[module] = {n for n, v in vars(mod).items()
                         if isinstance(v, kinds) and getattr(getattr(v, "fn", None), "__module__", None) == module}
    return found


def test_every_kernel_is_listed():
    """The compile list covers every kernel (helpers called from kernels compile with their callers)."""
    helpers = {"_record_rejection", "_sibling_test", "_sibling_verdict", "_pick_bits", "_parents", "_chain_accept_len", "_node", "_pick", "_zero_buffer_terminal_chunk", "chain_inverse_cdf_row", "chain_inverse_cdf_row_from_sums", "target_only_inverse_cdf_row", "terminal_block", "_probs_block", "_renormed", "_row_values"}
    for module, names in _jit_kernels().items():
        listed = {spec[0] for spec in KERNELS[module].values()}
        assert names - helpers == listed, (module, names - helpers - listed)


def test_kernels_compile_for_sm90():
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    specs = {m: {label: list(spec) for label, spec in ks.items()} for m, ks in KERNELS.items()}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(specs)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    done = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(done) == sum(len(k) for k in KERNELS.values())


def test_reduced_variant_lists_still_cover_every_pair():
    """The pairwise-covering lists above hold what they claim: every value, and every pair of values of two
    constexprs, that the full products held (else a dropped row would silently stop compiling a branch)."""
    from itertools import combinations, product

    def pairs_covered(rows, domains):
        for a, b in combinations(range(len(domains)), 2):
            assert {(r[a], r[b]) for r in rows} == set(product(domains[a], domains[b])), (a, b)

    new_rows = [(shape, n, walk) for new, shape, n, walk in _TARGET_ONLY_SPLIT_VARIANTS if new]
    pairs_covered(new_rows, (_TARGET_ONLY_SHAPES, (8, 64), (0, 1, 2)))
    old_rows = [(shape, n) for new, shape, n, walk in _TARGET_ONLY_SPLIT_VARIANTS if not new]
    assert {s for s, _ in old_rows} == set(_TARGET_ONLY_SHAPES) and {n for _, n in old_rows} == {8, 64}
    pairs_covered(_CHAIN_VARIANTS, (_CHAIN_SHAPES, (True, False), (True, False)))
    for name in ("target_probs_kernel", "target_probs_row_kernel"):
        pairs_covered([v[2:] for v in _TARGET_PROBS_VARIANTS if v[0] == name], ((True, False),) * 3)
    assert len({v[2:] for v in _TARGET_PROBS_VARIANTS}) == 8
