"""benchmarks/exact_exp_table.py: float32(exp(x)) by a table of 2^(j/N) and a short polynomial must round like a float64
exp, for x <= 0 (an alternative for the target_probs kernels' exp; the exhaustive check over every float32 x <= 0
against libdevice is benchmarks/gpu_exp_exhaustive.py, on a GPU). Cheap on purpose (CI's 2 cores): a few hundred thousand chosen
arguments through the numpy emulation (the same float64 operations), a few thousand through the Triton code itself
(the interpreter here, compiled on a GPU), both against float32(np.exp(float64(x)))."""
import functools
from fractions import Fraction

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from benchmarks import exact_exp_table
from kernels.triton_common import interpreting
from benchmarks.exact_exp_table import EXP_N, PARAMS, TABLES, _fma, exp_rounded, exp_rounded_numpy

LN2 = Fraction(0.6931471805599453)  # only for placing arguments near table boundaries


def _f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def _reference(x):
    with np.errstate(over="ignore", under="ignore"):
        return np.exp(np.asarray(x, np.float32).astype(np.float64)).astype(np.float32)


@functools.lru_cache(maxsize=1)
def _arguments():
    """Float32 x <= 0 where a wrong exp would show: every table boundary ((i + 1/2) ln2/64) with its 7 float32
    neighbours each side, the subnormal-result range's start (-87.34) and the underflow to 0 (-103.97) float by
    float, |x| near 2^-24 / 2^-25 (results next to 1), float32 subnormals, the ends, and random ones."""
    rng = np.random.default_rng(36)
    parts = []
    centres = -(np.arange(0, 9600) + 0.5) * (0.6931471805599453 / EXP_N)
    c = centres.astype(np.float32).view(np.int32).astype(np.int64)
    parts.append((c[:, None] + np.arange(-7, 8)[None, :]).ravel())
    for edge in (-87.33654, -103.97208, -103.2789, -88.72284):  # subnormal start, 0 / 2^-149 midpoint, 2^-149, 2^-128
        b = np.float32(edge).view(np.int32).astype(np.int64)
        parts.append(b + np.arange(-3000, 3000))
    for e in (-24, -25, -26):
        b = np.float32(-(2.0 ** e)).view(np.int32).astype(np.int64)
        parts.append(b + np.arange(-2000, 2000))
    parts.append(0x80000000 + np.arange(0, 3000))  # -0.0 and negative subnormals
    parts.append(0x80000000 + rng.integers(0, 0x7F800000, 150000))  # any x <= 0 (every binade)
    parts.append(rng.uniform(-105.0, 0.0, 100000).astype(np.float32).view(np.uint32).astype(np.int64))
    bits = np.concatenate(parts) & 0xFFFFFFFF
    x = _f32(bits)
    x = x[(x <= 0) & ~np.isnan(x)]
    return np.concatenate([x, np.array([0.0, -0.0, -np.inf, -3.4028235e38], np.float32)])


@pytest.mark.parametrize("n", sorted(PARAMS))
def test_emulation_rounds_like_a_float64_exp(n):
    x = _arguments()
    assert x.size > 250000
    got, want = exp_rounded_numpy(x, n=n), _reference(x)
    bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
    assert bad.size == 0, [(float(x[i]), float(got[i]), float(want[i])) for i in bad[:5]]
    assert np.isnan(exp_rounded_numpy(np.array([np.nan], np.float32)))[0]


def test_the_check_can_fail():
    """A degree-3 polynomial (max error 2^-37) mismatches on the same arguments: the arguments find rounding
    errors of that size."""
    x = _arguments()
    assert np.count_nonzero(exp_rounded_numpy(x, weak=True).view(np.int32) != _reference(x).view(np.int32)) > 10


@pytest.mark.parametrize("n", sorted(PARAMS))
def test_constants(n):
    """The table is 2^(j/n) as a double plus its remainder; C_HI has 33 significant bits (k * C_HI exact for
    |k| < 2^14, k <= 110 * n / ln2 < 10200), C_HI + C_LO is ln2/n; the emulated FMA rounds once."""
    inv_step, c_hi, c_lo, _ = PARAMS[n]
    for j in {0, n // 2, n - 1}:
        t = Fraction(TABLES[n][j]) + Fraction(TABLES[n][n + j])
        assert abs(float(t ** n / Fraction(2) ** j - 1)) < 1e-28 * n
    m, e = np.frexp(c_hi)
    assert Fraction(c_hi) * 2 ** (33 - int(e)) == int(Fraction(c_hi) * 2 ** (33 - int(e)))
    assert abs(float((Fraction(c_hi) + Fraction(c_lo)) * n / Fraction(np.log(2.0)) - 1)) < 1e-16
    assert abs(inv_step * c_hi - 1) < 1e-9
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=(3, 200)) * np.array([[1.0], [1e-3], [1e-5]])
    for ai, bi, ci, fi in zip(a, b, c, _fma(a, b, c)):
        assert fi == float(Fraction(ai) * Fraction(bi) + Fraction(ci))


@triton.jit
def _exp_kernel(x_ptr, out_ptr, table_ptr, n, FAST: tl.constexpr, N: tl.constexpr, ASM: tl.constexpr,
                BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, exp_rounded(tl.load(x_ptr + i, mask=m, other=0.0), table_ptr, FAST, False, N, ASM), mask=m)


@pytest.mark.parametrize("fast", [True, False])
def test_triton_code_rounds_like_a_float64_exp(fast):
    """The Triton function itself (the interpreter here; compiled on a GPU), both forms, on a sample of the
    arguments above: -inf gives 0, NaN gives NaN."""
    from tests.test_kernels_helpers import DEVICE
    x = _arguments()
    x = np.concatenate([x[::60], np.array([-np.inf, np.nan, -0.0, 0.0], np.float32)])
    xt = torch.from_numpy(x).to(DEVICE)
    out = torch.empty_like(xt)
    asm = not interpreting()  # the interpreter runs no inline PTX: the table loads as tl.load there
    _exp_kernel[(triton.cdiv(x.size, 1024),)](xt, out, exact_exp_table.device_table(xt.device), x.size, fast, EXP_N, asm,
                                              1024)
    got = out.cpu().numpy()
    want = _reference(x)
    assert np.isnan(got[-3]) and got[-4] == 0.0
    same = (got.view(np.int32) == want.view(np.int32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(float(v), float(g), float(w)) for v, g, w in zip(x[~same], got[~same], want[~same])][:5]
