// Accuracy sweeps of a GELU kernel against the independent reference (reference.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace gelukit::test {

struct SweepConfig {
    Direction direction = Direction::Forward;
    DType dtype = DType::F32;
    GeluOptions options;
    int threads = 2;  // std::threads computing the reference
    // Backward only: the upstream gradient dy given with every input (rounded once to the storage
    // type); the reference is dy_stored * GELU'(x) rounded once, as the kernels' contract says.
    // dy = 1 (the default) measures GELU' itself. A large |dy| (3e38) makes the products of
    // GELU' far below float32's range representable: the negative tail the kernels must keep.
    double dy = 1.0;
};

struct SweepResult {
    uint64_t count = 0;
    uint64_t correctly_rounded = 0;  // kernel bits == reference bits (NaN == NaN)
    int64_t max_ulp = 0;             // outside the backward root window
    uint32_t worst_bits = 0;         // input bits of max_ulp
    double max_abs_err_root = 0;     // backward only: |error| within 0.01 of GELU' root
    uint32_t worst_root_bits = 0;
    uint64_t root_window_count = 0;

    void merge(const SweepResult &o);
    std::string summary(DType dt) const;  // one line, ends with "max_ulp=<v> x=<hex>"
};

// Evaluates the kernel on the given input bit patterns (storage dtype bits) and compares.
SweepResult sweep_inputs(const SweepConfig &cfg, const std::vector<uint32_t> &input_bits);

// Every bit pattern of the dtype (2^32 for f32, in blocks; 2^16 for halves).
SweepResult sweep_exhaustive(const SweepConfig &cfg, bool show_progress = false);

// Every value x of the storage type with lo <= x <= hi, in increasing order of x (both zeros where
// the range contains 0), in blocks of 2^24. lo and hi are finite and lo <= hi (the caller checks).
SweepResult sweep_range(const SweepConfig &cfg, double lo, double hi);

// `samples` patterns: the lattice k * stride over the whole bit space (stride odd, so every
// exponent and sign is visited), plus all patterns of the first and last binades near 0 and inf.
SweepResult sweep_sampled(const SweepConfig &cfg, uint64_t samples);

}  // namespace gelukit::test
