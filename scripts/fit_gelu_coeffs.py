#!/usr/bin/env python3
"""Fit the polynomial coefficients of gelukit's exact-GELU and exp kernels.

Writes generators/common/gelu_coeffs.h (do not edit that file by hand).

Maths. For t >= 0 the upper Gaussian tail is Q(t) = Phi(-t) = phi(t) M(t), where
M(t) = Q(t)/phi(t) = sqrt(pi/2) erfcx(t/sqrt(2)) is the Mills ratio: smooth and decreasing,
M(0) = sqrt(pi/2), M(t) ~ 1/t. With u = 1/(c + t) the kernels evaluate
    Q(t) = e^{-t^2/2} * u * P(.)      (1/sqrt(2 pi) folded into P)
and fit P for the smallest max *relative* error over t in [0, T_MAX] by Lawson-reweighted
Chebyshev least squares (close to minimax). Beyond T_MAX = 15 every forward GELU output
underflows in float32 (GELU(-15) ~ 5e-50).

 * Accurate set (float64 evaluation, the <= 1 ULP kernels): P is a polynomial in u itself,
   c = 3, degree 10 (relative error 1.0e-9); float64 rounding is negligible, so the fit error
   is what counts.
 * Fast set (float32 evaluation): P is a polynomial in w = t*u - MID, MID the centre of the
   range of t*u = t/(c+t) in [0, T_MAX/(c+T_MAX)], c = 4, degree 9. The centred variable keeps
   the float32 Horner well conditioned (no large alternating terms), and t*u -- unlike
   c*u = c/(c+t) -- keeps its relative precision as t -> 0, where u's rounding would otherwise
   cost ~3 ULP. MID is rounded to float32 before the fit, so the kernel's w is the fitted one.
 * e^{-rho} on |rho| <= ln2/2 (float64 kernels, after n = round(a/ln2) and rho = a - n ln2):
   degree 6 for erf (relative error 2.0e-9; the Mills fit's 1.0e-9 is of the same order) and
   degree 8 for the tanh, sigmoid and SiLU forms, whose only approximation it is (2.1e-12);
   and e^{-rho2/2} for the float32 erf kernel, whose reduction works with rho2 = t^2 - 2 n ln2
   in [-ln2, ln2 + 0.12] (n rounded from t_hi^2, see fit_exp_f32), degree 6;
   and e^{-(y + C)} for the float32 sigmoid form, whose reduction is y = 1.702|x| - n ln2 - C
   with n truncated (see fit_exp_sigmoid_f32), degree 7.

Ties. For a tiny x, GELU(x) = x/2 + x^2/sqrt(2 pi) + ..., and for a subnormal x with an odd
last bit x/2 is exactly halfway between two representable values: the x^2 term, far below
float64's resolution, decides the rounding (up for x > 0, towards zero for x < 0; likewise for
the tanh and sigmoid forms). The float64 kernels get it right by erring on that side: the
rho polynomial's constant term is 1 - 2^-40 (so e^{-a} and sigma's 1/(1 + e^{-|v|}) lean the
right way), and the accurate P is fitted with the constraint u P(u) = 1/2 at t = 0,
so that the kernel's Q(0) is 0.5 (1 - 2^-40) (checked as the kernel evaluates it: u = 1/3
rounded, Horner in float64). The bias, 9e-13 relative, is far below the fits' errors (~1e-9).

Dev-only dependencies: numpy, scipy (not needed to build gelukit).
Usage: python3 scripts/fit_gelu_coeffs.py > generators/common/gelu_coeffs.h
"""
import numpy as np
from numpy.polynomial import chebyshev as C, polynomial as P
from scipy.special import erfcx

T_MAX = 15.0
K = 1 / np.sqrt(2 * np.pi)
ACC_SHIFT, ACC_DEG = 3.0, 10
FAST_SHIFT, FAST_DEG = 4.0, 9
EXP_DEG = 6        # erf (float64): the Mills fit (1.0e-9) dominates anyway
EXP_DEG_FINE = 8   # tanh/sigmoid/SiLU (float64): the exp is their only approximation
LN2 = np.log(2.0)
RHO2_MAX = LN2 + 0.12


def mills(t):
    return np.sqrt(np.pi / 2) * erfcx(t / np.sqrt(2))


def lawson(xs, target, basis_deg, weight=None):
    """Chebyshev coefficients (in xs in [-1, 1]) minimising max |weight * (cheb - target)|,
    weight = 1/|target| (relative error) unless given: Lawson-reweighted least squares."""
    base = 1 / np.abs(target) if weight is None else weight
    w = base.copy()
    for _ in range(60):
        coef, *_ = np.linalg.lstsq(C.chebvander(xs, basis_deg) * w[:, None], target * w, rcond=None)
        e = np.abs(C.chebval(xs, coef) - target) * base
        w = w * np.sqrt(e / e.max() + 1e-3)
    return coef


def to_monomial(coef, scale, offset):
    """Chebyshev coefficients in xs = scale * y + offset -> monomial coefficients in y."""
    mono = np.zeros(1)
    power = np.array([1.0])
    for ci in C.cheb2poly(coef):
        mono = P.polyadd(mono, ci * power)
        power = P.polymul(power, [offset, scale])
    return mono


NODES = np.cos(np.pi * (np.arange(4000) + 0.5) / 4000)
T_CHECK = np.linspace(0, T_MAX, 600001)


def fit_accurate():
    """P(u) with the constraint u P(u) = 1/2 at t = 0 (u = 1/c; Ties above): P(u) =
    P0 + (u - u0) R(u), R fitted for the smallest relative error of P."""
    c = ACC_SHIFT
    u0, u1 = 1 / (c + T_MAX), 1 / c
    u = u0 + (NODES + 1) / 2 * (u1 - u0)
    target = K * mills(1 / u - c) / u          # P(u) = Q e^{t^2/2} / u
    p0 = 0.5 / u1                              # u P(u) = 1/2 at t = 0: Q(0) = (1 - 2^-40) / 2
    coef = lawson(NODES, (target - p0) / (u - u1), ACC_DEG - 1,
                  weight=np.abs((u - u1) / target))
    r = to_monomial(coef, 2 / (u1 - u0), -2 * u0 / (u1 - u0) - 1)
    mono = P.polyadd([p0], P.polymul([-u1, 1.0], r))
    uc = 1 / (c + T_CHECK)
    err = np.max(np.abs(uc * P.polyval(uc, mono) / (K * mills(T_CHECK)) - 1))
    return mono, err


def kernel_q0(acc, exp_c0):
    """Q(0) as the float64 kernel evaluates it: exp_c0 * (u * P(u)), u = 1/3, Horner."""
    u = 1.0 / ACC_SHIFT
    r = acc[-1]
    for c in acc[-2::-1]:
        r = r * u + c
    return exp_c0 * (u * r)


def fit_fast():
    c = FAST_SHIFT
    vmax = T_MAX / (c + T_MAX)
    mid = float(np.float32(vmax / 2))
    half = vmax / 2
    v = half + half * NODES                    # v = t u in [0, vmax]
    t = c * v / (1 - v)
    target = K * mills(t) * (c + t)            # P(w) = Q e^{t^2/2} / u
    coef = lawson(NODES, target, FAST_DEG)
    # NODES = (v - half)/half = (w + mid - half)/half
    mono = to_monomial(coef, 1 / half, (mid - half) / half)
    uc = 1 / (c + T_CHECK)
    err = np.max(np.abs(uc * P.polyval(T_CHECK * uc - mid, mono) / (K * mills(T_CHECK)) - 1))
    return mono, mid, err


TIE_BIAS = 2.0 ** -40


def fit_exp_f64(deg):
    """e^{-rho} on |rho| <= ln2/2 (float64 kernels), degree deg, constant term 1 - 2^-40 (Ties
    above): e^{-y} = 1 + y q(y) with q fitted for the relative error of e^{-y}, then the constant
    lowered by 2^-40 (a relative change of 9e-13 everywhere)."""
    L = LN2 / 2 * 1.0001
    y = NODES * L
    coef = lawson(NODES, np.expm1(-y) / y, deg - 1, weight=np.abs(y) * np.exp(y))
    mono = np.concatenate([[1.0 - TIE_BIAS], C.cheb2poly(coef) / L ** np.arange(deg)])
    yc = np.linspace(-L, L, 200001)
    return mono, np.max(np.abs(P.polyval(yc, mono) / np.exp(-yc) - 1))


def fit_exp_f32(deg):
    """e^{-rho2/2} on [-ln2, RHO2_MAX] (float32 erf kernel: n is rounded from t_hi^2, so rho2 =
    t^2 - 2 n ln2 exceeds ln2 by up to 2 t t_lo < 2 * 15 * 2^-8 = 0.117)."""
    lo, hi = -LN2 * 1.0001, RHO2_MAX
    y = lo + (NODES + 1) / 2 * (hi - lo)
    coef = lawson(NODES, np.exp(-y / 2), deg)
    mono = to_monomial(coef, 2 / (hi - lo), -2 * lo / (hi - lo) - 1)
    yc = np.linspace(lo, hi, 200001)
    return mono, np.max(np.abs(P.polyval(yc, mono) / np.exp(-yc / 2) - 1))


# The float32 sigmoid form (gelu_math.h, exp_neg_sigmoid_f32): |v| = 1.702|x| with
# 1.702 = c_hi + c_lo, c_hi = 3486/2048, |x| = x_hi + x_lo (x_hi: 12 leading bits), and
# n = trunc(x_hi * K1), K1 = c_hi/L_hi (1 - 2^-20) rounded to float32, ln2 = L_hi + L_lo with
# L_hi = 22713/32768 (15 bits). The truncation never overshoots, so d = c_hi x_hi - n L_hi is
# in [0, L_hi (1 + N_MAX 2^-20)] (and exact), and y = (d - C) + s, s = c_hi x_lo + c_lo |x| -
# n L_lo. |x| <= 120 (the gradient's clamp).
SIG_C_HI = 3486 / 2048
SIG_L_HI = 22713 / 32768
SIG_X_MAX = 120.0


def fit_exp_sigmoid_f32(deg):
    """e^{-(y + C)} for y = 1.702|x| - n ln2 - C (float32 sigmoid form). C, a float32 near the
    centre of the range of 1.702|x| - n ln2, is the one whose e^{-C} is closest to a float32:
    the constant term then carries no rounding of its own (with C = 23/64 the kernel's
    e^{-|v|} was 2.05 instead of 1.61 float32 ULP off at most in one summation order,
    simulated). The fit is e^{-C} (1 + y q(y)) with q for the relative error, like
    fit_exp_f64."""
    c_lo = float(np.float32(1.702 - SIG_C_HI))
    l_lo = float(np.float32(LN2 - SIG_L_HI))
    n_max = np.floor(SIG_C_HI * SIG_X_MAX / SIG_L_HI)
    # s's extremes: c_lo |x| - n L_lo at |x| = X_MAX, and per binade [2^e, 2^(e+1)) c_hi x_lo
    # + c_lo |x| with x_lo < 2^(e-11) at the binade's top.
    s_lo = c_lo * SIG_X_MAX - n_max * l_lo
    s_hi = max(SIG_C_HI * 2.0 ** (e - 11) + c_lo * 2.0 ** e for e in range(-30, 7))
    d_hi = SIG_L_HI * (1 + n_max * 2.0 ** -20 * 1.0001)
    mid = (s_lo + d_hi + s_hi) / 2
    cands = (mid + np.arange(-200000, 200000) * 2.0 ** -26).astype(np.float32).astype(np.float64)
    e_c = np.exp(-cands)
    dist = np.abs(e_c - e_c.astype(np.float32).astype(np.float64))
    shift = float(cands[np.argmin(dist)])
    lo, hi = s_lo - shift - 1e-3, d_hi + s_hi - shift + 1e-3
    half = max(-lo, hi)
    y = NODES * half
    coef = lawson(NODES, np.expm1(-y) / y, deg - 1, weight=np.abs(y) * np.exp(y))
    mono = np.exp(-shift) * np.concatenate([[1.0], C.cheb2poly(coef) / half ** np.arange(deg)])
    yc = np.linspace(lo, hi, 200001)
    err = np.max(np.abs(P.polyval(yc, mono) / np.exp(-(yc + shift)) - 1))
    return mono, shift, lo, hi, err


def emit(name, mono):
    print(f"inline constexpr double {name}[{len(mono)}] = {{")
    for c in mono:
        print(f"    {c:.17g},")
    print("};")
    print()


if __name__ == "__main__":
    e1, e1_err = fit_exp_f64(EXP_DEG)
    e1f, e1f_err = fit_exp_f64(EXP_DEG_FINE)
    e2, e2_err = fit_exp_f32(EXP_DEG)
    e3, e3_shift, e3_lo, e3_hi, e3_err = fit_exp_sigmoid_f32(7)
    acc, acc_err = fit_accurate()
    fast, mid, fast_err = fit_fast()
    acc_q0 = kernel_q0(acc, e1[0])
    assert 0.5 - acc_q0 > 0.25 * TIE_BIAS, acc_q0  # Q(0) < 1/2 by most of 2^-41: ties round right
    print("// Generated by scripts/fit_gelu_coeffs.py -- do not edit.")
    print("// Upper Gaussian tail Q(t) = Phi(-t) = e^{-t^2/2} * u * P(.), u = 1/(shift + t), t in [0, kMillsTMax]")
    print("// (P carries the Mills ratio and 1/sqrt(2 pi)); e^{-rho} polynomials for the exp range reduction.")
    print("// Horner order, constant term first; errors are relative, of the fitted function, evaluated in double.")
    print("#pragma once")
    print()
    print("namespace gelukit::coeffs {")
    print()
    print(f"inline constexpr double kMillsTMax = {T_MAX:g};")
    print()
    print(f"// Accurate set (float64 kernels): P(u), degree {ACC_DEG}, shift {ACC_SHIFT:g}; max relative error of Q {acc_err:.2e};")
    print(f"// constrained so that the kernel's Q(0) = {float(acc_q0)!r} = 0.5 (1 - 2^-40) (ties: see the script).")
    print(f"inline constexpr double kMillsAccShift = {ACC_SHIFT:g};")
    emit("kMillsAcc", acc)
    print(f"// Fast set (float32 kernels): P(w), w = t*u - kMillsFastMid, degree {FAST_DEG}, shift {FAST_SHIFT:g};")
    print(f"// max relative error of Q {fast_err:.2e} (before float32 rounding). kMillsFastMid is a float32 value.")
    print(f"inline constexpr double kMillsFastShift = {FAST_SHIFT:g};")
    print(f"inline constexpr double kMillsFastMid = {mid:.17g};")
    emit("kMillsFast", fast)
    print(f"// e^{{-rho}} for |rho| <= ln2/2 (float64 kernels), constant term 1 - 2^-40 (ties: see the script):")
    print(f"// degree {EXP_DEG} (erf) max relative error {e1_err:.2e}; degree {EXP_DEG_FINE} (tanh, sigmoid, SiLU) {e1f_err:.2e}.")
    emit("kExpNegRho", e1)
    emit("kExpNegRhoFine", e1f)
    print(f"// e^{{-rho2/2}} for rho2 in [-ln2, ln2 + 0.12] (float32 erf kernel), degree {EXP_DEG}: max relative error {e2_err:.2e}.")
    emit("kExpNegHalfRho2", e2)
    print(f"// e^{{-(y + kExpNegSigmoidShift)}} for y in [{e3_lo:.4f}, {e3_hi:.4f}] (float32 sigmoid form, y = 1.702|x| - n ln2 - shift,")
    print(f"// n truncated), degree 7: max relative error {e3_err:.2e}. The shift is a float32 value whose e^-shift is")
    print(f"// within {abs(np.exp(-e3_shift) - float(np.float32(np.exp(-e3_shift)))):.1e} of a float32 (the constant term's own rounding).")
    print(f"inline constexpr double kExpNegSigmoidShift = {e3_shift:.17g};")
    emit("kExpNegSigmoid", e3)
    print("}  // namespace gelukit::coeffs")
