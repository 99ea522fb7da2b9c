// Internal: glue between the gelukit runtime and the Halide runtime (error handler, thread
// pool, ISA dispatch hook) shared by all gelukit entry points.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "HalideRuntime.h"
#include "gelukit/error.h"
#include "gelukit/tensor.h"

namespace gelukit::detail {

// Installs gelukit's Halide error handler and target-feature hook (idempotent, thread-safe).
void ensure_initialized();

// Whether the Intel AMX kernels (ffn_bf16_erf_amx) may run: the ISA cap allows
// avx512_sapphirerapids, the CPU is an Intel one with that sub-target's features plus AMX-TILE
// and AMX-BF16 (cpuid 7.0:EDX bits 24, 22), and Linux granted this process the AMX tile state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), Linux >= 5.16; without it the first
// AMX instruction faults). The hardware/OS part is probed once; the cap is read on every call.
// No side effect on the dispatch state (set_max_isa() stays allowed).
bool amx_allowed();
// Called when a call is about to run an AMX kernel: counts as a kernel's dispatch query
// (set_max_isa() is refused afterwards), then checks amx_allowed(); if allowed, raises
// dispatched_isa() to avx512_sapphirerapids and returns true (the caller runs the AMX kernel),
// else returns false (the caller runs the vector kernel). One call, so a cap lowered by another
// thread cannot slip in between the check and the dispatch.
bool claim_amx_dispatch();

// Throws gelukit::Error(ErrorCode::Halide) with Halide's own message if status != 0.
void check_halide_status(int status, const std::string &kernel_name);

// Discards the message Halide's error handler stored for this thread, and the process-wide copy
// (which a worker thread's error also reaches): for callers that expect a failure and handle the
// status themselves, so the stale message cannot be reported with a later, unrelated failure.
// Like check_halide_status, it clears the process-wide copy for every thread: a failure raised
// at the same moment on a worker of another call may then be reported without its message.
void clear_halide_error();

// The Halide element type of a storage dtype.
halide_type_t halide_type_of(DType dt);

// The Impl of a pimpl class (FeedForward, SafeTensorsFile), or Error(InvalidArgument) naming
// `cls::fn` if the object was moved from (its unique_ptr is null). A template, so that the
// class's private Impl type is deduced rather than named.
template<typename ImplT>
const ImplT &live_impl(const std::unique_ptr<ImplT> &impl, const char *cls, const char *fn) {
    if (!impl) {
        throw Error(ErrorCode::InvalidArgument,
                    std::string(cls) + "::" + fn + ": this object was moved from; use the one it was moved to");
    }
    return *impl;
}

// View checks shared by the CPU (gelu.cpp) and CUDA (cuda.cpp) entry points. Views passed here
// have non-negative extents and strides >= 1 in every dimension of extent > 1.
// Byte range [lo, hi) a non-empty view touches.
std::pair<uintptr_t, uintptr_t> byte_range(const TensorView &v);
// The identical view (in-place use): same data, dtype, shape, and strides where extent > 1.
bool same_view(const TensorView &a, const TensorView &b);
// Throws Error(InvalidArgument) if two elements of an output view share an address: with the
// dimensions sorted by stride, each stride must step over the whole span of the smaller ones.
void check_output_not_self_overlapping(const std::string &where, const TensorView &v);

// A halide_buffer_t that carries its own dimension array (rank <= 4, min 0 in every dimension);
// copies point at their own copy of the dimensions.
struct HalideBuffer {
    halide_buffer_t buf{};
    halide_dimension_t dims[4]{};

    HalideBuffer() {
        buf.dim = dims;
    }
    // One (extent, stride) pair per dimension, innermost first; strides in elements.
    HalideBuffer(void *data, halide_type_t type, std::initializer_list<std::pair<int64_t, int64_t>> extent_stride) {
        buf.host = static_cast<uint8_t *>(data);
        buf.type = type;
        buf.dim = dims;
        for (const auto &es : extent_stride) {
            dims[buf.dimensions++] = halide_dimension_t(0, int32_t(es.first), int32_t(es.second));
        }
    }
    HalideBuffer(const HalideBuffer &o) : buf(o.buf) {
        std::copy(o.dims, o.dims + 4, dims);
        buf.dim = dims;
    }
    HalideBuffer &operator=(const HalideBuffer &o) {
        buf = o.buf;
        std::copy(o.dims, o.dims + 4, dims);
        buf.dim = dims;
        return *this;
    }
};

}  // namespace gelukit::detail
