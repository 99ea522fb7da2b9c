// gelukit::TensorView: a non-owning view of a dense or strided tensor in host memory.
//
// Layout: `shape[i]` and `strides[i]` (in elements, not bytes) for i in [0, rank), dimension 0
// outermost and dimension rank-1 innermost (PyTorch / NumPy order). The element at index
// (i0, ..., i{r-1}) lives at data + sum_k i_k * strides[k] elements. Strides must be >= 1 for
// every dimension of extent > 1 (negative and zero strides are rejected with an Error).
// Limits (Error TooLarge): each stride of an extent > 1 at most 2^31 - 1, at most 2^62 elements,
// and the bytes from the first to past the last element below 2^62 (checked without overflow).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace gelukit {

// Storage types. All arithmetic is done in float32 or float64 inside the kernels and rounded
// once, to nearest even, into the storage type.
enum class DType {
    F32,   // IEEE binary32
    BF16,  // bfloat16: 8-bit exponent, 7-bit mantissa (the top half of a float32)
    F16,   // IEEE binary16
};

std::size_t dtype_size(DType dt);
const char *dtype_name(DType dt);  // "f32", "bf16", "f16"

struct TensorView {
    static constexpr int kMaxRank = 4;

    void *data = nullptr;
    DType dtype = DType::F32;
    int rank = 0;
    int64_t shape[kMaxRank] = {0, 0, 0, 0};
    int64_t strides[kMaxRank] = {0, 0, 0, 0};

    // A dense row-major (C-contiguous) view.
    static TensorView contiguous(void *data, DType dtype, std::initializer_list<int64_t> shape);
    // A view with explicit strides (elements), e.g. x[:, ::2] of a (3, 10) array is
    // strided(p, F32, {3, 5}, {10, 2}).
    static TensorView strided(void *data, DType dtype, std::initializer_list<int64_t> shape,
                              std::initializer_list<int64_t> strides);

    int64_t numel() const;  // product of the shape (1 for rank 0; 0 if any extent is 0; INT64_MAX if it overflows)
    std::string describe() const;  // e.g. "f32[3,5] strides [10,2]"
};

}  // namespace gelukit
