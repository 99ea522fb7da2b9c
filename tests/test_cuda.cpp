// The CUDA GELU libraries (gelukit/cuda.h).
//
// Without a usable device (no driver, no GPU, compute capability < 8.0) the kernel tests are
// skipped with the probe's reason; what runs everywhere: the probe itself, the argument checks
// (which must reject bad calls before any device call), and the no-device path, which must
// throw gelukit::Error and never abort (handed case G42, FK-30), also when Halide's CUDA runtime
// is called directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gelukit/cuda.h"
#include "gelukit/error.h"
#include "gelukit/runtime.h"
#include "support/harness.h"
#include "support/reference.h"
#include "support/tolerances.h"

#if GELUKIT_TEST_CUDA
#include "HalideRuntimeCuda.h"
#include "gelukit/generated/cuda_kernel_headers.h"
#endif

namespace gelukit::test {
namespace {

namespace gc = gelukit::cuda;

const gc::DeviceStatus &device() {
    static const gc::DeviceStatus s = gc::cuda_device_available();
    return s;
}

#define GELUKIT_REQUIRE_CUDA_DEVICE()                                                        \
    do {                                                                                     \
        if (!device().available) {                                                           \
            GTEST_SKIP() << "no usable CUDA device: " << device().reason;                    \
        }                                                                                    \
    } while (0)

template<typename F>
ErrorCode code_of(F &&f) {
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    ADD_FAILURE() << "expected a gelukit::Error";
    return ErrorCode::Halide;
}

// --- Everywhere -------------------------------------------------------------------------------

TEST(CudaProbe, ReportsAReasonWhenUnavailable) {
    const gc::DeviceStatus &s = device();
    if (s.available) {
        EXPECT_TRUE(s.reason.empty());
        EXPECT_GE(s.major, 8);
        EXPECT_GE(s.device_count, 1);
        RecordProperty("device", s.name + " sm_" + std::to_string(s.major) + std::to_string(s.minor));
    } else {
        EXPECT_FALSE(s.reason.empty());
        RecordProperty("reason", s.reason);
    }
    // A device ordinal that cannot exist: unavailable, with a reason, no exception.
    gc::DeviceStatus bad = gc::cuda_device_available(1 << 20);
    EXPECT_FALSE(bad.available);
    EXPECT_FALSE(bad.reason.empty());
}

TEST(CudaRegistry, EveryFormDirectionDtypeIsBuilt) {
    if (!gc::built_with_cuda()) {
        EXPECT_TRUE(gc::kernels().empty());
        GTEST_SKIP() << "gelukit built with GELUKIT_CUDA=OFF";
    }
    EXPECT_NE(std::string(gc::halide_target()).find("-cuda-"), std::string::npos) << gc::halide_target();
    for (Direction dir : {Direction::Forward, Direction::Backward}) {
        for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
            for (Form form : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
                bool found = false;
                for (const gc::KernelInfo &k : gc::kernels()) {
                    found |= k.direction == dir && k.dtype == dt && k.form == form && k.schedule == gc::Schedule::Hand;
                }
                EXPECT_TRUE(found) << dtype_name(dt) << " " << form_name(form);
            }
        }
    }
}

// G42, runtime half: with no driver or device, a CUDA call is a gelukit::Error(NoDevice) that
// carries the probe's reason; the process goes on.
TEST(CudaNoDevice, CallThrowsNoDeviceError) {
    if (device().available) {
        GTEST_SKIP() << "a CUDA device is present (" << device().name << "): the no-device path is not reachable";
    }
    std::vector<float> x(64, 1.0f), y(64, 0.0f);
    TensorView xv = TensorView::contiguous(x.data(), DType::F32, {64});
    TensorView yv = TensorView::contiguous(y.data(), DType::F32, {64});
    const ErrorCode expected = gc::built_with_cuda() ? ErrorCode::NoDevice : ErrorCode::Unsupported;
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(xv, yv); }), expected);
    EXPECT_EQ(code_of([&] { gc::gelu_backward_host(xv, xv, yv); }), expected);
    EXPECT_EQ(code_of([&] { gc::gelu_forward_device(xv, yv); }), expected);
    EXPECT_EQ(code_of([&] { gc::initialize(); }), ErrorCode::NoDevice);
    try {
        gc::gelu_forward_host(xv, yv);
    } catch (const Error &e) {
        if (gc::built_with_cuda()) {
            EXPECT_NE(std::string(e.what()).find(device().reason), std::string::npos) << e.what();
        }
    }
    // The output was not touched.
    for (float v : y) {
        ASSERT_EQ(v, 0.0f);
    }
}

#if GELUKIT_TEST_CUDA
// G42 / FK-30 below gelukit's own probe: the CUDA library called directly through its Halide
// entry point, on host buffers, with no driver. Halide's CUDA runtime must report the failure
// through the (gelukit-installed) error handler and return a non-zero status: no abort.
TEST(CudaNoDevice, RawHalideKernelReturnsAnErrorStatus) {
    if (device().available) {
        GTEST_SKIP() << "a CUDA device is present: the no-driver path is not reachable";
    }
    num_threads();  // installs gelukit's Halide error handler (Halide's default aborts)
    std::vector<float> x(300, 0.5f), y(300, 0.0f);
    halide_dimension_t dx[4] = {{0, 300, 1}, {0, 1, 300}, {0, 1, 300}, {0, 1, 300}};
    halide_dimension_t dy[4] = {{0, 300, 1}, {0, 1, 300}, {0, 1, 300}, {0, 1, 300}};
    halide_buffer_t bx{}, by{};
    bx.host = reinterpret_cast<uint8_t *>(x.data());
    by.host = reinterpret_cast<uint8_t *>(y.data());
    bx.type = by.type = halide_type_t(halide_type_float, 32);
    bx.dimensions = by.dimensions = 4;
    bx.dim = dx;
    by.dim = dy;
    bx.set_host_dirty(true);
    const int status = cuda_gelu_fwd_f32_erf_hand(nullptr, &bx, 1.0f, &by);
    EXPECT_NE(status, 0) << "the CUDA kernel reported success without a driver";
    EXPECT_EQ(by.device, 0u);
    for (float v : y) {
        ASSERT_EQ(v, 0.0f);
    }
}
#endif

// Bad arguments are refused before any device call: each error below would otherwise be
// NoDevice on this machine (or a Halide error on a GPU machine).
TEST(CudaArguments, RejectedBeforeAnyDeviceCall) {
    std::vector<float> a(256, 1.0f), b(256, 0.0f);
    auto v = [](void *p, std::initializer_list<int64_t> shape) { return TensorView::contiguous(p, DType::F32, shape); };
    const TensorView x = v(a.data(), {16, 16}), y = v(b.data(), {16, 16});
    using E = ErrorCode;
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(v(nullptr, {4}), v(b.data(), {4})); }), E::InvalidArgument);
    EXPECT_EQ(code_of([&] { gc::gelu_forward_device(x, v(nullptr, {16, 16})); }), E::InvalidArgument);
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(x, v(b.data(), {16, 15})); }), E::InvalidArgument);
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(x, TensorView::contiguous(b.data(), DType::F16, {16, 16})); }),
              E::Unsupported);
    const TensorView y44 = v(b.data(), {4, 4});
    EXPECT_EQ(code_of([&] { gc::gelu_forward_device(TensorView::strided(a.data(), DType::F32, {4, 4}, {-4, 1}), y44); }),
              E::InvalidArgument);
    EXPECT_EQ(code_of([&] { gc::gelu_forward_device(TensorView::strided(a.data(), DType::F32, {4, 4}, {4, 0}), y44); }),
              E::InvalidArgument);
    TensorView rank0;
    rank0.data = a.data();
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(rank0, rank0); }), E::InvalidArgument);
    // Output overlapping an input without being the same view; output overlapping itself.
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(v(a.data(), {128}), v(a.data() + 1, {128})); }), E::InvalidArgument);
    EXPECT_EQ(code_of([&] {
                  gc::gelu_forward_device(x, TensorView::strided(b.data(), DType::F32, {16, 16}, {1, 1}));
              }),
              E::InvalidArgument);
    // Scale: positive normal, erf form only.
    gc::GeluOptions o;
    o.scale = 0.0f;
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(x, y, o); }), E::InvalidArgument);
    o.scale = NAN;
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(x, y, o); }), E::InvalidArgument);
    o.scale = 2.0f;
    o.form = Form::Tanh;
    EXPECT_EQ(code_of([&] { gc::gelu_forward_host(x, y, o); }), E::InvalidArgument);
    // 32-bit indexing: a view spanning 2^31 bytes is TooLarge (the pointer is never touched).
    EXPECT_EQ(code_of([&] {
                  gc::gelu_forward_device(TensorView::strided(a.data(), DType::F32, {2, 1}, {int64_t(1) << 29, 1}),
                                          TensorView::strided(b.data(), DType::F32, {2, 1}, {1, 1}));
              }),
              E::TooLarge);
    // A schedule that is not built.
    bool anderson_built = false;
    for (const gc::KernelInfo &k : gc::kernels()) {
        anderson_built |= k.schedule == gc::Schedule::Anderson2021;
    }
    if (!anderson_built) {
        gc::GeluOptions oa;
        oa.schedule = gc::Schedule::Anderson2021;
        EXPECT_EQ(code_of([&] { gc::gelu_forward_host(x, y, oa); }), E::Unsupported);
    }
    // Nothing was written.
    for (float f : b) {
        ASSERT_EQ(f, 0.0f);
    }
}

// The autoscheduled kernels' limits are found before any device call: a non-unit innermost
// stride, and (by a Halide bounds query, which needs no device) an extent below their 64-wide
// ShiftInwards tiles.
TEST(CudaArguments, Anderson2021LimitsRefusedBeforeAnyDeviceCall) {
    bool built = false;
    for (const gc::KernelInfo &k : gc::kernels()) {
        built |= k.schedule == gc::Schedule::Anderson2021;
    }
    if (!built) {
        GTEST_SKIP() << "no anderson2021 CUDA kernels in this build";
    }
    std::vector<float> a(512, 1.0f), b(512, 0.0f);
    gc::GeluOptions o;
    o.schedule = gc::Schedule::Anderson2021;
    EXPECT_EQ(code_of([&] {
                  gc::gelu_forward_host(TensorView::strided(a.data(), DType::F32, {100}, {2}),
                                        TensorView::strided(b.data(), DType::F32, {100}, {2}), o);
              }),
              ErrorCode::Unsupported);
    EXPECT_EQ(code_of([&] {
                  gc::gelu_forward_host(TensorView::contiguous(a.data(), DType::F32, {10}),
                                        TensorView::contiguous(b.data(), DType::F32, {10}), o);
              }),
              ErrorCode::Unsupported);
    for (float f : b) {
        ASSERT_EQ(f, 0.0f);
    }
}

// --- With a device ----------------------------------------------------------------------------

class EveryCudaKernel : public testing::TestWithParam<gc::KernelInfo> {
protected:
    void SetUp() override {
        if (!device().available) {
            GTEST_SKIP() << "no usable CUDA device: " << device().reason;
        }
    }
    const gc::KernelInfo &k() const {
        return GetParam();
    }
    bool backward() const {
        return k().direction == Direction::Backward;
    }
    gc::GeluOptions opts() const {
        gc::GeluOptions o;
        o.form = k().form;
        o.schedule = k().schedule;
        return o;
    }
    std::size_t esize() const {
        return dtype_size(k().dtype);
    }
    // The CPU library's fast-math contract (same float32 formulation: gelu_math.h).
    int64_t tol() const {
        return ulp_tolerance(Math::Fast, k().direction, k().dtype, k().form);
    }

    std::vector<uint32_t> inputs(std::size_t n, uint32_t seed) const {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<double> u(-10.0, 10.0);
        std::vector<uint32_t> v(n);
        for (std::size_t i = 0; i < n; i++) {
            v[i] = to_bits(u(rng), k().dtype);
        }
        return v;
    }

    // Special values and saturation points (gelu-reference.md), as storage bits.
    std::vector<uint32_t> specials() const {
        std::vector<double> xs = {0.0,   -0.0, 1.0,   -1.0,  -0.75179152, 2.27, -2.27, 6.0,  -6.0, -10.0,
                                  -13.5, 13.5, -14.5, 100.0, -100.0,      1e-30, -1e-30, 3e38, -3e38};
        std::vector<uint32_t> v;
        for (double x : xs) {
            v.push_back(to_bits(x, k().dtype));
        }
        v.push_back(to_bits(INFINITY, k().dtype));
        v.push_back(to_bits(-INFINITY, k().dtype));
        v.push_back(to_bits(NAN, k().dtype));
        return v;
    }

    void check(const std::vector<uint32_t> &x, const std::vector<uint32_t> &dy, const std::vector<uint32_t> &out,
               const std::string &what) const {
        const DType dt = k().dtype;
        const double root = grad_root(k().form);
        int failures = 0;
        for (std::size_t i = 0; i < x.size() && failures < 5; i++) {
            const double xv = bits_to_double(x[i], dt);
            RefValue r = backward() ? gelu_grad_ref(k().form, xv) : gelu_ref(k().form, xv);
            double dyv = 1.0;
            if (backward()) {
                dyv = bits_to_double(dy[i], dt);
                r = {r.hi * dyv, r.lo * dyv};
            }
            const uint32_t want = round_to_bits(r, dt);
            const int64_t u = ulp_distance(out[i], want, dt);
            bool ok = u <= tol();
            const double abs_err = std::fabs(bits_to_double(out[i], dt) - (r.hi + r.lo));
            if (!ok && backward() && dt == DType::F32 && std::fabs(xv - root) < 0.01) {
                ok = abs_err <= root_window_abs_tolerance(Math::Fast) * std::fabs(dyv);
            }
            if (!ok && backward() && dt == DType::F32) {
                ok = abs_err <= fast_backward_abs_tolerance() * std::fabs(dyv);
            }
            if (!ok) {
                failures++;
                ADD_FAILURE() << k().name << " " << what << ": element " << i << " x=" << xv << " got bits 0x"
                              << std::hex << out[i] << " want 0x" << want << std::dec << " (" << u << " ULP)";
            }
        }
    }

    void run_host(const TensorView &x, const TensorView &dy, const TensorView &out) const {
        if (backward()) {
            gc::gelu_backward_host(x, dy, out, opts());
        } else {
            gc::gelu_forward_host(x, out, opts());
        }
    }
};

// Host API: tails of the 256-thread blocks, one-block and many-block sizes, specials.
TEST_P(EveryCudaKernel, HostCopiesTailsAndSpecials) {
    for (std::size_t n : {1u, 7u, 255u, 256u, 257u, 1000u, 65537u}) {
        std::vector<uint32_t> x = inputs(n, uint32_t(n)), dy = inputs(n, 11);
        if (n == 1000) {
            std::vector<uint32_t> s = specials();
            std::copy(s.begin(), s.end(), x.begin());
        }
        std::vector<char> xb = pack_bits(x, k().dtype), db = pack_bits(dy, k().dtype), ob(n * esize() + 64, '\x5a');
        const int64_t len = int64_t(n);
        run_host(TensorView::contiguous(xb.data(), k().dtype, {len}), TensorView::contiguous(db.data(), k().dtype, {len}),
                 TensorView::contiguous(ob.data(), k().dtype, {len}));
        for (std::size_t i = n * esize(); i < ob.size(); i++) {
            ASSERT_EQ(ob[i], '\x5a') << k().name << ": wrote past the end for n = " << n;
        }
        ob.resize(n * esize());
        check(x, dy, unpack_bits(ob, k().dtype), "n=" + std::to_string(n));
    }
}

// Bit-pattern sample: every fp16/bf16 pattern; 2^20 spread float32 patterns.
TEST_P(EveryCudaKernel, BitPatternSweep) {
    std::vector<uint32_t> x;
    if (k().dtype == DType::F32) {
        for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4093) {  // odd step: every exponent, varied mantissas
            x.push_back(uint32_t(b));
        }
    } else {
        for (uint32_t b = 0; b < 65536; b++) {
            x.push_back(b);
        }
    }
    std::vector<uint32_t> dy(x.size(), to_bits(1.0, k().dtype));
    std::vector<char> xb = pack_bits(x, k().dtype), db = pack_bits(dy, k().dtype), ob(xb.size());
    const int64_t len = int64_t(x.size());
    run_host(TensorView::contiguous(xb.data(), k().dtype, {len}), TensorView::contiguous(db.data(), k().dtype, {len}),
             TensorView::contiguous(ob.data(), k().dtype, {len}));
    check(x, dy, unpack_bits(ob, k().dtype), "sweep");
}

// Rank 4 with a non-unit innermost stride and padded outer strides; and in place.
TEST_P(EveryCudaKernel, StridedRank4AndInPlace) {
    const int64_t s0 = 3, s1 = 5, s2 = 7, s3 = 33;  // innermost extent 33: a partial block
    const int64_t st3 = 2, st2 = st3 * s3 + 4, st1 = st2 * s2 + 1, st0 = st1 * s1 + 8;
    const std::size_t span = std::size_t(st0 * s0);
    std::vector<uint32_t> x = inputs(span, 5), dy = inputs(span, 6), fill(span, to_bits(-123.0, k().dtype));
    std::vector<char> xb = pack_bits(x, k().dtype), db = pack_bits(dy, k().dtype), ob = pack_bits(fill, k().dtype);
    auto view = [&](std::vector<char> &b) {
        return TensorView::strided(b.data(), k().dtype, {s0, s1, s2, s3}, {st0, st1, st2, st3});
    };
    run_host(view(xb), view(db), view(ob));
    std::vector<uint32_t> out = unpack_bits(ob, k().dtype), xs, dys, outs;
    std::vector<bool> touched(span, false);
    for (int64_t i0 = 0; i0 < s0; i0++)
        for (int64_t i1 = 0; i1 < s1; i1++)
            for (int64_t i2 = 0; i2 < s2; i2++)
                for (int64_t i3 = 0; i3 < s3; i3++) {
                    const std::size_t o = std::size_t(i0 * st0 + i1 * st1 + i2 * st2 + i3 * st3);
                    touched[o] = true;
                    xs.push_back(x[o]);
                    dys.push_back(dy[o]);
                    outs.push_back(out[o]);
                }
    check(xs, dys, outs, "strided rank 4");
    for (std::size_t i = 0; i < span; i++) {
        if (!touched[i]) {
            ASSERT_EQ(out[i], fill[i]) << k().name << ": wrote a gap element " << i;
        }
    }
    // In place (forward: y = x; backward: dx = dy).
    std::vector<char> inplace = backward() ? db : xb;
    run_host(view(xb), view(backward() ? inplace : db), view(inplace));
    std::vector<uint32_t> got = unpack_bits(inplace, k().dtype);
    for (std::size_t i = 0; i < span; i++) {
        if (touched[i]) {
            ASSERT_EQ(got[i], out[i]) << k().name << ": in-place result differs at " << i;
        }
    }
}

// Device API: user device pointers (allocated here through Halide's CUDA runtime in the
// primary context, as cudaMalloc would), a strided view, synchronize.
TEST_P(EveryCudaKernel, UserDevicePointers) {
#if GELUKIT_TEST_CUDA
    gc::initialize();
    const int64_t n = 4099;
    std::vector<uint32_t> x = inputs(2 * n, 21), dy = inputs(2 * n, 22);
    std::vector<char> xb = pack_bits(x, k().dtype), db = pack_bits(dy, k().dtype), ob(std::size_t(2 * n) * esize(), 0);
    struct DeviceCopy {
        halide_dimension_t dim;
        halide_buffer_t buf{};
        DeviceCopy(std::vector<char> &host, DType dt, int64_t count) : dim(0, int32_t(count), 1) {
            buf.host = reinterpret_cast<uint8_t *>(host.data());
            buf.type = dt == DType::F32 ? halide_type_t(halide_type_float, 32)
                                        : dt == DType::F16 ? halide_type_t(halide_type_float, 16)
                                                           : halide_type_t(halide_type_bfloat, 16);
            buf.dimensions = 1;
            buf.dim = &dim;
            buf.set_host_dirty(true);
            EXPECT_EQ(halide_copy_to_device(nullptr, &buf, halide_cuda_device_interface()), 0);
        }
        ~DeviceCopy() {
            halide_device_free(nullptr, &buf);
        }
        void *ptr() const {
            return reinterpret_cast<void *>(halide_cuda_get_device_ptr(nullptr, const_cast<halide_buffer_t *>(&buf)));
        }
        void download() {
            buf.set_host_dirty(false);
            buf.set_device_dirty(true);
            EXPECT_EQ(halide_copy_to_host(nullptr, &buf), 0);
        }
    };
    DeviceCopy dx(xb, k().dtype, 2 * n), ddy(db, k().dtype, 2 * n), dout(ob, k().dtype, 2 * n);
    ASSERT_NE(dx.ptr(), nullptr);
    gc::Launch launch;
    launch.synchronize = true;
    // Every other element (innermost stride 2).
    auto view = [&](const DeviceCopy &d) { return TensorView::strided(d.ptr(), k().dtype, {n}, {2}); };
    if (backward()) {
        gc::gelu_backward_device(view(dx), view(ddy), view(dout), opts(), launch);
    } else {
        gc::gelu_forward_device(view(dx), view(dout), opts(), launch);
    }
    dout.download();
    std::vector<uint32_t> out = unpack_bits(ob, k().dtype), xs, dys, outs;
    for (int64_t i = 0; i < n; i++) {
        xs.push_back(x[std::size_t(2 * i)]);
        dys.push_back(dy[std::size_t(2 * i)]);
        outs.push_back(out[std::size_t(2 * i)]);
        ASSERT_EQ(out[std::size_t(2 * i + 1)], 0u) << "odd element " << 2 * i + 1 << " was written";
    }
    check(xs, dys, outs, "device pointers, stride 2");
#else
    GTEST_SKIP() << "built without GELUKIT_CUDA";
#endif
}

std::string kernel_name(const testing::TestParamInfo<gc::KernelInfo> &info) {
    return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Cuda, EveryCudaKernel, testing::ValuesIn(gc::kernels()), kernel_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EveryCudaKernel);

// More rows than grid y/z allow (65535): the schedule fuses every block index into grid x.
TEST(CudaLaunch, RowsBeyondGridYLimit) {
    GELUKIT_REQUIRE_CUDA_DEVICE();
    const int64_t rows = 70000, cols = 3, pitch = 4;
    std::vector<float> x(std::size_t(rows * pitch)), y(x.size(), -1.0f);
    for (std::size_t i = 0; i < x.size(); i++) {
        x[i] = float(int(i % 97) - 48) / 8.0f;
    }
    gc::gelu_forward_host(TensorView::strided(x.data(), DType::F32, {rows, cols}, {pitch, 1}),
                          TensorView::strided(y.data(), DType::F32, {rows, cols}, {pitch, 1}));
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < pitch; c++) {
            const std::size_t i = std::size_t(r * pitch + c);
            if (c == cols) {
                ASSERT_EQ(y[i], -1.0f) << "pitch padding written at row " << r;
                continue;
            }
            const double want = gelu_ref(Form::Erf, x[i]).hi;
            ASSERT_NEAR(y[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << "row " << r << " col " << c;
        }
    }
}

}  // namespace
}  // namespace gelukit::test
