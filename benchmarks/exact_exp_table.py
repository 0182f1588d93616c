"""float32(exp(x)) for float32 x <= 0, bit for bit as libdevice's float64 exp rounded once to float32, in fewer
float64 operations: a tested alternative for the target_probs kernels' one exp a token, NOT used by them (issue 36
goal 3a, stop 43: benchmarks/README "Issue 36, stop 43 (gpu8)"). On an H200 every form here is proven equal to
libdevice's on all 2^31 + 1 float32 x <= 0 (benchmarks/gpu_exp_exhaustive.py) and is faster alone (782 against
667 Gexp/s, table 64), yet the register kernel ran slower with each (72 / 75 / 81 us against 63 at 512 rows of
32000, table 64 / 8 / 1; benchmarks/gpu_probs_variants.py), so the kernels keep tl.exp in float64.

The reference (specviz/base/probs.py) rounds a float64 exp of x = logits / T - row max to float32. Here, for x
clamped to [-110, 0] (below -103.98 every float32 result is 0; -inf gives 0, NaN gives NaN):

1. k = round(x * N / ln 2) by the float64 magic-number add (k is then the low word of the sum's bits);
2. r = x - k * ln2/N with ln2/N in two parts (Cody-Waite): k * C_HI is exact (C_HI has 33 significant bits,
   |k| < 2^14) and so is x - k * C_HI (one FMA); a second FMA takes off k * C_LO. |r| <= ln2/(2N);
3. exp(r) - 1 = r + r^2 * q(r), q fitted to (expm1(r) - r) / r^2 (see PARAMS);
4. 2^(j/N), j = k mod N, from a table as a double T_HI plus its remainder T_LO (loaded by ld.global.nc):
   exp(x) = 2^(k div N) * (T_HI + (T_HI * (exp(r) - 1) + T_LO)), the last add the only rounding of size (the
   result is within about 0.51 double ulp of exp(x)); N 1: 1 + (exp(r) - 1), no table;
5. 2^(k div N) added to the double's exponent field (the result stays a normal double: >= 2^-160), then one
   rounding to float32.

Float64-pipe operations an exp (N 64): 1 conversion in, 4 (k, r), 5 (polynomial), 2 (T), 1 conversion out, against
libdevice's 18 with a branch (SASS of the register kernel: 8 DFMA + 2 DADD + 1 DMUL + 2 LDG an exp against 14 DFMA +
2 DADD + 2 F2F). tests/test_exact_exp_table.py checks ``exp_rounded_numpy`` (the same operations in numpy float64)
and the Triton function against np.exp.
"""
from decimal import Decimal, getcontext

import numpy as np
import torch
import triton
import triton.language as tl

X_MIN = -110.0  # arguments are clamped here (exp(-110) rounds to float32 0, as every x below -103.98)
MAGIC = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer, held in the low word
_H = float.fromhex
# Per table size N (2^(j/N), j < N; N 1: no table): N / ln 2, ln2/N in two parts (C_HI: 33 significant bits, so
# k * C_HI and x - k * C_HI are exact for |k| < 2^14), and q(r) ~ (expm1(r) - r) / r^2 on |r| <= ln2/(2N) * 1.001
# (least squares at Chebyshev nodes in 200-bit arithmetic; max relative error of exp(r) with the coefficients as
# doubles: N 64 2^-59.3, N 8 2^-58.2, N 1 2^-57.1).
PARAMS = {
    64: (_H("0x1.71547652b82fep+6"), _H("0x1.62e42fefp-7"), _H("0x1.473de6af278edp-40"),
         tuple(map(_H, ("0x1.fffffffffdb15p-2", "0x1.55555555548adp-3", "0x1.55557401c6a68p-5",
                        "0x1.111123d8af205p-7")))),
    8: (_H("0x1.71547652b82fep+3"), _H("0x1.62e42fefp-4"), _H("0x1.473de6af278edp-37"),
        tuple(map(_H, ("0x1.0000000000117p-1", "0x1.5555555555600p-3", "0x1.55555547c5848p-5",
                       "0x1.11111109f681ap-7", "0x1.6c1ccac57f73fp-10", "0x1.a01fbea7b9b65p-13")))),
    1: (_H("0x1.71547652b82fep+0"), _H("0x1.62e42fefp-1"), _H("0x1.473de6af278edp-34"),
        tuple(map(_H, ("0x1.000000000000cp-1", "0x1.555555555555cp-3", "0x1.555555554fd81p-5",
                       "0x1.111111110ea78p-7", "0x1.6c16c18625e9ap-10", "0x1.a01a01b424c66p-13",
                       "0x1.a01995630151ap-16", "0x1.71ddeea76c371p-19", "0x1.28b14b0427346p-22",
                       "0x1.af6e4613cf8b4p-26")))),
}
# A deliberately weaker polynomial for N 64 (degree 3 in all: max error 2^-37), to show the exhaustive check fails
Q_WEAK = (_H("0x1.0000223be3a3cp-1"), _H("0x1.55557216ffa46p-3"))
EXP_N = 64  # the default table size


def _table(n):
    getcontext().prec = 60
    two = Decimal(2)
    hi, lo = [], []
    for j in range(n):
        t = two ** (Decimal(j) / n)  # correctly rounded to 60 digits
        h = float(t)
        hi.append(h)
        lo.append(float(t - Decimal(h)))
    return np.array(hi + lo, dtype=np.float64)


TABLES = {n: _table(n) for n in PARAMS}  # [T_HI[0..n-1], T_LO[0..n-1]]
TABLE = TABLES[EXP_N]
_DEVICE_TABLES = {}
# the constants as the kernel reads them (a Python float in a Triton expression would become a float32 constant)
_K = tl.constexpr({n: (p[0], p[1], p[2]) for n, p in PARAMS.items()})
_Q = tl.constexpr({n: p[3] for n, p in PARAMS.items()})
_Q_WEAK = tl.constexpr(Q_WEAK)
_LOG2 = tl.constexpr({n: n.bit_length() - 1 for n in PARAMS})


def device_table(device, n=EXP_N) -> torch.Tensor:
    """The table of size n as a float64 tensor on ``device`` (made once a device)."""
    t = _DEVICE_TABLES.get((device, n))
    if t is None:
        t = _DEVICE_TABLES[(device, n)] = torch.tensor(TABLES[n], dtype=torch.float64, device=device)
    return t


@triton.jit
def _load_f64(ptr):
    """A float64 load through the read-only path (ld.global.nc), elementwise."""
    return tl.inline_asm_elementwise("ld.global.nc.f64 $0, [$1];", "=d,l", [ptr.to(tl.int64, bitcast=True)],
                                     dtype=tl.float64, is_pure=True, pack=1)


@triton.jit
def exp_rounded(x, table_ptr, FAST: tl.constexpr, WEAK: tl.constexpr = False, N: tl.constexpr = 64,
                ASM_LOAD: tl.constexpr = True):
    """float32(exp(float64(x))) for a float32 tensor x <= 0 (or -inf / NaN). FAST False: libdevice's exp
    (the reference's computation); FAST: the method above (table_ptr: device_table of size N; unread for N 1),
    same bits. ASM_LOAD False (needed under the interpreter, which runs no inline PTX): the table by tl.load."""
    if FAST:
        xc = tl.maximum(x, -110.0, propagate_nan=tl.PropagateNan.ALL)
        xd = xc.to(tl.float64)
        magic = tl.full([], 6755399441055744.0, tl.float64)
        kd = tl.fma(xd, tl.full([], _K[N][0], tl.float64), magic)
        k = kd.to(tl.int64, bitcast=True).to(tl.int32)  # the low word: round(x * N / ln 2)
        kd = kd - magic
        r = tl.fma(kd, -tl.full([], _K[N][1], tl.float64), xd)  # exact
        r = tl.fma(kd, -tl.full([], _K[N][2], tl.float64), r)
        if WEAK:
            q = tl.fma(r, tl.full([], _Q_WEAK[1], tl.float64), tl.full([], _Q_WEAK[0], tl.float64))
        else:
            q = tl.full([], _Q[N][len(_Q[N]) - 1], tl.float64)
            for i in tl.static_range(len(_Q[N]) - 2, -1, -1):
                q = tl.fma(r, q, tl.full([], _Q[N][i], tl.float64))
        em1 = tl.fma(r * r, q, r)  # exp(r) - 1
        if N == 1:
            y = 1.0 + em1
            m = k
        else:
            j = k & (N - 1)
            if ASM_LOAD:  # not a tl.load: Triton's loop pipeliner would stage these gathers in shared memory
                t_hi = _load_f64(table_ptr + j)
                t_lo = _load_f64(table_ptr + N + j)
            else:
                t_hi = tl.load(table_ptr + j)
                t_lo = tl.load(table_ptr + N + j)
            y = t_hi + tl.fma(t_hi, em1, t_lo)
            m = k >> _LOG2[N]  # k div N
        y = (y.to(tl.int64, bitcast=True) + (m.to(tl.int64) << 52)).to(tl.float64, bitcast=True)
        e = y.to(tl.float32)
        return tl.where(xc == xc, e, xc)  # NaN stays NaN (the exponent add above can turn it into a number)
    else:
        return tl.exp(x.to(tl.float64)).to(tl.float32)


def exp_rounded_numpy(x, weak=False, n=EXP_N) -> np.ndarray:
    """``exp_rounded`` (FAST) in numpy: the same float64 operations (an FMA emulated: np has no fma; see _fma),
    for float32 x <= 0. Returns float32."""
    inv_step, c_hi, c_lo, qs = PARAMS[n]
    if weak:
        qs = Q_WEAK
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        xc = np.where(np.isnan(x), x, np.maximum(x, np.float32(X_MIN)))
        xd = xc.astype(np.float64)
        kd = _fma(xd, inv_step, MAGIC)
        k = (kd.view(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
        kd = kd - MAGIC
        r = _fma(kd, -c_hi, xd)
        r = _fma(kd, -c_lo, r)
        q = np.full_like(r, qs[-1])
        for c in reversed(qs[:-1]):
            q = _fma(r, q, c)
        em1 = _fma(r * r, q, r)
        if n == 1:
            y, m = 1.0 + em1, k
        else:
            j = k & (n - 1)
            t_hi, t_lo = TABLES[n][j], TABLES[n][n + j]
            y = t_hi + _fma(t_hi, em1, t_lo)
            m = k >> (n.bit_length() - 1)
        y = (y.view(np.int64) + (m << 52)).view(np.float64)
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
