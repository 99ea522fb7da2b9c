// The pointwise rows of shared/cases/handed-cases.md, each run on every schedule and math mode.
// Expected values are the case file's bit patterns (double-precision values rounded once);
// the tolerance is the case file's 2 ULP or the kernel's own contract if that is wider
// (tests/support/tolerances.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "support/harness.h"
#include "support/reference.h"
#include "support/tolerances.h"

namespace gelukit::test {
namespace {

struct Variant {
    Math math;
    Schedule schedule;
};

std::string variant_name(const testing::TestParamInfo<Variant> &info) {
    return std::string(math_name(info.param.math)) + "_" + schedule_name(info.param.schedule);
}

class HandedCases : public testing::TestWithParam<Variant> {
protected:
    // Whether this variant has the kernel (dtype, form, direction): fast math is built for
    // float32 storage only, the tuned schedule for the tuned set only (f32 exact forward and
    // backward, bf16 exact forward: cmake/GelukitKernels.cmake).
    bool built(DType dt, Form form, Direction dir) const {
        for (const KernelInfo &k : gelu_kernels()) {
            if (k.dtype == dt && k.form == form && k.direction == dir && k.math == GetParam().math &&
                k.schedule == GetParam().schedule) {
                return true;
            }
        }
        return false;
    }
    // Forward and backward both, or just the one direction given.
    bool built(DType dt, Form form = Form::Erf) const {
        return built(dt, form, Direction::Forward) && built(dt, form, Direction::Backward);
    }
    void require(DType dt, Form form, Direction dir) const {
        if (!built(dt, form, dir)) {
            GTEST_SKIP() << math_name(GetParam().math) << "_" << schedule_name(GetParam().schedule)
                         << " is not built for " << dtype_name(dt) << " " << form_name(form) << " "
                         << (dir == Direction::Forward ? "forward" : "backward");
        }
    }
    void require(DType dt, Form form = Form::Erf) const {
        require(dt, form, Direction::Forward);
        if (!IsSkipped()) {
            require(dt, form, Direction::Backward);
        }
    }
    GeluOptions opts(Form form = Form::Erf) const {
        GeluOptions o;
        o.form = form;
        o.math = GetParam().math;
        o.schedule = GetParam().schedule;
        return o;
    }
    int64_t tol(Direction dir, DType dt, Form form) const {
        return std::max<int64_t>(2, ulp_tolerance(GetParam().math, dir, dt, form));
    }
    void expect_forward(DType dt, Form form, std::vector<uint32_t> x, std::vector<uint32_t> want) {
        std::vector<uint32_t> got = run_forward(x, dt, opts(form));
        for (std::size_t i = 0; i < x.size(); i++) {
            EXPECT_LE(ulp_distance(got[i], want[i], dt), tol(Direction::Forward, dt, form))
                << "x bits 0x" << std::hex << x[i] << " got 0x" << got[i] << " want 0x" << want[i];
            EXPECT_FALSE(bits_is_nan(got[i], dt)) << "x bits 0x" << std::hex << x[i];
        }
    }
};

constexpr uint32_t F(float f) {
    return __builtin_bit_cast(uint32_t, f);
}

TEST_P(HandedCases, G01_Fp16TanhCoefficientsDoNotUnderflow) {
    require(DType::F16, Form::Tanh, Direction::Forward);
    if (IsSkipped()) {
        return;
    }
    std::vector<uint32_t> got = run_forward({0xD640, 0xC400}, DType::F16, opts(Form::Tanh));
    // -100 -> -0 (+0 also accepted, never positive); -4 -> 0x849B (-7.027e-5).
    EXPECT_TRUE(got[0] == 0x8000 || got[0] == 0x0000) << std::hex << got[0];
    EXPECT_LE(ulp_distance(got[1], 0x849B, DType::F16), tol(Direction::Forward, DType::F16, Form::Tanh));
}

TEST_P(HandedCases, G02_Fp16TanhNoOverflowOfCubeForwardAndGradient) {
    require(DType::F16, Form::Tanh);
    if (IsSkipped()) {
        return;
    }
    expect_forward(DType::F16, Form::Tanh, {0x5120, 0x5C00}, {0x5120, 0x5C00});
    std::vector<uint32_t> g = run_backward({0x5120, 0x5C00}, {0x3C00, 0x3C00}, DType::F16, opts(Form::Tanh));
    EXPECT_EQ(g[0], 0x3C00u);
    EXPECT_EQ(g[1], 0x3C00u);
}

TEST_P(HandedCases, G03_Bf16TanhLargeArgumentNoNaN) {
    require(DType::BF16, Form::Tanh, Direction::Forward);
    if (IsSkipped()) {
        return;
    }
    expect_forward(DType::BF16, Form::Tanh, {0x4128, 0x4178}, {0x4128, 0x4178});
}

TEST_P(HandedCases, G04_Fp32TanhUnclampedExpNoNaN) {
    require(DType::F32, Form::Tanh, Direction::Forward);
    if (IsSkipped()) {
        return;
    }
    std::vector<uint32_t> got = run_forward({0xC153D70Au}, DType::F32, opts(Form::Tanh));
    EXPECT_EQ(got[0], 0x80000000u) << std::hex << got[0];
}

TEST_P(HandedCases, G06_LeftTailNoCancellationAndMonotone) {
    expect_forward(DType::F32, Form::Erf, {F(-5.0f), F(-5.5f)}, {0xB5C05E5Du, 0xB3E049ECu});
    std::vector<uint32_t> xs;
    for (int i = 0; i < 2048; i++) {
        xs.push_back(F(static_cast<float>(-5.5425 + (5.5425 - 3.0) * i / 2047.0)));
    }
    std::vector<uint32_t> ys = run_forward(xs, DType::F32, opts());
    for (int i = 1; i < 2048; i++) {
        EXPECT_LE(bits_to_float(ys[i]), bits_to_float(ys[i - 1])) << "at x = " << bits_to_float(xs[i]);
    }
}

TEST_P(HandedCases, G07_PhiNeverAboveOne) {
    expect_forward(DType::F32, Form::Erf, {F(4.0f), F(5.0f), F(6.0f), F(10.0f)},
                   {0x407FFDEDu, 0x409FFFFDu, F(6.0f), F(10.0f)});
    // GELU(x) <= x also at the named points (the ULP tolerance above alone would let 6 + 2 ULP
    // pass), and on a lattice over every positive finite float32.
    std::vector<uint32_t> xs = {F(4.0f), F(5.0f), F(6.0f), F(10.0f)};
    for (uint32_t b = 0x00000001u; b < 0x7F800000u; b += 0x00012345u) {
        xs.push_back(b);
    }
    std::vector<uint32_t> ys = run_forward(xs, DType::F32, opts());
    for (std::size_t i = 0; i < xs.size(); i++) {
        ASSERT_LE(bits_to_float(ys[i]), bits_to_float(xs[i])) << "GELU(x) > x at x = " << bits_to_float(xs[i]);
    }
}

TEST_P(HandedCases, G08_G09_TanhRequestedByNameIsHonoured) {
    require(DType::F32, Form::Tanh, Direction::Forward);
    if (IsSkipped()) {
        return;
    }
    GeluOptions o = opts(form_from_name("tanh"));  // ONNX approximate="tanh", PyTorch keyword
    std::vector<uint32_t> got = run_forward({F(-1.0f), F(2.0f)}, DType::F32, o);
    EXPECT_LE(ulp_distance(got[0], 0xBE229E91u, DType::F32), tol(Direction::Forward, DType::F32, Form::Tanh));
    EXPECT_LE(ulp_distance(got[1], 0x3FFA3042u, DType::F32), tol(Direction::Forward, DType::F32, Form::Tanh));
    // The exact values must count as failures: they are far outside the tolerance.
    EXPECT_GT(ulp_distance(got[0], F(-0.158655256f), DType::F32), 100);
    EXPECT_GT(ulp_distance(got[1], F(1.95449972f), DType::F32), 100);
}

TEST(HandedCasesApi, G12_DefaultFormIsExact) {
    GeluOptions defaults;
    EXPECT_EQ(defaults.form, Form::Erf);
    EXPECT_EQ(forward_f32(-3.0f), bits_to_float(0xBB84B34Cu));
}

TEST_P(HandedCases, G14_ExactValuesMinus3To3) {
    expect_forward(DType::F32, Form::Erf,
                   {F(-3.f), F(-2.f), F(-1.f), F(0.f), F(1.f), F(2.f), F(3.f)},
                   {0xBB84B34Cu, 0xBD3A5E7Cu, 0xBE227686u, 0u, 0x3F57625Fu, 0x3FFA2D0Cu, 0x403FBDA6u});
}

TEST_P(HandedCases, G16_ConfigNamesKeepTheirMeaning) {
    struct Row {
        const char *name;
        uint32_t want;
    };
    for (Row r : {Row{"gelu", 0x3F57625Fu}, Row{"gelu_new", 0x3F57585Cu}, Row{"gelu_pytorch_tanh", 0x3F57585Cu},
                  Row{"gelu_fast", 0x3F57585Cu}, Row{"quick_gelu", 0x3F588612u}}) {
        Form form = form_from_name(r.name);
        if (!built(DType::F32, form, Direction::Forward)) {
            continue;  // the tuned variant: erf only
        }
        std::vector<uint32_t> got = run_forward({F(1.0f)}, DType::F32, opts(form));
        EXPECT_LE(ulp_distance(got[0], r.want, DType::F32), tol(Direction::Forward, DType::F32, form)) << r.name;
    }
    EXPECT_THROW(form_from_name("gelu_10"), Error);
}

TEST_P(HandedCases, G18_SigmoidForm) {
    require(DType::F32, Form::Sigmoid, Direction::Forward);
    if (IsSkipped()) {
        return;
    }
    expect_forward(DType::F32, Form::Sigmoid, {F(-2.0f), F(1.5f)}, {0xBD83C569u, 0x3FB221FDu});
}

TEST_P(HandedCases, G19_StridedInputView) {
    // A3: row-major 2x6 buffer, view [:, 0:3] with strides (6, 1).
    std::vector<float> buf = {-1, 0, 1, 9, 9, 9, 2, -2, 0.5f, 9, 9, 9};
    std::vector<float> out(6, 42.0f);
    gelu_forward(TensorView::strided(buf.data(), DType::F32, {2, 3}, {6, 1}),
                 TensorView::contiguous(out.data(), DType::F32, {2, 3}), opts());
    const uint32_t want[6] = {0xBE227686u, 0x00000000u, 0x3F57625Fu, 0x3FFA2D0Cu, 0xBD3A5E7Cu, 0x3EB103AFu};
    for (int i = 0; i < 6; i++) {
        EXPECT_LE(ulp_distance(F(out[i]), want[i], DType::F32), tol(Direction::Forward, DType::F32, Form::Erf))
            << "element " << i << " = " << out[i];
    }
}

TEST_P(HandedCases, G21_PermutedGradOutput) {
    // A5: X[i][j][k] = (6i+3j+k)/4 - 1.5 contiguous (2,2,3); grad = arange(12) as (2,2,3)
    // permuted (1,0,2) without a copy: grad[i][j][k] = 6j + 3i + k.
    std::vector<float> x(12), g(12), dx(12, 42.0f);
    for (int i = 0; i < 12; i++) {
        x[i] = i / 4.0f - 1.5f;
        g[i] = static_cast<float>(i);
    }
    // permute(1,0,2) of a contiguous (2,2,3): shape (2,2,3), strides (3, 6, 1).
    gelu_backward(TensorView::contiguous(x.data(), DType::F32, {2, 2, 3}),
                  TensorView::strided(g.data(), DType::F32, {2, 2, 3}, {3, 6, 1}),
                  TensorView::contiguous(dx.data(), DType::F32, {2, 2, 3}), opts());
    const uint32_t want[12] = {0x80000000u, 0xBDFB35FFu, 0xBE2AA14Du, 0x3B983AB3u, 0x3F6D72E0u, 0x401BF806u,
                               0x3FC00000u, 0x403203FDu, 0x408ACC9Au, 0x410FE375u, 0x412D549Au, 0x414596A4u};
    const double root = grad_root(Form::Erf);
    for (int i = 0; i < 12; i++) {
        if (std::fabs(x[i] - root) < 0.01) {  // x = -0.75: next to the root of GELU', absolute error
            double grad = 6 * ((i / 3) % 2) + 3 * (i / 6) + i % 3;
            EXPECT_NEAR(dx[i], bits_to_float(want[i]), root_window_abs_tolerance(GetParam().math) * grad)
                << "element " << i;
            continue;
        }
        EXPECT_LE(ulp_distance(F(dx[i]), want[i], DType::F32), tol(Direction::Backward, DType::F32, Form::Erf))
            << "element " << i << " = " << dx[i];
    }
}

TEST_P(HandedCases, G22_GradientAtZeroIsHalf) {
    require(DType::F32, Form::Erf, Direction::Backward);
    if (IsSkipped()) {
        return;
    }
    for (Form form : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
        if (!built(DType::F32, form, Direction::Backward)) {
            continue;
        }
        std::vector<uint32_t> got =
            run_backward({F(0.0f), F(-0.0f), F(1e-30f)}, {F(1.0f), F(1.0f), F(1.0f)}, DType::F32, opts(form));
        for (uint32_t b : got) {
            EXPECT_EQ(b, 0x3F000000u) << form_name(form) << " got 0x" << std::hex << b;
        }
    }
}

TEST_P(HandedCases, G27_Bf16RoundsToNearestEven) {
    require(DType::BF16, Form::Erf, Direction::Forward);
    if (IsSkipped()) {
        return;
    }
    std::vector<uint32_t> got = run_forward({0x4040}, DType::BF16, opts());
    EXPECT_EQ(got[0], 0x4040u) << std::hex << got[0];
}

TEST_P(HandedCases, G34_Infinities) {
    require(DType::F32);
    if (IsSkipped()) {
        return;
    }
    for (Form form : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
        if (!built(DType::F32, form)) {
            continue;
        }
        std::vector<uint32_t> y = run_forward({0x7F800000u, 0xFF800000u}, DType::F32, opts(form));
        EXPECT_EQ(y[0], 0x7F800000u) << form_name(form);
        EXPECT_EQ(y[1], 0x80000000u) << form_name(form);
        std::vector<uint32_t> g =
            run_backward({0x7F800000u, 0xFF800000u}, {F(1.0f), F(1.0f)}, DType::F32, opts(form));
        EXPECT_EQ(g[0], F(1.0f)) << form_name(form);
        EXPECT_EQ(g[1], 0x80000000u) << form_name(form) << ": GELU'(-inf) is documented as -0.0";
        if (built(DType::F16, form, Direction::Forward)) {
            std::vector<uint32_t> h = run_forward({0x7C00, 0xFC00}, DType::F16, opts(form));
            EXPECT_EQ(h[0], 0x7C00u) << form_name(form);
            EXPECT_EQ(h[1], 0x8000u) << form_name(form);
        }
    }
}

TEST_P(HandedCases, G39_ShortAndEmptyTensors) {
    expect_forward(DType::F32, Form::Erf, {F(-1.f), F(0.f), F(1.f)}, {0xBE227686u, 0u, 0x3F57625Fu});
    expect_forward(DType::F32, Form::Erf, {F(0.5f)}, {0x3EB103AFu});
    std::vector<float> empty;
    EXPECT_NO_THROW(gelu_forward(TensorView::contiguous(empty.data(), DType::F32, {0}),
                                 TensorView::contiguous(empty.data(), DType::F32, {0}), opts()));
}

TEST_P(HandedCases, G40_InnermostStrideTwoInAndOut) {
    // A7: B[i][j] = 0.5 (j - 5) + i, 3x10; views take columns 0, 2, 4, 6, 8.
    std::vector<float> b(30), out(30, -42.0f);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 10; j++) {
            b[i * 10 + j] = 0.5f * (j - 5) + i;
        }
    }
    gelu_forward(TensorView::strided(b.data(), DType::F32, {3, 5}, {10, 2}),
                 TensorView::strided(out.data(), DType::F32, {3, 5}, {10, 2}), opts());
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 10; j++) {
            float o = out[i * 10 + j];
            if (j % 2) {
                EXPECT_EQ(o, -42.0f) << "odd slot overwritten at " << i << "," << j;
            } else {
                uint32_t want = round_to_bits(gelu_ref(Form::Erf, b[i * 10 + j]), DType::F32);
                EXPECT_LE(ulp_distance(F(o), want, DType::F32), tol(Direction::Forward, DType::F32, Form::Erf))
                    << "at " << i << "," << j;
            }
        }
    }
    // Spot values quoted by the case file (row 0).
    EXPECT_NEAR(out[0], -0.0155241629f, 1e-8f);
    EXPECT_NEAR(out[8], 1.39978921f, 1e-6f);
}

TEST_P(HandedCases, G34_Fp16MaxFiniteSurvivesNativeHalfMath) {
    // +-65504 (0x7BFF / 0xFBFF), the largest finite fp16: GELU(65504) = 65504 exactly (Phi = 1),
    // GELU(-65504) = -0 (below the smallest fp16 subnormal); GELU' = 1 and 0 there, so
    // dx = dy = 65504 must not overflow to inf. Run with native (arm_fp16, F16C) and emulated
    // conversions by ctest's ISA runs.
    require(DType::F16);
    if (IsSkipped()) {
        return;
    }
    for (Form form : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
        std::vector<uint32_t> y = run_forward({0x7BFF, 0xFBFF}, DType::F16, opts(form));
        EXPECT_EQ(y[0], 0x7BFFu) << form_name(form) << std::hex << " got 0x" << y[0];
        EXPECT_EQ(y[1], 0x8000u) << form_name(form) << std::hex << " got 0x" << y[1];
        std::vector<uint32_t> dx = run_backward({0x7BFF, 0xFBFF}, {0x7BFF, 0x7BFF}, DType::F16, opts(form));
        EXPECT_EQ(dx[0], 0x7BFFu) << form_name(form) << std::hex << " got 0x" << dx[0];
        EXPECT_TRUE(dx[1] == 0x0000u || dx[1] == 0x8000u) << form_name(form) << std::hex << " got 0x" << dx[1];
        // And the infinities backward: GELU'(+inf) = 1 (dx = dy), GELU'(-inf) = -0.
        std::vector<uint32_t> dinf = run_backward({0x7C00, 0xFC00}, {0x3C00, 0x3C00}, DType::F16, opts(form));
        EXPECT_EQ(dinf[0], 0x3C00u) << form_name(form) << std::hex << " got 0x" << dinf[0];
        EXPECT_EQ(dinf[1], 0x8000u) << form_name(form) << std::hex << " got 0x" << dinf[1];
    }
}

TEST_P(HandedCases, G34_LargeNegativeGivesMinusZero) {
    // GELU(x) -> 0 from below (gelu-reference.md): exact and tanh float32 results round to -0.0
    // below x ~ -14.357 (take -20); the sigmoid form decays only like e^{1.702 x} (-20 gives
    // -3.3e-14), so take -100 there. These, -1e30 and -FLT_MAX give exactly -0.0 (0x80000000),
    // never +0.
    for (Form form : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
        if (!built(DType::F32, form, Direction::Forward)) {
            continue;  // the tuned variant: erf only
        }
        const float tail = form == Form::Sigmoid ? -100.0f : -20.0f;
        std::vector<uint32_t> y = run_forward({F(tail), F(-1e30f), 0xFF7FFFFFu}, DType::F32, opts(form));
        for (std::size_t i = 0; i < y.size(); i++) {
            EXPECT_EQ(y[i], 0x80000000u) << form_name(form) << " input " << i << std::hex << " got 0x" << y[i];
        }
    }
}

TEST_P(HandedCases, G48_Fp32RowOf17AndVectorTails) {
    // A8: x = -4, -3.5, ..., 4 (17 values: 4 NEON vectors + 1, 1 AVX-512 vector + 1) and the
    // case file's exact GELU values (9 significant digits, so 1 ULP is added to the tolerance
    // for their own rounding). Lengths 1, 15, 16, 31, 33 cycle through the row: every tail
    // shape around the 4-, 8- and 16-lane vectors.
    const double a8[17] = {-0.000126684972, -0.000814201776, -0.00404969417, -0.0155241629, -0.0455002636,
                           -0.100210801,    -0.158655256,    -0.154268771,   0.0,           0.345731229,
                           0.841344774,     1.39978921,      1.95449972,     2.48447585,    2.99595022,
                           3.4991858,       3.9998734};
    for (int n : {17, 1, 15, 16, 31, 33}) {
        std::vector<uint32_t> x(n), want(n);
        for (int i = 0; i < n; i++) {
            x[i] = F(-4.0f + 0.5f * static_cast<float>(i % 17));
            want[i] = round_to_bits(RefValue{a8[i % 17], 0.0}, DType::F32);
        }
        std::vector<uint32_t> got = run_forward(x, DType::F32, opts());
        for (int i = 0; i < n; i++) {
            EXPECT_LE(ulp_distance(got[i], want[i], DType::F32), tol(Direction::Forward, DType::F32, Form::Erf) + 1)
                << "length " << n << " index " << i << " x = " << -4.0 + 0.5 * (i % 17);
        }
    }
}

TEST_P(HandedCases, G49_Fp16ExactSameBitsWithAndWithoutNativeFp16) {
    // x = 1.0 (0x3C00) -> 0x3ABB, x = -0.5 (0xB800) -> 0xB0F0, whichever conversion code ran:
    // ctest runs this with native fp16 (neon_fp16 / F16C) and emulated (neon, a CPU without
    // FP16 under qemu, sse41) and the kernels compute in float32/float64 either way.
    require(DType::F16);
    if (IsSkipped()) {
        return;
    }
    std::vector<uint32_t> got = run_forward({0x3C00, 0xB800}, DType::F16, opts());
    EXPECT_EQ(got[0], 0x3ABBu) << std::hex << got[0];
    EXPECT_EQ(got[1], 0xB0F0u) << std::hex << got[1];
    RecordProperty("half_conversion_path", half_conversion_path());
    std::printf("[ INFO ] G49 on %s: fp16 conversions %s\n", dispatched_isa().c_str(), half_conversion_path().c_str());
}

INSTANTIATE_TEST_SUITE_P(AllVariants, HandedCases,
                         testing::Values(Variant{Math::Accurate, Schedule::Naive},
                                         Variant{Math::Accurate, Schedule::Hand},
                                         Variant{Math::Accurate, Schedule::Adams2019},
                                         Variant{Math::Fast, Schedule::Hand},
                                         // The tuned set (f32 exact forward and backward, bf16
                                         // exact forward); the rest of its cases skip.
                                         Variant{Math::Accurate, Schedule::Tuned}),
                         variant_name);

}  // namespace
}  // namespace gelukit::test
