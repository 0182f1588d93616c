"""float32(exp(x)) for float32 x <= 0, as the float64 exp of libdevice rounded once to float32, in fewer float64
operations than libdevice's exp (the target_probs kernels' one exp a token; benchmarks/README "Issue 36, stop 43").

The reference (specviz/base/probs.py) rounds a float64 exp of x = logits / T - row max to float32, and the kernels
must give its bits. Here, for x in [-110, 0] (below -103.98 every float32 result is 0):

1. k = round(x * 64 / ln 2) by the float64 magic-number add (k is in the low word of the sum's bits);
2. r = x - k * ln2/64 with ln2/64 in two parts (Cody-Waite): k * C_HI is exact (C_HI has 32 significant bits,
   |k| < 2^14) and so is x - k * C_HI (one FMA); the second FMA takes off k * C_LO. |r| <= ln2/128 (0.0054);
3. exp(r) - 1 = r + r^2 * q(r), q a degree-3 polynomial fitted to (expm1(r) - r) / r^2 on [-0.00542, 0.00542]
   (least squares at Chebyshev nodes, 200-bit arithmetic; max error 2^-59.3 with the coefficients as doubles);
4. 2^(j/64), j = k mod 64, from a 64-entry table as a double T_HI plus its remainder T_LO:
   exp(x) = 2^(k div 64) * (T_HI + (T_HI * (exp(r) - 1) + T_LO)), the last add the only rounding of size
   (result within about 0.51 double ulp of exp(x); libdevice's is within about 1);
5. 2^(k div 64) added to the double's exponent field (the result stays a normal double: >= 2^-160), then one
   rounding to float32.

Float64 operations a token: 1 conversion in, 4 (k, r), 5 (polynomial), 2 (T), 1 conversion out; libdevice's
exp has a degree-11 polynomial and its own range checks. The rounding to float32 equals libdevice's for every
float32 x <= 0, -0.0 and -inf (gives 0) included: benchmarks/gpu_exp_exhaustive.py checks all 2^31 + 1 of them on
the GPU. NaN gives NaN. Used only compiled (FAST_EXP, on CUDA); the interpreter runs tl.exp as before.
tests/test_kernels_exp.py checks ``exp_rounded_numpy`` (the same operations in numpy float64) against np.exp.
"""
from decimal import Decimal, getcontext

import numpy as np
import torch
import triton
import triton.language as tl

from .triton_common import interpreting

EXP_N = 64  # table entries: 2^(j/64)
LOG2_N = 6
X_MIN = -110.0  # arguments are clamped here (exp(-110) rounds to float32 0, as every x below -103.98)
MAGIC = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer, held in the low word
INV_STEP = float.fromhex("0x1.71547652b82fep+6")  # 64 / ln 2
C_HI = float.fromhex("0x1.62e42fefp-7")  # ln 2 / 64, 32 significant bits
C_LO = float.fromhex("0x1.473de6af278edp-40")  # ln 2 / 64 - C_HI
# q(r) = Q2 + Q3 r + Q4 r^2 + Q5 r^3 ~ (expm1(r) - r) / r^2 on |r| <= ln2/128 * 1.001
Q = (float.fromhex("0x1.fffffffffdb15p-2"), float.fromhex("0x1.55555555548adp-3"),
     float.fromhex("0x1.55557401c6a68p-5"), float.fromhex("0x1.111123d8af205p-7"))
# A deliberately weaker polynomial (degree 3 in all: max error 2^-37), for showing that the exhaustive check fails
Q_WEAK = (float.fromhex("0x1.0000223be3a3cp-1"), float.fromhex("0x1.55557216ffa46p-3"), 0.0, 0.0)


def _table():
    getcontext().prec = 60
    two = Decimal(2)
    hi, lo = [], []
    for j in range(EXP_N):
        t = two ** (Decimal(j) / EXP_N)  # correctly rounded to 60 digits
        h = float(t)
        hi.append(h)
        lo.append(float(t - Decimal(h)))
    return np.array(hi + lo, dtype=np.float64)


TABLE = _table()  # [T_HI[0..63], T_LO[0..63]]
_DEVICE_TABLES = {}
# the constants as the kernel reads them (a Python float in a Triton expression would become a float32 constant)
_MAGIC, _INV_STEP, _C_HI, _C_LO = (tl.constexpr(c) for c in (MAGIC, INV_STEP, C_HI, C_LO))
_Q2, _Q3, _Q4, _Q5 = (tl.constexpr(c) for c in Q)
_W2, _W3 = (tl.constexpr(c) for c in Q_WEAK[:2])


def use_fast_exp(device) -> bool:
    """The table method runs compiled on CUDA only; the interpreter (and any other device) keeps libdevice's form,
    the reference's exact computation."""
    return device.type == "cuda" and not interpreting()


def device_table(device) -> torch.Tensor:
    """The table as a float64 tensor on ``device`` (made once a device)."""
    t = _DEVICE_TABLES.get(device)
    if t is None:
        t = _DEVICE_TABLES[device] = torch.tensor(TABLE, dtype=torch.float64, device=device)
    return t


@triton.jit
def exp_rounded(x, table_ptr, FAST: tl.constexpr, WEAK: tl.constexpr = False):
    """float32(exp(float64(x))) for a float32 tensor x <= 0 (or -inf / NaN). FAST False: libdevice's exp
    (the interpreter's and the reference's computation); FAST: the table method above, same bits."""
    if FAST:
        xc = tl.maximum(x, -110.0, propagate_nan=tl.PropagateNan.ALL)
        xd = xc.to(tl.float64)
        magic = tl.full([], _MAGIC, tl.float64)
        kd = tl.fma(xd, tl.full([], _INV_STEP, tl.float64), magic)
        k = kd.to(tl.int64, bitcast=True).to(tl.int32)  # the low word: round(x * 64 / ln 2)
        kd = kd - magic
        r = tl.fma(kd, -tl.full([], _C_HI, tl.float64), xd)  # exact
        r = tl.fma(kd, -tl.full([], _C_LO, tl.float64), r)
        if WEAK:
            q = tl.fma(r, tl.full([], _W3, tl.float64), tl.full([], _W2, tl.float64))
        else:
            q = tl.fma(r, tl.full([], _Q5, tl.float64), tl.full([], _Q4, tl.float64))
            q = tl.fma(r, q, tl.full([], _Q3, tl.float64))
            q = tl.fma(r, q, tl.full([], _Q2, tl.float64))
        em1 = tl.fma(r * r, q, r)
        j = k & 63
        t_hi = tl.load(table_ptr + j)
        t_lo = tl.load(table_ptr + 64 + j)
        y = t_hi + tl.fma(t_hi, em1, t_lo)
        y = (y.to(tl.int64, bitcast=True) + ((k >> 6).to(tl.int64) << 52)).to(tl.float64, bitcast=True)
        e = y.to(tl.float32)
        return tl.where(xc == xc, e, xc)  # NaN stays NaN (the exponent add above can turn it into a number)
    else:
        return tl.exp(x.to(tl.float64)).to(tl.float32)


def exp_rounded_numpy(x, weak=False) -> np.ndarray:
    """``exp_rounded`` (FAST) in numpy: the same float64 operations (an FMA emulated as an exact product and sum
    where its rounding matters: np has no fma; see _fma), for float32 x <= 0. Returns float32."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        xc = np.where(np.isnan(x), x, np.maximum(x, np.float32(X_MIN)))
        xd = xc.astype(np.float64)
        kd = _fma(xd, INV_STEP, MAGIC)
        k = (kd.view(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
        kd = kd - MAGIC
        r = _fma(kd, -C_HI, xd)
        r = _fma(kd, -C_LO, r)
        q2, q3, q4, q5 = Q_WEAK if weak else Q
        if weak:
            q = _fma(r, q3, q2)
        else:
            q = _fma(r, q5, q4)
            q = _fma(r, q, q3)
            q = _fma(r, q, q2)
        em1 = _fma(r * r, q, r)
        j = k & 63
        t_hi, t_lo = TABLE[j], TABLE[64 + j]
        y = t_hi + _fma(t_hi, em1, t_lo)
        y = (y.view(np.int64) + ((k >> 6) << 52)).view(np.float64)
        e = y.astype(np.float32)
    return np.where(np.isnan(xc), xc, e)


def _fma(a, b, c):
    """a * b + c rounded once (float64 arrays): the exact product as a sum of two doubles (Dekker / Veltkamp),
    added with a compensated sum. Exact except when the result is within an ulp of a double's tie, which the
    tests' arguments (|result| far above 2^-1000) make practically irrelevant; checked in the test against
    Python's exact fractions on samples."""
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    p = a * b
    split = 134217729.0  # 2^27 + 1
    ah = a * split; ah = ah - (ah - a); al = a - ah
    bh = b * split; bh = bh - (bh - b); bl = b - bh
    pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # p + pe == a * b exactly
    s = p + c
    bb = s - p
    se = (p - (s - bb)) + (c - bb)  # s + se == p + c exactly
    return s + (se + pe)
