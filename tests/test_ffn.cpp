// Feed-forward kernels (gelukit/ffn.h): every registry kernel against a double-precision
// reference GEMM, the handed FFN cases (G10, G11, G13, G15, G28, G32, G47), the real MiniLM
// weights, and argument errors.
//
// Tolerance (scales with K): a float32 dot product of K terms, summed in any order, is within
// gamma_K * sum|terms| of the exact sum, gamma_K = K u / (1 - K u), u = 2^-24 (Higham,
// "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5). The bound is propagated
// through the epilogue with |GELU'| <= 1.13 (erf/tanh/sigmoid; SiLU' <= 1.1), plus one rounding
// of the activation (bf16: 2^-8 relative) and of the output. Per output element:
//   e1(n)   = gamma_{K+1} (|b1_n| + sum_k |h_k W1_nk|)                     pre-activation error
//   ea(n)   = 1.13 e1(n) + u_act |a_n| + (gated: |GELU| ev(n) + |v_n| 1.13 e1(n))
//   eout(j) = gamma_{d_ff+1} (|b2_j| + sum_n |a_n W2_jn|) + sum_n |W2_jn| ea(n)
//             + u_out |y_j| (+ residual rounding) + 1e-30
// with u_act = u_out = 2^-24 (f32) or 2^-8 (bf16). The check is |y - ref| <= 2 * bound: the
// factor 2 covers the float64 GELU evaluation and the product of two first-order terms.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/ffn.h"
#include "gelukit/runtime.h"
#include "minilm.h"
#include "support/reference.h"
#include "support/scale.h"

namespace gelukit {
// Readable parameter in failure messages (instead of the bytes of the struct); found by ADL.
void PrintTo(const FfnKernelInfo &k, std::ostream *os) {
    *os << k.name;
}
}  // namespace gelukit

namespace gelukit::test {
namespace {

double act_ref(FfnKind kind, Form form, double z) {
    if (kind == FfnKind::SwiGLU) {
        const long double x = z;
        return double(x / (1.0L + std::exp(-x)));  // SiLU, Elfwing et al. 2017
    }
    const RefValue v = gelu_ref(form, z);
    return v.hi + v.lo;
}

// Rounds a double to the storage type (and back), the way the kernel stores a value.
double round_to(DType dt, double x) {
    return bits_to_double(round_to_bits(RefValue{x, 0.0}, dt), dt);
}

float bf16_round(float f) {
    return float(round_to(DType::BF16, f));
}

struct Problem {
    FfnKind kind = FfnKind::Ffn;
    Form form = Form::Erf;
    DType dtype = DType::F32;
    int64_t M = 1, d_model = 1, d_ff = 1;
    bool bias = true, residual = false;
    // float values, already representable in dtype
    std::vector<float> h, w1, b1, v, w2, b2;
};

bool gated(FfnKind k) {
    return k == FfnKind::GeGLU || k == FfnKind::SwiGLU;
}

void fill(std::vector<float> &x, std::size_t n, double scale, std::mt19937 &rng, DType dt) {
    std::normal_distribution<float> nd(0.0f, float(scale));
    x.resize(n);
    for (float &f : x) {
        f = nd(rng);
        if (dt == DType::BF16) {
            f = bf16_round(f);
        }
    }
}

Problem random_problem(FfnKind kind, Form form, DType dt, int64_t M, int64_t dm, int64_t dff, bool bias, bool residual,
                       uint32_t seed) {
    std::mt19937 rng(seed);
    Problem p;
    p.kind = kind, p.form = form, p.dtype = dt, p.M = M, p.d_model = dm, p.d_ff = dff, p.bias = bias;
    p.residual = residual;
    // nn.Linear's init scale 1/sqrt(fan_in), LayerNorm-ed inputs: pre-activations of order 1.
    fill(p.h, std::size_t(M * dm), 1.0, rng, dt);
    fill(p.w1, std::size_t(dff * dm), 1.0 / std::sqrt(double(dm)), rng, dt);
    if (bias) {
        fill(p.b1, std::size_t(dff), 0.5, rng, dt);
        fill(p.b2, std::size_t(dm), 0.5, rng, dt);
    }
    if (gated(kind)) {
        fill(p.v, std::size_t(dff * dm), 1.0 / std::sqrt(double(dm)), rng, dt);
    }
    fill(p.w2, std::size_t(dm * dff), 1.0 / std::sqrt(double(dff)), rng, dt);
    return p;
}

struct Reference {
    std::vector<double> y, bound;
};

Reference reference(const Problem &p) {
    const double u = std::ldexp(1.0, -24);
    const double u_st = p.dtype == DType::BF16 ? std::ldexp(1.0, -8) : u;
    auto gamma = [&](int64_t k) { return double(k) * u / (1.0 - double(k) * u); };
    const bool second = p.kind != FfnKind::LinearGelu;
    const int64_t d_out = second ? p.d_model : p.d_ff;
    Reference r;
    r.y.assign(std::size_t(p.M * d_out), 0.0);
    r.bound.assign(r.y.size(), 0.0);
    std::vector<double> a(std::size_t(p.d_ff)), ea(std::size_t(p.d_ff));
    for (int64_t m = 0; m < p.M; m++) {
        const float *h = &p.h[std::size_t(m * p.d_model)];
        for (int64_t n = 0; n < p.d_ff; n++) {
            double z = p.bias ? p.b1[std::size_t(n)] : 0.0, za = std::fabs(z), zv = 0.0, zva = 0.0;
            for (int64_t k = 0; k < p.d_model; k++) {
                const double t = double(h[k]) * p.w1[std::size_t(n * p.d_model + k)];
                z += t, za += std::fabs(t);
                if (gated(p.kind)) {
                    const double tv = double(h[k]) * p.v[std::size_t(n * p.d_model + k)];
                    zv += tv, zva += std::fabs(tv);
                }
            }
            const double e1 = gamma(p.d_model + 1) * za;
            double g = act_ref(p.kind, p.form, z);
            double e = 1.13 * e1;
            if (gated(p.kind)) {
                const double ev = gamma(p.d_model + 1) * zva;
                e = std::fabs(g) * ev + std::fabs(zv) * e;
                g *= zv;
            }
            a[std::size_t(n)] = g;
            ea[std::size_t(n)] = e + u_st * std::fabs(g);
            if (!second) {
                r.y[std::size_t(m * d_out + n)] = g;
                r.bound[std::size_t(m * d_out + n)] = ea[std::size_t(n)] + 1e-30;
            }
        }
        if (!second) {
            continue;
        }
        for (int64_t j = 0; j < p.d_model; j++) {
            double y = p.bias ? p.b2[std::size_t(j)] : 0.0, ya = std::fabs(y), prop = 0.0;
            for (int64_t n = 0; n < p.d_ff; n++) {
                const double w = p.w2[std::size_t(j * p.d_ff + n)];
                y += a[std::size_t(n)] * w;
                ya += std::fabs(a[std::size_t(n)] * w);
                prop += std::fabs(w) * ea[std::size_t(n)];
            }
            double b = gamma(p.d_ff + 1) * ya + prop;
            if (p.residual) {
                y += h[j];
                b += u * std::fabs(y);
            }
            r.y[std::size_t(m * d_out + j)] = y;
            r.bound[std::size_t(m * d_out + j)] = b + u_st * std::fabs(y) + 1e-30;
        }
    }
    return r;
}

// Stores float values in the problem's dtype.
std::vector<uint16_t> to_bf16(const std::vector<float> &x) {
    std::vector<uint16_t> o(x.size());
    for (std::size_t i = 0; i < x.size(); i++) {
        o[i] = uint16_t(round_to_bits(RefValue{x[i], 0.0}, DType::BF16));
    }
    return o;
}

struct Storage {
    std::vector<float> f;
    std::vector<uint16_t> b;
    void *data(DType dt) {
        return dt == DType::F32 ? static_cast<void *>(f.data()) : static_cast<void *>(b.data());
    }
};

Storage store(const std::vector<float> &x, DType dt) {
    Storage s;
    if (dt == DType::F32) {
        s.f = x;
    } else {
        s.b = to_bf16(x);
    }
    return s;
}

// Runs the problem through FeedForward and returns the output as doubles. borrow: the kernel
// that reads the caller's nn.Linear matrices (FeedForwardOptions::borrow_weights).
// kernel: pin a registry kernel by name (FeedForwardOptions::kernel), else chosen by schedule.
// The problem's tensors in its storage dtype and the FeedForwardWeights views of them (biases
// only with p.bias, v only for gated kinds). Not copyable: the views point into the storage.
struct StoredProblem {
    Storage h, w1, b1, v, w2, b2;
    FeedForwardWeights weights;
    explicit StoredProblem(const Problem &p)
        : h(store(p.h, p.dtype)), w1(store(p.w1, p.dtype)), b1(store(p.b1, p.dtype)), v(store(p.v, p.dtype)),
          w2(store(p.w2, p.dtype)), b2(store(p.b2, p.dtype)) {
        const DType dt = p.dtype;
        weights.w1 = TensorView::contiguous(w1.data(dt), dt, {p.d_ff, p.d_model});
        if (p.bias) {
            weights.b1 = TensorView::contiguous(b1.data(dt), dt, {p.d_ff});
            weights.b2 = TensorView::contiguous(b2.data(dt), dt, {p.d_model});
        }
        if (gated(p.kind)) {
            weights.v = TensorView::contiguous(v.data(dt), dt, {p.d_ff, p.d_model});
        }
        weights.w2 = TensorView::contiguous(w2.data(dt), dt, {p.d_model, p.d_ff});
    }
    StoredProblem(const StoredProblem &) = delete;
    StoredProblem &operator=(const StoredProblem &) = delete;
};

std::vector<double> run(const Problem &p, Schedule sched, bool borrow = false, const std::string &kernel = "") {
    const DType dt = p.dtype;
    StoredProblem sp(p);
    Storage &h = sp.h;
    const FeedForwardWeights &w = sp.weights;
    FeedForwardOptions o;
    o.kind = p.kind, o.form = p.form, o.dtype = dt, o.schedule = sched, o.residual = p.residual;
    o.borrow_weights = borrow;
    o.kernel = kernel;
    FeedForward ffn(w, o);
    if (!kernel.empty()) {
        EXPECT_EQ(ffn.kernel_name(), kernel);
    }
    const int64_t d_out = p.kind == FfnKind::LinearGelu ? p.d_ff : p.d_model;
    Storage out;
    out.f.assign(std::size_t(p.M * d_out), std::nanf(""));
    out.b.assign(std::size_t(p.M * d_out), 0x7FC1);
    ffn.forward(TensorView::contiguous(h.data(dt), dt, {p.M, p.d_model}),
                TensorView::contiguous(out.data(dt), dt, {p.M, d_out}));
    std::vector<double> y(std::size_t(p.M * d_out));
    for (std::size_t i = 0; i < y.size(); i++) {
        y[i] = dt == DType::F32 ? out.f[i] : bits_to_double(out.b[i], DType::BF16);
    }
    return y;
}

// Returns the worst |y - ref| / bound; fails (with the position) when it exceeds 2.
double check(const Problem &p, Schedule sched, const std::string &label, bool borrow = false,
             const std::string &kernel = "") {
    const Reference r = reference(p);
    const std::vector<double> y = run(p, sched, borrow, kernel);
    double worst = 0.0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < y.size(); i++) {
        const double q = std::isnan(y[i]) ? INFINITY : std::fabs(y[i] - r.y[i]) / r.bound[i];
        if (q > worst) {
            worst = q, at = i;
        }
    }
    EXPECT_LE(worst, 2.0) << label << ": element " << at << " got " << y[at] << " expected " << r.y[at]
                          << " (bound " << r.bound[at] << ")";
    return worst;
}

Form form_of(const FfnKernelInfo &k) {
    return k.form == "tanh" ? Form::Tanh : k.form == "sigmoid" ? Form::Sigmoid : Form::Erf;
}

class FfnKernel : public ::testing::TestWithParam<FfnKernelInfo> {};

std::string label(const FfnKernelInfo &k, const Problem &p) {
    return k.name + " M=" + std::to_string(p.M) + " d_model=" + std::to_string(p.d_model) +
           " d_ff=" + std::to_string(p.d_ff) + (p.bias ? " bias" : " no-bias") + (p.residual ? " +h" : "");
}

// Sizes that are multiples of no tile (kPanel 48, register rows 1/2/4/8, m_block 32, or 8 for the
// f32 ffn on AVX-512), every M of the issue, with and without biases and residual. The Adams2019
// kernels too: they run every shape (on a padded scratch output, their panel reads clamped).
// The AMX kernels (ffn_bf16_erf_amx) run only where AMX is usable (CPU, OS grant, ISA cap):
// elsewhere pinning one is refused with Unsupported, and their tests skip.
bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_amx_kernel(const FfnKernelInfo &k) {
    return ends_with(k.name, "_amx") || ends_with(k.name, "_amx_panels");
}
bool amx_runs(const FfnKernelInfo &k, std::string *why) {
    std::vector<uint16_t> w(64 * 64, 0);
    FeedForwardWeights fw;
    fw.w1 = TensorView::contiguous(w.data(), DType::BF16, {64, 64});
    fw.w2 = TensorView::contiguous(w.data(), DType::BF16, {64, 64});
    FeedForwardOptions o;
    o.kind = k.kind, o.dtype = k.dtype, o.form = form_of(k), o.kernel = k.name;
    try {
        FeedForward f(fw, o);
        return true;
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
        *why = e.what();
        return false;
    }
}
#define GELUKIT_SKIP_UNUSABLE_AMX(k)                            \
    do {                                                        \
        std::string why;                                        \
        if (is_amx_kernel(k) && !amx_runs(k, &why)) {           \
            GTEST_SKIP() << why;                                \
        }                                                       \
    } while (0)

TEST_P(FfnKernel, OddShapesAgainstDoubleReference) {
    const FfnKernelInfo &k = GetParam();
    GELUKIT_SKIP_UNUSABLE_AMX(k);
    const bool second = k.kind != FfnKind::LinearGelu;
    uint32_t seed = 1;
    const int64_t dims[][2] = {{5, 7}, {7, 13}, {13, 100}, {100, 5}};
    for (const auto &d : dims) {
        for (int64_t M : {1, 3, 7, 64}) {
            for (bool bias : {true, false}) {
                for (bool residual : {false, true}) {
                    if (residual && !second) {
                        continue;
                    }
                    Problem p = random_problem(k.kind, form_of(k), k.dtype, M, d[0], d[1], bias, residual, seed++);
                    check(p, k.schedule, label(k, p), !k.packed_weights, k.name);
                }
            }
        }
    }
}

// Model sizes: MiniLM (384 -> 1536) and BERT-base (768 -> 3072), M = 513 (one row past the
// 16 tasks of 32 rows, or the 64 of 8) for the schedules fast enough to run it in a unit test.
TEST_P(FfnKernel, ModelShapes) {
    const FfnKernelInfo &k = GetParam();
    GELUKIT_SKIP_UNUSABLE_AMX(k);
    std::vector<std::array<int64_t, 3>> shapes = {{7, 384, 1536}};
    // Under qemu (softfloat double reference: ~3 s per shape) 33 rows, still two tasks of
    // m_block = 32 rows, one of them partial; and only for the exact-GELU and SiLU kernels (the
    // forms differ in the epilogue alone, which the 7-row shape covers).
    if (k.schedule != Schedule::Naive && (!kUnderEmulator || k.form == "erf" || k.form == "silu")) {
        shapes.push_back({scaled<int64_t>(64, 33), 384, 1536});
    }
    if (!kUnderEmulator && k.schedule != Schedule::Naive &&
        (k.kind == FfnKind::Ffn || k.kind == FfnKind::LinearGelu) && k.form == "erf") {
        shapes.push_back({513, 768, 3072});  // the double reference alone takes seconds here
    }
    // M a multiple of 512 and of 32: the hand schedule's constant-size tasks (its
    // specialize(M % mb == 0) branch) for the 32-row and the 512-row kernels; small d_model and
    // d_ff (not multiples of a tile) keep the double reference cheap.
    if (!kUnderEmulator && k.schedule != Schedule::Naive) {
        shapes.push_back({512, 13, 100});
        shapes.push_back({1024, 7, 50});
    }
    uint32_t seed = 100;
    for (const auto &s : shapes) {
        Problem p = random_problem(k.kind, form_of(k), k.dtype, s[0], s[1], s[2], true, k.kind != FfnKind::LinearGelu,
                                   seed++);
        check(p, k.schedule, label(k, p), !k.packed_weights, k.name);
    }
}

INSTANTIATE_TEST_SUITE_P(Registry, FfnKernel, ::testing::ValuesIn(ffn_kernels()),
                         [](const ::testing::TestParamInfo<FfnKernelInfo> &i) { return i.param.name; });

// A call whose out spans 2^31 bytes or more (here a row stride of 2^25 elements, on a reserved
// but mostly untouched mapping) runs the vector kernel even where the AMX kernel was chosen, on
// views of the AMX-padded panels (d_model 40 -> 64, 3 d_ff panels -> 4) that leave the padding
// out: its results must be bit-identical to the pinned vector kernel's.
TEST(FfnAmx, LargeOutputFallsBackToVectorKernel) {
    const int64_t M = 33, d_model = 40, d_ff = 100, stride = int64_t(1) << 25;
    Problem p = random_problem(FfnKind::Ffn, Form::Erf, DType::BF16, M, d_model, d_ff, true, true, 91);
    StoredProblem sp(p);
    Storage &h = sp.h;
    const FeedForwardWeights &w = sp.weights;
    FeedForwardOptions o;
    o.kind = FfnKind::Ffn, o.form = Form::Erf, o.dtype = DType::BF16, o.residual = true;
    FeedForward chosen(w, o);  // Schedule::Hand: the panel kernel
    if (chosen.kernel_name() != "ffn_bf16_erf_amx_panels") {
        GTEST_SKIP() << "the AMX kernel is not chosen here (" << chosen.kernel_name() << ")";
    }
    o.kernel = "ffn_bf16_erf_amx";
    FeedForward row_tasks(w, o);
    o.kernel = "ffn_bf16_erf_hand";
    FeedForward vector(w, o);
    const std::size_t bytes = std::size_t((M - 1) * stride + d_model) * 2;
    void *map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    auto *big = static_cast<uint16_t *>(map);
    const TensorView out_big = TensorView::strided(big, DType::BF16, {M, d_model}, {stride, 1});
    std::vector<uint16_t> ref(std::size_t(M * d_model));
    const TensorView hv = TensorView::contiguous(h.data(DType::BF16), DType::BF16, {M, d_model});
    vector.forward(hv, TensorView::contiguous(ref.data(), DType::BF16, {M, d_model}));
    for (const FeedForward *f : {&chosen, &row_tasks}) {
        for (int64_t m = 0; m < M; m++) {
            std::memset(big + m * stride, 0xFF, std::size_t(d_model) * 2);
        }
        f->forward(hv, out_big);
        int64_t differ = 0;
        for (int64_t m = 0; m < M; m++) {
            differ += std::memcmp(big + m * stride, &ref[std::size_t(m * d_model)], std::size_t(d_model) * 2) != 0;
        }
        EXPECT_EQ(differ, 0) << f->kernel_name() << ": rows differing from the pinned vector kernel";
    }
    munmap(map, bytes);
}

// Schedule::Hand takes the AMX kernel exactly where it can run (and the hand kernel under an ISA
// cap below avx512_sapphirerapids, as in the suite's GELUKIT_MAX_ISA runs); results agree with
// the double reference either way, at M = 1 (one row padded to the smallest AMX task, 16 rows)
// and 33. The dispatch is noted when the AMX kernel runs, not at construction.
TEST(FfnAmx, HandScheduleUsesAmxWhereUsable) {
    const FfnKernelInfo *amx = nullptr;  // the panel kernel, which Schedule::Hand runs
    for (const FfnKernelInfo &k : ffn_kernels()) {
        if (ends_with(k.name, "_amx_panels")) {
            amx = &k;
        }
    }
    if (amx == nullptr) {
        GTEST_SKIP() << "no AMX kernel in this build (x86-64 builds have ffn_bf16_erf_amx)";
    }
    std::string why;
    const bool usable = amx_runs(*amx, &why);
    std::vector<uint16_t> w(96 * 64, 0);
    FeedForwardWeights fw;
    fw.w1 = TensorView::contiguous(w.data(), DType::BF16, {96, 64});
    fw.w2 = TensorView::contiguous(w.data(), DType::BF16, {64, 96});
    FeedForwardOptions o;
    o.kind = amx->kind, o.dtype = DType::BF16, o.form = Form::Erf, o.schedule = Schedule::Hand;
    FeedForward f(fw, o);
    EXPECT_EQ(f.kernel_name(), usable ? amx->name : std::string("ffn_bf16_erf_hand")) << why;
    uint32_t seed = 77;
    for (int64_t M : {1, 33, 300}) {  // all rows per task; 128-row groups (M > 256)
        Problem p = random_problem(FfnKind::Ffn, Form::Erf, DType::BF16, M, 96, 200, true, true, seed++);
        check(p, Schedule::Hand, "hand/amx M=" + std::to_string(M));
    }
    if (usable) {
        EXPECT_EQ(dispatched_isa(), "avx512_sapphirerapids");
    }
}

// The task-size rule (ffn.h amx_task_rows): rounds(64) * 12 <= rounds(16) * 5 picks 64 rows.
// The expected values are worked out by hand from that rule, not by calling it twice.
TEST(FfnAmx, TaskRowsFollowTheRoundsRule) {
    struct Case {
        int64_t M;
        int threads;
        int64_t rows;
    };
    const Case cases[] = {
        {1, 1, 16},     // one round either way: 12 > 5
        {32, 1, 16},    // 2 rounds of 16 (10) < 1 round of 64 (12)
        {33, 1, 64},    // 3 rounds of 16 (15) >= 12: one padded 64-row task
        {48, 1, 64},   {127, 1, 64},  {512, 1, 64},
        {48, 2, 16},    // 3 tasks of 16 in 2 rounds (10) < 12
        {64, 2, 16},    // 4 tasks of 16 in 2 rounds (10) < 1 task of 64 (12)
        {100, 2, 64},   // 2 tasks of 64, 1 round (12) <= 7 tasks of 16, 4 rounds (20)
        {128, 2, 64},  {512, 8, 64},   // 8 tasks of 64 in 1 round (12) <= 32 of 16 in 4 (20)
        {512, 16, 16},  // 1 round (12) > 32 tasks of 16 in 2 rounds (10)
        {512, 56, 16},  // 1 round either way
        {4096, 56, 64}, // 64 tasks in 2 rounds (24) <= 256 tasks in 5 rounds (25)
        {2147483647, 1, 64},  // the largest M: no overflow in the rounding up
    };
    for (const Case &c : cases) {
        EXPECT_EQ(amx_task_rows(c.M, c.threads), c.rows) << "M = " << c.M << ", threads = " << c.threads;
    }
    EXPECT_THROW(amx_task_rows(0, 1), Error);
    EXPECT_THROW(amx_task_rows(1, 0), Error);
    EXPECT_THROW(amx_task_rows(int64_t(1) << 31, 1), Error);
    EXPECT_THROW(amx_task_rows(INT64_MAX, 1), Error);
}

// The AMX kernels: the row-task one (tasks of 16 or 64 rows, amx_task_rows, from M and the
// thread count; the last task shifted inwards, M below the task size padded) and the panel one
// (all rows per task, or 128-row groups above M = 256, in 16-row blocks, the last block and
// group shifted inwards), which Schedule::Hand runs. Each output row depends on its own h row only, through the same 16 x 16
// tiles summed over K in the same order, so every M, thread count and kernel (pinned row-task,
// pinned panel, and Hand's choice) must give the same bits as the first M rows of a 300-row
// call, and never write outside its rows: h and out have padded row strides, out's padding
// columns hold a sentinel, and ASan checks the sanitized run. d_model 96 with biases and
// residual, and 40 without (not a multiple of 32: h goes through the runtime's padded copy). Thread counts 1, 2 and 3 use both
// row-task sizes (checked below with amx_task_rows).
TEST(FfnAmx, TaskSizesGiveTheSameRows) {
    const int64_t big_m = 300, d_ff = 200;
    const uint16_t sentinel = 0x7FC1;  // a NaN the kernels never write (theirs is 0x7FC0)
    const int threads_before = num_threads();
    std::set<int64_t> sizes_used;
    for (int64_t d_model : {96, 40}) {
        // d_model 40: without biases and residual.
        const bool extras = d_model == 96;
        Problem p = random_problem(FfnKind::Ffn, Form::Erf, DType::BF16, big_m, d_model, d_ff, extras, extras, 93);
        StoredProblem sp(p);
        FeedForwardOptions o;
        o.kind = FfnKind::Ffn, o.form = Form::Erf, o.dtype = DType::BF16, o.residual = extras;
        FeedForward hand(sp.weights, o);
        if (hand.kernel_name() != "ffn_bf16_erf_amx_panels") {
            GTEST_SKIP() << "the AMX kernel is not chosen here (" << hand.kernel_name() << ")";
        }
        o.kernel = "ffn_bf16_erf_amx";
        FeedForward row_tasks(sp.weights, o);
        o.kernel = "ffn_bf16_erf_amx_panels";
        FeedForward panel_tasks(sp.weights, o);
        const auto *hp = static_cast<const uint16_t *>(sp.h.data(DType::BF16));
        std::vector<uint16_t> all(std::size_t(big_m * d_model));
        row_tasks.forward(TensorView::contiguous(const_cast<uint16_t *>(hp), DType::BF16, {big_m, d_model}),
                          TensorView::contiguous(all.data(), DType::BF16, {big_m, d_model}));
        const int64_t hs = d_model + 4, os = d_model + 8;  // padded row strides (elements)
        for (int threads : {1, 2, 3}) {
            set_num_threads(threads);
            for (int64_t M : {1, 15, 16, 17, 33, 48, 63, 64, 65, 100, 127, 128, 129, 191, 192, 193, 256, 257, 300}) {
                sizes_used.insert(amx_task_rows(M, threads));
                std::vector<uint16_t> hm(std::size_t(M * hs), 0);
                for (int64_t m = 0; m < M; m++) {
                    std::memcpy(&hm[std::size_t(m * hs)], hp + m * d_model, std::size_t(d_model) * 2);
                }
                const std::pair<const char *, const FeedForward *> kernels[] = {
                    {"row tasks", &row_tasks}, {"panel tasks", &panel_tasks}, {"Schedule::Hand", &hand}};
                for (const auto &[what, f] : kernels) {
                    std::vector<uint16_t> out(std::size_t(M * os), sentinel);
                    f->forward(TensorView::strided(hm.data(), DType::BF16, {M, d_model}, {hs, 1}),
                               TensorView::strided(out.data(), DType::BF16, {M, d_model}, {os, 1}));
                    int64_t differ = 0, padding_written = 0;
                    for (int64_t m = 0; m < M; m++) {
                        differ += std::memcmp(&out[std::size_t(m * os)], &all[std::size_t(m * d_model)],
                                              std::size_t(d_model) * 2) != 0;
                        for (int64_t c = d_model; c < os; c++) {
                            padding_written += out[std::size_t(m * os + c)] != sentinel;
                        }
                    }
                    EXPECT_EQ(differ, 0) << what << ", d_model " << d_model << ", M = " << M << ", threads = "
                                         << threads << " (row tasks of " << amx_task_rows(M, threads)
                                         << " rows): rows differing from the 300-row call";
                    EXPECT_EQ(padding_written, 0) << what << ", d_model " << d_model << ", M = " << M
                                                  << ", threads = " << threads << ": out's padding columns written";
                }
            }
        }
    }
    set_num_threads(threads_before);
    EXPECT_EQ(sizes_used, (std::set<int64_t>{16, 64})) << "both row-task sizes must have run";
}

// ---------------------------------------------------------------------------------------------
// Handed cases (../shared/cases/handed-cases.md). A1: h = [1, 2], W1 (in x out) = [[1, -1],
// [0.5, 1]] -> PyTorch layout W1[out][in] = [[1, 0.5], [-1, 1]], b1 = [0.5, -0.25],
// W2 (in x out) = [[1], [-2]] -> [[1, -2]], b2 = [0.1].

struct A1 {
    float h[2] = {1, 2};
    float w1[4] = {1, 0.5f, -1, 1};
    float b1[2] = {0.5f, -0.25f};
    float w2[2] = {1, -2};
    float b2[1] = {0.1f};
};

uint32_t bits_of(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

float a1_ffn(Form form, bool biases, Schedule sched = Schedule::Hand) {
    A1 a;
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(a.w1, DType::F32, {2, 2});
    w.w2 = TensorView::contiguous(a.w2, DType::F32, {1, 2});
    if (biases) {
        w.b1 = TensorView::contiguous(a.b1, DType::F32, {2});
        w.b2 = TensorView::contiguous(a.b2, DType::F32, {1});
    }
    FeedForwardOptions o;
    o.form = form, o.schedule = sched;
    float y = NAN;
    FeedForward(w, o).forward(TensorView::contiguous(a.h, DType::F32, {1, 2}),
                              TensorView::contiguous(&y, DType::F32, {1, 1}));
    return y;
}

std::vector<float> a1_linear_gelu(Form form, bool biases) {
    A1 a;
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(a.w1, DType::F32, {2, 2});
    if (biases) {
        w.b1 = TensorView::contiguous(a.b1, DType::F32, {2});
    }
    FeedForwardOptions o;
    o.kind = FfnKind::LinearGelu, o.form = form;
    std::vector<float> act(2, NAN);
    FeedForward(w, o).forward(TensorView::contiguous(a.h, DType::F32, {1, 2}),
                              TensorView::contiguous(act.data(), DType::F32, {1, 2}));
    return act;
}

// The handed y values are the exact sums rounded once. gelukit accumulates the second GEMM in
// float32 (b2 + a0 w0 + a1 w1, two roundings), so y may differ from them by the K-scaled bound
// of the file header: gamma_3 * (|b2| + sum |a w|) = 3 * 2^-24 * 3.74 = 5.6 float32 ULPs at 1.42.
constexpr int kA1UlpTolerance = 5;

void expect_near_bits(float got, uint32_t want, int ulps, const std::string &what) {
    EXPECT_LE(ulp_distance(bits_of(got), want, DType::F32), ulps)
        << what << ": got " << got << " (0x" << std::hex << bits_of(got) << "), want 0x" << want;
}

TEST(FfnHanded, G10_TanhModeIsNotExact) {
    const float tanh_y = a1_ffn(Form::Tanh, true), exact_y = a1_ffn(Form::Erf, true);
    expect_near_bits(tanh_y, 0x3FB66639u, kA1UlpTolerance, "tanh");    // 1.42499459
    expect_near_bits(exact_y, 0x3FB6534Bu, kA1UlpTolerance, "exact");  // 1.4244169
    expect_near_bits(a1_ffn(Form::Sigmoid, true), bits_of(1.39223373f), kA1UlpTolerance, "sigmoid");
    // The modes are told apart: 5.8e-4 apart, ~4800 ULPs, far beyond the rounding bound.
    EXPECT_GT(std::fabs(tanh_y - exact_y), 5e-4f);
}

TEST(FfnHanded, G11_GeGLUTanh) {
    // x = [1, 2], W = I, V = diag(2, 3): out = GELU(xW) * xV, then W2 = I to read it out.
    float x[2] = {1, 2}, W[4] = {1, 0, 0, 1}, V[4] = {2, 0, 0, 3}, I[4] = {1, 0, 0, 1}, y[2];
    for (Form form : {Form::Tanh, Form::Erf}) {
        FeedForwardWeights w;
        w.w1 = TensorView::contiguous(W, DType::F32, {2, 2});
        w.v = TensorView::contiguous(V, DType::F32, {2, 2});
        w.w2 = TensorView::contiguous(I, DType::F32, {2, 2});
        FeedForwardOptions o;
        o.kind = FfnKind::GeGLU, o.form = form;
        FeedForward(w, o).forward(TensorView::contiguous(x, DType::F32, {1, 2}),
                                  TensorView::contiguous(y, DType::F32, {1, 2}));
        if (form == Form::Tanh) {
            EXPECT_EQ(y[0], 1.68238401f);
            EXPECT_EQ(y[1], 11.7275858f);
        } else {
            EXPECT_EQ(bits_of(y[0]), 0x3FD7625Fu);
            EXPECT_EQ(bits_of(y[1]), 0x413BA1C9u);
        }
    }
}

TEST(FfnHanded, G13_TwelveChainedExactFfns) {
    float one = 1.0f, x = 1.0f, y = 0.0f;
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(&one, DType::F32, {1, 1});
    w.w2 = TensorView::contiguous(&one, DType::F32, {1, 1});
    FeedForward ffn(w, FeedForwardOptions{});
    for (int layer = 0; layer < 12; layer++) {
        ffn.forward(TensorView::contiguous(&x, DType::F32, {1, 1}), TensorView::contiguous(&y, DType::F32, {1, 1}));
        x = y;
    }
    // The handed value 0x3B25C9D9 (0.00252973125) is the chain evaluated in double throughout.
    // A float32 engine stores each layer's output in float32; the correctly rounded float32
    // chain (each layer's exact GELU rounded once, computed here in long double) ends one ULP
    // above it, at 0x3B25C9DA, and that is what gelukit must return.
    long double r = 1.0L;
    for (int layer = 0; layer < 12; layer++) {
        r = float(0.5L * r * std::erfc(-r / std::sqrt(2.0L)));
    }
    EXPECT_EQ(bits_of(x), bits_of(float(r)));
    EXPECT_EQ(bits_of(x), 0x3B25C9DAu);
    EXPECT_NEAR(x, 0.00252973125f, 2.5e-10f);                      // within 1 ULP of the double chain
    EXPECT_GT(std::fabs(x - 0.00252628862f) / x, 0.001f);         // and 0.14% away from the tanh chain
}

TEST(FfnHanded, G15_FusedAndUnfusedAgree) {
    // Unfused path: linear_gelu (GEMM + bias + GELU), then the second layer in double.
    const std::vector<float> a = a1_linear_gelu(Form::Erf, true);
    EXPECT_EQ(a[0], 2.48447585f);
    EXPECT_EQ(a[1], 0.580029488f);
    const float unfused = float(double(a[0]) * 1.0 + double(a[1]) * -2.0 + double(0.1f));
    EXPECT_EQ(bits_of(unfused), 0x3FB6534Bu);
    A1 a1;
    float eye[4] = {1, 0, 0, 1};
    for (Schedule s : {Schedule::Hand, Schedule::Naive}) {
        // The fused block's epilogue is the very same GELU: with W2 = I, b2 = 0 it returns a
        // bit for bit (1*a0 + 0*a1 is exact in any order).
        FeedForwardWeights w;
        w.w1 = TensorView::contiguous(a1.w1, DType::F32, {2, 2});
        w.b1 = TensorView::contiguous(a1.b1, DType::F32, {2});
        w.w2 = TensorView::contiguous(eye, DType::F32, {2, 2});
        FeedForwardOptions o;
        o.schedule = s;
        float fused_a[2];
        FeedForward(w, o).forward(TensorView::contiguous(a1.h, DType::F32, {1, 2}),
                                  TensorView::contiguous(fused_a, DType::F32, {1, 2}));
        EXPECT_EQ(bits_of(fused_a[0]), bits_of(a[0])) << schedule_name(s);
        EXPECT_EQ(bits_of(fused_a[1]), bits_of(a[1])) << schedule_name(s);
        expect_near_bits(a1_ffn(Form::Erf, true, s), 0x3FB6534Bu, kA1UlpTolerance, schedule_name(s));
    }
}

TEST(FfnHanded, G28_Bf16BiasAddRoundedOnce) {
    // pre-activation 1.0 (0x3F80) + bias 2^-9 (0x3B00), GELU rounded once to bf16 -> 0x3F58.
    uint16_t h = 0x3F80, w1 = 0x3F80, b1 = 0x3B00, out = 0;
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(&w1, DType::BF16, {1, 1});
    w.b1 = TensorView::contiguous(&b1, DType::BF16, {1});
    FeedForwardOptions o;
    o.kind = FfnKind::LinearGelu, o.dtype = DType::BF16;
    FeedForward(w, o).forward(TensorView::contiguous(&h, DType::BF16, {1, 1}),
                              TensorView::contiguous(&out, DType::BF16, {1, 1}));
    EXPECT_EQ(out, 0x3F58);
}

TEST(FfnHanded, G32_NoBiases) {
    const std::vector<float> a = a1_linear_gelu(Form::Erf, false);
    EXPECT_EQ(a[0], 1.95449972f);
    EXPECT_EQ(a[1], 0.841344774f);
    expect_near_bits(a1_ffn(Form::Erf, false), 0x3E8B2AB6u, kA1UlpTolerance, "no biases");  // 0.271810234
}

TEST(FfnHanded, G47_AccumulationPrecision) {
    // h = [300, -300, 300, -300], W1 = 1x4 of 300, b1 = 0, W2 = [[1]], b2 = 0.5: partial sums
    // reach 90000 (> fp16's 65504); a float32 accumulator gives z = 0 exactly and y = 0.5.
    // gelukit's FFN stores f32 or bf16 (fp16 FFN storage is not built: Unsupported, checked
    // below); both accumulate in float32, which is what the case probes.
    for (DType dt : {DType::F32, DType::BF16}) {
        const std::vector<float> hv = {300, -300, 300, -300}, w1v(4, 300.0f), w2v = {1.0f}, b2v = {0.5f};
        Storage h = store(hv, dt), w1 = store(w1v, dt), w2 = store(w2v, dt), b2 = store(b2v, dt), y = store({0}, dt);
        FeedForwardWeights w;
        w.w1 = TensorView::contiguous(w1.data(dt), dt, {1, 4});
        w.w2 = TensorView::contiguous(w2.data(dt), dt, {1, 1});
        w.b2 = TensorView::contiguous(b2.data(dt), dt, {1});
        FeedForwardOptions o;
        o.dtype = dt;
        FeedForward(w, o).forward(TensorView::contiguous(h.data(dt), dt, {1, 4}),
                                  TensorView::contiguous(y.data(dt), dt, {1, 1}));
        if (dt == DType::F32) {
            EXPECT_EQ(y.f[0], 0.5f);
        } else {
            EXPECT_EQ(y.b[0], 0x3F00);  // 0.5 in bf16
        }
    }
    uint16_t half_w = 0x3C00;
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(&half_w, DType::F16, {1, 1});
    w.w2 = w.w1;
    FeedForwardOptions o;
    o.dtype = DType::F16;
    try {
        FeedForward f(w, o);
        ADD_FAILURE() << "fp16 FFN accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
    }
}

// Summation order (ffn generator knob acc_block): the float32 hand kernels sum each output in
// partial sums of at most 128 K terms, each started from 0, where the naive schedule runs one FMA
// chain over all K. With K = 3072 positive products of ~1 the chain's accumulator reaches ~3072,
// where each addition rounds at 2^-12; the partial sums stay below ~200 until the 24 block
// additions. The error of every float32 hand-schedule kernel must be well below the chain's
// (measured 6.9x on sse41, avx512_skylake and avx512_zen4 before the K-blocked path had partial
// sums; asserted: 2x) and within the K-scaled bound. Hand covers, per sub-target, one register
// tile over the whole K loop (AVX-512, SSE4.1, NEON) and the K-blocked m block of several tiles
// with partial sums of one K block each (the AVX2 default, k_block 128); Tuned (linear_gelu's
// schedule file: k_block 4096 over an m block of 32 rows, 27 with AVX-512's 9-row tiles) blocks
// of 128 inside one K block.
TEST(FfnAccuracy, PartialSumsBeatOneFmaChain) {
    Problem p;
    p.kind = FfnKind::LinearGelu, p.M = 8, p.d_model = 3072, p.d_ff = 48, p.bias = false;
    const int64_t k = p.d_model;
    std::mt19937 rng(20261206);
    std::uniform_real_distribution<float> d(0.5f, 1.5f);
    for (auto [x, n] : {std::pair{&p.h, p.M * k}, std::pair{&p.w1, p.d_ff * k}}) {
        x->resize(std::size_t(n));
        for (float &v : *x) v = d(rng);
    }
    // GELU(z) = z to far below double precision here (z > 1000: Phi(z) = 1 - tiny).
    const std::vector<double> z = reference(p).y;
    double bound = 0;
    for (double v : z) {
        bound = std::max(bound, double(k) * 0x1p-24 * v);  // gamma_K * sum |products|
    }
    auto max_error = [&](Schedule s) {
        const std::vector<double> y = run(p, s);
        double e = 0;
        for (std::size_t i = 0; i < y.size(); i++) {
            e = std::max(e, std::fabs(y[i] - z[i]));
        }
        return e;
    };
    const double err_naive = max_error(Schedule::Naive);
    EXPECT_GT(err_naive, 0.0) << "the one-chain reference sum came out exact: the case probes nothing";
    std::vector<Schedule> schedules{Schedule::Hand};
    for (const FfnKernelInfo &info : ffn_kernels()) {
        if (info.kind == FfnKind::LinearGelu && info.dtype == DType::F32 && info.schedule == Schedule::Tuned) {
            schedules.push_back(Schedule::Tuned);
            break;
        }
    }
    for (Schedule s : schedules) {
        const double err = max_error(s);
        const char *name = s == Schedule::Hand ? "hand" : "tuned";
        std::cout << dispatched_isa() << ", max |error| over " << z.size() << " outputs (K = " << k << ", each ~" << k
                  << "): " << name << " (partial sums) " << err << ", naive (one chain) " << err_naive
                  << ", K-scaled bound " << bound << "\n";
        EXPECT_LT(err, 0.5 * err_naive) << name << " (partial sums) " << err << ", naive (one chain) " << err_naive;
        EXPECT_LE(err, bound) << name;
    }
}

// ---------------------------------------------------------------------------------------------
// The real model: each of all-MiniLM-L6-v2's six FFNs (384 -> 1536 -> 384, exact GELU) on the
// model's own LayerNorm-ed token embeddings, against the independent double reference.
TEST(FfnMiniLM, AllLayersAgainstDoubleReference) {
    SafeTensorsFile file(minilm::default_weights_path());
    int64_t tokens = 0;
    const std::vector<float> h = minilm::embedded_tokens(file, &tokens);
    for (int layer = 0; layer < minilm::kLayers; layer++) {
        const minilm::LayerFfn L = minilm::load_layer_ffn(file, layer);
        Problem p;
        p.M = tokens, p.d_model = L.d_model, p.d_ff = L.d_ff, p.h = h, p.w1 = L.w1, p.b1 = L.b1, p.w2 = L.w2,
        p.b2 = L.b2, p.residual = true;
        std::vector<double> ref(std::size_t(tokens * L.d_model));
        minilm::reference_ffn(L, h.data(), tokens, true, ref.data());
        const Reference bound = reference(p);  // same math, gives the per-element bound
        const std::vector<double> y = run(p, Schedule::Hand);
        double max_abs = 0.0;
        for (std::size_t i = 0; i < y.size(); i++) {
            ASSERT_LE(std::fabs(y[i] - ref[i]), 2.0 * bound.bound[i]) << "layer " << layer << " element " << i;
            max_abs = std::max(max_abs, std::fabs(y[i] - ref[i]));
        }
        RecordProperty("layer" + std::to_string(layer) + "_max_abs_err", std::to_string(max_abs));
    }
}

// ---------------------------------------------------------------------------------------------
// Errors: every bad argument is a gelukit::Error with a clear message, never a crash.

template<typename F>
void expect_error(ErrorCode code, const std::string &needle, F &&f) {
    try {
        f();
        ADD_FAILURE() << "no error (expected \"" << needle << "\")";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), code) << e.what();
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

TEST(FfnErrors, BadArguments) {
    std::vector<float> w1(6 * 4, 0.1f), w2(4 * 6, 0.1f), b1(6), h(3 * 4), out(3 * 4);
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), DType::F32, {6, 4});
    w.w2 = TensorView::contiguous(w2.data(), DType::F32, {4, 6});
    FeedForward ffn(w, FeedForwardOptions{});
    EXPECT_EQ(ffn.d_model(), 4);
    EXPECT_EQ(ffn.d_ff(), 6);
    auto H = [&](std::initializer_list<int64_t> s) { return TensorView::contiguous(h.data(), DType::F32, s); };
    auto O = [&](std::initializer_list<int64_t> s) { return TensorView::contiguous(out.data(), DType::F32, s); };
    expect_error(ErrorCode::InvalidArgument, "d_model", [&] { ffn.forward(H({4, 3}), O({4, 3})); });
    expect_error(ErrorCode::InvalidArgument, "out is", [&] { ffn.forward(H({3, 4}), O({2, 4})); });
    expect_error(ErrorCode::InvalidArgument, "null", [&] { ffn.forward(TensorView{}, O({3, 4})); });
    expect_error(ErrorCode::InvalidArgument, "like the weights", [&] {
        ffn.forward(TensorView::contiguous(h.data(), DType::BF16, {3, 4}), O({3, 4}));
    });
    expect_error(ErrorCode::InvalidArgument, "overlaps", [&] { ffn.forward(H({3, 4}), H({3, 4})); });
    expect_error(ErrorCode::InvalidArgument, "rows must be contiguous", [&] {
        ffn.forward(TensorView::strided(h.data(), DType::F32, {3, 4}, {8, 2}), O({3, 4}));
    });
    // Weights: wrong shapes, missing, strided, bias length.
    FeedForwardWeights bad = w;
    bad.w2 = TensorView::contiguous(w2.data(), DType::F32, {6, 4});
    expect_error(ErrorCode::InvalidArgument, "w2", [&] { FeedForward(bad, FeedForwardOptions{}); });
    bad = w;
    bad.w2 = TensorView{};
    expect_error(ErrorCode::InvalidArgument, "w2 must be", [&] { FeedForward(bad, FeedForwardOptions{}); });
    bad = w;
    bad.w2 = TensorView::contiguous(w2.data(), DType::F32, {3, 6});  // d_out 3 != d_model 4
    FeedForwardOptions res;
    res.residual = true;
    expect_error(ErrorCode::InvalidArgument, "residual needs d_out == d_model", [&] { FeedForward(bad, res); });
    bad = w;
    bad.b1 = TensorView::contiguous(b1.data(), DType::F32, {5});
    expect_error(ErrorCode::InvalidArgument, "b1", [&] { FeedForward(bad, FeedForwardOptions{}); });
    bad = w;
    bad.w1 = TensorView::strided(w1.data(), DType::F32, {6, 2}, {4, 2});
    expect_error(ErrorCode::InvalidArgument, "dense row-major", [&] { FeedForward(bad, FeedForwardOptions{}); });
    FeedForwardOptions gated;
    gated.kind = FfnKind::GeGLU;
    expect_error(ErrorCode::InvalidArgument, "v is null", [&] { FeedForward(w, gated); });
    FeedForwardOptions lin;
    lin.kind = FfnKind::LinearGelu, lin.residual = true;
    expect_error(ErrorCode::InvalidArgument, "residual", [&] { FeedForward(w, lin); });
    FeedForwardOptions unbuilt;
    unbuilt.form = Form::Tanh, unbuilt.schedule = Schedule::Naive;
    expect_error(ErrorCode::Unsupported, "no ffn kernel", [&] { FeedForward(w, unbuilt); });
    // An empty batch is valid and writes nothing.
    EXPECT_NO_THROW(ffn.forward(H({0, 4}), O({0, 4})));
}

// Sizes whose products overflow int64 are TooLarge before anything is allocated or packed (a
// [4, 2^62 + 8] w1 used to wrap the packed size to 1536 bytes and write past it, or, borrowed,
// run on 8 columns); a moved-from FeedForward is an Error; strides of extent-1 dimensions and
// null data for an empty batch are accepted.
TEST(FfnErrors, HugeSizesMovedFromAndUnitStrides) {
    std::vector<float> w1(4 * 8, 0.5f), w2(4 * 4, 0.5f), h(8, 1.0f), out(8, 0.0f);
    const int64_t huge = (int64_t(1) << 62) + 8;
    for (bool borrow : {false, true}) {
        FeedForwardWeights w;
        w.w1 = TensorView::strided(w1.data(), DType::F32, {4, huge}, {huge, 1});
        FeedForwardOptions o;
        o.kind = FfnKind::LinearGelu, o.borrow_weights = borrow;
        expect_error(ErrorCode::TooLarge, "44739242", [&] { FeedForward(w, o); });
        w.w1 = TensorView::strided(w1.data(), DType::F32, {huge, 4}, {4, 1});
        expect_error(ErrorCode::TooLarge, "44739242", [&] { FeedForward(w, o); });
        w.w1 = TensorView::strided(w1.data(), DType::F32, {4, std::numeric_limits<int64_t>::max() - 1},
                                   {std::numeric_limits<int64_t>::max() - 1, 1});
        expect_error(ErrorCode::TooLarge, "too large", [&] { FeedForward(w, o); });
    }
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), DType::F32, {4, 4});
    w.w2 = TensorView::strided(w2.data(), DType::F32, {huge, 4}, {4, 1});
    expect_error(ErrorCode::TooLarge, "w2 is", [&] { FeedForward(w, FeedForwardOptions{}); });

    // Extent-1 dimensions with strides that address nothing: a [4, 1] w1 whose column stride is
    // 16, a [1, 4] w2 with row stride 1, a single-row h and out with odd strides.
    std::vector<float> w1c(4, 0.25f), w2r(4, 0.5f);
    FeedForwardWeights u;
    u.w1 = TensorView::strided(w1c.data(), DType::F32, {4, 1}, {1, 16});  // d_ff 4, d_model 1
    u.w2 = TensorView::strided(w2r.data(), DType::F32, {1, 4}, {1, 1});   // d_out 1
    FeedForward narrow(u, FeedForwardOptions{});
    float h1 = 2.0f, y1 = -1.0f;
    narrow.forward(TensorView::strided(&h1, DType::F32, {1, 1}, {7, 5}), TensorView::strided(&y1, DType::F32, {1, 1}, {0, 3}));
    // out = sum_f 0.5 * GELU(0.25 * 2) = 4 * 0.5 * 0.5 * Phi(0.5) (Phi(0.5) = 0.691462461274013).
    EXPECT_NEAR(y1, 4 * 0.5 * 0.5 * 0.691462461274013, 1e-6);
    // An empty batch does nothing, with or without data.
    EXPECT_NO_THROW(narrow.forward(TensorView::strided(nullptr, DType::F32, {0, 1}, {1, 1}),
                                   TensorView::strided(nullptr, DType::F32, {0, 1}, {1, 1})));
    expect_error(ErrorCode::InvalidArgument, "h is null", [&] {
        narrow.forward(TensorView::strided(nullptr, DType::F32, {1, 1}, {1, 1}), TensorView::strided(&y1, DType::F32, {1, 1}, {1, 1}));
    });

    // M and row stride both legal (2^31 - 1) but the span is ~2^64 bytes: TooLarge (a wrapped end
    // let the overlap check pass out inside h).
    FeedForwardWeights sq;
    sq.w1 = TensorView::contiguous(w1.data(), DType::F32, {4, 4});
    sq.w2 = TensorView::contiguous(w2.data(), DType::F32, {4, 4});
    FeedForward square(sq, FeedForwardOptions{});
    const int64_t big = std::numeric_limits<int32_t>::max();
    expect_error(ErrorCode::TooLarge, "h spans 2^62 bytes", [&] {
        square.forward(TensorView::strided(h.data(), DType::F32, {big, 4}, {big, 1}),
                       TensorView::strided(h.data() + 4, DType::F32, {big, 4}, {big, 1}));
    });
    FeedForward moved_to(std::move(narrow));
    EXPECT_EQ(moved_to.d_model(), 1);
    expect_error(ErrorCode::InvalidArgument, "moved from", [&] { (void)narrow.d_model(); });
    expect_error(ErrorCode::InvalidArgument, "moved from", [&] { (void)narrow.kernel_name(); });
    expect_error(ErrorCode::InvalidArgument, "moved from", [&] {
        narrow.forward(TensorView::contiguous(&h1, DType::F32, {1, 1}), TensorView::contiguous(&y1, DType::F32, {1, 1}));
    });
}

// borrow_weights: the unpacked kernel reads the caller's matrices on every call (changing them
// changes the next output), while the default keeps its own copy (the caller may overwrite or
// free its buffers). Both against the double reference.
TEST(FfnBorrow, BorrowedWeightsAreReadInPlaceCopiesAreNot) {
    for (FfnKind kind : {FfnKind::Ffn, FfnKind::LinearGelu}) {
        Problem p = random_problem(kind, Form::Erf, DType::F32, 9, 13, 100, true, kind == FfnKind::Ffn, 77);
        Problem q = random_problem(kind, Form::Erf, DType::F32, 9, 13, 100, true, kind == FfnKind::Ffn, 78);
        q.h = p.h, q.b1 = p.b1, q.b2 = p.b2;  // q differs from p in its weight matrices only
        const int64_t d_out = kind == FfnKind::LinearGelu ? p.d_ff : p.d_model;
        std::vector<float> w1 = p.w1, w2 = p.w2;
        FeedForwardWeights w;
        w.w1 = TensorView::contiguous(w1.data(), DType::F32, {p.d_ff, p.d_model});
        w.b1 = TensorView::contiguous(p.b1.data(), DType::F32, {p.d_ff});
        w.w2 = TensorView::contiguous(w2.data(), DType::F32, {p.d_model, p.d_ff});
        w.b2 = TensorView::contiguous(p.b2.data(), DType::F32, {p.d_model});
        FeedForwardOptions o;
        o.kind = kind, o.residual = p.residual;
        o.borrow_weights = true;
        FeedForward borrowed(w, o);
        o.borrow_weights = false;
        FeedForward owned(w, o);
        // The unpacked kernel without borrowing: FeedForward keeps a plain copy of the matrices.
        o.kernel = std::string(ffn_kind_name(kind)) + "_f32_erf_hand_unpacked";
        FeedForward copied(w, o);
        EXPECT_EQ(borrowed.kernel_name(), o.kernel);
        EXPECT_EQ(copied.kernel_name(), o.kernel);
        EXPECT_EQ(owned.kernel_name(), std::string(ffn_kind_name(kind)) + "_f32_erf_hand");
        auto forward = [&](const FeedForward &f) {
            std::vector<float> out(std::size_t(p.M * d_out), std::nanf(""));
            f.forward(TensorView::contiguous(p.h.data(), DType::F32, {p.M, p.d_model}),
                      TensorView::contiguous(out.data(), DType::F32, {p.M, d_out}));
            return std::vector<double>(out.begin(), out.end());
        };
        auto expect_matches = [&](const Problem &prob, const std::vector<double> &y, const char *what) {
            const Reference r = reference(prob);
            for (std::size_t i = 0; i < y.size(); i++) {
                ASSERT_LE(std::fabs(y[i] - r.y[i]), 2 * r.bound[i]) << ffn_kind_name(kind) << " " << what << " element " << i;
            }
        };
        expect_matches(p, forward(borrowed), "borrowed");
        const std::vector<double> owned_before = forward(owned), copied_before = forward(copied);
        expect_matches(p, owned_before, "owned");
        expect_matches(p, copied_before, "copied");
        // Overwrite the caller's matrices in place (same storage: the views stay valid).
        std::copy(q.w1.begin(), q.w1.end(), w1.begin());
        std::copy(q.w2.begin(), q.w2.end(), w2.begin());
        expect_matches(q, forward(borrowed), "borrowed, after the caller changed its weights");
        EXPECT_EQ(forward(owned), owned_before) << ffn_kind_name(kind) << ": the packed copy must not change";
        EXPECT_EQ(forward(copied), copied_before) << ffn_kind_name(kind) << ": the plain copy must not change";
    }
}

// Pinning a kernel by name, and the errors of borrowing: out over a borrowed weight.
TEST(FfnBorrow, PinnedKernelsAndOverlapErrors) {
    std::vector<float> w1(96 * 64, 0.01f), w2(64 * 96, 0.01f), h(8 * 64, 1.0f), out(8 * 96);
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), DType::F32, {96, 64});
    w.w2 = TensorView::contiguous(w2.data(), DType::F32, {64, 96});
    FeedForwardOptions o;
    o.kernel = "no_such_kernel";
    expect_error(ErrorCode::Unsupported, "no FFN kernel named 'no_such_kernel'", [&] { FeedForward(w, o); });
    o.kernel = "linear_gelu_f32_erf_hand";  // options say Ffn
    expect_error(ErrorCode::InvalidArgument, "is not a ffn kernel", [&] { FeedForward(w, o); });
    o.kernel = "ffn_f32_erf_hand", o.borrow_weights = true;
    expect_error(ErrorCode::Unsupported, "needs an _unpacked kernel", [&] { FeedForward(w, o); });
    // linear_gelu writing its output over the borrowed W1 (the same bytes it reads).
    FeedForwardOptions lin;
    lin.kind = FfnKind::LinearGelu, lin.borrow_weights = true;
    FeedForward borrowed(w, lin);
    const TensorView hv = TensorView::contiguous(h.data(), DType::F32, {8, 64});
    expect_error(ErrorCode::InvalidArgument, "overlaps the borrowed weight w1", [&] {
        borrowed.forward(hv, TensorView::contiguous(w1.data() + 100, DType::F32, {8, 96}));
    });
    EXPECT_NO_THROW(borrowed.forward(hv, TensorView::contiguous(out.data(), DType::F32, {8, 96})));
    lin.borrow_weights = false;  // a copy: the caller may reuse its W1 storage as the output
    FeedForward owned(w, lin);
    EXPECT_NO_THROW(owned.forward(hv, TensorView::contiguous(w1.data(), DType::F32, {8, 96})));
}

TEST(FfnBorrow, RegistryAndUnsupportedCombinations) {
    int unpacked = 0;
    for (const FfnKernelInfo &k : ffn_kernels()) {
        if (!k.packed_weights) {
            unpacked++;
            EXPECT_EQ(k.dtype, DType::F32) << k.name;
        }
        if (k.name == "ffn_f32_erf_hand_unpacked" || k.name == "linear_gelu_f32_erf_hand_unpacked") {
            EXPECT_FALSE(k.packed_weights) << k.name;
            EXPECT_EQ(k.schedule, Schedule::Hand) << k.name;
        }
    }
    EXPECT_GE(unpacked, 2);
    std::vector<uint16_t> w1(6 * 4), w2(4 * 6);
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), DType::BF16, {6, 4});
    w.w2 = TensorView::contiguous(w2.data(), DType::BF16, {4, 6});
    FeedForwardOptions o;
    o.dtype = DType::BF16, o.borrow_weights = true;
    expect_error(ErrorCode::Unsupported, "unpacked (borrowed) weights", [&] { FeedForward(w, o); });
    o.dtype = DType::F32, o.kind = FfnKind::GeGLU;
    std::vector<float> f1(6 * 4), f2(4 * 6);
    w.w1 = TensorView::contiguous(f1.data(), DType::F32, {6, 4});
    w.v = TensorView::contiguous(f1.data(), DType::F32, {6, 4});
    w.w2 = TensorView::contiguous(f2.data(), DType::F32, {4, 6});
    expect_error(ErrorCode::Unsupported, "unpacked (borrowed) weights", [&] { FeedForward(w, o); });
}

}  // namespace
}  // namespace gelukit::test
