// GELU mathematics shared by every gelukit generator (pointwise GELU and the FFN epilogues).
//
// Everything here builds Halide Exprs; nothing runs at generator time. Each helper states its
// formula, its valid range and its error. "Compute type" T is Float(64) ("acc" math on CPU:
// results within 1 float32 ULP) or Float(32) ("fast" math, and all half-precision storage).
//
// Why these formulations (see shared/docs/gelu-reference.md and halide-notes.md):
//  * Phi is never formed as 0.5*(1 + erf(x/sqrt2)): that cancels to 0 for x < -5.5 in float32.
//    We use the upper Gaussian tail Q(t) = Phi(-t) = phi(t) * M(t), t = |x| >= 0, where M is the
//    Mills ratio: Q(t) = e^{-t^2/2} * u * P(.), u = 1/(c + t), P a polynomial fitted by
//    scripts/fit_gelu_coeffs.py (gelu_coeffs.h). Then GELU(x) = x - |x| Q for x >= 0 and
//    -|x| Q for x < 0: no cancellation anywhere.
//  * Halide compiles with fast-math (reassociation, no-NaN/no-inf). Special values are therefore
//    classified on the integer bit pattern, and the place where the order of float32 operations
//    carries the accuracy (Cody-Waite range reduction) goes through integers: int32 fixed point,
//    an integer product, or an integer AND that LLVM cannot see through (detail::pin).
//    strict_float(e) is not used. (Checked 2026-12-03, Halide 21, x86-64 AVX2+FMA assembly:
//    strict_float(e) makes only e's operations strict -- the module gets per-instruction
//    fast-math flags -- and a degree-6 Horner after a strict sub-expression still compiled to one
//    vfmadd per step; but e is the whole expression tree below it, so wrapping a late product
//    also made the polynomials it was computed from strict, without FMAs. Nor can it give an
//    FMA-based error-free product: a*b - strict_float(a*b) compiled to a constant 0 (LLVM merges
//    the two multiplies, then folds the difference), so exact products of floats still need a
//    split like the t = t_hi + t_lo one in gelu_erf; scripts/inspect_strict_float.py reproduces
//    both.)
//  * No Halide tanh/exp/erf: tanh lowers to scalar libm on CPU, and Halide's erf cancels in the
//    left tail. exp is our own, with 2^-n applied on the exponent field (float64) or so that
//    float32 results deep in the subnormal range are rounded once.
#pragma once

#include <cmath>
#include <stdexcept>
#include <vector>

#include "Halide.h"
#include "gelu_coeffs.h"

namespace gelukit {

// The GELU family. Sources: Hendrycks & Gimpel 2016 (arXiv:1606.08415), eq. for GELU and the
// tanh (Sec. 2) and sigmoid x*sigma(1.702x) approximations.
enum class GeluForm {
    Erf,      // x * Phi(x / s), Phi(x) = 0.5 * erfc(-x / sqrt(2)); s = 1 is standard GELU
    Tanh,     // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  ==  x * sigma(2u)
    Sigmoid,  // x * sigma(1.702 x)  ("QuickGELU", CLIP)
};

enum class MathMode {
    Accurate,  // float64 internals: <= 1 ULP of the storage type (CPU targets)
    Fast,      // float32 internals: a few float32 ULP (GPU targets; CPU speed option)
};

namespace detail {

inline Halide::Expr k(const Halide::Type &t, double v) {
    return Halide::Internal::make_const(t, v);
}

inline Halide::Expr u32(uint32_t v) {
    return Halide::Internal::make_const(Halide::UInt(32), static_cast<uint64_t>(v));
}

// Horner evaluation of c[0] + c[1] x + ... + c[n-1] x^(n-1) in type t.
inline Halide::Expr horner(const Halide::Expr &x, const double *c, int n, const Halide::Type &t) {
    Halide::Expr r = k(t, c[n - 1]);
    for (int i = n - 2; i >= 0; i--) {
        r = r * x + k(t, c[i]);
    }
    return r;
}

// e^{-a} = mant * 2^{-n}, n = round(a / ln 2), mant = e^{-r}, r = a - n ln2
// (float32 kernels; the float64 ones use exp_neg_f64 below).
// a = A * 2^-17 + a_lo with A an integer (A < 2^25, so a_hi = A*2^-17 <= 256 is exact)
//   and a_lo small. The Cody-Waite reduction a_hi - n*ln2_hi is done in int32 fixed point:
//   ln2_hi = 45426 * 2^-16, so a_hi - n*ln2_hi = (A - 2*n*45426) * 2^-17 exactly. Integer
//   arithmetic is immune to fast-math reassociation, which would otherwise fold ln2_hi + ln2_lo
//   back into one rounded ln2 (~25 ULP at n = 150), without any extra float op.
//   Taylor degree 7. With a_lo in [0, 2^-17) (the exact remainder exp_neg_f32 passes) r is in
//   [-0.35, 0.35], mant in [0.70, 1.42], truncation 5.3e-9 (0.09 ULP).
struct SplitExp {
    Halide::Expr mant;  // e^{-r}, see above
    Halide::Expr n;     // Int(32), >= 0
};

inline const double *inv_factorials() {
    static const double c[] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040};
    return c;
}

// e^{-a} in float64 for 0 <= a <= 700 (or +inf/NaN-free inputs clamped by the caller):
// n = round(a / ln2), rho = a - n ln2 in [-ln2/2, ln2/2] (float64 rounding of n*ln2 is below
// 2^-44 for n <= 1010), e^{-rho} by a polynomial, and 2^-n applied by subtracting n from the
// exponent field (exact: the result stays normal for a <= 700). The polynomial: kExpNegRho,
// degree 6, relative error 2.0e-9 (0.03 float32 ULP; for erf, whose Mills fit is 1.0e-9), or with
// fine = true kExpNegRhoFine, degree 8, 2.1e-12 (the tanh/sigmoid forms and SiLU, for which the
// exp is the only approximation: their results stay almost always correctly rounded). Both have
// the constant term 1 - 2^-40, which makes ties of tiny inputs round the right way
// (scripts/fit_gelu_coeffs.py, "Ties"). n goes through int32, not int64: AVX2 has no packed
// double <-> int64 conversions (LLVM scalarised them: 366 instead of 281 instructions per 16
// elements in the erf forward loop).
inline Halide::Expr exp_neg_f64(const Halide::Expr &a, bool fine) {
    using namespace Halide;
    const Type t = Float(64);
    const double ln2 = 0.693147180559945309417;
    Expr n = cast<int>(a * k(t, 1.0 / ln2) + k(t, 0.5));  // round(a / ln2), a >= 0
    Expr rho = a - cast<double>(n) * k(t, ln2);
    Expr mant = fine ? horner(rho, coeffs::kExpNegRhoFine, 9, t) : horner(rho, coeffs::kExpNegRho, 7, t);
    return reinterpret(t, reinterpret(Int(64), mant) - (cast<int64_t>(n) << 52));
}

inline SplitExp exp_neg_f32_fixed(const Halide::Expr &a_fixed, const Halide::Expr &a_lo) {
    using namespace Halide;
    const Type t = Float(32);
    const double ln2 = 0.693147180559945309417;
    const int ln2_hi_q16 = 45426;                          // ln2_hi = 45426/65536 = 0.693145751953125
    const double ln2_lo = ln2 - ln2_hi_q16 / 65536.0;      // 1.4286068e-6
    const double q = 1.0 / 131072.0;                       // 2^-17
    Expr a_hi = cast<float>(a_fixed) * k(t, q);
    // round(a_hi / ln2) as a truncation of a_hi / ln2 + 1/2 (a_hi >= 0): one FMA and one
    // vcvttps2dq. Halide's round() became, on AVX-512, two 256-bit vrndscaleps with an extract
    // and an insert before the conversion (5 instructions; seen in the assembly, 2026-12-07).
    Expr n = cast<int>(a_hi * k(t, 1.0 / ln2) + k(t, 0.5));
    Expr r_hi = cast<float>(a_fixed - n * (2 * ln2_hi_q16)) * k(t, q);
    Expr r = r_hi - cast<float>(n) * k(t, ln2_lo) + a_lo;
    return {horner(-r, inv_factorials(), 8, t), n};
}

inline Halide::Expr pin(const Halide::Expr &v, const Halide::Expr &mask);  // below

// e^{-a} for a float32 0 <= a <= 256 (the tanh form's |v| and SiLU's |x|). The fixed-point
// split: A = floor(a 2^17) by truncation (one multiply by a power of two and one vcvttps2dq,
// rather than round(): see exp_neg_f32_fixed), so rem = a - A 2^-17 is exact and in
// [0, 2^-17): where a 2^17 >= 2^23 it is an integer already (rem = 0); below, A < 2^23 converts
// exactly, and a - A 2^-17 is exact by Sterbenz where A >= 1 (A 2^-17 <= a < 2 A 2^-17) and
// trivially where A = 0 (a < 2^-17).
inline SplitExp exp_neg_f32(const Halide::Expr &a) {
    using namespace Halide;
    const Type t = Float(32);
    Expr A = cast<int>(a * k(t, 131072.0));
    Expr rem = a - cast<float>(A) * k(t, 1.0 / 131072.0);
    return exp_neg_f32_fixed(A, rem);
}

// e^{-1.702 |x|} for the float32 sigmoid form, 0 <= |x| <= 120, with the product 1.702 |x|
// never rounded as a whole (its float32 rounding, |v| 2^-24, was up to 84 ULP of the GELU
// before 2026-12-07). 1.702 = c_hi + c_lo with c_hi = 3486/2048 (12 significant bits), |x| =
// x_hi + x_lo with x_hi its 12 leading bits (an integer AND), so c_hi x_hi is exact (24 bits);
// ln2 = L_hi + L_lo with L_hi = 22713/32768 (15 bits), so n L_hi is exact for n < 512.
//   n = trunc(x_hi K1), K1 = c_hi/L_hi (1 - 2^-20): one multiply and one vcvttps2dq. The
//   shortfall factor makes the truncation a floor of c_hi x_hi / L_hi that never overshoots
//   (whatever the roundings of K1 and of the product, or a reassociation of c_hi K1), so
//   d = c_hi x_hi - n L_hi is >= 0 and < L_hi (1 + n 2^-20) <= 0.6934; it is exact (for n >= 1
//   both terms are multiples of 2^-24 and |d| < 1; for n = 0, d = c_hi x_hi).
//   y = (d - C') + s', s' = c_hi x_lo + c_lo |x| - n L_lo + 1/32 in [0.012, 0.076] (rounding
//   ~2^-28), C' = C + 1/32 (exact), C = kExpNegSigmoidShift (0.358, centring y in
//   [-0.378, 0.380]); e^{-(y+C)} by a degree-7 fit (scripts/fit_gelu_coeffs.py, 1e-10;
//   3.0e-9 with the coefficients rounded to float32).
//   Both d and s' are pinned (both >= 0, which the mask leaves alone): without the pins
//   fast-math may add s to c_hi x_hi before subtracting n L_hi (rounding to |v| 2^-24 again),
//   and it did accumulate s's terms one by one onto d before subtracting C (seen in the AVX2
//   assembly; 2.7 instead of 1.7 ULP, simulated). With them, any order of the three terms of y
//   rounds at most twice at |y| < 0.8. Simulated against e^{-1.702|x|} in double (numpy,
//   7.5e6 inputs): max 1.66-1.87 float32 ULP relative (by the order fast-math picks), against
//   1.62 for the fixed-point reduction it replaces (exp_neg_f32_fixed with the rounding error
//   of 1.702 |x| as a correction); mant is in [0.47, 1.02].
// Against that fixed-point reduction (an integer multiply, four conversions) it saves ~6
// instructions per vector; it was 8 more than the rounded-v version on AVX2 (2026-12-07).
inline SplitExp exp_neg_sigmoid_f32(const Halide::Expr &ax, const Halide::Expr &mask) {
    using namespace Halide;
    const Type t = Float(32);
    const double ln2 = 0.693147180559945309417;
    const double c_hi = 3486.0 / 2048.0, c_lo = 1.702 - c_hi;
    const double l_hi = 22713.0 / 32768.0, l_lo = ln2 - l_hi;
    Expr x_hi = reinterpret(t, reinterpret(UInt(32), ax) & u32(0xFFFFF000u));
    Expr n = cast<int>(x_hi * k(t, c_hi / l_hi * (1.0 - 0x1p-20)));
    Expr nf = cast<float>(n);
    Expr d = pin(k(t, c_hi) * x_hi - nf * k(t, l_hi), mask);
    Expr s = pin(k(t, c_hi) * (ax - x_hi) + k(t, c_lo) * ax - nf * k(t, l_lo) + k(t, 1.0 / 32), mask);
    Expr y = (d - k(t, coeffs::kExpNegSigmoidShift + 1.0 / 32)) + s;
    return {horner(y, coeffs::kExpNegSigmoid, 8, t), n};
}

// float32 v * 2^{-n} rounded once, for n in [0, 250] and v a normal value of magnitude >~ 2^-20.
// 2^{-n} may be subnormal, so scale in two steps of at most 2^-125 each; the first step is exact,
// the second rounds once. (The scale factors come from integer ops, so fast-math has no constant
// to fold them into.)
inline Halide::Expr ldexp_neg(const Halide::Expr &v, const Halide::Expr &n,
                              const Halide::Expr &mask = Halide::Expr()) {
    using namespace Halide;
    Expr n1 = n >> 1;  // n >= 0
    Expr n2 = n - n1;
    Expr s1 = reinterpret(Float(32), (127 - n1) << 23);
    Expr s2 = reinterpret(Float(32), (127 - n2) << 23);
    Expr first = v * s1;
    // With a mask (see pin below), the first product is pinned so that fast-math cannot form
    // s1 * s2 first (0 beyond n = 149; times_ldexp_neg needs this).
    return (mask.defined() ? pin(first, mask) : first) * s2;
}

// 1/d for d in [1, 2^30], correctly rounded: a plain division in both float32 and float64.
// It used to be the float32 reciprocal estimate (rcpps, 12 bits) refined by Newton steps
// (float32: two; float64: one float32 and one float64 step), on the reasoning that
// vdivps/vdivpd issue only every 5-16 cycles on one port. Measured on Zen 4 (2026-12-04,
// Halide JIT of the same erf math, 16 lanes, one thread, ns per element, median of 21 x 10
// runs): the division is faster, since it runs beside the ~60 other vector ops of the loop
// while the Newton steps add 5-8 ops to the critical path: fast erf forward 0.69 -> 0.62,
// backward 0.82 -> 0.74; acc backward 2.10 -> 1.71-1.97, forward 1.35 -> 1.25-1.46 (noisy).
// Intel cores issue vdivps zmm every ~10 and vdivpd zmm every ~16 cycles (on port 0 beside the
// FMAs): not measured there. On CUDA a float32 1/d is rcp.rn.f32 (correctly rounded); the
// Newton steps after it were wasted work.
inline Halide::Expr reciprocal(const Halide::Expr &d, const Halide::Type &t) {
    return k(t, 1.0) / d;
}

// An integer AND with a mask that is all ones but which LLVM cannot prove to be (built from a
// data value, e.g. x_bits | 0x7FFFFFFF for a non-negative v): an identity on v that fast-math
// cannot see through, so v * y + v * z is not refactored into v * (y + z), nor a product with v
// reassociated. Costs one integer op.
inline Halide::Expr pin(const Halide::Expr &v, const Halide::Expr &mask) {
    using namespace Halide;
    return reinterpret(v.type(), reinterpret(UInt(32), v) & mask);
}

// The mask for pin on the lanes of a negative float32 x: x_bits | 0x7FFFFFFF is all ones where
// x < 0 and clears only the sign bit where x >= 0 (an identity on non-negative values there).
inline Halide::Expr negative_lane_mask(const Halide::Expr &x) {
    using namespace Halide;
    return reinterpret(UInt(32), x) | u32(0x7FFFFFFFu);
}

// 2^-min(n, 64) in float32 (one integer step; exact and normal), for n >= 0.
inline Halide::Expr exp2_neg_min64(const Halide::Expr &n) {
    using namespace Halide;
    return reinterpret(Float(32), (127 - min(n, 64)) << 23);
}

// dy * v * 2^{-n} in float32, for the gradients' negative tails (Fast math), where
// GELU'(x) = v 2^{-n} itself is far below float32's range (n up to 315) but its product with a
// large |dy| (up to 3.4e38) is not. The caller passes a = v 2^-min(n, 64) (exp2_neg_min64, a
// factor it also needs where e^{-|v|} or w meets 1). For |v| <= 2^10 (and >= 2^-24 where
// n > 64, as in every tail here), n in [0, 316] and any dy, +-inf (-> +-inf) and subnormals
// included:
//   a = v 2^{-min(n, 64)}           exact and normal (|a| >= 2^-88);
//   b = dy a                        one rounding (subnormal only for a tiny dy); no overflow where the
//                                   true product is finite (n <= 64: a = GELU'(x), |a| <= 1/2;
//                                   n > 64: |a| <= 2^-54);
//   b 2^{-(n - min(n, 64))}         as ldexp_neg (two normal factors of at most 2^-126): exact
//                                   unless the result is subnormal, then rounded (once, or twice
//                                   -- at most one subnormal ULP more -- where b s1 is
//                                   subnormal already).
// Multiplying GELU'(x) = v 2^-n first and dy afterwards (as before) lost precision once GELU'
// was subnormal (beyond x ~ -13.3 erf, -10.2 tanh, -54 sigmoid) and everything once it
// underflowed (dx = +-0 whatever dy, from about -14.5 / -10.9 / -64). a and the products are pinned (mask: all ones on the lanes whose result is
// used): without the pin on a, LLVM distributed dy over a's last factor (dy ev inv (1 + c) became
// dy ev inv + (dy ev inv) c: inf - inf = NaN for dy = +-inf); without the one after the first
// scale factor it multiplied the two factors first (2^-(n-64) = 0 beyond n = 213: dx = 0, and
// NaN for dy = +-inf); the one on b keeps the factors away from dy.
inline Halide::Expr times_ldexp_neg(const Halide::Expr &dy, const Halide::Expr &a, const Halide::Expr &n,
                                    const Halide::Expr &mask) {
    using namespace Halide;
    Expr b = pin(dy * pin(a, mask), mask);
    return ldexp_neg(b, max(n, 64) - 64, mask);  // n - min(n, 64) <= 252
}

// |v| by clearing the sign bit (one AND; LLVM lowered abs of a widened float64 value to a
// compare, a negation and a blend).
inline Halide::Expr abs_bits(const Halide::Expr &v) {
    using namespace Halide;
    const int bits = v.type().bits();
    const Type ut = UInt(bits);
    return reinterpret(v.type(), reinterpret(ut, v) & Internal::make_const(ut, (uint64_t(1) << (bits - 1)) - 1));
}

// Sets x's sign bit on y (y >= 0 or y <= 0 already of x's sign, except exact zeros): gives
// -0 for x = -0 and for negative results that underflow to +0, without a compare and select
// (and without -0.0 constants, which fast-math's no-signed-zeros flag may turn into +0).
inline Halide::Expr or_sign_of(const Halide::Expr &y, const Halide::Expr &x) {
    using namespace Halide;
    const Type ut = UInt(y.type().bits());
    Expr sign = Internal::make_const(ut, uint64_t(1) << (y.type().bits() - 1));
    return reinterpret(y.type(), reinterpret(ut, y) | (reinterpret(ut, x) & sign));
}

}  // namespace detail

// GELU' far in the negative tail, beyond where the kernels evaluate it: a tiny negative number
// (the true value's sign). In float64 -1e-300 rather than -0: any finite float32 dy times it
// still rounds to the same signed zero as dy times the true value, and dy = +-inf gives -+inf,
// the limit, where -0 would give NaN. (The float32 gradients get the same from their clamps:
// dy times GELU' at the clamp, through times_ldexp_neg.)
inline Halide::Expr tail_gradient() {
    return detail::k(Halide::Float(64), -1e-300);
}

// Exact (erf) GELU of x (a float32 value: every storage type widens to float32 exactly), with
// scale inv_s = 1/s in the compute type t (s = 1 for standard GELU): y = x * Phi(z), z = x * inv_s.
// Gradient: d/dx = Phi(z) + z phi(z). t = |z| is clamped to tlim (see below).
// The result is in t: Float(64) (accurate) or Float(32) (fast); see gelu_erf_f64/_f32.
// Valid for every x including +-inf (the forward limits come out of the formula: +inf (1 - tiny),
// -0 from a clamped -tiny); NaN lanes are left to the caller.
//
// Accurate (float64, gelu_erf_f64): t^2 is exact, e^{-t^2/2} by exp_neg_f64 (2.0e-9), u = 1/(3+t)
//   from reciprocal() (correctly rounded), Q = e^{-t^2/2} u P(u) with the degree-10 kMillsAcc (1.0e-9):
//   relative error before the final rounding below 3.2e-9 (0.05 float32 ULP), so results are
//   within 1 ULP of the storage type everywhere (README: exhaustive sweeps). Q(0) is
//   0.5 (1 - 2^-40), below 1/2 like the true Q(t > 0): x/2 ties of subnormal x round as
//   x/2 + x^2/sqrt(2 pi) does.
// Fast (float32, gelu_erf_f32): see there; a few float32 ULP.
namespace detail {

// Where t is clamped. Forward, float64: t = 37, where e^{-t^2/2} = 2e-298 (exp_neg_f64's range
// ends at 684.5 < 700): the tail |x| Q(t) of a clamped lane is below 1e-294 even for x near
// -FLT_MAX (x is raised to -65536 first, below), so it rounds to 0 in float32 and stays
// negligible when an FFN epilogue multiplies GELU(z) by a gate before rounding (GeGLU: a float32
// gate up to 3.4e38 times 1e-294). Between 15 and 37 the Mills polynomial is extrapolated
// (checked: within 0.3% of the true ratio; the tail there is below half the smallest float32
// subnormal for s <= 4096, and only matters times a gate). Forward, float32: t = 15, where 2^-n
// underflows float32 (n = 162): the tail is exactly 0 beyond. Gradient: multiplied by dy
// afterwards, and |dy| can reach 3.4e38: t phi(t) * 3.4e38 stays above 0.7e-45 up to t ~ 19.5,
// so the float64 gradient is evaluated up to t = 20 (beyond it even dy = FLT_MAX gives a product
// below half the smallest subnormal), with the Mills fit extrapolated beyond its 15 (see
// gelu_erf_f64). The
// float32 gradient goes to t = 20 as well: it never forms phi(t) (below float32's range beyond
// t ~ 14) but dy times its mantissa, scaled by 2^-n afterwards (times_ldexp_neg), and uses the
// Mills fit extrapolated beyond 15: in GELU'(-t) = phi(t) (M(t) - t) the fit's error at t = 20
// (5.2e-7 of M, relative) is divided by t^2 again, 0.02 float32 ULP (checked in double,
// 2026-12-07).
inline double erf_tlim(bool gradient, bool f64) {
    if (!f64) {
        return gradient ? 20.0 : coeffs::kMillsTMax;
    }
    return gradient ? 20.0 : 37.0;
}

// Forward: y = x (1 - Q(t)) for z > 0, x Q(t) for z <= 0 (= x Phi(z)), with x raised to
// -65536 first, so that x = -inf gives -tiny (-0 after rounding) instead of -inf * tiny; for
// |z| <= 15, |x| <= 15 s is above -65536 as long as s <= 4096. (The float32 path, gelu_erf_f32,
// keeps max(x, 0) - min(|x|, 128) Q with the 2^-n scaling of its tail, for s <= 8.)
inline Halide::Expr gelu_erf_f64(const Halide::Expr &x32, const Halide::Expr &inv_s, bool gradient) {
    using namespace Halide;
    const Type t = Float(64);
    const double inv_sqrt_2pi = 0.398942280401432677940;
    const double tlim = erf_tlim(gradient, true);
    // Forward: x raised to -65536 (see above; one float32 op on the storage-width vector). For
    // s <= 4096 every such x has a GELU that rounds to -0 anyway: |x| Q(|x|/s) <= 65536 Q(16)
    // = 4e-53 at the boundary, and it falls faster than |x| grows.
    Expr x = cast<double>(gradient ? x32 : max(x32, k(Float(32), -65536.0)));
    Expr z = x * inv_s;
    Expr t_abs = min(abs_bits(z), k(t, tlim));            // clamp: also keeps inf out of the polynomials
    // e^{-t^2/2}; t^2 is exact for s = 1 (and powers of 2), else within 2^-53 relative.
    Expr e = exp_neg_f64(k(t, 0.5) * t_abs * t_abs, /*fine=*/false);
    Expr u = reciprocal(k(t, coeffs::kMillsAccShift) + t_abs, t);
    Expr p = u * horner(u, coeffs::kMillsAcc, 11, t);    // M(t) / sqrt(2 pi)
    if (!gradient) {
        // x Phi(z) = x (1 - Q) for z > 0 and x Q for z <= 0, one select and one product:
        // x = +inf gives inf (1 - tiny); x = -0 gives -0 Q = -0, and the negative products keep
        // their sign into a float32 or half -0. (It was max(x, 0) - min(|x|, 65536) Q with the
        // sign of x set afterwards: LLVM narrowed max(x, 0) to float32 and widened it again,
        // two more conversions per 16 lanes; 101 -> 96 AVX-512 instructions per 16 elements
        // in the s = 1 loop of gelu_generator.cpp.)
        Expr q = e * p;
        return x * select(z > k(t, 0.0), k(t, 1.0) - q, q);
    }
    // Beyond the fit (t in (15, 20], float64 gradient only) the Mills polynomial is extrapolated:
    // its Q is within 4.1e-9 of the true Q there and w = phi(t) (M(t) - t) within 1.1e-11 (the
    // error of M divided by ~t^2; mpmath, 2001 points, 2026-12-07). It replaces the asymptotic
    // series M(t) = (1/t)(1 - 1/t^2 + 3/t^4 - ...) (Abramowitz & Stegun 26.2.12) used there
    // before: two more float64 divisions and 12 more FMAs per 16 lanes, in a loop short of
    // registers (157 -> 125 AVX-512 instructions per 16 elements, s = 1 loop).
    // w = phi(t) (M(t) - t);  GELU'(x) = 1 - w for z >= 0, w for z < 0 (Phi(-t) - t phi(t)).
    // Near the root z* = -0.7518 of GELU' this difference cancels: the error there is absolute.
    // At z = +-0 GELU' is exactly 1/2; the tie bias of Q(0) would give 1/2 + 2^-41 and round
    // dy/2 ties of subnormal dy away from zero, so it is selected.
    Expr beyond = abs(z) > k(t, tlim);  // false for NaN; NaN is handled by the caller
    Expr w = select(beyond, tail_gradient(), e * (p - k(t, inv_sqrt_2pi) * t_abs));
    return select(t_abs == k(t, 0.0), k(t, 0.5), z > k(t, 0.0), k(t, 1.0) - w, w);
}

// Fast (float32): the same formulation with float32 arithmetic, 16 lanes per AVX-512 vector.
//  * t^2 exactly: t_hi = t with its 12 low mantissa bits cleared (an integer AND), so t_hi^2
//    (24 bits) is exact; t^2 = t_hi^2 + t_lo (t_hi + t).
//  * e^{-t^2/2} = 2^-n e^{-rho2/2}, n = round(t_hi^2 / (2 ln2)), rho2 = t^2 - 2n ln2 in
//    [-ln2, ln2 + 2 t t_lo] (<= ln2 + 0.12; kExpNegHalfRho2 is fitted on that range), with 2 ln2
//    split as C_hi + C_lo, C_hi = 90852 * 2^-16 (15 significant bits): n C_hi (n <= 163) and
//    t_hi^2 - n C_hi are exact. n is pinned in n C_hi: otherwise fast-math's reassociation merges
//    n C_hi and n C_lo into one rounded n * 2 ln2 (an error of up to 1e-5 in rho2 at n = 163).
//  * Q = e^{-rho2/2} u P(w), u = 1/(4+t) (reciprocal), w = t u - mid (kMillsFast, 9.1e-9).
//  * The forward tail term |x| Q = ((|x| u P e^{-rho2/2}) * 2^(64-n)) * 2^-64: the product in
//    brackets is normal whatever order fast-math multiplies it in; it is pinned (an integer AND
//    with a mask LLVM cannot prove to be all ones), times 2^(64-n) (exact, normal for n <= 162),
//    pinned again, and only then times the constant 2^-64, which rounds once, also into the
//    subnormals, with no subnormal operand anywhere (a host that sets FTZ/DAZ, as ML frameworks
//    often do, keeps every normal result). Without the pins LLVM moved 2^-64 next to a tiny |x|,
//    or formed 2^(64-n) * 2^-64 = 2^-n first (0 for n >= 150, and flushed under DAZ).
//    strict_float() of the product would pin the order too, but it makes every operation of its
//    operand strict, and that operand is a tree holding both polynomials: no vfmadd was left in
//    the AVX-512 loop.
// Error: a few float32 ULP (README, accuracy table).
// Backward (dy given; the result is dx = dy GELU'(x), not GELU'(x)): as for float64, to t = 20.
// n comes from the whole t^2 (t_hi^2 + t_lo (t_hi + t)): from t_hi^2 alone, rho2 would reach
// ln2 + 0.31 at t = 20 (t_lo < 2^-7 above 16), where kExpNegHalfRho2 is 4.5 ULP off. On the
// negative side dx = dy (w_mant 2^-n) is formed as (dy w_mant) 2^-n by times_ldexp_neg, so
// that large |dy| keep products that GELU'(x) alone cannot hold; on the positive side
// GELU' = 1 - w, where w below 2^-25 no longer matters (2^-n is applied in one step, n <= 64).
inline Halide::Expr gelu_erf_f32(const Halide::Expr &x, const Halide::Expr &inv_s, bool gradient,
                                 const Halide::Expr &dy = Halide::Expr()) {
    using namespace Halide;
    const Type t = Float(32);
    const double ln2 = 0.693147180559945309417;
    const int c_hi_q16 = 90852;                                  // 2 ln2 * 2^16, rounded
    const double c_lo = 2 * ln2 - c_hi_q16 / 65536.0;
    const double inv_sqrt_2pi = 0.398942280401432677940;
    const double tlim = erf_tlim(gradient, false);
    Expr z = x * inv_s;
    Expr t_abs = min(abs(z), k(t, tlim));
    Expr t_hi = reinterpret(t, reinterpret(UInt(32), t_abs) & u32(0xFFFFF000u));
    Expr t_lo = t_abs - t_hi;
    Expr a_hi = t_hi * t_hi;                                     // exact
    Expr a_lo = t_lo * (t_hi + t_abs);                           // t^2 - t_hi^2
    // round(t^2 / (2 ln2)): <= 162 forward (from t_hi^2), <= 289 backward (from t^2, t <= 20)
    Expr n = cast<int>((gradient ? a_hi + a_lo : a_hi) * k(t, 0.5 / ln2) + k(t, 0.5));
    Expr nf = cast<float>(n);
    Expr mask = negative_lane_mask(x);
    Expr rho2 = (a_hi - pin(nf, mask) * k(t, c_hi_q16 / 65536.0)) + (a_lo - nf * k(t, c_lo));
    Expr e = horner(rho2, coeffs::kExpNegHalfRho2, 7, t);      // e^{-rho2/2} in [0.70, 1.42]
    Expr u = reciprocal(k(t, coeffs::kMillsFastShift) + t_abs, t);
    Expr p = u * horner(t_abs * u - k(t, coeffs::kMillsFastMid), coeffs::kMillsFast, 10, t);
    if (!gradient) {
        Expr tail = pin(min(abs(x), k(t, 128.0)) * (p * e), mask) * reinterpret(t, (191 - n) << 23);
        return or_sign_of(max(x, k(t, 0.0)) - pin(tail, mask) * k(t, 5.421010862427522e-20), x);
    }
    if (!dy.defined()) {
        throw std::logic_error("gelu_erf_f32: the float32 gradient is formed times dy");
    }
    // w = phi(t) (M(t) - t) = w_mant 2^-n (< 0 beyond the root, t > 0.7518); GELU'(x) = 1 - w
    // for z >= 0, w for z < 0.
    // Beyond t = 20 the clamped t gives dy GELU'(-20) (-1.1e-86 dy): +-0 of the true product's
    // sign for every finite dy (3.7e-48 at FLT_MAX), and -+inf (the limit) for dy = +-inf, as the
    // float64 path's -1e-300 (tail_gradient), without a select.
    Expr w_mant = e * (p - k(t, inv_sqrt_2pi) * t_abs);
    Expr w = w_mant * exp2_neg_min64(n);  // = w where n <= 64; |w| < 2^-56 beyond (1 - w = 1)
    Expr neg = times_ldexp_neg(dy, w, n, mask);
    // z = +-0: exactly 1/2 (see gelu_erf_f64). z >= 0 holds for -0. GELU' here is >= 0, so the
    // mask (which clears the sign bit where x >= 0) leaves it alone; the pin keeps fast-math from
    // distributing dy over 1 - w (dy - dy w: inf - inf = NaN for dy = +-inf).
    Expr pos = dy * pin(select(t_abs == k(t, 0.0), k(t, 0.5), k(t, 1.0) - w), mask);
    return select(z >= k(t, 0.0), pos, neg);
}

}  // namespace detail

// Float(32) with gradient: dy (float32) is required and the result is dy GELU'(x) (see gelu_erf_f32).
inline Halide::Expr gelu_erf(const Halide::Expr &x32, const Halide::Expr &inv_s, bool gradient,
                             const Halide::Type &t, const Halide::Expr &dy = Halide::Expr()) {
    return t.bits() == 64 ? detail::gelu_erf_f64(x32, inv_s, gradient)
                          : detail::gelu_erf_f32(x32, inv_s, gradient, dy);
}

// Sigmoid-type GELU forms, y = x * sigma(v(x)):
//   tanh form: v = 2u = 2 sqrt(2/pi) (x + 0.044715 x^3) (0.5(1+tanh u) = sigma(2u)),
//   sigmoid form: v = 1.702 x.
// sigma is evaluated without overflow from e = e^{-|v|} <= 1:
//   sigma(v) = 1/(1+e) for v >= 0, e/(1+e) for v < 0;  sigma(1-sigma) = e/(1+e)^2.
// Gradient: sigma(v) + x v'(x) sigma(v)(1 - sigma(v)).
// float32: x is clamped to +-lim before v is formed (no overflow of x^3 for any finite x); lim
// is where the tail e^{-|v|} times |x| is below float32's smallest subnormal, so the clamp
// changes no result; results on the negative side beyond it are -0. float64: no clamp (below).
//  Accurate (f64): within 1 float32 ULP of the formula evaluated in double.
//  Fast (f32): the tanh form's v carries float32 rounding errors of a few |v| 2^-24, which
//  e^{-|v|} turns into as many ULP for large negative x (up to 215 ULP forward, README accuracy
//  table). Tried 2026-12-07: v and its reduction against ln2 in float64 (X converted to two
//  float64 vectors, r and n back) gave 4 ULP over all 2^32 inputs, but the forward took 24%
//  longer on avx512_zen4 (0.802 -> 0.996 ns/element, 57 -> 64 instructions, eight of them
//  512-bit conversions) and 20% on AVX2, the backward 27% / 11%: not adopted. The sigmoid
//  form's 1.702|x| is never rounded as a whole: exp_neg_sigmoid_f32 reduces it against ln2 from
//  exact 12-bit splits (<= 4 ULP forward over all inputs). The float32
//  gradient needs dy and returns dx = dy GELU'(x) (on the negative side formed as
//  (dy core) 2^-n by times_ldexp_neg, as in gelu_erf_f32).
inline Halide::Expr gelu_sigma(const Halide::Expr &x, GeluForm form, bool gradient, const Halide::Type &t,
                               const Halide::Expr &dy = Halide::Expr()) {
    using namespace Halide;
    using detail::k;
    const double sqrt_2_over_pi = 0.797884560802865355880;
    const double c1 = 2.0 * sqrt_2_over_pi;
    const double c3 = 2.0 * sqrt_2_over_pi * 0.044715;
    bool f64 = t.bits() == 64;
    // The float32 clamps. Forward: v(12) = 142 (tanh), v(70) = 119 (sigmoid): |x| e^{-|v|} <
    // 1e-50 beyond, far below float32's smallest subnormal. The gradient is multiplied by dy
    // (up to 3.4e38), so it needs |x v'(x)| e^{-|v|} < 2e-84 beyond the clamp: tanh at x = 14
    // (v = 218: 610 * 2.6e-95), sigmoid at x = 120 (v = 204: 204 * 2.5e-89); |v| <= 218 < 256,
    // the range of exp_neg_f32's fixed point, and n <= 315, within times_ldexp_neg's 316.
    const bool wide = gradient;
    const double lim = form == GeluForm::Tanh ? (wide ? 14.0 : 12.0) : (wide ? 120.0 : 70.0);

    // float64 (f64): x is not clamped. |x|^3 <= 4e115 cannot overflow there, and e^{-|v|} takes
    // min(|v|, 700) (exp_neg_f64's range): beyond |v| = 218 that changes no result (forward:
    // |x| e^{-700} <= 3.4e38 * 9.9e-305 rounds to -0; gradient: |x v'(x)| e^{-700} <= 8.4e114 *
    // 9.9e-305, times any finite dy still far below float32's smallest subnormal, while
    // dy = +-inf gives -+inf as tail_gradient does). x = +-inf are the caller's (gelu_eval).
    // That saves the clamp, a second float64 conversion of x and the selects for x < -lim:
    // 92 -> 69 AVX-512 instructions per 16 elements for the tanh forward, with |v| by abs_bits (2026-12-07).
    Expr xc = f64 ? x : clamp(x, k(t, -lim), k(t, lim));
    Expr v, dv;
    if (form == GeluForm::Tanh) {
        Expr x2 = xc * xc;
        v = xc * (k(t, c1) + k(t, c3) * x2);
        dv = k(t, c1) + k(t, 3.0 * c3) * x2;
    } else {
        v = k(t, 1.702) * xc;
        dv = k(t, 1.702);
    }
    // e^{-|v|}: float64 by exp_neg_f64 (|v| <= 218). In float32 the tanh form's |v| <= 218.2
    // goes to 2^-17 fixed point (exp_neg_f32: A < 2^25; A is even above 2^24, so float32 holds
    // it exactly; the remainder is exact); the sigmoid form's |x| <= 120 to exp_neg_sigmoid_f32.
    if (f64) {
        Expr ev = detail::exp_neg_f64(min(detail::abs_bits(v), k(t, 700.0)), /*fine=*/true);  // e^{-|v|}
        Expr inv = detail::reciprocal(k(t, 1.0) + ev, t);
        Expr positive = v >= k(t, 0.0);
        if (!gradient) {
            // x / (1 + e) for v >= 0 (x = +-0 included: +-0), x e / (1 + e) for v < 0.
            return x * select(positive, inv, ev * inv);
        }
        Expr g_pos = inv + x * dv * ev * inv * inv;
        Expr g_neg = ev * inv * (k(t, 1.0) + x * dv * inv);
        // x = +-0: exactly 1/2 (the exp's tie bias would give 1/2 + 2^-41; see gelu_erf_f64).
        return select(x == k(t, 0.0), k(t, 0.5), positive, g_pos, g_neg);
    }
    Expr mask = detail::negative_lane_mask(x);
    detail::SplitExp e;
    if (form == GeluForm::Sigmoid) {
        // |v| = 1.702 |x| is never rounded as a whole: see exp_neg_sigmoid_f32.
        e = detail::exp_neg_sigmoid_f32(abs(xc), mask);
    } else {
        e = detail::exp_neg_f32(abs(v));
    }
    Expr positive = v >= k(t, 0.0);

    if (!gradient) {
        Expr ev = detail::ldexp_neg(e.mant, e.n);  // e^{-|v|}; may underflow in float32, harmlessly
        Expr inv = detail::reciprocal(k(t, 1.0) + ev, t);
        Expr y_pos = x * inv;
        // x e^{-|v|} / (1 + e^{-|v|}) with 2^-n applied last in two normal steps, the first
        // product pinned (otherwise LLVM formed 2^-n first: subnormal for n > 126, flushed under
        // DAZ, and 0 beyond n = 149, where |x| e^{-|v|} can still be a subnormal result). Below
        // -lim the clamped xc gives -0 (see lim), so x < -lim needs no select.
        Expr y_neg = detail::ldexp_neg(xc * e.mant * inv, e.n, mask);
        return select(x == k(t, 0.0), x, positive, y_pos, y_neg);
    }
    if (!dy.defined()) {
        throw std::logic_error("gelu_sigma: the float32 gradient is formed times dy");
    }
    // e^{-|v|} next to 1 (in 1 + ev and the positive side's g_pos): 2^-n in one step, n <= 64
    // (beyond, ev < 2^-62 changes neither 1 + ev nor g_pos: |xc dv| <= 610).
    Expr s64 = detail::exp2_neg_min64(e.n);
    Expr ev = e.mant * s64;
    Expr inv = detail::reciprocal(k(t, 1.0) + ev, t);
    Expr g_pos = inv + xc * dv * ev * inv * inv;
    // GELU'(x) = core 2^-n for v < 0, passed on as core 2^-min(n, 64) = ev inv (1 + xc dv inv)
    Expr core64 = ev * inv * (k(t, 1.0) + xc * dv * inv);
    // Beyond -lim the clamped xc gives dy GELU'(-lim): below half the smallest subnormal for
    // every finite dy (see lim), so +-0 of the true product's sign, and -+inf (the limit) for
    // dy = +-inf, as the float64 path's tail_gradient, without a select.
    Expr neg = detail::times_ldexp_neg(dy, core64, e.n, mask);
    // g_pos >= 0, which the mask (sign bit cleared where x >= 0) leaves alone: pinned, so that
    // fast-math cannot distribute dy over its sum (tanh at x = +-0 with dy = +-inf gave
    // inf * 0 = NaN: found by review, 2026-12-07).
    return select(positive, dy * detail::pin(g_pos, mask), neg);
}

// Special values, classified on the storage type's own bit pattern: immune to fast-math's
// no-NaN/no-inf assumptions, and independent of the fp16 -> fp32 conversion (Halide's emulated
// conversion on targets without F16C turned fp16 NaNs into infinities).
// NaN -> quiet NaN; forward: +inf -> +inf, -inf -> -0 (the limit; PyTorch gives NaN);
// backward: GELU'(+inf) = 1, GELU'(-inf) = -0 (the limit from below).
struct StorageClass {
    Halide::Expr is_nan, is_pos_inf, is_neg_inf;
};

inline StorageClass classify(const Halide::Expr &x_storage) {
    using namespace Halide;
    const Type st = x_storage.type();
    const int bits = st.bits();
    const uint64_t sign = uint64_t(1) << (bits - 1);
    const uint64_t inf = st.is_bfloat() ? 0x7F80u : bits == 16 ? 0x7C00u : 0x7F800000u;
    auto c = [&](uint64_t v) { return Internal::make_const(UInt(bits), v); };
    Expr b = reinterpret(UInt(bits), x_storage);
    return {(b & c(sign - 1)) > c(inf), b == c(inf), b == c(inf | sign)};
}

// Storage <-> float32 conversions. With bf16_bits (set by the generators for GPU targets) the
// bfloat16 conversions are written on the bit pattern: Halide 21's PTX backend cannot cast
// between bfloat16 and float32 (LLVM asserts "Invalid cast!" while emitting the kernel; FK-32).
// Widening is exact (a bf16 is the top half of a float32). Narrowing rounds to nearest even:
// adding 0x7FFF plus the lowest kept bit carries into the kept half exactly when the dropped
// half is above the tie, or at the tie with an odd kept half; +-inf stay +-inf, values above the
// largest bf16 round to +-inf, NaN becomes the quiet NaN 0x7FC0 (sign kept). Other storage types
// (and bf16 without bf16_bits) use Halide's own casts.
inline Halide::Expr storage_to_f32(const Halide::Expr &x_storage, bool bf16_bits = false) {
    using namespace Halide;
    if (bf16_bits && x_storage.type().is_bfloat()) {
        return reinterpret(Float(32), cast(UInt(32), reinterpret(UInt(16), x_storage)) << 16);
    }
    return cast<float>(x_storage);
}

inline Halide::Expr f32_to_storage(const Halide::Expr &v_f32, const Halide::Type &storage, bool bf16_bits = false) {
    using namespace Halide;
    if (bf16_bits && storage.is_bfloat()) {
        Expr b = reinterpret(UInt(32), v_f32);
        Expr nan = (b & detail::u32(0x7FFFFFFFu)) > detail::u32(0x7F800000u);
        Expr rounded = (b + detail::u32(0x7FFFu) + ((b >> 16) & detail::u32(1))) >> 16;
        Expr quiet = (b >> 16) | detail::u32(0x0040u);
        return reinterpret(storage, cast(UInt(16), select(nan, quiet, rounded)));
    }
    return cast(storage, v_f32);
}

// The canonical quiet NaN of a storage type.
inline Halide::Expr quiet_nan(const Halide::Type &st) {
    using namespace Halide;
    const uint64_t q = st.is_bfloat() ? 0x7FC0u : st.bits() == 16 ? 0x7E00u : 0x7FC00000u;
    return reinterpret(st, Internal::make_const(UInt(st.bits()), q));
}

// The compute type of a math mode. "acc" uses float64 for every storage type: float32 results
// then carry only their final rounding (<= 1 ULP, almost always correctly rounded), and
// fp16/bf16 results are correctly rounded except where float64 rounding itself lands on a tie.
inline Halide::Type compute_type(MathMode mode) {
    return mode == MathMode::Accurate ? Halide::Float(64) : Halide::Float(32);
}

// GELU(x) (forward) or dy GELU'(x) (gradient; dy in compute type t) of a storage value, in
// compute type t, with the infinities applied -- except that the float64 erf forward gives
// x = -inf a tiny negative value (-65536 Q(37) = -3.8e-295) that only the rounding to the
// storage type makes -0: a caller that multiplies before rounding (the GeGLU epilogue) selects
// -0 itself. The gradient comes with dy because float32
// math multiplies dy in before the 2^-n scaling of the tails (times_ldexp_neg); float64 simply
// multiplies. NaN lanes hold an unspecified value: callers override them (gelu_forward_output
// & co). inv_s (1/s in the compute type) is only used by the erf form.
// bf16_bits: see storage_to_f32.
inline Halide::Expr gelu_eval(const Halide::Expr &x_storage, GeluForm form, bool gradient,
                              const Halide::Expr &inv_s, const Halide::Type &t, bool bf16_bits = false,
                              const Halide::Expr &dy = Halide::Expr()) {
    using namespace Halide;
    Expr x32 = storage_to_f32(x_storage, bf16_bits);  // exact for fp16/bf16
    Expr xt = cast(t, x32);
    if (form == GeluForm::Erf && !gradient) {
        return gelu_erf(x32, inv_s, false, t);  // +-inf give +inf and (after rounding) -0 by the formula
    }
    if (gradient && !dy.defined()) {
        throw std::logic_error("gelu_eval: the gradient needs dy");
    }
    const bool f32_grad = gradient && t.bits() == 32;  // dx formed inside (see above)
    Expr v = form == GeluForm::Erf ? gelu_erf(x32, inv_s, gradient, t, f32_grad ? dy : Expr())
                                   : gelu_sigma(xt, form, gradient, t, f32_grad ? dy : Expr());
    StorageClass c = classify(x_storage);
    if (!gradient) {
        return select(c.is_pos_inf, xt, c.is_neg_inf, detail::k(t, -0.0), v);
    }
    // GELU'(+inf) = 1, GELU'(-inf) = -0 (dy = +-inf there gives NaN, as inf * 0 does).
    // The float32 gradients get x = +-inf right by their clamps (the erf form's t = 20, the
    // sigmoid forms' +-lim): dy (1 - tiny) = dy, and dy GELU'(-lim) = -0 times dy's sign for
    // every finite dy. Only x = -inf with dy = +-inf differs: -+inf (the limit of dy GELU'(x)
    // as x -> -inf) rather than NaN. That saves the selects (and a -0 that no-signed-zeros
    // fast-math folded into +0 when written as dy * -0): ~5 instructions per 16 elements (the
    // AVX-512 loops have 75 / 76 / 72 for erf / tanh / sigmoid).
    if (f32_grad) {
        return v;
    }
    return dy * select(c.is_pos_inf, detail::k(t, 1.0), c.is_neg_inf, detail::k(t, -0.0), v);
}

// Rounds a compute-type value once, to nearest even, into the storage type.
// float64 -> fp16/bf16 cannot go through a round-to-nearest float32 (double rounding: e.g.
// GELU(2^-133) in bf16 is just above a tie that float32 rounds onto). The float32 step therefore
// rounds to odd (truncate, then set the last bit if inexact): with 13+ extra bits that makes the
// final round-to-nearest-even correct (Boldo & Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
inline Halide::Expr narrow_to_storage(const Halide::Expr &v, const Halide::Type &storage, bool bf16_bits = false) {
    using namespace Halide;
    if (v.type() == Float(32) || storage == Float(32)) {
        return f32_to_storage(cast<float>(v), storage, bf16_bits);
    }
    Expr f = cast<float>(v);
    Expr back = cast<double>(f);
    Expr inexact = back != v;
    Expr bits = reinterpret(UInt(32), f);
    bits = select(inexact && abs(back) > abs(v), bits - detail::u32(1), bits);
    bits = select(inexact, bits | detail::u32(1), bits);
    return f32_to_storage(reinterpret(Float(32), bits), storage, bf16_bits);
}

// y = GELU(x) in the storage type of x: rounded once, NaN in -> quiet NaN out.
inline Halide::Expr gelu_forward_output(const Halide::Expr &x_storage, GeluForm form, const Halide::Expr &inv_s,
                                        const Halide::Type &t, bool bf16_bits = false) {
    using namespace Halide;
    const Type st = x_storage.type();
    Expr y = narrow_to_storage(gelu_eval(x_storage, form, /*gradient=*/false, inv_s, t, bf16_bits), st, bf16_bits);
    return select(classify(x_storage).is_nan, quiet_nan(st), y);
}

// dx = dy * GELU'(x), multiplied in the compute type and rounded once into the storage type;
// a NaN in x or dy gives a quiet NaN whatever fast-math assumes.
inline Halide::Expr gelu_backward_output(const Halide::Expr &x_storage, const Halide::Expr &dy_storage,
                                         GeluForm form, const Halide::Expr &inv_s, const Halide::Type &t,
                                         bool bf16_bits = false) {
    using namespace Halide;
    const Type st = dy_storage.type();
    Expr dy = cast(t, storage_to_f32(dy_storage, bf16_bits));
    Expr dx = narrow_to_storage(gelu_eval(x_storage, form, /*gradient=*/true, inv_s, t, bf16_bits, dy), st, bf16_bits);
    StorageClass cx = classify(x_storage), cdy = classify(dy_storage);
    Expr nan = cx.is_nan || cdy.is_nan;
    if (t.bits() == 64) {
        // x = -inf with dy = +-inf: dy GELU'(-inf) = inf * -0 is NaN (the float32 kernels give
        // the limit -+inf from their clamps instead: README, Numerics). Selected on the storage
        // bits: the computed NaN did not survive Halide's emulated float16 conversion on targets
        // without F16C, which gave -inf for both signs of dy (found by review, 2026-12-07).
        // Under fast-math LLVM may still drop this select: it did in the predicated tail vector
        // of the float32 kernels (avx512_zen4 assembly, 2026-12-07), where the result is then
        // the x86 default NaN 0xFFC00000 of inf * -0 rather than 0x7FC00000 -- a NaN either way
        // (tests/test_gelu_kernels.cpp, InfiniteInputsAndGradients, accepts any NaN here).
        nan = nan || (cx.is_neg_inf && (cdy.is_pos_inf || cdy.is_neg_inf));
    }
    return select(nan, quiet_nan(st), dx);
}

}  // namespace gelukit
