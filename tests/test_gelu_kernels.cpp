// Every kernel of the registry (gelukit::gelu_kernels()): accuracy sweep, vector tails, strides,
// ranks, in-place. New registry rows are tested here without edits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "support/harness.h"
#include "support/reference.h"
#include "support/scale.h"
#include "support/sweep.h"
#include "support/tolerances.h"

namespace gelukit::test {
namespace {

class EveryKernel : public testing::TestWithParam<KernelInfo> {
protected:
    const KernelInfo &k() const {
        return GetParam();
    }
    GeluOptions opts() const {
        GeluOptions o;
        o.form = k().form;
        o.math = k().math;
        o.schedule = k().schedule;
        return o;
    }
    bool backward() const {
        return k().direction == Direction::Backward;
    }
    int64_t tol() const {
        return ulp_tolerance(k().math, k().direction, k().dtype, k().form);
    }
    std::size_t esize() const {
        return dtype_size(k().dtype);
    }

    // Deterministic inputs in [-8, 8] (plus a few specials), as storage bits.
    std::vector<uint32_t> inputs(std::size_t n, uint32_t seed) const {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<double> u(-8.0, 8.0);
        std::vector<uint32_t> v(n);
        for (std::size_t i = 0; i < n; i++) {
            v[i] = to_bits(u(rng), k().dtype);
        }
        return v;
    }

    // Checks out[i] (storage bits at element offsets) against the reference of x[i], dy[i].
    void check(const std::vector<uint32_t> &x, const std::vector<uint32_t> &dy, const std::vector<uint32_t> &out,
               const std::string &what) const {
        const DType dt = k().dtype;
        const double root = grad_root(k().form);
        int failures = 0;
        for (std::size_t i = 0; i < x.size() && failures < 5; i++) {
            double xv = bits_to_double(x[i], dt);
            RefValue r = backward() ? gelu_grad_ref(k().form, xv) : gelu_ref(k().form, xv);
            if (backward()) {
                double d = bits_to_double(dy[i], dt);
                r = {r.hi * d, r.lo * d};
            }
            uint32_t want = round_to_bits(r, dt);
            int64_t u = ulp_distance(out[i], want, dt);
            bool ok = u <= tol();
            const double abs_err = std::fabs(bits_to_double(out[i], dt) - (r.hi + r.lo));
            const double dy_mag = std::fabs(bits_to_double(dy[i], dt));
            if (!ok && backward() && dt == DType::F32 && std::fabs(xv - root) < 0.01) {
                ok = abs_err <= root_window_abs_tolerance(k().math) * dy_mag;
            }
            if (!ok && backward() && dt == DType::F32 && k().math == Math::Fast) {
                ok = abs_err <= fast_backward_abs_tolerance() * dy_mag;
            }
            if (!ok) {
                failures++;
                ADD_FAILURE() << k().name << " " << what << ": element " << i << " x=" << xv << " got bits 0x"
                              << std::hex << out[i] << " want 0x" << want << std::dec << " (" << u << " ULP)";
            }
        }
    }

    std::vector<char> pack(const std::vector<uint32_t> &bits) const {
        return pack_bits(bits, k().dtype);
    }
    std::vector<uint32_t> unpack(const std::vector<char> &buf) const {
        return unpack_bits(buf, k().dtype);
    }

    // Runs the kernel on views over x/dy/out storage.
    void run(const TensorView &x, const TensorView &dy, const TensorView &out) const {
        if (backward()) {
            gelu_backward(x, dy, out, opts());
        } else {
            gelu_forward(x, out, opts());
        }
    }
};

TEST_P(EveryKernel, SampledBitPatternSweep) {
    SweepConfig cfg;
    cfg.direction = k().direction;
    cfg.dtype = k().dtype;
    cfg.options = opts();
    // f32: ~200k lattice points (20k under qemu) over all 2^32 patterns plus dense windows;
    // halves: all 2^16.
    SweepResult r = sweep_sampled(cfg, scaled<uint64_t>(200000, 20000));
    EXPECT_LE(r.max_ulp, tol()) << k().name << ": " << r.summary(k().dtype);
    if (k().dtype == DType::F32 && backward()) {
        EXPECT_LE(r.max_abs_err_root, root_window_abs_tolerance(k().math)) << r.summary(k().dtype);
    }
    RecordProperty("summary", r.summary(k().dtype));
}

TEST_P(EveryKernel, VectorTailsAndSizes) {
    // w = 16 float32 lanes on AVX-512 (8 on AVX2, 4 on SSE4.1): sizes around each width, and
    // beyond one parallel chunk (16384 elements).
    std::vector<std::size_t> sizes = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 35, 1000, 16387,
                                      scaled<std::size_t>(100003, 16411)};
    if (kUnderEmulator && k().schedule == Schedule::Adams2019) {
        // Each call below one Adams2019 tile runs a full 786432-element tile (runtime.h), ~0.3 s
        // under qemu: the 4-lane NEON tails and the multi-vector sizes only.
        sizes = {0, 1, 3, 5, 17, 33, 16387};
    }
    for (std::size_t n : sizes) {
        std::vector<uint32_t> x = inputs(n, static_cast<uint32_t>(n) + 1), dy = inputs(n, 7);
        std::vector<char> xb = pack(x), db = pack(dy), ob(n * esize() + 64, '\x5a');
        const int64_t len = static_cast<int64_t>(n);
        run(TensorView::contiguous(xb.data(), k().dtype, {len}), TensorView::contiguous(db.data(), k().dtype, {len}),
            TensorView::contiguous(ob.data(), k().dtype, {len}));
        for (std::size_t i = n * esize(); i < ob.size(); i++) {
            ASSERT_EQ(ob[i], '\x5a') << k().name << ": wrote past the end for n = " << n;
        }
        ob.resize(n * esize());
        check(x, dy, unpack(ob), "n=" + std::to_string(n));
    }
}

// Under qemu the Adams2019 kernels skip the next two tests: their strided and in-place calls go
// through the runtime's dense copy (the same C++ as natively) into one full 786432-element tile
// each, ~65 s in all there; their own code is covered by the sweep and the tails above.
bool skip_under_emulator(const KernelInfo &k) {
    return kUnderEmulator && k.schedule == Schedule::Adams2019;
}

TEST_P(EveryKernel, StridedViewsOfEveryRank) {
    if (skip_under_emulator(k())) {
        GTEST_SKIP() << "Adams2019 views go through the dense copy; skipped under qemu";
    }
    // Each operand is a view into a larger buffer: innermost stride 2 or 3, permuted outer dims.
    struct Case {
        std::vector<int64_t> shape, strides;
    };
    const std::vector<Case> cases = {
        {{37}, {3}},
        {{5, 19}, {40, 2}},
        {{4, 3, 17}, {3 * 17, 1, 3}},           // permuted: dim1 has stride 1
        {{2, 3, 4, 9}, {3 * 4 * 9 * 2, 4 * 9 * 2, 9 * 2, 2}},
        {{3, 33}, {1, 3}},                       // transposed (column-major) matrix
    };
    for (const Case &c : cases) {
        int64_t span = 1;
        for (std::size_t d = 0; d < c.shape.size(); d++) {
            span += (c.shape[d] - 1) * c.strides[d];
        }
        std::vector<uint32_t> xs = inputs(span, 11), dys = inputs(span, 12);
        std::vector<char> xb = pack(xs), db = pack(dys), ob(span * esize(), '\x5a');
        auto view = [&](std::vector<char> &b) {
            TensorView v;
            v.data = b.data();
            v.dtype = k().dtype;
            v.rank = static_cast<int>(c.shape.size());
            for (int d = 0; d < v.rank; d++) {
                v.shape[d] = c.shape[d];
                v.strides[d] = c.strides[d];
            }
            return v;
        };
        run(view(xb), view(db), view(ob));
        // Gather the viewed elements and check them; untouched slots keep the sentinel.
        std::vector<bool> touched(span, false);
        std::vector<uint32_t> x, dy, out;
        int64_t idx[4] = {0, 0, 0, 0};
        const int rank = static_cast<int>(c.shape.size());
        int64_t total = 1;
        for (int64_t e : c.shape) {
            total *= e;
        }
        std::vector<uint32_t> outs = unpack(ob);
        for (int64_t flat = 0; flat < total; flat++) {
            int64_t rem = flat, off = 0;
            for (int d = rank - 1; d >= 0; d--) {
                idx[d] = rem % c.shape[d];
                rem /= c.shape[d];
                off += idx[d] * c.strides[d];
            }
            touched[off] = true;
            x.push_back(xs[off]);
            dy.push_back(dys[off]);
            out.push_back(outs[off]);
        }
        check(x, dy, out, "rank " + std::to_string(rank));
        for (int64_t i = 0; i < span; i++) {
            if (!touched[i]) {
                uint32_t sentinel = 0;
                std::memset(&sentinel, 0x5a, esize());
                ASSERT_EQ(outs[i], sentinel) << k().name << ": wrote outside the view at " << i;
            }
        }
    }
}

// A dense view and a strided view of the same inputs give the same bits: the hand schedules
// compile separate loops for them (and the erf form a third, for dense views with s = 1, where
// Halide substitutes the scale: gelu_generator.cpp), which must compute the same expression.
// Random bit patterns cover every magnitude, subnormals, +-0, +-inf and NaNs; the erf form is
// also run with s = 3 (dense and strided both take the generic loops then).
TEST_P(EveryKernel, DenseAndStridedViewsAgreeBitForBit) {
    if (skip_under_emulator(k())) {
        GTEST_SKIP() << "Adams2019 views go through the dense copy; skipped under qemu";
    }
    const int64_t n = 1031;  // several vectors and a tail
    std::mt19937 rng(21);
    const uint32_t mask = esize() == 4 ? 0xFFFFFFFFu : 0xFFFFu;
    std::vector<uint32_t> x(n), dy(n);
    for (int64_t i = 0; i < n; i++) {
        // Every 4th element random over all bit patterns, the rest in [-8, 8] where most of the
        // formulas' branches meet.
        x[i] = i % 4 == 0 ? uint32_t(rng()) & mask : to_bits(std::uniform_real_distribution<double>(-8, 8)(rng), k().dtype);
        dy[i] = i % 5 == 0 ? uint32_t(rng()) & mask : to_bits(std::uniform_real_distribution<double>(-2, 2)(rng), k().dtype);
    }
    const std::vector<char> xb = pack(x), db = pack(dy);
    std::vector<float> scales = {1.0f};
    if (k().form == Form::Erf) {
        scales.push_back(3.0f);
    }
    for (float s : scales) {
        GeluOptions o = opts();
        o.scale = s;
        std::vector<char> xd = xb, dd = db, od(n * esize());
        TensorView vx = TensorView::contiguous(xd.data(), k().dtype, {n});
        TensorView vd = TensorView::contiguous(dd.data(), k().dtype, {n});
        TensorView vo = TensorView::contiguous(od.data(), k().dtype, {n});
        // The strided copies: element i at 2 i.
        std::vector<char> xs(2 * n * esize()), ds(2 * n * esize()), os(2 * n * esize());
        for (int64_t i = 0; i < n; i++) {
            std::memcpy(&xs[2 * i * esize()], &xb[i * esize()], esize());
            std::memcpy(&ds[2 * i * esize()], &db[i * esize()], esize());
        }
        auto strided = [&](std::vector<char> &b) {
            TensorView v;
            v.data = b.data();
            v.dtype = k().dtype;
            v.rank = 1;
            v.shape[0] = n;
            v.strides[0] = 2;
            return v;
        };
        if (backward()) {
            gelu_backward(vx, vd, vo, o);
            gelu_backward(strided(xs), strided(ds), strided(os), o);
        } else {
            gelu_forward(vx, vo, o);
            gelu_forward(strided(xs), strided(os), o);
        }
        int differ = 0;
        for (int64_t i = 0; i < n && differ < 5; i++) {
            if (std::memcmp(&od[i * esize()], &os[2 * i * esize()], esize()) != 0) {
                differ++;
                ADD_FAILURE() << k().name << " s=" << s << ": element " << i << " x bits 0x" << std::hex << x[i]
                              << " dense and strided results differ" << std::dec;
            }
        }
    }
}

// The infinities of the contract (README, Numerics, "Special values"), padded to a few vectors so
// that the hand schedules' main loops (not only their tails) see them: forward +inf -> +inf,
// -inf -> -0, NaN -> the canonical quiet NaN; backward GELU'(+inf) = 1, GELU'(-inf) = -0, so
// dx = dy at +inf and -0 times dy's sign at -inf for finite dy, and with dy = +-inf at x = -inf
// NaN (acc: inf * -0) or -+inf (fast: the limit, from its clamps).
// On SSE4.1, without F16C, the acc float16 backward gave -inf for both signs of dy until
// 2026-12-07 (Halide's emulated conversion turned the computed NaN into an infinity).
TEST_P(EveryKernel, InfiniteInputsAndGradients) {
    const DType dt = k().dtype;
    const uint32_t pinf = to_bits(INFINITY, dt), ninf = to_bits(-INFINITY, dt);
    const uint32_t pzero = to_bits(0.0, dt), nzero = to_bits(-0.0, dt);
    const uint32_t qnan = dt == DType::F32 ? 0x7FC00000u : dt == DType::BF16 ? 0x7FC0u : 0x7E00u;
    struct Case {
        uint32_t x, dy, want;
    };
    std::vector<Case> cases;
    if (backward()) {
        for (double d : {1.0, -1.0, 0.75, -3.0}) {
            const uint32_t dyb = to_bits(d, dt);
            cases.push_back({pinf, dyb, dyb});
            cases.push_back({ninf, dyb, d > 0 ? nzero : pzero});
        }
        cases.push_back({pinf, pinf, pinf});
        cases.push_back({pinf, ninf, ninf});
        const bool acc = k().math == Math::Accurate;
        cases.push_back({ninf, pinf, acc ? qnan : ninf});
        cases.push_back({ninf, ninf, acc ? qnan : pinf});
        cases.push_back({qnan, to_bits(1.0, dt), qnan});
        cases.push_back({to_bits(1.0, dt), qnan, qnan});
    } else {
        cases.push_back({pinf, 0, pinf});
        cases.push_back({ninf, 0, nzero});
        cases.push_back({qnan, 0, qnan});
    }
    // Each case at the start, the middle and the end of 259 ordinary inputs, three cases per
    // call, each group three times with its cases rotated (15 backward calls per kernel, not one
    // per case and place: under qemu every call of an Adams2019 kernel runs a whole
    // 786,432-element tile), so that every case lands on the first and the last element.
    // 259 = 256 + 3: positions 256..258 are the remainder after whole vectors at every width
    // the registry builds (4 to 128 lanes: the tuned kernels' vector_multiple reaches 8, i.e.
    // 128 bf16 lanes on AVX-512), so each case also goes through the vector tail; 129..131 lie
    // in a whole vector at every width.
    const std::size_t n = 259, group = 3;
    for (std::size_t first = 0; first < cases.size(); first += group) {
        const std::size_t count = std::min(group, cases.size() - first);
        const std::size_t starts[] = {0, 129, n - count};  // the group ends on the last element
        for (std::size_t rot = 0; rot < count; ++rot) {
            std::vector<uint32_t> x = inputs(n, 31), dy = inputs(n, 32);
            auto slot = [&](std::size_t i) { return (i + rot) % count; };  // case i's offset
            for (std::size_t start : starts) {
                for (std::size_t i = 0; i < count; ++i) {
                    x[start + slot(i)] = cases[first + i].x;
                    dy[start + slot(i)] = cases[first + i].dy;
                }
            }
            const std::vector<uint32_t> out =
                backward() ? run_backward(x, dy, dt, opts()) : run_forward(x, dt, opts());
            for (std::size_t start : starts) {
                for (std::size_t i = 0; i < count; ++i) {
                    const Case &c = cases[first + i];
                    const std::size_t pos = start + slot(i);
                    // A NaN computed from x = -inf and dy = +-inf may keep the x86 default NaN's
                    // sign (gelu_math.h, gelu_backward_output); NaN inputs give the canonical
                    // quiet NaN.
                    const bool computed_nan = backward() && c.want == qnan && c.x == ninf;
                    const bool ok = computed_nan ? std::isnan(bits_to_double(out[pos], dt)) : out[pos] == c.want;
                    EXPECT_TRUE(ok) << k().name << " at " << pos << std::hex << ": x 0x" << c.x << " dy 0x"
                                    << c.dy << " got 0x" << out[pos] << " want 0x" << c.want;
                }
            }
        }
    }
}

TEST_P(EveryKernel, InPlace) {
  if (skip_under_emulator(k())) {
      GTEST_SKIP() << "Adams2019 in-place calls go through the dense copy; skipped under qemu";
  }
  // 4099: a few vectors and a tail; 786448: above the Adams2019 schedules' 786432-element tile
  // and not a multiple of it, where overlapping ShiftInwards tiles would recompute outputs.
  // (Under qemu: 65537, still several of the arm-64 hand schedule's parallel chunks.)
  for (std::size_t n : {std::size_t(4099), scaled<std::size_t>(786448, 65537)}) {
    std::vector<uint32_t> x = inputs(n, 5), dy = inputs(n, 6);
    std::vector<char> xb = pack(x), db = pack(dy);
    const int64_t len = static_cast<int64_t>(n);
    TensorView vx = TensorView::contiguous(xb.data(), k().dtype, {len});
    TensorView vd = TensorView::contiguous(db.data(), k().dtype, {len});
    if (backward()) {
        gelu_backward(vx, vd, vd, opts());  // dx overwrites dy
        check(x, dy, unpack(db), "in place (dx = dy)");
    } else {
        gelu_forward(vx, vx, opts());
        check(x, dy, unpack(xb), "in place (y = x)");
    }
  }
}

std::string kernel_name(const testing::TestParamInfo<KernelInfo> &info) {
    return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryKernel, testing::ValuesIn(gelu_kernels()), kernel_name);

}  // namespace
}  // namespace gelukit::test
