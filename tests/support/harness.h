// Small helpers to run GELU kernels on std::vector data in tests.
#pragma once

#include <cstdint>
#include <vector>

#include "gelukit/gelu.h"
#include "reference.h"

namespace gelukit::test {

// Storage bits of x in dtype dt, rounded to nearest even (exact for representable values).
uint32_t to_bits(double x, DType dt);

// Storage bits (one uint32 per element, fp16/bf16 in the low 16 bits) <-> packed storage bytes.
std::vector<char> pack_bits(const std::vector<uint32_t> &bits, DType dt);
std::vector<uint32_t> unpack_bits(const std::vector<char> &buf, DType dt);

// Runs forward/backward on contiguous 1-D data given as storage bits; returns output bits.
std::vector<uint32_t> run_forward(const std::vector<uint32_t> &x_bits, DType dt, const GeluOptions &o = {});
std::vector<uint32_t> run_backward(const std::vector<uint32_t> &x_bits, const std::vector<uint32_t> &dy_bits,
                                   DType dt, const GeluOptions &o = {});

// Convenience for float32 values.
float forward_f32(float x, const GeluOptions &o = {});
float backward_f32(float x, float dy, const GeluOptions &o = {});

}  // namespace gelukit::test
