// The properties and known values of shared/docs/gelu-reference.md, checked first on the
// reference (so the reference itself is trusted) and then on the default kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "gelukit/gelu.h"
#include "support/harness.h"
#include "support/reference.h"
#include "support/tolerances.h"

namespace gelukit::test {
namespace {

double ref(double x, Form f = Form::Erf) {
    RefValue v = gelu_ref(f, x);
    return v.hi + v.lo;
}
double dref(double x, Form f = Form::Erf) {
    RefValue v = gelu_grad_ref(f, x);
    return v.hi + v.lo;
}

TEST(Reference, QuotedValuesOfTheReferenceDoc) {
    struct Row {
        double x, gelu, grad, tanh_form, sigmoid_form;
    };
    const Row rows[] = {
        {-10, -7.619853e-23, -7.618400e-22, -0.0, -4.057961e-07},
        {-6, -5.919526e-09, -3.546871e-08, -8.439649e-11, -2.203535e-04},
        {-4, -1.266850e-04, -5.036497e-04, -7.024595e-05, -4.414724e-03},
        {-3, -4.049694e-03, -1.194565e-02, -3.637392e-03, -1.807131e-02},
        {-1, -1.586553e-01, -8.331547e-02, -1.588080e-01, -1.542042e-01},
        {-0.5, -1.542688e-01, 1.325049e-01, -1.542860e-01, -1.496116e-01},
        {0, 0, 0.5, 0, 0},
        {0.5, 3.457312e-01, 8.674951e-01, 3.457140e-01, 3.503884e-01},
        {1, 8.413447e-01, 1.083315e+00, 8.411920e-01, 8.457958e-01},
        {3, 2.995950e+00, 1.011946e+00, 2.996363e+00, 2.981929e+00},
        {4, 3.999873e+00, 1.000504e+00, 3.999930e+00, 3.995585e+00},
    };
    auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b) + 1e-300; };
    for (const Row &r : rows) {
        EXPECT_TRUE(close(ref(r.x), r.gelu)) << r.x << ": " << ref(r.x);
        EXPECT_TRUE(close(dref(r.x), r.grad)) << r.x << ": " << dref(r.x);
        if (r.x != -10) {  // the doc's tanh value at -10 is the float32 underflow, -0
            EXPECT_TRUE(close(ref(r.x, Form::Tanh), r.tanh_form)) << r.x << ": " << ref(r.x, Form::Tanh);
        }
        EXPECT_TRUE(close(ref(r.x, Form::Sigmoid), r.sigmoid_form)) << r.x << ": " << ref(r.x, Form::Sigmoid);
    }
}

TEST(Reference, Properties) {
    const double xstar = grad_root(Form::Erf);
    EXPECT_NEAR(xstar, -0.75179152, 1e-8);
    EXPECT_NEAR(ref(xstar), -0.16997121, 1e-8);
    EXPECT_NEAR(0.5 * std::erfc(-xstar / std::sqrt(2.0)), 0.22608822, 1e-8);
    EXPECT_NEAR(dref(std::sqrt(2.0)), 1.1289, 1e-4);  // max of GELU'
    // GELU(x) - GELU(-x) = x for all three forms.
    for (Form f : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
        for (double x : {0.1, 0.75, 1.5, 3.0, 7.0}) {
            EXPECT_NEAR(ref(x, f) - ref(-x, f), x, 1e-14 * x) << form_name(f) << " x=" << x;
        }
    }
    EXPECT_NEAR(ref(-13), -7.9523137e-38, 1e-44);
}

TEST(KernelProperties, ValuesAndIdentities) {
    EXPECT_EQ(forward_f32(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(forward_f32(-0.0f)));
    EXPECT_EQ(backward_f32(0.0f, 1.0f), 0.5f);
    // Minimum of GELU: the kernel's value at the float nearest x* equals -0.16997121 to 1 ULP.
    float xstar = static_cast<float>(grad_root(Form::Erf));
    EXPECT_NEAR(forward_f32(xstar), -0.16997121f, 2e-8f);
    // Not monotonic: decreasing left of x*, increasing right of it.
    EXPECT_GT(forward_f32(-1.5f), forward_f32(xstar));
    EXPECT_GT(forward_f32(0.0f), forward_f32(xstar));
    // GELU(x) - GELU(-x) = x to within the float32 rounding of the two outputs.
    for (float x : {0.25f, 0.75f, 1.5f, 3.0f, 5.0f}) {
        EXPECT_NEAR(forward_f32(x) - forward_f32(-x), x, 2e-7f * x) << x;
    }
    // GELU' > 1 for x > 0.7518, GELU'(-4) < 0.
    EXPECT_GT(backward_f32(0.76f, 1.0f), 1.0f);
    EXPECT_LT(backward_f32(0.74f, 1.0f), 1.0f);
    EXPECT_NEAR(backward_f32(-4.0f, 1.0f), -5.0365e-4f, 1e-8f);
    // Left tail like -phi(x), subnormal below -13.146, -0 below -14.357; large x is exact.
    EXPECT_NEAR(forward_f32(-10.0f), -7.6198530e-23f, 1e-29f);
    EXPECT_EQ(std::fpclassify(forward_f32(-13.5f)), FP_SUBNORMAL);
    EXPECT_EQ(forward_f32(-14.5f), 0.0f);
    EXPECT_TRUE(std::signbit(forward_f32(-14.5f)));
    EXPECT_EQ(forward_f32(3e38f), 3e38f);
    EXPECT_EQ(forward_f32(-3e38f), 0.0f);
    EXPECT_TRUE(std::isnan(forward_f32(NAN)));
    EXPECT_TRUE(std::isnan(backward_f32(NAN, 1.0f)));
    EXPECT_TRUE(std::isnan(backward_f32(1.0f, NAN)));
}

// Far in the negative tail GELU(x) underflows to -0 and dy GELU'(x) to -0 times dy's sign,
// for every finite x (the kernels clamp x before x^3 or e^{-|v|} could overflow, and the
// float32 tanh/sigmoid forward relies on the clamped value rounding to -0 rather than a select,
// gelu_math.h): bit-exact signed zeros, which ulp_distance (+0 == -0) does not check.
TEST(KernelProperties, NegativeTailGivesSignedZero) {
    for (Math m : {Math::Accurate, Math::Fast}) {
        for (Form f : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
            GeluOptions o;
            o.form = f;
            o.math = m;
            // The first x is inside every clamp of its form (erf t = 15 / 20, tanh 12 / 14,
            // sigmoid 70 / 120), where the formula itself underflows: -14.7 (erf: |GELU| and
            // |GELU'| ~ 1e-47), -11.5 (tanh: e^{-|v|} ~ 7e-56), -66 (sigmoid: e^{-|v|} ~ 2e-49).
            const float inside = f == Form::Erf ? -14.7f : f == Form::Tanh ? -11.5f : -66.0f;
            const std::vector<float> xs = {inside, -100.0f, -130.0f, -1e4f, -1e10f, -3e38f,
                                           -std::numeric_limits<float>::max()};
            std::vector<uint32_t> x_bits, one, minus_one;
            for (float x : xs) {
                x_bits.push_back(float_to_bits(x));
                one.push_back(float_to_bits(1.0f));
                minus_one.push_back(float_to_bits(-1.0f));
            }
            const std::vector<uint32_t> y = run_forward(x_bits, DType::F32, o);
            const std::vector<uint32_t> dx_pos = run_backward(x_bits, one, DType::F32, o);
            const std::vector<uint32_t> dx_neg = run_backward(x_bits, minus_one, DType::F32, o);
            for (size_t i = 0; i < x_bits.size(); i++) {
                const char *mn = m == Math::Fast ? "fast " : "acc ";
                EXPECT_EQ(y[i], 0x80000000u) << mn << form_name(f) << " forward x=" << xs[i];
                EXPECT_EQ(dx_pos[i], 0x80000000u) << mn << form_name(f) << " backward dy=1 x=" << xs[i];
                EXPECT_EQ(dx_neg[i], 0x00000000u) << mn << form_name(f) << " backward dy=-1 x=" << xs[i];
            }
        }
    }
}

TEST(KernelProperties, ApproximationsStayWithinTheirKnownDistanceOfExact) {
    // tanh form within 4.73e-4 of exact GELU, sigmoid form within 0.0203 (gelu-reference.md).
    GeluOptions tanh_o, sig_o;
    tanh_o.form = Form::Tanh;
    sig_o.form = Form::Sigmoid;
    double max_tanh = 0, max_sig = 0;
    for (int i = -4000; i <= 4000; i++) {
        float x = i / 500.0f;
        double exact = ref(x);
        max_tanh = std::max(max_tanh, std::fabs(forward_f32(x, tanh_o) - exact));
        max_sig = std::max(max_sig, std::fabs(forward_f32(x, sig_o) - exact));
    }
    EXPECT_NEAR(max_tanh, 4.73e-4, 0.01e-4);
    EXPECT_NEAR(max_sig, 0.0203, 0.0001);
}

// For a subnormal x with an odd last bit, x/2 is exactly halfway between two representable
// values, and GELU(x) = x/2 + c x^2 + ... (c = 1/sqrt(2 pi), 0.40 for tanh, 0.43 for sigmoid)
// decides the rounding: up for x > 0 (the smallest subnormal stays itself), towards zero for
// x < 0 (-0). A kernel (or reference) that rounds x/2 to even gets both wrong.
TEST(Reference, SubnormalTiesFollowTheSquareTerm) {
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        const double tiny = bits_to_double(1, dt);                 // smallest subnormal
        const uint32_t sign = dt == DType::F32 ? 0x80000000u : 0x8000u;
        for (Form f : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
            EXPECT_EQ(round_to_bits(gelu_ref(f, tiny), dt), 1u) << form_name(f);
            EXPECT_EQ(round_to_bits(gelu_ref(f, -tiny), dt), sign) << form_name(f);
        }
    }
}

TEST(KernelProperties, SubnormalTiesFollowTheSquareTerm) {
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        const uint32_t sign = dt == DType::F32 ? 0x80000000u : 0x8000u;
        for (Form f : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
            GeluOptions o;
            o.form = f;
            // smallest subnormal and its negation, the next odd one (3 -> x/2 = 1.5 -> 2)
            std::vector<uint32_t> out = run_forward({1u, sign | 1u, 3u}, dt, o);
            EXPECT_EQ(out[0], 1u) << form_name(f) << " " << dtype_name(dt);
            EXPECT_EQ(out[1], sign) << form_name(f) << " " << dtype_name(dt);
            EXPECT_EQ(out[2], 2u) << form_name(f) << " " << dtype_name(dt);
            // GELU'(+-0) is exactly 1/2: dx = dy/2 ties of subnormal dy round to even (1 -> 0,
            // 3 -> 2, -1 -> -0), whatever bias the forward's tie handling carries.
            const uint32_t zero = 0, neg_zero = sign;
            std::vector<uint32_t> dx = run_backward({zero, neg_zero, zero}, {1u, 3u, sign | 1u}, dt, o);
            EXPECT_EQ(dx[0], 0u) << form_name(f) << " " << dtype_name(dt);
            EXPECT_EQ(dx[1], 2u) << form_name(f) << " " << dtype_name(dt);
            EXPECT_EQ(dx[2], sign) << form_name(f) << " " << dtype_name(dt);
        }
    }
}

TEST(KernelProperties, ScaledForm) {
    // x Phi(x/s): minimum -0.170 s at x = -0.752 s; s -> 0 approaches ReLU; large s -> x/2.
    for (float s : {0.25f, 2.0f, 8.0f}) {
        GeluOptions o;
        o.scale = s;
        float xm = static_cast<float>(grad_root(Form::Erf) * s);
        EXPECT_NEAR(forward_f32(xm, o), -0.16997121 * s, 1e-6 * s) << s;
        uint32_t want = round_to_bits(gelu_ref(Form::Erf, 1.3, s), DType::F32);
        EXPECT_LE(ulp_distance(float_to_bits(forward_f32(1.3f, o)), want, DType::F32), 1) << s;
        uint32_t gwant = round_to_bits(gelu_grad_ref(Form::Erf, -0.4, s), DType::F32);
        EXPECT_LE(ulp_distance(float_to_bits(backward_f32(-0.4f, 1.0f, o)), gwant, DType::F32), 2) << s;
    }
    // Scales that are not powers of two (1/s inexact), over the whole interesting range of z:
    // the acc contract (1 ULP forward, 2 ULP backward outside the root window) still holds.
    // 4096 (the largest accepted scale) and 1000: x reaches +-1.6e5, where x * Phi(x/s) beyond
    // the fit's |z| <= 15 must still round to -0 (it does up to s ~ 1.27e4, hence the limit).
    for (float s : {3.0f, 0.1f, 1.7f, 1000.0f, 4096.0f}) {
        GeluOptions o;
        o.scale = s;
        int64_t worst_f = 0, worst_b = 0;
        const double root = grad_root(Form::Erf) * s;
        for (int i = -4000; i <= 4000; i++) {
            float x = static_cast<float>(i * 0.01 * s) * 1.0001f;  // z in about [-40, 40]
            uint32_t fw = round_to_bits(gelu_ref(Form::Erf, x, s), DType::F32);
            worst_f = std::max(worst_f, ulp_distance(float_to_bits(forward_f32(x, o)), fw, DType::F32));
            if (std::fabs(x - root) >= 0.01) {
                uint32_t bw = round_to_bits(gelu_grad_ref(Form::Erf, x, s), DType::F32);
                worst_b = std::max(worst_b, ulp_distance(float_to_bits(backward_f32(x, 1.0f, o)), bw, DType::F32));
            }
        }
        EXPECT_LE(worst_f, 1) << "s = " << s;
        EXPECT_LE(worst_b, 2) << "s = " << s;
    }
    GeluOptions tiny;
    tiny.scale = 1e-6f;
    EXPECT_EQ(forward_f32(0.5f, tiny), 0.5f);  // ReLU limit
    EXPECT_EQ(forward_f32(-0.5f, tiny), 0.0f);
    GeluOptions huge;
    huge.scale = kGeluMaxScale;
    EXPECT_NEAR(forward_f32(0.5f, huge), 0.25f, 3e-5f);  // towards the x/2 limit (0.25 + 2.4e-5)
}

TEST(KernelProperties, InfiniteDyTimesNonzeroGradient) {
    // dx = dy * GELU'(x) with dy = +-inf is +-inf (sign of dy times sign of GELU') wherever
    // GELU'(x) != 0: at x = +-0 (GELU' = 1/2), next to 0, on both sides of the root and far out.
    // A kernel that lets fast-math distribute dy over a sum (dy (1 - w) -> dy - dy w) gets
    // inf - inf = NaN instead (the float32 tanh gradient did at x = +-0; review, 2026-12-07).
    const float xs_f[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 1.0f, -1.0f, 3.0f, -3.0f, 9.0f, -9.0f};
    for (Math m : {Math::Accurate, Math::Fast}) {
        for (Form f : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
            GeluOptions o;
            o.form = f;
            o.math = m;
            std::vector<uint32_t> xs, dys;
            for (float x : xs_f) {
                for (float dy : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
                    xs.push_back(float_to_bits(x));
                    dys.push_back(float_to_bits(dy));
                }
            }
            std::vector<uint32_t> got = run_backward(xs, dys, DType::F32, o);
            for (size_t i = 0; i < xs.size(); i++) {
                const double x = bits_to_double(xs[i], DType::F32), dy = bits_to_double(dys[i], DType::F32);
                const uint32_t want = round_to_bits(times(dy, gelu_grad_ref(f, x, 1.0)), DType::F32);
                EXPECT_EQ(got[i], want) << (m == Math::Fast ? "fast " : "acc ") << form_name(f) << " x=" << x
                                        << " dy=" << dy << std::hex << " got 0x" << got[i] << " want 0x" << want;
            }
        }
    }
}

TEST(KernelProperties, GradientTailTimesLargeDy) {
    // dx = dy * GELU'(x) far in the negative tail: GELU'(x) is tiny (1e-80 and below) but a
    // large dy makes the product a normal or subnormal float32, so the kernels must evaluate
    // GELU' beyond the range where the forward value has already underflowed (gelu_math.h: erf
    // gradient to |x/s| = 20, tanh to x = -14, sigmoid to x = -120), and the float32 (fast)
    // kernels, where GELU'(x) itself is below float32's range, must multiply dy in before the
    // 2^-n scaling (times_ldexp_neg). Accurate math with float32 and bfloat16 storage (bf16 holds
    // dy up to 3.4e38 as well), fast math with float32; the backward ULP bound of the contract
    // (tolerances.h: acc 2 ULP float32, 1 ULP bf16; fast erf 128; fast tanh and sigmoid the
    // bound that grows with |v| of fast_sigma_backward_ulp_tolerance) without the fast kernels'
    // absolute 2^-22 |dy| allowance (meant for the root window's cancellation, it would accept
    // a 0 here); outside every root window. Fast math scales by s = 2 rather than
    // 3: with an inexact 1/s the rounding of z = x/s costs it z^2 ULP in the tail (README,
    // Reliability), which is its documented limit, not what this test is about.
    struct Range {
        Form form;
        float s, lo, hi;
    };
    const Range acc_ranges[] = {{Form::Erf, 1.0f, -23.0f, -12.0f}, {Form::Erf, 3.0f, -66.0f, -36.0f},
                                {Form::Tanh, 1.0f, -17.0f, -9.0f}, {Form::Sigmoid, 1.0f, -130.0f, -50.0f}};
    const Range fast_ranges[] = {{Form::Erf, 1.0f, -23.0f, -12.0f}, {Form::Erf, 2.0f, -46.0f, -24.0f},
                                 {Form::Tanh, 1.0f, -17.0f, -9.0f}, {Form::Sigmoid, 1.0f, -130.0f, -50.0f}};
    // +-inf: the product's limit is +-inf wherever GELU'(x) != 0 (also beyond the evaluated range).
    const double inf = std::numeric_limits<double>::infinity();
    const double dys[] = {1e3, -7.5e15, 1e30, 3.0e38, -3.0e38, inf, -inf};
    struct Case {
        Math math;
        DType dt;
        const Range *ranges;
    };
    for (const Case &k : {Case{Math::Accurate, DType::F32, acc_ranges}, Case{Math::Accurate, DType::BF16, acc_ranges},
                          Case{Math::Fast, DType::F32, fast_ranges}}) {
        const DType dt = k.dt;
        for (int ri = 0; ri < 4; ri++) {
            const Range &r = k.ranges[ri];
            GeluOptions o;
            o.form = r.form;
            o.scale = r.s;
            o.math = k.math;
            // Fast erf and sigmoid: 8 ULP in this tail (every float32 x with dy = 3e38 gave at
            // most 4 for erf in [-21, -12] and 7 for sigmoid in [-125, -2], 2026-12-07), well
            // below the flat 128 that the root window needs; fast tanh: the |v| model.
            auto bound_at = [&](double x) {
                if (k.math != Math::Fast) {
                    return ulp_tolerance(k.math, Direction::Backward, dt, r.form);
                }
                return r.form == Form::Tanh ? fast_sigma_backward_ulp_tolerance(r.form, x) : int64_t{8};
            };
            int64_t bound = 0;  // the largest bound_at over the range, for the summary line
            std::vector<uint32_t> xs, dys_bits;
            std::vector<double> xd, dyd;
            for (int i = 0; i <= 400; i++) {
                for (double dy : dys) {
                    uint32_t xb = to_bits(r.lo + (r.hi - r.lo) * i / 400.0, dt);
                    uint32_t db = to_bits(dy, dt);
                    xs.push_back(xb);
                    dys_bits.push_back(db);
                    xd.push_back(bits_to_double(xb, dt));
                    dyd.push_back(bits_to_double(db, dt));
                }
            }
            std::vector<uint32_t> got = run_backward(xs, dys_bits, dt, o);
            int64_t worst = 0;
            size_t nonzero = 0, finite = 0;
            for (size_t i = 0; i < xs.size(); i++) {
                RefValue g = gelu_grad_ref(r.form, xd[i], r.s);
                uint32_t want = round_to_bits(times(dyd[i], g), dt);
                int64_t d = ulp_distance(got[i], want, dt);
                worst = std::max(worst, d);
                bound = std::max(bound, bound_at(xd[i]));
                EXPECT_LE(d, bound_at(xd[i])) << (k.math == Math::Fast ? "fast " : "acc ")
                    << dtype_name(dt) << " " << form_name(r.form) << " s=" << r.s << " x=" << xd[i]
                    << " dy=" << dyd[i] << " got bits 0x" << std::hex << got[i] << " want 0x" << want;
                if (std::isfinite(dyd[i])) {  // (+-inf dy always gives +-inf: not counted)
                    finite++;
                    if (bits_to_double(want, dt) != 0 && std::isfinite(bits_to_double(want, dt))) {
                        nonzero++;
                    }
                }
            }
            std::printf("%s %s %s s=%g x in [%g, %g]: max %lld ULP (bound up to %lld), %zu of %zu finite-dy products nonzero\n",
                        k.math == Math::Fast ? "fast" : "acc", dtype_name(dt), form_name(r.form), r.s, r.lo, r.hi,
                        static_cast<long long>(worst), static_cast<long long>(bound), nonzero, finite);
            // The check has teeth: a good share of the finite dy give nonzero finite products
            // (not +-0), the values the tail evaluation exists for.
            EXPECT_GT(nonzero, finite / 4) << dtype_name(dt) << " " << form_name(r.form);
        }
    }
}

}  // namespace
}  // namespace gelukit::test
