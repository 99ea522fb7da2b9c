// Independent high-precision references for gelukit's tests and accuracy tool.
//
// Written from the textbook definitions with the C++ standard library's double (and long
// double) erf/erfc/exp, deliberately NOT from the kernels' formulation (no Mills ratio, no
// range reduction, no polynomial fits). Each function returns the exact value as a double
// `hi` plus a tiny `lo` correction whose only job is to break exact ties when rounding (e.g.
// GELU(x) = x/2 - O(x^2) for tiny x, where x/2 can be a float32 midpoint).
#pragma once

#include <cmath>

#include <cstdint>

#include "gelukit/gelu.h"
#include "gelukit/tensor.h"

namespace gelukit::test {

struct RefValue {
    double hi;
    double lo;  // sign carries the direction of the (possibly underflowed) remainder
};

// GELU (forward) and GELU' (backward) in double, for every finite or infinite float input.
// Erf form: x * Phi(x/s). Special values follow gelu-reference.md (-inf -> -0, NaN -> NaN).
RefValue gelu_ref(Form form, double x, double s = 1.0);
RefValue gelu_grad_ref(Form form, double x, double s = 1.0);
// dy * g, the reference of dx = dy * GELU'(x) before rounding: hi = dy g.hi rounded, lo = its
// rounding error (by an FMA) plus dy g.lo, so that a product on a tie of the storage type still
// rounds the way the exact one does. With dy = +-inf (or an overflowing product) it is the product
// alone (a zero remainder would give inf * 0 = NaN, a remainder of the other sign inf - inf).
inline RefValue times(double dy, const RefValue &g) {
    const double p = dy * g.hi;
    if (!std::isfinite(p)) {
        return {p, 0.0};
    }
    if (p == 0.0) {
        return {p, dy * g.lo};
    }
    // p's own rounding error (exact by the FMA unless it falls below the subnormal range, where
    // the 2^-1074 granularity of p is far finer than any storage type's) plus dy lo.
    return {p, std::fma(dy, g.hi, -p) + dy * g.lo};
}

// Rounds hi + lo once, to nearest even, into the storage type; returns the storage bits
// (fp32: 32 bits; fp16/bf16: 16 bits) zero-extended.
uint32_t round_to_bits(RefValue v, DType dt);

// Conversions between storage bits and double (exact).
double bits_to_double(uint32_t bits, DType dt);
uint32_t float_to_bits(float f);
float bits_to_float(uint32_t b);
uint16_t float_to_half_bits_rne(float f);  // reference conversion, independent of F16C

// Distance in ULPs between two storage values of the same dtype, counting subnormal spacing;
// +0 and -0 are 0 apart. NaN vs NaN is 0; NaN vs a number, and inf vs anything but the same
// inf, is a large sentinel (2^40).
int64_t ulp_distance(uint32_t a, uint32_t b, DType dt);

bool bits_is_nan(uint32_t bits, DType dt);

// The root of GELU' for each form (where the backward error is measured absolutely):
// erf: -0.7517915...; computed by bisection on the reference.
double grad_root(Form form);

}  // namespace gelukit::test
