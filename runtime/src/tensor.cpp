#include <cstdint>
#include "gelukit/tensor.h"

#include <limits>
#include <sstream>

#include "gelukit/error.h"

namespace gelukit {

std::size_t dtype_size(DType dt) {
    switch (dt) {
    case DType::F32:
        return 4;
    case DType::BF16:
    case DType::F16:
        return 2;
    }
    throw Error(ErrorCode::InvalidArgument, "unknown dtype value " + std::to_string(static_cast<int>(dt)));
}

const char *dtype_name(DType dt) {
    switch (dt) {
    case DType::F32:
        return "f32";
    case DType::BF16:
        return "bf16";
    case DType::F16:
        return "f16";
    }
    return "invalid-dtype";
}

TensorView TensorView::contiguous(void *data, DType dtype, std::initializer_list<int64_t> shape) {
    if (shape.size() > static_cast<std::size_t>(kMaxRank)) {
        throw Error(ErrorCode::InvalidArgument,
                    "TensorView::contiguous: rank " + std::to_string(shape.size()) + " > 4");
    }
    TensorView v;
    v.data = data;
    v.dtype = dtype;
    v.rank = static_cast<int>(shape.size());
    int i = 0;
    for (int64_t s : shape) {
        v.shape[i++] = s;
    }
    // Saturating: a view too large for int64 strides keeps INT64_MAX strides, which the kernels'
    // argument checks reject as too large (no signed overflow here; found by UBSan).
    int64_t stride = 1;
    for (int d = v.rank - 1; d >= 0; d--) {
        v.strides[d] = stride;
        if (__builtin_mul_overflow(stride, v.shape[d] > 0 ? v.shape[d] : 1, &stride)) {
            stride = INT64_MAX;
        }
    }
    return v;
}

TensorView TensorView::strided(void *data, DType dtype, std::initializer_list<int64_t> shape,
                               std::initializer_list<int64_t> strides) {
    if (shape.size() != strides.size()) {
        throw Error(ErrorCode::InvalidArgument, "TensorView::strided: " + std::to_string(shape.size()) +
                                                    " extents but " + std::to_string(strides.size()) + " strides");
    }
    TensorView v = contiguous(data, dtype, shape);
    int i = 0;
    for (int64_t s : strides) {
        v.strides[i++] = s;
    }
    return v;
}

int64_t TensorView::numel() const {
    // A zero extent anywhere makes the view empty, whatever the others are (their product may not
    // even fit int64); a product that overflows saturates instead of wrapping (undefined).
    for (int d = 0; d < rank; d++) {
        if (shape[d] == 0) {
            return 0;
        }
    }
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (__builtin_mul_overflow(n, shape[d], &n)) {
            return std::numeric_limits<int64_t>::max();
        }
    }
    return n;
}

std::string TensorView::describe() const {
    std::ostringstream os;
    os << dtype_name(dtype) << "[";
    for (int d = 0; d < rank; d++) {
        os << (d ? "," : "") << shape[d];
    }
    os << "] strides [";
    for (int d = 0; d < rank; d++) {
        os << (d ? "," : "") << strides[d];
    }
    os << "]";
    return os.str();
}

}  // namespace gelukit
