// G38 (FK-25, FK-29): tensors of >= 2^31 elements. The registry's CPU kernels are built with
// Halide's large_buffers feature (64-bit indexing) and the runtime slices dimensions longer than
// 2^30; a library built without the feature must refuse such a buffer with a clean Halide error
// code (no wraparound, no crash). Needs ~8 GiB of memory; run once (label "large").
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "HalideRuntime.h"
#include "gelu_fwd_f16_erf_acc_hand_no_large_buffers.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace gelukit {
namespace {

constexpr int64_t kN = (int64_t(1) << 31) + 8;
// GELU of -3..4 in fp16, the expected values of G37/G38.
constexpr uint16_t kLast8In[8] = {0xC200, 0xC000, 0xBC00, 0x0000, 0x3C00, 0x4000, 0x4200, 0x4400};
constexpr uint16_t kLast8Out[8] = {0x9C26, 0xA9D3, 0xB114, 0x0000, 0x3ABB, 0x3FD1, 0x41FE, 0x4400};

struct FreeDeleter {
    void operator()(void *p) const {
        std::free(p);
    }
};
using Mem = std::unique_ptr<uint16_t, FreeDeleter>;

Mem zeros(int64_t n) {
    return Mem(static_cast<uint16_t *>(std::calloc(static_cast<std::size_t>(n), sizeof(uint16_t))));
}

TEST(LargeTensors, G38_TwoToThe31PlusEightFp16Elements) {
    Mem x = zeros(kN), y = zeros(kN);
    ASSERT_TRUE(x && y) << "could not allocate 2 x 4 GiB";
    std::memcpy(x.get() + kN - 8, kLast8In, sizeof(kLast8In));
    y.get()[0] = 0x7E00;  // NaN sentinel: must be overwritten with GELU(0) = 0
    gelu_forward(TensorView::contiguous(x.get(), DType::F16, {kN}), TensorView::contiguous(y.get(), DType::F16, {kN}));
    EXPECT_EQ(y.get()[0], 0x0000);
    EXPECT_EQ(y.get()[(int64_t(1) << 30) + 3], 0x0000);
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(y.get()[kN - 8 + i], kLast8Out[i]) << "element " << kN - 8 + i;
    }
}

TEST(LargeTensors, G38_WithoutLargeBuffersIsACleanError) {
    set_num_threads(2);  // installs gelukit's Halide error handler (Halide's own calls abort())
    Mem x = zeros(kN), y = zeros(kN);
    ASSERT_TRUE(x && y);
    y.get()[kN - 1] = 0x1234;
    // 2-D view of all 2^31+8 elements: each extent fits int32, the total exceeds 2^31 bytes.
    halide_dimension_t xd[4] = {{0, 8, 1}, {0, int32_t(kN / 8), 8}, {0, 1, int32_t(kN / 8)}, {0, 1, int32_t(kN / 8)}};
    halide_dimension_t yd[4] = {xd[0], xd[1], xd[2], xd[3]};
    halide_buffer_t bx{}, by{};
    bx.host = reinterpret_cast<uint8_t *>(x.get());
    by.host = reinterpret_cast<uint8_t *>(y.get());
    bx.type = by.type = halide_type_t(halide_type_float, 16);
    bx.dimensions = by.dimensions = 4;
    bx.dim = xd;
    by.dim = yd;
    int rc = gelu_fwd_f16_erf_acc_hand_no_large_buffers(&bx, 1.0f, &by);
    // Halide's size check: the buffer's span exceeds 2^31-1 bytes.
    EXPECT_TRUE(rc == halide_error_code_buffer_extents_too_large || rc == halide_error_code_buffer_allocation_too_large)
        << "a buffer of 2^32 bytes without large_buffers gave status " << rc;
    EXPECT_EQ(y.get()[kN - 1], 0x1234) << "output written despite the error";
}

}  // namespace
}  // namespace gelukit
