#include "reference.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace gelukit::test {
namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2 pi)

// Phi(z) as (value) with full relative accuracy on both sides.
double phi_upper_tail(double t) {  // Q(t) = P(N > t)
    return 0.5 * std::erfc(t / kSqrt2);
}

// Logistic sigma(v) without cancellation or overflow.
double sigma(double v) {
    if (v >= 0) {
        return 1.0 / (1.0 + std::exp(-v));
    }
    double e = std::exp(v);
    return e / (1.0 + e);
}

}  // namespace

RefValue gelu_ref(Form form, double x, double s) {
    if (std::isnan(x)) {
        return {x, 0};
    }
    if (std::isinf(x)) {
        return {x > 0 ? x : -0.0, 0};
    }
    switch (form) {
    case Form::Erf: {
        double z = x / s;
        if (std::fabs(z) < 1.0) {
            // x Phi(z) = x/2 + (x/2) erf(z/sqrt2): exact half plus a small, accurate correction.
            return {0.5 * x, 0.5 * x * std::erf(z / kSqrt2)};
        }
        if (z < 0) {
            return {x * phi_upper_tail(-z), 0};
        }
        return {x * (1.0 - phi_upper_tail(z)), 0};
    }
    case Form::Tanh: {
        // 0.5 x (1 + tanh(u)) = x sigma(2u); for u >= 0 the tanh form itself is stable.
        long double xl = x;
        long double u = kSqrt2OverPi * (xl + 0.044715L * xl * xl * xl);
        if (std::fabs(u) < 1.0L) {
            // Exact half plus the correction, as for erf: for a subnormal x, x/2 can be a tie
            // of the storage type that only the correction x/2 tanh(u) ~ 0.4 x^2 breaks.
            return {0.5 * x, static_cast<double>(0.5L * xl * std::tanh(u))};
        }
        if (u >= 0) {
            return {static_cast<double>(0.5L * xl * (1.0L + std::tanh(u))), 0};
        }
        long double e = std::exp(2.0L * u);  // 1 + tanh(u) = 2 e^{2u} / (1 + e^{2u})
        return {static_cast<double>(xl * e / (1.0L + e)), 0};
    }
    case Form::Sigmoid:
        if (std::fabs(x) < 1.0) {
            // x sigma(v) = x/2 + (x/2) tanh(v/2), v = 1.702 x: exact half plus the correction
            // (ties of subnormal x, see the tanh form).
            return {0.5 * x, 0.5 * x * std::tanh(0.5 * 1.702 * x)};
        }
        return {x * sigma(1.702 * x), 0};
    }
    return {std::numeric_limits<double>::quiet_NaN(), 0};
}

namespace {

// 1/2 + d as hi + lo (Fast2Sum, exact for |d| <= 1/2): hi alone is 1/2 wherever |d| < 2^-54, and
// lo keeps d, which decides ties of dy GELU'(x) (dy an odd subnormal of the storage type:
// dy/2 lies halfway between two neighbours, and d's sign says which way the true value lies).
RefValue half_plus(double d) {
    const double hi = 0.5 + d;
    return {hi, (0.5 - hi) + d};
}

}  // namespace

RefValue gelu_grad_ref(Form form, double x, double s) {
    if (std::isnan(x)) {
        return {x, 0};
    }
    if (std::isinf(x)) {
        return {x > 0 ? 1.0 : -0.0, 0};
    }
    // Near 0, GELU'(x) = 1/2 + d(x) with d computed on its own (d -> 0 like x): see half_plus.
    // Phi(z) - 1/2 = erf(z/sqrt2)/2 and sigma(v) - 1/2 = tanh(v/2)/2 keep their relative precision
    // as z, v -> 0, where 1 - Q(z) or sigma(v) round to 1/2.
    if (std::fabs(x) < 0.25 * (form == Form::Erf ? s : 1.0)) {
        switch (form) {
        case Form::Erf: {
            const double z = x / s;
            return half_plus(0.5 * std::erf(z * 0.70710678118654752440) + z * kInvSqrt2Pi * std::exp(-0.5 * z * z));
        }
        case Form::Tanh: {
            const long double xl = x;
            const long double u = kSqrt2OverPi * (xl + 0.044715L * xl * xl * xl);
            const long double du = kSqrt2OverPi * (1.0L + 3.0L * 0.044715L * xl * xl);
            const long double th = std::tanh(u);
            return half_plus(static_cast<double>(0.5L * th + 0.5L * xl * (1.0L - th * th) * du));
        }
        case Form::Sigmoid: {
            const double v = 1.702 * x;
            return half_plus(0.5 * std::tanh(0.5 * v) + v * sigma(v) * sigma(-v));
        }
        }
    }
    switch (form) {
    case Form::Erf: {
        // d/dx [x Phi(x/s)] = Phi(z) + z phi(z), z = x/s.
        double z = x / s;
        double pdf = kInvSqrt2Pi * std::exp(-0.5 * z * z);
        if (z < 0) {
            return {phi_upper_tail(-z) + z * pdf, 0};
        }
        return {1.0 - phi_upper_tail(z) + z * pdf, 0};
    }
    case Form::Tanh: {
        long double xl = x;
        long double u = kSqrt2OverPi * (xl + 0.044715L * xl * xl * xl);
        long double du = kSqrt2OverPi * (1.0L + 3.0L * 0.044715L * xl * xl);
        // d/dx 0.5 x (1 + tanh u) = 0.5 (1 + tanh u) + 0.5 x sech^2(u) u'
        long double e = std::exp(-2.0L * std::fabs(u));           // e^{-2|u|}
        long double sech2 = 4.0L * e / ((1.0L + e) * (1.0L + e));  // sech^2 u
        long double half_one_plus_tanh = u >= 0 ? 1.0L / (1.0L + e) : e / (1.0L + e);
        return {static_cast<double>(half_one_plus_tanh + 0.5L * xl * sech2 * du), 0};
    }
    case Form::Sigmoid: {
        double sg = sigma(1.702 * x);
        double one_minus = sigma(-1.702 * x);
        return {sg + 1.702 * x * sg * one_minus, 0};
    }
    }
    return {std::numeric_limits<double>::quiet_NaN(), 0};
}

namespace {

struct Format {
    int mant_bits;  // explicit mantissa bits
    int emin;       // exponent of the smallest normal
    int emax;       // exponent of the largest finite
};

Format format_of(DType dt) {
    switch (dt) {
    case DType::F32:
        return {23, -126, 127};
    case DType::BF16:
        return {7, -126, 127};
    case DType::F16:
        return {10, -14, 15};
    }
    return {23, -126, 127};
}

uint32_t encode(double v, DType dt) {
    // v is exactly representable in dt (or +-inf / +-0 / NaN).
    if (dt == DType::F32) {
        return float_to_bits(static_cast<float>(v));
    }
    if (dt == DType::BF16) {
        return float_to_bits(static_cast<float>(v)) >> 16;  // exact: v has <= 8 significant bits
    }
    return float_to_half_bits_rne(static_cast<float>(v));  // exact: v is an fp16 value
}

}  // namespace

uint32_t round_to_bits(RefValue v, DType dt) {
    double x = v.hi + v.lo;
    double err = (v.hi - x) + v.lo;  // TwoSum remainder (|hi| >= |lo| in every caller)
    if (std::isnan(x)) {
        return dt == DType::F32 ? 0x7FC00000u : dt == DType::BF16 ? 0x7FC0u : 0x7E00u;
    }
    Format f = format_of(dt);
    if (x == 0 || std::isinf(x)) {
        if (x == 0 && v.hi == 0) {
            // A zero keeps its sign: lo's where lo carries an underflowed remainder, else hi's
            // (-0 + 0 would be +0 in IEEE arithmetic).
            x = v.lo != 0 ? std::copysign(0.0, v.lo) : v.hi;
        }
        return encode(x, dt);
    }
    int e;
    std::frexp(std::fabs(x), &e);  // |x| = m 2^e, m in [0.5, 1): leading bit 2^(e-1)
    int qe = std::max(e - 1, f.emin) - f.mant_bits;
    double scaled = std::ldexp(x, -qe);  // exact (power-of-two scaling, no underflow here)
    double r = std::nearbyint(scaled);   // round to nearest even
    if (std::fabs(scaled - std::trunc(scaled)) == 0.5 && err != 0) {
        // An exact tie in double, but the true value is x + err: move away from zero when err
        // has x's sign, else toward zero.
        bool away = (err > 0) == (x > 0);
        r = std::trunc(scaled) + (away ? std::copysign(1.0, x) : 0.0);
    }
    double result = std::ldexp(r, qe);
    double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -f.mant_bits), f.emax);
    if (std::fabs(result) > max_finite) {
        result = std::copysign(std::numeric_limits<double>::infinity(), x);
    }
    if (result == 0) {
        result = std::copysign(0.0, x);
    }
    return encode(result, dt);
}

uint32_t float_to_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

float bits_to_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

uint16_t float_to_half_bits_rne(float f) {
    // Reference conversion (bit manipulation, round to nearest even), independent of F16C.
    uint32_t b = float_to_bits(f);
    uint32_t sign = (b >> 16) & 0x8000u;
    uint32_t abs = b & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) {
        return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
    }
    if (abs >= 0x477FF000u) {  // >= 65520: rounds to inf
        return static_cast<uint16_t>(sign | 0x7C00u);
    }
    double a = static_cast<double>(bits_to_float(abs));
    // quantum: 2^-24 below 2^-14 (subnormals), else 2^(e-10)
    int e;
    std::frexp(a, &e);
    int qe = std::max(e - 1, -14) - 10;
    double r = std::nearbyint(std::ldexp(a, -qe));
    double v = std::ldexp(r, qe);
    if (v == 0) {
        return static_cast<uint16_t>(sign);
    }
    std::frexp(v, &e);
    uint32_t h;
    if (e - 1 < -14) {
        h = static_cast<uint32_t>(std::ldexp(v, 24));  // subnormal mantissa
    } else {
        uint32_t mant = static_cast<uint32_t>(std::ldexp(v, -(e - 1) + 10)) - 1024u;
        h = (static_cast<uint32_t>(e - 1 + 15) << 10) | mant;
    }
    return static_cast<uint16_t>(sign | h);
}

double bits_to_double(uint32_t bits, DType dt) {
    switch (dt) {
    case DType::F32:
        return bits_to_float(bits);
    case DType::BF16:
        return bits_to_float(bits << 16);
    case DType::F16: {
        uint32_t sign = bits & 0x8000u, ex = (bits >> 10) & 0x1Fu, mant = bits & 0x3FFu;
        double v;
        if (ex == 0) {
            v = std::ldexp(static_cast<double>(mant), -24);
        } else if (ex == 31) {
            v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
        } else {
            v = std::ldexp(static_cast<double>(mant | 0x400u), static_cast<int>(ex) - 25);
        }
        return sign ? -v : v;
    }
    }
    return 0;
}

bool bits_is_nan(uint32_t bits, DType dt) {
    return std::isnan(bits_to_double(bits, dt));
}

int64_t ulp_distance(uint32_t a, uint32_t b, DType dt) {
    bool na = bits_is_nan(a, dt), nb = bits_is_nan(b, dt);
    if (na || nb) {
        return na && nb ? 0 : (int64_t(1) << 40);
    }
    // An infinity is only 0 ULP from itself: an overflow to inf must not pass as 1 ULP from
    // the largest finite value.
    if (std::isinf(bits_to_double(a, dt)) != std::isinf(bits_to_double(b, dt)) ||
        (std::isinf(bits_to_double(a, dt)) && a != b)) {
        return int64_t(1) << 40;
    }
    const int width = dt == DType::F32 ? 32 : 16;
    const uint32_t sign_bit = 1u << (width - 1);
    auto key = [&](uint32_t v) -> int64_t {
        int64_t mag = v & (sign_bit - 1);
        return (v & sign_bit) ? -mag : mag;
    };
    int64_t d = key(a) - key(b);
    return d < 0 ? -d : d;
}

double grad_root(Form form) {
    // GELU' < 0 at -1.5, > 0 at 0 for all three forms.
    double lo = -1.5, hi = 0.0;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        RefValue g = gelu_grad_ref(form, mid);
        (g.hi + g.lo < 0 ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

}  // namespace gelukit::test
