#include "harness.h"

#include <cstring>

namespace gelukit::test {

uint32_t to_bits(double x, DType dt) {
    return round_to_bits({x, 0}, dt);
}

std::vector<char> pack_bits(const std::vector<uint32_t> &bits, DType dt) {
    std::vector<char> buf(bits.size() * dtype_size(dt));
    for (std::size_t i = 0; i < bits.size(); i++) {
        if (dt == DType::F32) {
            std::memcpy(buf.data() + 4 * i, &bits[i], 4);
        } else {
            uint16_t h = static_cast<uint16_t>(bits[i]);
            std::memcpy(buf.data() + 2 * i, &h, 2);
        }
    }
    return buf;
}

std::vector<uint32_t> unpack_bits(const std::vector<char> &buf, DType dt) {
    std::size_t n = buf.size() / dtype_size(dt);
    std::vector<uint32_t> bits(n);
    for (std::size_t i = 0; i < n; i++) {
        if (dt == DType::F32) {
            std::memcpy(&bits[i], buf.data() + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, buf.data() + 2 * i, 2);
            bits[i] = h;
        }
    }
    return bits;
}

std::vector<uint32_t> run_forward(const std::vector<uint32_t> &x_bits, DType dt, const GeluOptions &o) {
    std::vector<char> x = pack_bits(x_bits, dt), y(x.size());
    const int64_t n = static_cast<int64_t>(x_bits.size());
    gelu_forward(TensorView::contiguous(x.data(), dt, {n}), TensorView::contiguous(y.data(), dt, {n}), o);
    return unpack_bits(y, dt);
}

std::vector<uint32_t> run_backward(const std::vector<uint32_t> &x_bits, const std::vector<uint32_t> &dy_bits,
                                   DType dt, const GeluOptions &o) {
    std::vector<char> x = pack_bits(x_bits, dt), dy = pack_bits(dy_bits, dt), dx(x.size());
    const int64_t n = static_cast<int64_t>(x_bits.size());
    gelu_backward(TensorView::contiguous(x.data(), dt, {n}), TensorView::contiguous(dy.data(), dt, {n}),
                  TensorView::contiguous(dx.data(), dt, {n}), o);
    return unpack_bits(dx, dt);
}

float forward_f32(float x, const GeluOptions &o) {
    return bits_to_float(run_forward({float_to_bits(x)}, DType::F32, o)[0]);
}

float backward_f32(float x, float dy, const GeluOptions &o) {
    return bits_to_float(run_backward({float_to_bits(x)}, {float_to_bits(dy)}, DType::F32, o)[0]);
}

}  // namespace gelukit::test
