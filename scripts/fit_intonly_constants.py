#!/usr/bin/env python3
"""Minimax refit of the I-BERT polynomial constants used by lib/runtime/cpu/intonly_ops.h.

The functional forms are I-BERT's (Kim et al., 2021); only the constants change:

  i-exp   exp(p) ~= a (p + b)^2 + c                     on p in [-ln2, 0]
  i-GELU  erf(u) ~= L(u) = sgn(u) [a (min(|u|, -b) + b)^2 + 1],
          GELU(x) ~= x/2 (1 + L(x / sqrt2))             on x in [-4, 4]

The paper's constants (0.3585, 1.353, 0.344 and -0.2888, -1.769) are least-squares fits and
leave a max abs error of 2.128e-3 (exp on (-ln2, 0]) and 1.8152e-2 (GELU on [-4, 4]). Here
the constants minimize the MAXIMUM abs error instead:

  * exp: any quadratic is a (p + b)^2 + c, so this is the degree-2 minimax polynomial of
    exp on [-ln2, 0], found by the Remez exchange (4 equioscillation points), then rewritten
    as a (p + b)^2 + c. Its error, 1.238e-3, is below the usual bound
    max|f'''| (ln2/2)^3 / (4 3!) = 1.73e-3: the third derivative of exp is 1 only at
    p = 0 and 0.5 at p = -ln2.
  * GELU: the error e(x) = x/2 (L(x/sqrt2) - erf(x/sqrt2)) is even in x (GELU(-x) =
    GELU(x) - x and the approximation satisfies the same identity), so [0, 4] suffices. The
    max of |e| over a dense grid is minimized over (a, b) by Nelder-Mead, then polished by
    solving the equioscillation system (3 alternating extrema of equal size, 6 equations in
    a, b, E, x1, x2, x3) with a root finder.

The rounded constants (7 significant digits, as put in intonly_ops.h) are then checked in
double arithmetic on dense grids and through an exact transcription of the integer ops
(numpy int64, same floors and shifts as intonly_*.cpp) at the input scales the tests use,
with the same error measures as tests/runtime/cpu/intonly_ops_test.cpp. Last, the bit-exact
values pinned by the IntOnlyGolden test are printed from a pure-Python (big integer)
transcription.

Usage: python3 scripts/fit_intonly_constants.py     (needs numpy and scipy; ~1 minute)
Its output at the time of the refit is recorded at the end of this file.
"""
import math

import numpy as np
from scipy.optimize import fsolve, minimize
from scipy.special import erf

LN2 = math.log(2.0)  # the double nearest ln2, as std::numbers::ln2
SQRT2 = math.sqrt(2.0)  # as std::numbers::sqrt2

PAPER_EXP = (0.3585, 1.353, 0.344)
PAPER_GELU = (-0.2888, -1.769)


def sig(v, digits=7):
    return float(f"{v:.{digits - 1}e}")


# ---- Fits ---------------------------------------------------------------------------------


def fit_exp(n=400001, iters=50):
    """Remez exchange for the degree-2 minimax polynomial of exp on [-ln2, 0]."""
    xs = np.linspace(-LN2, 0.0, n)
    ref = -LN2 / 2 * (1 - np.cos(np.pi * np.arange(4) / 3))  # Chebyshev-like start
    for _ in range(iters):
        m = np.stack([np.ones(4), ref, ref**2, (-1.0) ** np.arange(4)], axis=1)
        c0, c1, c2, e = np.linalg.solve(m, np.exp(ref))
        err = c0 + c1 * xs + c2 * xs**2 - np.exp(xs)
        d = np.diff(err)
        inner = [i for i in range(1, n - 1) if d[i - 1] * d[i] < 0]
        new_ref = xs[[0] + inner + [n - 1]]
        if len(new_ref) != 4:
            raise RuntimeError("Remez: expected 4 extrema")
        if np.allclose(new_ref, ref, atol=1e-12, rtol=0):
            break
        ref = new_ref
    a = c2
    b = c1 / (2 * c2)
    c = c0 - a * b * b
    return (a, b, c), abs(e), ref


def gelu_err(a, b, x):
    u = x / SQRT2
    lerf = np.sign(u) * (a * (np.minimum(np.abs(u), -b) + b) ** 2 + 1)
    return 0.5 * x * (1 + lerf) - 0.5 * x * (1 + erf(u))


def gelu_err_dx(a, b, x, h=1e-6):
    return (gelu_err(a, b, x + h) - gelu_err(a, b, x - h)) / (2 * h)


def fit_gelu():
    x = np.linspace(0.0, 4.0, 400001)
    res = minimize(lambda ab: np.abs(gelu_err(ab[0], ab[1], x)).max(), list(PAPER_GELU), method="Nelder-Mead",
                   options=dict(xatol=1e-12, fatol=1e-15, maxiter=20000))
    a, b = res.x
    err = gelu_err(a, b, x)
    d = np.diff(err)
    ext = [x[i] for i in range(1, len(x) - 1) if d[i - 1] * d[i] < 0]
    if len(ext) != 3:
        raise RuntimeError(f"GELU: expected 3 interior extrema, got {ext}")
    e0 = float(np.abs(err).max())

    def system(v):
        a, b, e, x1, x2, x3 = v
        xs = np.array([x1, x2, x3])
        vals = gelu_err(a, b, xs)
        return [vals[0] - e, vals[1] + e, vals[2] - e, *gelu_err_dx(a, b, xs)]

    sol = fsolve(system, [a, b, e0, *ext], xtol=1e-12)
    a, b, e = sol[:3]
    return (a, b), e, sol[3:]


# ---- Errors in double arithmetic ----------------------------------------------------------


def exp_poly_errors(abc):
    a, b, c = abc
    p = np.linspace(-LN2, 0.0, 2000001)
    v = a * (p + b) ** 2 + c
    ae = np.abs(v - np.exp(p))
    return ae.max(), p[ae.argmax()], np.abs(v / np.exp(p) - 1).max()


def gelu_poly_error(ab):
    x = np.linspace(0.0, 4.0, 2000001)
    e = np.abs(gelu_err(ab[0], ab[1], x))
    return e.max(), x[e.argmax()]


# ---- Integer transcription (vectorized, numpy int64) --------------------------------------


def pick_shift(s, lo_exp, hi_exp):
    shift = 0
    while math.ldexp(s, -shift) > math.ldexp(1.0, hi_exp):
        shift += 1
    while math.ldexp(s, -shift) < math.ldexp(1.0, lo_exp):
        shift -= 1
    return shift


def apply_shift(q, s):
    return q * (1 << s) if s >= 0 else q >> -s  # numpy >> on int64 is a floor


def iexp_constants(s, abc):
    a, b, c = abc
    sh = pick_shift(s, -20, -13)
    se = math.ldexp(s, -sh)
    return dict(shift=sh, q_ln2=math.floor(LN2 / se), q_b=math.floor(b / se), q_c=math.floor(c / (a * se * se)),
                out_scale=a * se * se)


def iexp_np(q, k):
    qe = apply_shift(np.minimum(q, 0), k["shift"])
    z = (-qe) // k["q_ln2"]
    t = qe + z * k["q_ln2"] + k["q_b"]
    r = (t * t + k["q_c"]) >> np.minimum(z, 62)
    return np.where(z >= 63, 0, r)


def igelu_constants(s, ab):
    a, b = ab
    sh = pick_shift(s, -14, -10)
    sp = math.ldexp(s, -sh) / SQRT2
    erf_scale = -a * sp * sp
    return dict(shift=sh, q_b=math.floor(b / sp), q_one=math.floor(1.0 / erf_scale), out_scale=s * erf_scale / 2)


def igelu_np(q, k):
    clip = -k["q_b"]
    aq = np.abs(q)
    sh = k["shift"]
    if sh > 0:
        ae = np.where(aq > (clip >> sh), clip, np.minimum(aq << sh, clip))
    else:
        ae = np.minimum(aq >> -sh, clip)
    t2 = (ae + k["q_b"]) ** 2
    return np.where(q >= 0, q * (2 * k["q_one"] - t2), q * t2)


def isilu_np(q, s, abc, kbits=16):
    k = iexp_constants(s, abc)
    one = int(round(1.0 / k["out_scale"]))  # std::nearbyint: half to even, as round()
    e = iexp_np(-np.abs(q), k)
    den = one + e
    num = np.where(q >= 0, one, e) << kbits
    return q * ((num + den // 2) // den)


def codes(lo, hi, s):
    return np.arange(math.ceil(lo / s), math.floor(hi / s) + 1, dtype=np.int64)


def integer_report(exp_abc, gelu_ab):
    out = []
    for s in (1e-4, 1e-3, 4.0 / 127, 8.0 / 127):
        k = iexp_constants(s, exp_abc)
        q = codes(-LN2 + 1e-12, 0.0, s)
        err = np.abs(iexp_np(q, k) * k["out_scale"] - np.exp(q * s)).max()
        out.append(f"  i-exp  S={s:.6g} shift {k['shift']}: abs on (-ln2, 0] {err:.4e}")
    for s in (1e-4, 1e-3, 4.0 / 127, 8.0 / 127, 2.0**-20):
        k = iexp_constants(s, exp_abc)
        q = codes(-10.0, 0.0, s)
        got, want = iexp_np(q, k) * k["out_scale"], np.exp(q * s)
        out.append(f"  i-exp  S={s:.6g}: on [-10, 0] rel {np.abs(got / want - 1).max():.4e}, "
                   f"abs {np.abs(got - want).max():.4e}")
    for s in (4.0 / 127, 8.0 / 127, 1e-3, 1e-4, 2.0**-20):
        k = igelu_constants(s, gelu_ab)
        q = codes(-4.0, 4.0, s)
        x = q * s
        err = np.abs(igelu_np(q, k) * k["out_scale"] - 0.5 * x * (1 + erf(x / SQRT2)))
        out.append(f"  i-GELU S={s:.6g} shift {k['shift']}: abs on [-4, 4] {err.max():.4e} "
                   f"at x = {x[err.argmax()]:.4f}")
    for s in (1e-3, 1e-4, 8.0 / 127, 16.0 / 127):
        q = codes(-8.0, 8.0, s)
        x = q * s
        err = np.abs(isilu_np(q, s, exp_abc) * math.ldexp(s, -16) - x / (1 + np.exp(-x)))
        out.append(f"  i-SiLU S={s:.6g} K=16: abs on [-8, 8] {err.max():.4e} at x = {x[err.argmax()]:.4f}")
    return out


# ---- Bit-exact values (pure Python integers) ----------------------------------------------


def golden(exp_abc, gelu_ab):
    def iexp1(q, k):
        q = min(q, 0)
        qe = q * (1 << k["shift"]) if k["shift"] >= 0 else q >> -k["shift"]
        z = (-qe) // k["q_ln2"]
        if z >= 63:
            return 0
        t = qe + z * k["q_ln2"] + k["q_b"]
        return (t * t + k["q_c"]) >> z

    def igelu1(q, k):
        clip, a, sh = -k["q_b"], abs(q), k["shift"]
        ae = (clip if a > (clip >> sh) else min(a << sh, clip)) if sh > 0 else min(a >> -sh, clip)
        t2 = (ae + k["q_b"]) ** 2
        return q * (2 * k["q_one"] - t2) if q >= 0 else q * t2

    out = []
    for s in (1e-4, 1e-3, 8.0 / 127):
        k = iexp_constants(s, exp_abc)
        vals = [iexp1(q, k) for q in (0, -1, -777, -5000, -12345, -100000)]
        out.append(f"  iexp S={s:.6g} shift {k['shift']} q_ln2 {k['q_ln2']} q_b {k['q_b']} q_c {k['q_c']}: {vals}")
    for s in (4.0 / 127, 1e-3):
        k = igelu_constants(s, gelu_ab)
        vals = [igelu1(q, k) for q in (-100, -37, -1, 0, 1, 37, 100)]
        out.append(f"  igelu S={s:.6g} shift {k['shift']} q_b {k['q_b']} q_one {k['q_one']}: {vals}")
    k = iexp_constants(1e-3, exp_abc)
    one = round(1.0 / k["out_scale"])
    vals = []
    for q in (-5000, -1234, -1, 0, 1, 1234, 5000):
        e = iexp1(-abs(q), k)
        den = one + e
        vals.append(q * ((((one if q >= 0 else e) << 16) + den // 2) // den))
    out.append(f"  isilu S=0.001 K=16 q_one {one}: {vals}")
    return out


def main():
    (a, b, c), e_exp, ref = fit_exp()
    print(f"exp minimax: a={a:.12g} b={b:.12g} c={c:.12g}  max abs error {e_exp:.6e}")
    print("  equioscillation points p =", ", ".join(f"{v:.5f}" for v in ref))
    (ga, gb), e_gelu, gx = fit_gelu()
    print(f"GELU minimax: a={ga:.12g} b={gb:.12g}  max abs error {e_gelu:.6e}")
    print("  equioscillation points |x| =", ", ".join(f"{v:.5f}" for v in gx),
          f"(clip at |x| = {-gb * SQRT2:.5f}, |a| b^2 = {-ga * gb * gb:.5f} < 1)")
    exp_new = (sig(a), sig(b), sig(c))
    gelu_new = (sig(ga), sig(gb))
    print(f"rounded (7 significant digits): exp a={exp_new[0]!r} b={exp_new[1]!r} c={exp_new[2]!r}; "
          f"GELU a={gelu_new[0]!r} b={gelu_new[1]!r}")
    print("double arithmetic, dense grids:")
    for name, abc in (("paper", PAPER_EXP), ("refit", exp_new)):
        m, at, rel = exp_poly_errors(abc)
        print(f"  exp  {name}: max abs {m:.4e} at p = {at:.4f}, max rel {rel:.4e}, "
              f"value at p=0 {abc[0] * abc[1] ** 2 + abc[2]:.6f}")
    for name, ab in (("paper", PAPER_GELU), ("refit", gelu_new)):
        m, at = gelu_poly_error(ab)
        print(f"  GELU {name}: max abs {m:.4e} at |x| = {at:.4f}")
    for name, abc, ab in (("paper", PAPER_EXP, PAPER_GELU), ("refit", exp_new, gelu_new)):
        print(f"integer ops, every code at the tests' scales ({name} constants):")
        print("\n".join(integer_report(abc, ab)))
    print("bit-exact values for IntOnlyGolden (refit constants):")
    print("\n".join(golden(exp_new, gelu_new)))


if __name__ == "__main__":
    main()

# Output at the time of the refit (numpy 2.4.6, scipy 1.17.1):
# exp minimax: a=0.357996616663 b=1.34906257027 c=0.347218934349  max abs error 1.238028e-03
#   equioscillation points p = -0.69315, -0.51230, -0.16586, 0.00000
# GELU minimax: a=-0.257508228605 b=-1.83062056155  max abs error 1.446047e-02
#   equioscillation points |x| = 0.40945, 1.44606, 2.45551 (clip at |x| = 2.58889, |a| b^2 = 0.86295 < 1)
# rounded (7 significant digits): exp a=0.3579966 b=1.349063 c=0.3472189; GELU a=-0.2575082 b=-1.830621
# double arithmetic, dense grids:
#   exp  paper: max abs 2.1280e-03 at p = -0.1376, max rel 3.0973e-03, value at p=0 1.000273
#   exp  refit: max abs 1.2383e-03 at p = -0.1659, max rel 2.4764e-03, value at p=0 0.998762
#   GELU paper: max abs 1.8152e-02 at |x| = 2.3498
#   GELU refit: max abs 1.4461e-02 at |x| = 1.4461
# integer ops, every code at the tests' scales (paper constants):
#   i-exp  S=0.0001 shift 0: abs on (-ln2, 0] 2.1280e-03
#   i-exp  S=0.001 shift 4: abs on (-ln2, 0] 2.1280e-03
#   i-exp  S=0.0314961 shift 9: abs on (-ln2, 0] 2.0974e-03
#   i-exp  S=0.0629921 shift 10: abs on (-ln2, 0] 2.0974e-03
#   i-exp  S=0.0001: on [-10, 0] rel 3.7594e-03, abs 2.1280e-03
#   i-exp  S=0.001: on [-10, 0] rel 3.4014e-03, abs 2.1280e-03
#   i-exp  S=0.0314961: on [-10, 0] rel 3.7526e-03, abs 2.0974e-03
#   i-exp  S=0.0629921: on [-10, 0] rel 3.7526e-03, abs 2.0974e-03
#   i-exp  S=9.53674e-07: on [-10, 0] rel 3.1038e-03, abs 2.1277e-03
#   i-GELU S=0.0314961 shift 6: abs on [-4, 4] 1.8125e-02 at x = -2.3622
#   i-GELU S=0.0629921 shift 7: abs on [-4, 4] 1.8102e-02 at x = -2.3307
#   i-GELU S=0.001 shift 1: abs on [-4, 4] 1.8139e-02 at x = -2.3500
#   i-GELU S=0.0001 shift 0: abs on [-4, 4] 1.8149e-02 at x = -2.3499
#   i-GELU S=9.53674e-07 shift -6: abs on [-4, 4] 1.8151e-02 at x = -2.3498
#   i-SiLU S=0.001 K=16: abs on [-8, 8] 6.8429e-04 at x = 1.2500
#   i-SiLU S=0.0001 K=16: abs on [-8, 8] 6.9524e-04 at x = 1.9368
#   i-SiLU S=0.0629921 K=16: abs on [-8, 8] 6.8698e-04 at x = 1.9528
#   i-SiLU S=0.125984 K=16: abs on [-8, 8] 6.8286e-04 at x = -1.2598
# integer ops, every code at the tests' scales (refit constants):
#   i-exp  S=0.0001 shift 0: abs on (-ln2, 0] 1.2985e-03
#   i-exp  S=0.001 shift 4: abs on (-ln2, 0] 1.2382e-03
#   i-exp  S=0.0314961 shift 9: abs on (-ln2, 0] 1.2596e-03
#   i-exp  S=0.0629921 shift 10: abs on (-ln2, 0] 1.2596e-03
#   i-exp  S=0.0001: on [-10, 0] rel 2.8002e-03, abs 1.2985e-03
#   i-exp  S=0.001: on [-10, 0] rel 2.4666e-03, abs 1.2382e-03
#   i-exp  S=0.0314961: on [-10, 0] rel 2.7333e-03, abs 1.2596e-03
#   i-exp  S=0.0629921: on [-10, 0] rel 2.7035e-03, abs 1.2596e-03
#   i-exp  S=9.53674e-07: on [-10, 0] rel 2.4762e-03, abs 1.2383e-03
#   i-GELU S=0.0314961 shift 6: abs on [-4, 4] 1.4500e-02 at x = 1.4488
#   i-GELU S=0.0629921 shift 7: abs on [-4, 4] 1.4500e-02 at x = 1.4488
#   i-GELU S=0.001 shift 1: abs on [-4, 4] 1.4484e-02 at x = 1.4460
#   i-GELU S=0.0001 shift 0: abs on [-4, 4] 1.4463e-02 at x = 1.4461
#   i-GELU S=9.53674e-07 shift -6: abs on [-4, 4] 1.4482e-02 at x = 1.4460
#   i-SiLU S=0.001 K=16: abs on [-8, 8] 5.4380e-04 at x = 1.3860
#   i-SiLU S=0.0001 K=16: abs on [-8, 8] 5.2372e-04 at x = -1.3861
#   i-SiLU S=0.0629921 K=16: abs on [-8, 8] 5.2646e-04 at x = -1.3858
#   i-SiLU S=0.125984 K=16: abs on [-8, 8] 5.2646e-04 at x = -1.3858
# bit-exact values for IntOnlyGolden (refit constants):
#   iexp S=0.0001 shift 0 q_ln2 6931 q_b 13490 q_c 96989440: [278969540, 278942561, 258609809, 169069540, 81105608, 12679]
#   iexp S=0.001 shift 4 q_ln2 11090 q_b 21585 q_c 248292968: [714205193, 713514729, 329036008, 4824290, 3104, 0]
#   iexp S=0.0629921 shift 10 q_ln2 11267 q_b 21930 q_c 256301906: [737226806, 693362742, 0, 0, 0, 0]
#   igelu S=0.0314961 shift 6 q_b -5261 q_one 32069068: [0, -309669613, -27008809, 0, 37129327, 2063441419, 6413813600]
#   igelu S=0.001 shift 1 q_b -5178 q_one 31066971: [-2478048400, -963880192, -26790976, 0, 35342966, 1335075662, 3735345800]
#   isilu S=0.001 K=16 q_one 715090590: [-2195000, -18206436, -32732, 0, 32804, 62664988, 325485000]
