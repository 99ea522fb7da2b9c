// libFuzzer target over gelukit's public API (issue 6): gelu_forward / gelu_backward and
// FeedForward::forward with fuzzer-chosen dtypes, forms, math, schedules, ranks, shapes, strides,
// placements in one arena (separate, identical for in-place, or overlapping) and element values
// (any bit pattern: NaN, inf, subnormals). Every outcome must be one of
//  * a gelukit::Error, and then only where the input breaks a documented rule, or Unsupported
//    (a combination the registry does not build) -- never for an input the rules accept;
//  * a result, and then only where the input follows the rules, with
//      - no byte of the arena written other than the output's own elements (guard bytes
//        around it included), and
//      - the output bit-identical to the same kernel on contiguous copies of the inputs
//        (GELU: the contiguous results are checked against the double-precision reference by
//        the test suite; here, forward GELU is also checked against that reference directly).
// Anything else (another exception type, a crash, a sanitizer report) is a finding:
// __builtin_trap() makes libFuzzer save the input.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/ffn.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "support/reference.h"
#include "support/tolerances.h"

namespace {

using gelukit::DType;
using gelukit::Error;
using gelukit::ErrorCode;
using gelukit::TensorView;

[[noreturn]] void finding(const char *what) {
    std::fprintf(stderr, "fuzz_runtime finding: %s\n", what);
    __builtin_trap();
}

constexpr std::size_t kGuard = 64;        // guard bytes before and after the used part of the arena
constexpr int64_t kMaxElements = 4096;    // per operand: keeps one execution well under a millisecond
constexpr uint8_t kFill = 0xA5;

// An operand's layout: shape and strides in elements, offset (elements) into the arena.
struct Layout {
    int rank = 1;
    int64_t shape[4] = {0, 0, 0, 0};
    int64_t strides[4] = {0, 0, 0, 0};
    int64_t offset = 0;
};

int64_t numel(const Layout &l) {
    int64_t n = 1;
    for (int d = 0; d < l.rank; d++) n *= l.shape[d];
    return n;
}

// Element offsets (relative to the arena start) in row-major index order.
std::vector<int64_t> element_offsets(const Layout &l) {
    std::vector<int64_t> out;
    const int64_t n = numel(l);
    out.reserve(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, off = l.offset;
        for (int d = l.rank - 1; d >= 0; d--) {
            off += (rem % l.shape[d]) * l.strides[d];
            rem /= l.shape[d];
        }
        out.push_back(off);
    }
    return out;
}

// A rule-abiding layout (dense in a fuzzer-chosen dimension order, with padding), sometimes
// broken on purpose: a stride of 0 / negative / too small, which the layout check classifies.
Layout make_layout(FuzzedDataProvider &fdp, int rank, const int64_t *shape) {
    Layout l;
    l.rank = rank;
    std::copy(shape, shape + rank, l.shape);
    int order[4] = {0, 1, 2, 3};
    if (fdp.ConsumeBool()) std::reverse(order, order + rank);  // reversed: innermost stride outermost dim
    else if (rank > 1 && fdp.ConsumeBool()) std::swap(order[0], order[rank - 1]);
    int64_t stride = fdp.ConsumeIntegralInRange<int64_t>(1, 3);
    for (int k = rank - 1; k >= 0; k--) {
        const int d = order[k];
        l.strides[d] = stride;
        stride = stride * std::max<int64_t>(l.shape[d], 1) + fdp.ConsumeIntegralInRange<int64_t>(0, 2);
    }
    if (fdp.ConsumeIntegralInRange(0, 7) == 0) {
        l.strides[fdp.ConsumeIntegralInRange(0, rank - 1)] = fdp.ConsumeIntegralInRange<int64_t>(-2, 2);
    }
    return l;
}

// Documented view rules (gelukit/tensor.h): strides >= 1 along every dimension of extent > 1;
// an output must not alias itself.
bool strides_ok(const Layout &l) {
    for (int d = 0; d < l.rank; d++)
        if (l.shape[d] > 1 && l.strides[d] < 1) return false;
    return true;
}
bool self_aliasing(const std::vector<int64_t> &offs) {
    std::vector<int64_t> s(offs);
    std::sort(s.begin(), s.end());
    return std::adjacent_find(s.begin(), s.end()) != s.end();
}
int64_t span(const Layout &l) {  // last element offset + 1 - offset, for rule-abiding strides
    if (numel(l) == 0) return 0;
    int64_t last = 0;
    for (int d = 0; d < l.rank; d++) last += (l.shape[d] - 1) * std::max<int64_t>(l.strides[d], 0);
    return last + 1;
}

TensorView view_of(uint8_t *arena, DType dt, const Layout &l) {
    TensorView v;
    v.data = arena + kGuard + static_cast<std::size_t>(l.offset) * gelukit::dtype_size(dt);
    v.dtype = dt;
    v.rank = l.rank;
    std::copy(l.shape, l.shape + 4, v.shape);
    std::copy(l.strides, l.strides + 4, v.strides);
    return v;
}

uint32_t load_bits(const uint8_t *p, DType dt) {
    if (dt == DType::F32) {
        uint32_t b;
        std::memcpy(&b, p, 4);
        return b;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h;
}

// What the documented rules and the registry say a call must do.
enum class Expect {
    Reject,       // breaks a documented rule: gelukit::Error, nothing written
    Unsupported,  // follows the rules, but no kernel is built for the combination
    Succeed,      // follows the rules and the kernel is built
};

// Runs fn and classifies its outcome: true = returned, false = gelukit::Error. Traps on an
// outcome the expectation does not allow and on exceptions other than gelukit::Error.
template <typename F>
bool call(F &&fn, Expect expect) {
    try {
        fn();
        if (expect == Expect::Reject) finding("input breaking a documented rule was accepted");
        if (expect == Expect::Unsupported) finding("a combination absent from the registry ran");
        return true;
    } catch (const Error &e) {
        if (expect == Expect::Succeed) {
            std::fprintf(stderr, "%s\n", e.what());
            finding("rule-abiding input with a built kernel was refused");
        }
        if (expect == Expect::Unsupported && e.code() != ErrorCode::Unsupported) {
            std::fprintf(stderr, "%s\n", e.what());
            finding("combination absent from the registry refused with a code other than Unsupported");
        }
        return false;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        finding("exception other than gelukit::Error");
    }
}

bool gelu_built(gelukit::Direction dir, DType dt, const gelukit::GeluOptions &o) {
    for (const gelukit::KernelInfo &k : gelukit::gelu_kernels())
        if (k.direction == dir && k.dtype == dt && k.form == o.form && k.math == o.math && k.schedule == o.schedule)
            return true;
    return false;
}

bool ffn_built(const gelukit::FeedForwardOptions &o) {
    const bool swiglu = o.kind == gelukit::FfnKind::SwiGLU;
    for (const gelukit::FfnKernelInfo &k : gelukit::ffn_kernels())
        if (k.kind == o.kind && k.dtype == o.dtype && k.schedule == o.schedule &&
            (swiglu || k.form == gelukit::form_name(o.form)))
            return true;
    return false;
}

// Element values: fuzzer-chosen mode and seed, expanded with splitmix64, so long tensors get
// varied values from a short input. Modes: raw bit patterns (NaN, inf, subnormals at their
// natural rates), ordinary values in [-12, 12), or those mixed with 1/8 special values.
struct ValueSource {
    uint64_t state;
    int mode;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    void fill(uint8_t *p, DType dt, bool finite_only) {
        const uint64_t r = next();
        uint32_t bits;
        if (mode == 0 && !finite_only) {
            bits = static_cast<uint32_t>(r);
        } else if (mode == 2 && !finite_only && (r & 7) == 0) {
            static const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                             std::numeric_limits<float>::infinity(),
                                             -std::numeric_limits<float>::infinity(),
                                             0.0f, -0.0f, 1e-40f, -1e-45f,
                                             std::numeric_limits<float>::max(), -65504.0f};
            std::memcpy(&bits, &specials[(r >> 3) % std::size(specials)], 4);
        } else {
            const float f = (static_cast<float>((r >> 40) & 0xFFFFFF) / 16777216.0f - 0.5f) * 24.0f;
            std::memcpy(&bits, &f, 4);
        }
        if (dt == DType::F32) {
            std::memcpy(p, &bits, 4);
            return;
        }
        uint16_t h;
        if (mode == 0 && !finite_only) {
            h = static_cast<uint16_t>(bits);  // any 16-bit pattern
        } else if (dt == DType::BF16) {
            h = static_cast<uint16_t>(bits >> 16);
        } else {
            float f;
            std::memcpy(&f, &bits, 4);
            h = gelukit::test::float_to_half_bits_rne(f);
        }
        std::memcpy(p, &h, 2);
    }
};

ValueSource value_source(FuzzedDataProvider &fdp) {
    ValueSource v;
    v.mode = fdp.ConsumeIntegralInRange(0, 2);
    v.state = fdp.ConsumeIntegral<uint64_t>();
    return v;
}

void fuzz_gelu(FuzzedDataProvider &fdp) {
    const bool backward = fdp.ConsumeBool();
    const DType dt = static_cast<DType>(fdp.ConsumeIntegralInRange(0, 2));
    gelukit::GeluOptions o;
    o.form = static_cast<gelukit::Form>(fdp.ConsumeIntegralInRange(0, 2));
    o.math = fdp.ConsumeBool() ? gelukit::Math::Fast : gelukit::Math::Accurate;
    o.schedule = static_cast<gelukit::Schedule>(fdp.ConsumeIntegralInRange(0, 3));  // Naive .. Tuned
    bool valid = true;
    switch (fdp.ConsumeIntegralInRange(0, 15)) {  // the scale s of x * Phi(x / s)
    case 0: o.scale = fdp.ConsumeFloatingPoint<float>(); break;  // any float, NaN/inf/<=0 included
    case 1: o.scale = fdp.ConsumeFloatingPointInRange(0.25f, 4.0f); break;
    case 2: o.scale = fdp.ConsumeFloatingPointInRange(1000.0f, 5000.0f); break;  // around the upper limit
    case 3: o.scale = fdp.ConsumeFloatingPointInRange(4.0f, 16.0f); break;       // around the fast limit
    default: break;
    }
    const float max_scale = o.math == gelukit::Math::Fast ? gelukit::kGeluMaxScaleFast : gelukit::kGeluMaxScale;
    if (!(o.scale >= gelukit::kGeluMinScale && o.scale <= max_scale)) valid = false;
    if (o.form != gelukit::Form::Erf && o.scale != 1.0f) valid = false;

    const int rank = fdp.ConsumeIntegralInRange(1, 4);
    int64_t shape[4];
    for (int d = 0; d < rank; d++) shape[d] = fdp.ConsumeIntegralInRange<int64_t>(0, rank == 1 ? 300 : 9);
    const int n_ops = backward ? 3 : 2;  // x, (dy,) out
    std::vector<Layout> lay;
    for (int i = 0; i < n_ops; i++) lay.push_back(make_layout(fdp, rank, shape));
    const int out = n_ops - 1;
    // Placement: each operand in its own region, or the output identical to an input (in place),
    // or at a fuzzer-chosen offset that may overlap partly.
    int64_t cursor = 0;
    for (int i = 0; i < n_ops; i++) {
        lay[i].offset = cursor;
        cursor += span(lay[i]) + fdp.ConsumeIntegralInRange<int64_t>(0, 3);
    }
    const int placement = fdp.ConsumeIntegralInRange(0, 3);
    if (placement == 1) lay[out] = lay[fdp.ConsumeIntegralInRange(0, out - 1)];
    if (placement == 2) lay[out].offset = fdp.ConsumeIntegralInRange<int64_t>(0, cursor);
    const bool shape_mismatch = fdp.ConsumeIntegralInRange(0, 15) == 0;
    if (shape_mismatch) lay[0].shape[0] += 1;
    const bool null_data = fdp.ConsumeIntegralInRange(0, 31) == 0;

    for (const Layout &l : lay) valid = valid && strides_ok(l);
    if (numel(lay[0]) > kMaxElements || numel(lay[out]) > kMaxElements) return;
    int64_t arena_elems = 1;
    for (const Layout &l : lay) {
        if (!strides_ok(l)) continue;
        arena_elems = std::max(arena_elems, l.offset + span(l));
    }
    const std::size_t es = gelukit::dtype_size(dt);
    std::vector<uint8_t> arena(kGuard * 2 + static_cast<std::size_t>(arena_elems) * es, kFill);
    const gelukit::Direction direction = backward ? gelukit::Direction::Backward : gelukit::Direction::Forward;
    // Element values: generated, then the fuzzer's remaining bytes over the first ones (exact
    // patterns the fuzzer found stay reachable).
    ValueSource values = value_source(fdp);
    for (std::size_t i = kGuard; i + es <= arena.size() - kGuard; i += es) values.fill(&arena[i], dt, false);
    for (std::size_t i = kGuard; i < arena.size() - kGuard && fdp.remaining_bytes() > 0; i++)
        arena[i] = fdp.ConsumeIntegral<uint8_t>();

    std::vector<std::vector<int64_t>> offs;
    for (const Layout &l : lay) offs.push_back(strides_ok(l) ? element_offsets(l) : std::vector<int64_t>{});
    if (shape_mismatch) valid = false;
    if (null_data && numel(lay[0]) > 0) valid = false;
    if (valid) {
        if (self_aliasing(offs[out])) valid = false;
        // The output may share memory with an input only as the identical view (in place).
        std::set<int64_t> out_set(offs[out].begin(), offs[out].end());
        for (int i = 0; i < out && valid; i++) {
            if (offs[i] == offs[out]) continue;
            for (int64_t e : offs[i])
                if (out_set.count(e)) { valid = false; break; }
        }
    }
    // Rules the runtime applies conservatively (byte ranges instead of element sets, sorted
    // strides for self-overlap): an Error there is acceptable, a result is checked as usual.
    bool either = false;
    if (valid) {
        for (int i = 0; i < out; i++) {
            if (offs[i] == offs[out] || offs[out].empty()) continue;
            auto [ilo, ihi] = std::minmax_element(offs[i].begin(), offs[i].end());
            auto [olo, ohi] = std::minmax_element(offs[out].begin(), offs[out].end());
            if (!offs[i].empty() && *ilo <= *ohi && *olo <= *ihi) either = true;
        }
        if (numel(lay[out]) > 1) {
            std::vector<std::pair<int64_t, int64_t>> dims;
            for (int d = 0; d < rank; d++)
                if (lay[out].shape[d] > 1) dims.push_back({lay[out].strides[d], lay[out].shape[d]});
            std::sort(dims.begin(), dims.end());
            int64_t covered = 1;
            for (auto [s, e] : dims) {
                if (s < covered) either = true;
                covered += s * (e - 1);
            }
        }
    }

    const std::vector<uint8_t> before = arena;
    std::vector<TensorView> v;
    for (const Layout &l : lay) v.push_back(view_of(arena.data(), dt, l));
    if (null_data) v[0].data = nullptr;
    bool ok;
    const bool built = gelu_built(direction, dt, o);
    if (either && built) {
        // Refused (InvalidArgument, the conservative overlap rules) or run and checked below.
        try {
            backward ? gelukit::gelu_backward(v[0], v[1], v[2], o) : gelukit::gelu_forward(v[0], v[1], o);
            ok = true;
        } catch (const Error &e) {
            if (e.code() != ErrorCode::InvalidArgument) {
                std::fprintf(stderr, "%s\n", e.what());
                finding("overlap-only case refused with a code other than InvalidArgument");
            }
            ok = false;
        } catch (const std::exception &) {
            finding("exception other than gelukit::Error");
        }
    } else {
        // (either && !built: the runtime may report the overlap or the missing kernel first.)
        const Expect expect = !valid ? Expect::Reject : built ? Expect::Succeed : Expect::Unsupported;
        ok = call([&] { backward ? gelukit::gelu_backward(v[0], v[1], v[2], o) : gelukit::gelu_forward(v[0], v[1], o); },
                  either ? Expect::Reject : expect);
    }
    if (!ok) {
        if (arena != before) finding("a refused call wrote memory");
        return;
    }

    // 1. Only the output's elements changed.
    std::vector<bool> is_out(arena.size(), false);
    for (int64_t e : offs[out])
        for (std::size_t b = 0; b < es; b++) is_out[kGuard + static_cast<std::size_t>(e) * es + b] = true;
    for (std::size_t i = 0; i < arena.size(); i++)
        if (!is_out[i] && arena[i] != before[i]) finding("write outside the output's elements");

    // 2. Bit-identical to the kernel on contiguous copies of the inputs.
    const int64_t n = numel(lay[out]);
    if (n == 0) return;
    std::vector<std::vector<uint8_t>> dense(n_ops, std::vector<uint8_t>(static_cast<std::size_t>(n) * es));
    for (int i = 0; i < out; i++)
        for (int64_t k = 0; k < n; k++)
            std::memcpy(&dense[i][k * es], &before[kGuard + offs[i][k] * es], es);
    std::vector<TensorView> dv;
    for (auto &d : dense) dv.push_back(TensorView::contiguous(d.data(), dt, {n}));
    backward ? gelukit::gelu_backward(dv[0], dv[1], dv[2], o) : gelukit::gelu_forward(dv[0], dv[1], o);
    for (int64_t k = 0; k < n; k++) {
        const uint32_t got = load_bits(&arena[kGuard + offs[out][k] * es], dt);
        const uint32_t want = load_bits(&dense[out][k * es], dt);
        // The element's inputs, read once for the checks below (dy: backward only).
        const uint32_t xb = load_bits(&before[kGuard + offs[0][k] * es], dt);
        const uint32_t db = backward ? load_bits(&before[kGuard + offs[1][k] * es], dt) : 0;
        const double x = gelukit::test::bits_to_double(xb, dt);
        const double dy = backward ? gelukit::test::bits_to_double(db, dt) : 0.0;
        const bool window = std::fabs(x / o.scale - gelukit::test::grad_root(o.form)) < 0.01;  // root of GELU'
        // Accurate math: bit for bit. Fast math (float32 internals): the unit-stride and the
        // strided specialisations are compiled separately under fast-math, and LLVM reassociates
        // their float32 operations differently (the same 63 FMAs per vector in both, in another
        // order, on AVX2), so they may differ (seen: 2 ULP, 0xba6cc53a strided vs 0xba6cc538
        // contiguous): by at most the kernel's own ULP bound (README, Reliability). The fast
        // tanh / sigmoid gradients far in the negative tail (nonzero there for large |dy|) carry
        // an error that grows with |v| (fast_sigma_backward_ulp_tolerance): where that bound
        // exceeds the flat one, two layouts, each within it of the true value, may differ by
        // twice it.
        const int64_t flat_ulps =
            o.math == gelukit::Math::Fast
                ? gelukit::test::ulp_tolerance(o.math, backward ? gelukit::Direction::Backward : gelukit::Direction::Forward,
                                               dt, o.form)
                : 0;
        const int64_t sigma_ulps = o.math == gelukit::Math::Fast && backward && dt == gelukit::DType::F32 &&
                                           o.form != gelukit::Form::Erf
                                       ? gelukit::test::fast_sigma_backward_ulp_tolerance(o.form, x)
                                       : 0;
        const int64_t layout_ulps = sigma_ulps > flat_ulps ? 2 * sigma_ulps : flat_ulps;
        // Fast backward next to the root of GELU': the bound there is absolute (|dy| times the
        // root window's tolerance, tolerances.h), so the two layouts may differ by twice that.
        bool near_root_ok = false;
        if (o.math == gelukit::Math::Fast && backward && got != want) {
            const double diff = std::fabs(gelukit::test::bits_to_double(got, dt) - gelukit::test::bits_to_double(want, dt));
            near_root_ok = window && std::isfinite(dy) &&
                           diff <= 2.0 * std::fabs(dy) * gelukit::test::root_window_abs_tolerance(o.math) + 0x1p-148;
        }
        if (got != want && !near_root_ok &&
            !(gelukit::test::ulp_distance(got, want, dt) <= layout_ulps &&
              gelukit::test::bits_is_nan(got, dt) == gelukit::test::bits_is_nan(want, dt))) {
            std::fprintf(stderr, "element %lld of %lld: got=0x%x contiguous=0x%x dtype=%s form=%s math=%s schedule=%s %s scale=%.9g\n",
                         static_cast<long long>(k), static_cast<long long>(n), got, want, gelukit::dtype_name(dt),
                         gelukit::form_name(o.form), o.math == gelukit::Math::Fast ? "fast" : "acc",
                         gelukit::schedule_name(o.schedule), backward ? "backward" : "forward", static_cast<double>(o.scale));
            finding("strided / in-place result differs from the contiguous one");
        }
        // 3. Forward: within the suite's ULP bound of the double reference (per math and dtype).
        if (!backward) {
            const uint32_t ref = gelukit::test::round_to_bits(gelukit::test::gelu_ref(o.form, x, o.scale), dt);
            int64_t tolerance = gelukit::test::ulp_tolerance(o.math, gelukit::Direction::Forward, dt, o.form);
            if (o.math == gelukit::Math::Fast && o.scale != 1.0f) {
                // The float32 z = x * (1/s) carries a relative error up to 2^-23 when s != 1 (1/s
                // and the product are rounded); Q(z) ~ phi(z)/|z| turns it into a relative error
                // of about z^2 2^-23 in the negative tail: 2 z^2 more ULP (README, fast scaled).
                // x = NaN gives z = NaN (only NaN-ness is compared then): no widening, and no
                // NaN cast to an integer (undefined behaviour; UBSan's CI finding).
                const double z = std::isnan(x) ? 0.0 : std::min(std::fabs(x / o.scale), 16.0);
                tolerance += static_cast<int64_t>(std::ceil(2.0 * z * z));
            }
            if (gelukit::test::bits_is_nan(ref, dt) != gelukit::test::bits_is_nan(got, dt) ||
                (!gelukit::test::bits_is_nan(ref, dt) && gelukit::test::ulp_distance(got, ref, dt) > tolerance))
            {
                std::fprintf(stderr, "x=0x%x got=0x%x ref=0x%x dtype=%s form=%s schedule=%s scale=%.9g\n", xb, got, ref,
                             gelukit::dtype_name(dt), gelukit::form_name(o.form), gelukit::schedule_name(o.schedule),
                             static_cast<double>(o.scale));
                finding("forward GELU outside its ULP bound of the double reference");
            }
        }
        // 4. Backward, accurate math: dx against dy * GELU'(x) in double, rounded once; the
        //    suite's bound (2 ULP f32, 1 ULP f16/bf16), and for f32 within 0.01 of the root of
        //    GELU' (in z = x/s) an absolute error of |dy| 2^-27 (tolerances.h). Fast math has
        //    mixed criteria and documented tail limits (README): not checked here.
        if (backward && o.math == gelukit::Math::Accurate) {
            const gelukit::test::RefValue g = gelukit::test::gelu_grad_ref(o.form, x, o.scale);
            uint32_t ref = gelukit::test::round_to_bits(gelukit::test::times(dy, g), dt);
            // dy = +-inf where the double GELU'(x) underflows to 0 (x far in the negative tail,
            // e.g. erf beyond |x/s| ~ 38.6): the true GELU'(x) is a tiny negative number, not 0,
            // so the product's limit is -+inf, not the double's inf * 0 = NaN.
            if (std::isinf(dy) && std::isfinite(x) && g.hi == 0.0 && g.lo == 0.0) {
                ref = gelukit::test::round_to_bits({-dy, 0.0}, dt);
            }
            // dy = +-inf with GELU'(x) within the kernel's absolute error of 0 (next to the root):
            // the sign of dx, or whether inf * GELU' is NaN, is not determined by the bound.
            const bool undetermined =
                window && std::isinf(dy) && std::fabs(g.hi) <= gelukit::test::root_window_abs_tolerance(o.math);
            const bool ref_nan = gelukit::test::bits_is_nan(ref, dt);
            bool bad = !undetermined && ref_nan != gelukit::test::bits_is_nan(got, dt);
            if (!bad && !ref_nan && !undetermined) {
                if (dt == DType::F32 && window && std::isfinite(dy)) {
                    // |dy| 2^-27 for the kernel's GELU' there, plus the rounding of dx itself:
                    // a correctly rounded subnormal dx is off by up to 2^-150 (tiny dy).
                    const double err = std::fabs(gelukit::test::bits_to_double(got, dt) - dy * (g.hi + g.lo));
                    bad = !(err <= std::fabs(dy) * gelukit::test::root_window_abs_tolerance(o.math) + 0x1p-149);
                } else {
                    bad = gelukit::test::ulp_distance(got, ref, dt) >
                          gelukit::test::ulp_tolerance(o.math, gelukit::Direction::Backward, dt, o.form);
                }
            }
            if (bad) {
                std::fprintf(stderr, "x=0x%x dy=0x%x got=0x%x ref=0x%x dtype=%s form=%s schedule=%s scale=%.9g\n", xb, db,
                             got, ref, gelukit::dtype_name(dt), gelukit::form_name(o.form),
                             gelukit::schedule_name(o.schedule), static_cast<double>(o.scale));
                finding("backward GELU (accurate math) outside its bound of dy * GELU'(x) in double");
            }
        }
    }
}

void fuzz_ffn(FuzzedDataProvider &fdp) {
    gelukit::FeedForwardOptions o;
    o.kind = static_cast<gelukit::FfnKind>(fdp.ConsumeIntegralInRange(0, 3));
    o.form = static_cast<gelukit::Form>(fdp.ConsumeIntegralInRange(0, 2));
    o.dtype = fdp.ConsumeBool() ? DType::BF16 : DType::F32;
    o.schedule = static_cast<gelukit::Schedule>(fdp.ConsumeIntegralInRange(0, 3));  // Naive .. Tuned
    const bool gated = o.kind == gelukit::FfnKind::GeGLU || o.kind == gelukit::FfnKind::SwiGLU;
    const bool has_w2 = o.kind != gelukit::FfnKind::LinearGelu;
    const int64_t d_model = fdp.ConsumeIntegralInRange<int64_t>(1, 24);
    const int64_t d_ff = fdp.ConsumeIntegralInRange<int64_t>(1, 40);
    int64_t d_out = has_w2 ? (fdp.ConsumeBool() ? d_model : fdp.ConsumeIntegralInRange<int64_t>(1, 24)) : d_ff;
    o.residual = has_w2 && fdp.ConsumeBool();
    const std::size_t es = gelukit::dtype_size(o.dtype);
    // Weights: finite generated values (a NaN weight would make every output NaN).
    ValueSource weight_values = value_source(fdp);
    auto tensor = [&](int64_t n) {
        std::vector<uint8_t> t(static_cast<std::size_t>(n) * es);
        for (std::size_t i = 0; i < t.size(); i += es) weight_values.fill(&t[i], o.dtype, true);
        return t;
    };
    // w1 has one spare row: the "wrong shape" case below views it as [d_ff + 1, d_model].
    std::vector<uint8_t> w1 = tensor((d_ff + 1) * d_model), v = tensor(gated ? d_ff * d_model : 0),
                         w2 = tensor(has_w2 ? d_out * d_ff : 0), b1 = tensor(d_ff), b2 = tensor(d_out);
    gelukit::FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), o.dtype, {d_ff, d_model});
    if (gated) w.v = TensorView::contiguous(v.data(), o.dtype, {d_ff, d_model});
    if (has_w2) w.w2 = TensorView::contiguous(w2.data(), o.dtype, {d_out, d_ff});
    if (fdp.ConsumeBool()) w.b1 = TensorView::contiguous(b1.data(), o.dtype, {d_ff});
    if (has_w2 && fdp.ConsumeBool()) w.b2 = TensorView::contiguous(b2.data(), o.dtype, {d_out});
    bool valid_weights = !(o.residual && d_out != d_model);
    if (fdp.ConsumeIntegralInRange(0, 15) == 0) {
        // w1 one row longer than v, b1 and w2 expect (d_ff is read from w1): inconsistent unless
        // the block has none of them.
        w.w1 = TensorView::contiguous(w1.data(), o.dtype, {d_ff + 1, d_model});
        if (gated || has_w2 || w.b1.data != nullptr) valid_weights = false;
        if (!has_w2) d_out = d_ff + 1;  // LinearGelu's output is d_ff wide
    }
    gelukit::FeedForward *ffn = nullptr;
    std::unique_ptr<gelukit::FeedForward> holder;
    // Adams2019 kernels included: they run every shape (ffn.h), so a valid call must succeed.
    const bool built = ffn_built(o);
    const Expect expect_weights = !valid_weights ? Expect::Reject : built ? Expect::Succeed : Expect::Unsupported;
    const auto construct = [&] { holder = std::make_unique<gelukit::FeedForward>(w, o); };
    const bool constructed = call(construct, expect_weights);
    if (!constructed) return;
    ffn = holder.get();

    // h [M, d_model] and out [M, d_out] with padded rows, in one arena; sometimes broken.
    const int64_t M = fdp.ConsumeIntegralInRange<int64_t>(0, 9);
    const int64_t hs = d_model + fdp.ConsumeIntegralInRange<int64_t>(0, 3);
    const int64_t os = d_out + fdp.ConsumeIntegralInRange<int64_t>(0, 3);
    const int64_t h_span = M > 0 ? (M - 1) * hs + d_model : 0, o_span = M > 0 ? (M - 1) * os + d_out : 0;
    int64_t o_off = h_span + fdp.ConsumeIntegralInRange<int64_t>(0, 2);
    bool valid = true;
    int64_t bad_stride = os;
    switch (fdp.ConsumeIntegralInRange(0, 15)) {
    case 0: o_off = fdp.ConsumeIntegralInRange<int64_t>(0, std::max<int64_t>(h_span, 0)); break;  // may overlap h
    case 1: bad_stride = d_out - 1; break;                                                         // overlapping rows
    default: break;
    }
    const int64_t arena_elems = std::max(h_span, o_off + o_span) + 1;
    std::vector<uint8_t> arena(kGuard * 2 + static_cast<std::size_t>(arena_elems) * es, kFill);
    ValueSource h_values = value_source(fdp);
    for (std::size_t i = kGuard; i < kGuard + static_cast<std::size_t>(h_span) * es; i += es)
        h_values.fill(&arena[i], o.dtype, false);
    const std::vector<uint8_t> before = arena;
    uint8_t *base = arena.data() + kGuard;
    TensorView h = TensorView::strided(base, o.dtype, {M, d_model}, {hs, 1});
    TensorView outv = TensorView::strided(base + o_off * es, o.dtype, {M, d_out}, {bad_stride, 1});
    if (M > 1 && bad_stride < d_out) valid = false;
    if (M > 0 && o_off < h_span && o_off + o_span > 0) valid = false;  // out's range meets h's
    const auto run = [&] { ffn->forward(h, outv); };
    const bool ran = call(run, valid ? Expect::Succeed : Expect::Reject);
    if (!ran) {
        if (arena != before) finding("a refused FFN call wrote memory");
        return;
    }
    // Only out's elements changed, and they equal the FFN of a dense copy of h.
    std::vector<bool> is_out(arena.size(), false);
    for (int64_t r = 0; r < M; r++)
        for (std::size_t b = 0; b < static_cast<std::size_t>(d_out) * es; b++)
            is_out[kGuard + static_cast<std::size_t>(o_off + r * os) * es + b] = true;
    for (std::size_t i = 0; i < arena.size(); i++)
        if (!is_out[i] && arena[i] != before[i]) finding("FFN wrote outside out's elements");
    if (M == 0) return;
    std::vector<uint8_t> hd(static_cast<std::size_t>(M * d_model) * es), od(static_cast<std::size_t>(M * d_out) * es);
    for (int64_t r = 0; r < M; r++)
        std::memcpy(&hd[r * d_model * es], &before[kGuard + r * hs * es], d_model * es);
    ffn->forward(TensorView::contiguous(hd.data(), o.dtype, {M, d_model}),
                 TensorView::contiguous(od.data(), o.dtype, {M, d_out}));
    for (int64_t r = 0; r < M; r++)
        if (std::memcmp(&od[r * d_out * es], &arena[kGuard + (o_off + r * os) * es], d_out * es) != 0)
            finding("FFN on padded rows differs from the dense result");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, std::size_t size) {
    FuzzedDataProvider fdp(data, size);
    if (fdp.ConsumeIntegralInRange(0, 3) == 0) {
        fuzz_ffn(fdp);
    } else {
        fuzz_gelu(fdp);
    }
    return 0;
}
