// GELU mathematics shared by every gelukit generator (pointwise GELU and the FFN epilogues).
//
// Everything here builds Halide Exprs; nothing runs at generator time. Each helper states its
// formula, its valid range and its error. "Compute type" T is Float(64) ("acc" math on CPU:
// results within 1 float32 ULP) or Float(32) ("fast" math, and all half-precision storage).
//
// Why these formulations (see shared/docs/gelu-reference.md and halide-notes.md):
//  * Phi is never formed as 0.5*(1 + erf(x/sqrt2)): that cancels to 0 for x < -5.5 in float32.
//    We use the upper Gaussian tail Q(t) = Phi(-t) = phi(t) * M(t), t = |x| >= 0, where M is the
//    Mills ratio, fitted as M(t) = s*R(s), s = 4/(4+t) (scripts/fit_mills_ratio.py). Then
//    Phi(x) = 1 - Q(|x|) for x >= 0 and Q(|x|) for x < 0: no cancellation anywhere.
//  * Halide compiles with fast-math (reassociation, no-NaN/no-inf). Special values are therefore
//    classified on the integer bit pattern, and the place where the order of float32 operations
//    carries the accuracy (Cody-Waite range reduction) is done in int32 fixed point.
//    strict_float(e) is not needed for that. (Checked 2026-12-03, Halide 21, x86-64 AVX2+FMA
//    assembly: strict_float(e) makes only e's operations strict -- the module gets per-instruction
//    fast-math flags -- and a degree-6 Horner after a strict sub-expression still compiled to one
//    vfmadd per step. What it cannot give is an FMA-based error-free product: a*b -
//    strict_float(a*b) compiled to a constant 0 (LLVM merges the two multiplies, then folds the
//    difference), so exact products of floats still need a split like the t = t_hi + t_lo
//    one in gelu_erf; scripts/inspect_strict_float.py reproduces both.)
//  * No Halide tanh/exp/erf: tanh lowers to scalar libm on CPU, and Halide's erf cancels in the
//    left tail. exp is our own, returned as mantissa * 2^-n so that results deep in the
//    subnormal range are rounded once.
#pragma once

#include <cmath>
#include <vector>

#include "Halide.h"
#include "mills_ratio_coeffs.h"

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

// e^{-a} = mant * 2^{-n}, n = round(a / ln 2), mant = e^{-r}, r = a - n ln2 in [-0.35, 0.35].
// float64: a = a_hi (a_lo unused), Taylor degree 10, truncation 0.3466^11/11! = 2.2e-13 relative.
// float32: a = A * 2^-17 + a_lo with A an integer (A < 2^25, so a_hi = A*2^-17 <= 256 is exact)
//   and |a_lo| tiny. The Cody-Waite reduction a_hi - n*ln2_hi is done in int32 fixed point:
//   ln2_hi = 45426 * 2^-16, so a_hi - n*ln2_hi = (A - 2*n*45426) * 2^-17 exactly. Integer
//   arithmetic is immune to fast-math reassociation, which would otherwise fold ln2_hi + ln2_lo
//   back into one rounded ln2 (~25 ULP at n = 150), without any extra float op.
//   Taylor degree 7, truncation 5.3e-9 (0.09 ULP).
struct SplitExp {
    Halide::Expr mant;  // in [0.70, 1.42]
    Halide::Expr n;     // Int(32), >= 0
};

inline const double *inv_factorials() {
    static const double c[] = {1.0,       1.0,        1.0 / 2,      1.0 / 6,       1.0 / 24,      1.0 / 120,
                               1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800};
    return c;
}

inline SplitExp exp_neg_f64(const Halide::Expr &a) {
    using namespace Halide;
    const Type t = Float(64);
    const double ln2 = 0.693147180559945309417;
    Expr nf = round(a * k(t, 1.0 / ln2));
    Expr r = a - nf * k(t, ln2);
    return {horner(-r, inv_factorials(), 11, t), cast<int>(nf)};
}

inline SplitExp exp_neg_f32(const Halide::Expr &a_fixed, const Halide::Expr &a_lo) {
    using namespace Halide;
    const Type t = Float(32);
    const double ln2 = 0.693147180559945309417;
    const int ln2_hi_q16 = 45426;                          // ln2_hi = 45426/65536 = 0.693145751953125
    const double ln2_lo = ln2 - ln2_hi_q16 / 65536.0;      // 1.4286068e-6
    const double q = 1.0 / 131072.0;                       // 2^-17
    Expr a_hi = cast<float>(a_fixed) * k(t, q);
    Expr n = cast<int>(round(a_hi * k(t, 1.0 / ln2)));
    Expr r_hi = cast<float>(a_fixed - n * (2 * ln2_hi_q16)) * k(t, q);
    Expr r = r_hi - cast<float>(n) * k(t, ln2_lo) + a_lo;
    return {horner(-r, inv_factorials(), 8, t), n};
}

// v * 2^{-n} rounded once, for n in [0, 250] and v a normal value of magnitude >~ 2^-20.
// float64: 2^{-n} is a normal double, one multiply. float32: 2^{-n} may be subnormal, so scale
// in two steps of at most 2^-125 each; the first step is exact, the second rounds once. (The
// scale factors come from integer ops, so fast-math has no constant to fold them into.)
inline Halide::Expr ldexp_neg(const Halide::Expr &v, const Halide::Expr &n, const Halide::Type &t) {
    using namespace Halide;
    if (t.bits() == 64) {
        Expr bits = cast<int64_t>(1023 - n) << 52;
        return v * reinterpret(Float(64), bits);
    }
    Expr n1 = n >> 1;  // n >= 0
    Expr n2 = n - n1;
    Expr s1 = reinterpret(Float(32), (127 - n1) << 23);
    Expr s2 = reinterpret(Float(32), (127 - n2) << 23);
    return (v * s1) * s2;
}

// 1/d for d in [1, 2^30], to within 2^-46 relative in float64 (one float32 division refined by a
// Newton step, cheaper than a float64 division: vdivpd is ~4x the cost of vdivps per lane) or
// correctly rounded division in float32.
inline Halide::Expr reciprocal(const Halide::Expr &d, const Halide::Type &t) {
    using namespace Halide;
    if (t.bits() == 64) {
        Expr r0 = cast(t, 1.0f / cast<float>(d));
        return r0 + r0 * (k(t, 1.0) - d * r0);
    }
    return k(t, 1.0) / d;
}

}  // namespace detail

// GELU' far in the negative tail, beyond where the kernels evaluate it: a tiny negative number
// (the true value's sign). In float64 -1e-300 rather than -0: any finite float32 dy times it
// still rounds to the same signed zero as dy times the true value, and dy = +-inf gives -+inf,
// the limit, where -0 would give NaN. In float32 the true value is long below the subnormals
// (README, Reliability): -0.
inline Halide::Expr tail_gradient(const Halide::Type &t) {
    return detail::k(t, t.bits() == 64 ? -1e-300 : -0.0);
}

// Exact (erf) GELU of storage value x (already widened to the compute type t), with scale
// inv_s = 1/s (s = 1 for standard GELU): y = x * Phi(z), z = x * inv_s.
// Gradient: d/dx = Phi(z) + z phi(z).
//  Accurate (t = f64): M error 2.2e-10, exp 2e-13 -> results rounded once to float32.
//  Fast (t = f32): ~3-4 float32 ULP (exp, Mills polynomial and s each contribute ~1 ULP).
// Valid for every finite x; for |z| > 15 the forward tail term is exactly 0 (it underflows
// float32), for the float64 gradient beyond |z| > 20 (see tlim).
inline Halide::Expr gelu_erf(const Halide::Expr &x, const Halide::Expr &inv_s, bool gradient,
                             const Halide::Type &t) {
    using namespace Halide;
    using detail::k;
    const double tmax = coeffs::kMillsTMax;
    const double inv_sqrt_2pi = 0.398942280401432677940;

    bool f64 = t.bits() == 64;
    // Where the result stops being representable. The forward tail |x| Q(t) is below half the
    // smallest float32 subnormal beyond t = 15 (for s <= 4096, gelukit/gelu.h). The gradient
    // is multiplied by dy afterwards, and |dy| can reach 3.4e38: t phi(t) * 3.4e38 stays above
    // 0.7e-45 up to t ~ 19.5, so the float64 gradient is evaluated up to t = 20 (beyond it
    // even dy = FLT_MAX gives a product below half the smallest subnormal). The float32 path
    // cannot represent phi(t) there at all (it underflows near t = 14): fast kernels keep 15.
    const double tlim = (gradient && f64) ? 20.0 : tmax;
    Expr z = x * inv_s;
    Expr t_abs = min(abs(z), k(t, tlim));  // clamp: also keeps NaN/inf out of the polynomial

    // a = t^2/2. In float64, t (a float32 times a double scale) squared has relative error
    // 2^-53: |error| <= 112 * 2^-53, negligible. In float32 t^2 must not be rounded (a rounding
    // of 2^-24 * 112 would cost ~50 ULP in e^{-a}): split t = t_hi + t_lo with t_hi = T/256 on a
    // 2^-8 grid (T = floor(256 t) <= 3840, an integer op), so a_hi = T^2 * 2^-17 is an exact
    // integer in fixed point and only the small a_lo = t_lo (t_hi + t_lo/2) is rounded.
    detail::SplitExp e;
    if (f64) {
        e = detail::exp_neg_f64(k(t, 0.5) * t_abs * t_abs);
    } else {
        Expr T = cast<int>(floor(t_abs * k(t, 256.0)));
        Expr t_hi = cast<float>(T) * k(t, 1.0 / 256.0);
        Expr t_lo = t_abs - t_hi;
        e = detail::exp_neg_f32(T * T, t_lo * (t_hi + k(t, 0.5) * t_lo));
    }

    Expr s = k(t, coeffs::kMillsShift) * detail::reciprocal(k(t, coeffs::kMillsShift) + t_abs, t);
    Expr mills = f64 ? s * detail::horner(s, coeffs::kMillsAccurate, 12, t)
                     : s * detail::horner(s, coeffs::kMillsFast, 10, t);
    if (tlim > tmax) {
        // Beyond the fit (t in (15, 20], float64 gradient only): the asymptotic series
        // M(t) = (1/t)(1 - 1/t^2 + 3/t^4 - 15/t^6 + 105/t^8 - 945/t^10) (Abramowitz & Stegun
        // 26.2.12); the first omitted term, 10395/t^12, is 8e-11 relative at t = 15, below the
        // fit's 2.2e-10. In w = phi(t)(M - t) the error of M is divided by t^2 >= 225 again.
        const double asym[] = {1.0, -1.0, 3.0, -15.0, 105.0, -945.0};
        Expr u = detail::reciprocal(max(t_abs, k(t, tmax)), t);  // (t >= 15: no 1/0 in unused lanes)
        Expr mills_tail = u * detail::horner(u * u, asym, 6, t);
        mills = select(t_abs > k(t, tmax), mills_tail, mills);
    }
    Expr beyond = abs(z) > k(t, tlim);  // false for NaN; NaN is handled by the caller
    Expr positive = z >= k(t, 0.0);

    if (!gradient) {
        // Q(t) = e^{-t^2/2} M(t) / sqrt(2 pi);  y = x (1 - Q) for z >= 0, x Q for z < 0.
        // Beyond tmax the negative side is -0 (the true value is a negative number far below the
        // smallest subnormal) stated explicitly: x * (+0) would be -0 in IEEE arithmetic, but
        // Halide's simplifier folds x * 0 to +0.
        Expr q_mant = select(beyond, k(t, 0.0), e.mant * mills * k(t, inv_sqrt_2pi));
        Expr q = detail::ldexp_neg(q_mant, e.n, t);
        Expr y_neg = select(beyond, k(t, -0.0), f64 ? x * q : detail::ldexp_neg(x * q_mant, e.n, t));
        Expr y_pos = x - x * q;
        // x = -0: keep the sign (x - x*q would give +0).
        return select(x == k(t, 0.0), x, select(positive, y_pos, y_neg));
    }
    // w = phi(t) (M(t) - t);  GELU'(x) = 1 - w for z >= 0, w for z < 0 (Phi(-t) - t phi(t)).
    // Near the root z* = -0.7518 of GELU' this difference cancels: the error there is absolute.
    Expr w_mant = select(beyond, k(t, -0.0), e.mant * (mills - t_abs) * k(t, inv_sqrt_2pi));
    Expr w = select(beyond, tail_gradient(t), detail::ldexp_neg(w_mant, e.n, t));
    return select(positive, k(t, 1.0) - w, w);
}

// Sigmoid-type GELU forms, y = x * sigma(v(x)):
//   tanh form: v = 2u = 2 sqrt(2/pi) (x + 0.044715 x^3) (0.5(1+tanh u) = sigma(2u)),
//   sigmoid form: v = 1.702 x.
// sigma is evaluated without overflow from e = e^{-|v|} <= 1:
//   sigma(v) = 1/(1+e) for v >= 0, e/(1+e) for v < 0;  sigma(1-sigma) = e/(1+e)^2.
// Gradient: sigma(v) + x v'(x) sigma(v)(1 - sigma(v)).
// x is clamped to +-lim before v is formed (no overflow of x^3 for any finite x); lim is where
// the tail e^{-|v|} times |x| is below float32's smallest subnormal, so the clamp changes no
// result; results on the negative side beyond it are -0.
//  Accurate (f64): within 1 float32 ULP of the formula evaluated in double.
//  Fast (f32): v carries a rounding error of |v| * 2^-24, which the tail amplifies to up to
//  ~|v| ULP for large negative x (documented in the README's accuracy table).
inline Halide::Expr gelu_sigma(const Halide::Expr &x, GeluForm form, bool gradient, const Halide::Type &t) {
    using namespace Halide;
    using detail::k;
    const double sqrt_2_over_pi = 0.797884560802865355880;
    const double c1 = 2.0 * sqrt_2_over_pi;
    const double c3 = 2.0 * sqrt_2_over_pi * 0.044715;
    bool f64 = t.bits() == 64;
    // Forward: v(12) = 142 (tanh), v(70) = 119 (sigmoid): |x| e^{-|v|} < 1e-50 beyond, far
    // below float32's smallest subnormal. The gradient is multiplied by dy (up to 3.4e38), so
    // its float64 evaluation needs |x v'(x)| e^{-|v|} < 2e-84 beyond the clamp: tanh at
    // x = 14 (v = 218: 610 * 2.6e-95), sigmoid at x = 120 (v = 204: 204 * 2.5e-89). The float32
    // path keeps the forward limits (its 2^-n scaling holds n <= 252, and e^{-|v|} underflows
    // float32 long before).
    const bool wide = gradient && f64;
    const double lim = form == GeluForm::Tanh ? (wide ? 14.0 : 12.0) : (wide ? 120.0 : 70.0);

    Expr xc = clamp(x, k(t, -lim), k(t, lim));
    Expr v, dv;
    if (form == GeluForm::Tanh) {
        Expr x2 = xc * xc;
        v = xc * (k(t, c1) + k(t, c3) * x2);
        dv = k(t, c1) + k(t, 3.0 * c3) * x2;
    } else {
        v = k(t, 1.702) * xc;
        dv = k(t, 1.702);
    }
    // e^{-|v|}; in float32 |v| <= 142.5 goes to 2^-17 fixed point (A < 2^25; A is even above 2^24,
    // so float32 holds it exactly): exact where the
    // float32 spacing of |v| is >= 2^-17, and the remainder is carried exactly in a_lo otherwise.
    detail::SplitExp e;
    if (f64) {
        e = detail::exp_neg_f64(abs(v));
    } else {
        Expr A = cast<int>(round(abs(v) * k(t, 131072.0)));
        e = detail::exp_neg_f32(A, abs(v) - cast<float>(A) * k(t, 1.0 / 131072.0));
    }
    Expr ev = detail::ldexp_neg(e.mant, e.n, t);  // e^{-|v|}; may underflow in float32, harmlessly
    Expr inv = detail::reciprocal(k(t, 1.0) + ev, t);
    Expr positive = v >= k(t, 0.0);
    Expr below = x < k(t, -lim);

    if (!gradient) {
        Expr y_pos = x * inv;
        Expr y_neg = f64 ? (xc * ev) * inv : detail::ldexp_neg(xc * e.mant * inv, e.n, t);
        return select(x == k(t, 0.0), x, positive, y_pos, below, k(t, -0.0), y_neg);
    }
    Expr g_pos = inv + xc * dv * ev * inv * inv;
    Expr core = e.mant * inv * (k(t, 1.0) + xc * dv * inv);
    Expr g_neg = detail::ldexp_neg(core, e.n, t);
    // Beyond -lim the gradient is negligible even times FLT_MAX (see lim).
    return select(positive, g_pos, below, tail_gradient(t), g_neg);
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

// GELU(x) or GELU'(x) of a storage value, in compute type t, with the infinities applied.
// NaN lanes hold an unspecified value: callers override them (gelu_forward_output & co).
// inv_s (1/s in the compute type) is only used by the erf form.
// bf16_bits: see storage_to_f32.
inline Halide::Expr gelu_eval(const Halide::Expr &x_storage, GeluForm form, bool gradient,
                              const Halide::Expr &inv_s, const Halide::Type &t, bool bf16_bits = false) {
    using namespace Halide;
    Expr xt = cast(t, storage_to_f32(x_storage, bf16_bits));  // exact for fp16/bf16
    Expr v = form == GeluForm::Erf ? gelu_erf(xt, inv_s, gradient, t)
                                   : gelu_sigma(xt, form, gradient, t);
    StorageClass c = classify(x_storage);
    if (!gradient) {
        return select(c.is_pos_inf, xt, c.is_neg_inf, detail::k(t, -0.0), v);
    }
    return select(c.is_pos_inf, detail::k(t, 1.0), c.is_neg_inf, detail::k(t, -0.0), v);
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
    Expr g = gelu_eval(x_storage, form, /*gradient=*/true, inv_s, t, bf16_bits);
    Expr dx = narrow_to_storage(cast(t, storage_to_f32(dy_storage, bf16_bits)) * g, st, bf16_bits);
    return select(classify(x_storage).is_nan || classify(dy_storage).is_nan, quiet_nan(st), dx);
}

}  // namespace gelukit
