// Bad input gives a clear gelukit::Error, never a crash or a silent wrong answer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace gelukit {
namespace {

// Expects an Error with the given code whose message contains `needle`.
template<typename F>
void expect_error(F &&f, ErrorCode code, const std::string &needle) {
    try {
        f();
        ADD_FAILURE() << "no exception; expected one mentioning '" << needle << "'";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), code) << e.what();
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

class Errors : public testing::Test {
protected:
    std::vector<float> a = std::vector<float>(64, 0.5f), b = std::vector<float>(64, 0.0f);
    TensorView va = TensorView::contiguous(a.data(), DType::F32, {8, 8});
    TensorView vb = TensorView::contiguous(b.data(), DType::F32, {8, 8});
};

TEST_F(Errors, NullPointer) {
    TensorView null = va;
    null.data = nullptr;
    expect_error([&] { gelu_forward(null, vb); }, ErrorCode::InvalidArgument, "null data pointer");
    expect_error([&] { gelu_forward(va, null); }, ErrorCode::InvalidArgument, "null data pointer");
    expect_error([&] { gelu_backward(va, null, vb); }, ErrorCode::InvalidArgument, "dy: null data pointer");
}

TEST_F(Errors, ShapeMismatch) {
    TensorView other = TensorView::contiguous(b.data(), DType::F32, {4, 16});
    expect_error([&] { gelu_forward(va, other); }, ErrorCode::InvalidArgument, "shape mismatch");
    TensorView rank3 = TensorView::contiguous(b.data(), DType::F32, {8, 8, 1});
    expect_error([&] { gelu_forward(va, rank3); }, ErrorCode::InvalidArgument, "shape mismatch");
}

TEST_F(Errors, BadRank) {
    TensorView r0 = va;
    r0.rank = 0;
    expect_error([&] { gelu_forward(r0, r0); }, ErrorCode::InvalidArgument, "rank 0");
    TensorView r5 = va;
    r5.rank = 5;
    expect_error([&] { gelu_forward(r5, r5); }, ErrorCode::InvalidArgument, "rank 5");
    expect_error([&] { (void)TensorView::contiguous(a.data(), DType::F32, {1, 1, 1, 1, 1}); },
                 ErrorCode::InvalidArgument, "rank 5");
}

TEST_F(Errors, UnsupportedDtype) {
    TensorView bad = va;
    bad.dtype = static_cast<DType>(17);
    expect_error([&] { gelu_forward(bad, bad); }, ErrorCode::Unsupported, "unsupported dtype");
    TensorView half = TensorView::contiguous(b.data(), DType::F16, {8, 8});
    expect_error([&] { gelu_forward(va, half); }, ErrorCode::Unsupported, "dtypes differ");
}

TEST_F(Errors, BadStrides) {
    TensorView neg = TensorView::strided(a.data(), DType::F32, {8, 8}, {8, -1});
    expect_error([&] { gelu_forward(neg, vb); }, ErrorCode::InvalidArgument, "must be >= 1");
    TensorView zero = TensorView::strided(b.data(), DType::F32, {8, 8}, {0, 1});
    expect_error([&] { gelu_forward(va, zero); }, ErrorCode::InvalidArgument, "must be >= 1");
    // An output whose rows overlap (stride 4 < 8 columns).
    TensorView self_overlap = TensorView::strided(b.data(), DType::F32, {8, 8}, {4, 1});
    expect_error([&] { gelu_forward(va, self_overlap); }, ErrorCode::InvalidArgument, "overlaps itself");
    TensorView huge = TensorView::strided(a.data(), DType::F32, {2, 2}, {int64_t(1) << 40, 1});
    expect_error([&] { gelu_forward(huge, huge); }, ErrorCode::TooLarge, "exceeds 2^31-1");
    expect_error([&] { (void)TensorView::strided(a.data(), DType::F32, {2, 2}, {1}); }, ErrorCode::InvalidArgument,
                 "2 extents but 1 strides");
    // Element counts that overflow int64 are TooLarge, not a silent no-op (even with null data).
    TensorView overflow = TensorView::strided(nullptr, DType::F32, {int64_t(1) << 40, int64_t(1) << 24},
                                              {int64_t(1) << 24, 1});
    expect_error([&] { gelu_forward(overflow, overflow); }, ErrorCode::TooLarge, "more than 2^62 elements");
    // Counts below 2^62 whose byte span overflows int64 (each stride is legal): TooLarge, not a
    // wrapped span in the overlap checks (this used to segfault in the self-overlap check).
    float cell[16] = {};
    TensorView wide = TensorView::strided(cell, DType::F32, {int64_t(1) << 40}, {int64_t(1) << 30});
    expect_error([&] { gelu_forward(wide, wide); }, ErrorCode::TooLarge, "spans 2^62 bytes");
    TensorView wide_x = TensorView::strided(cell, DType::F32, {int64_t(1) << 34}, {int64_t(1) << 30});
    TensorView wide_y = TensorView::strided(cell + 8, DType::F32, {int64_t(1) << 34}, {int64_t(1) << 30});
    expect_error([&] { gelu_forward(wide_x, wide_y); }, ErrorCode::TooLarge, "spans 2^62 bytes");
    TensorView wide2 = TensorView::strided(cell, DType::F32, {(int64_t(1) << 33) + 1, 2},
                                           {int64_t(1) << 30, (int64_t(1) << 30) + 1});
    expect_error([&] { gelu_forward(wide2, wide2); }, ErrorCode::TooLarge, "spans 2^62 bytes");
    // An extent 0 anywhere makes the view empty, whatever the others are: a no-op in either order.
    TensorView empty_last = TensorView::strided(nullptr, DType::F32, {int64_t(1) << 40, int64_t(1) << 40, 0}, {1, 1, 1});
    TensorView empty_first = TensorView::strided(nullptr, DType::F32, {0, int64_t(1) << 40, int64_t(1) << 40}, {1, 1, 1});
    EXPECT_NO_THROW(gelu_forward(empty_last, empty_last));
    EXPECT_NO_THROW(gelu_forward(empty_first, empty_first));
    // A span that would run past the end of the address space.
    TensorView top = TensorView::strided(reinterpret_cast<void *>(~uintptr_t(0) - 64), DType::F32, {1 << 20}, {1});
    expect_error([&] { gelu_forward(top, top); }, ErrorCode::TooLarge, "address space");
    // The stride of an extent-1 dimension is never used: any value is accepted.
    TensorView unit_dim = TensorView::strided(a.data(), DType::F32, {1, 8}, {int64_t(1) << 40, 1});
    TensorView unit_out = TensorView::contiguous(b.data(), DType::F32, {1, 8});
    EXPECT_NO_THROW(gelu_forward(unit_dim, unit_out));
}

TEST_F(Errors, OverlappingNonIdenticalViews) {
    TensorView shifted = TensorView::contiguous(a.data() + 1, DType::F32, {8, 7});
    TensorView head = TensorView::contiguous(a.data(), DType::F32, {8, 7});
    expect_error([&] { gelu_forward(head, shifted); }, ErrorCode::InvalidArgument, "overlaps x");
    EXPECT_NO_THROW(gelu_forward(va, va));  // identical views: in place is fine
}

TEST_F(Errors, BadScale) {
    for (float s : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        GeluOptions o;
        o.scale = s;
        expect_error([&] { gelu_forward(va, vb, o); }, ErrorCode::InvalidArgument, "must be finite and > 0");
    }
    GeluOptions tiny;
    tiny.scale = 1e-39f;  // subnormal: 1/s overflows float32
    expect_error([&] { gelu_forward(va, vb, tiny); }, ErrorCode::InvalidArgument, "at least 1.17549435e-38");
    // Above 4096 the tail beyond the Mills fit matters (gelukit/gelu.h); 4096 itself is accepted
    // (its accuracy: KernelProperties.ScaledForm).
    for (float s : {4097.0f, 1e6f, 2.11146044e35f}) {
        GeluOptions o;
        o.scale = s;
        expect_error([&] { gelu_forward(va, vb, o); }, ErrorCode::InvalidArgument, "at most 4096");
        expect_error([&] { gelu_backward(va, va, vb, o); }, ErrorCode::InvalidArgument, "at most 4096");
    }
    GeluOptions largest;
    largest.scale = kGeluMaxScale;
    EXPECT_NO_THROW(gelu_forward(va, vb, largest));
    // The float32 formulation: at most 8.
    GeluOptions fast;
    fast.math = Math::Fast;
    fast.scale = 16.0f;
    expect_error([&] { gelu_forward(va, vb, fast); }, ErrorCode::InvalidArgument, "at most 8 with Math::Fast");
    fast.scale = kGeluMaxScaleFast;
    EXPECT_NO_THROW(gelu_forward(va, vb, fast));
    GeluOptions tanh_scaled;
    tanh_scaled.form = Form::Tanh;
    tanh_scaled.scale = 2.0f;
    expect_error([&] { gelu_forward(va, vb, tanh_scaled); }, ErrorCode::InvalidArgument, "Form::Erf only");
}

TEST_F(Errors, NegativeExtentAndNames) {
    TensorView neg = va;
    neg.shape[0] = -3;
    expect_error([&] { gelu_forward(neg, neg); }, ErrorCode::InvalidArgument, "negative extent");
    expect_error([] { (void)form_from_name("GELU"); }, ErrorCode::InvalidArgument, "unknown GELU name");
    expect_error([] { (void)isa_from_name("avx9"); }, ErrorCode::InvalidArgument, "unknown ISA");
    expect_error([] { set_num_threads(0); }, ErrorCode::InvalidArgument, "expected >= 1");
}

TEST_F(Errors, OutputUnchangedAfterRejectedCall) {
    TensorView other = TensorView::contiguous(b.data(), DType::F32, {4, 16});
    EXPECT_THROW(gelu_forward(va, other), Error);
    for (float v : b) {
        ASSERT_EQ(v, 0.0f);
    }
}

}  // namespace
}  // namespace gelukit
