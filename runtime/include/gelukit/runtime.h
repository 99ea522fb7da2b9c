// Process-wide controls of the gelukit runtime: threads, x86 ISA dispatch, kernel registry.
#pragma once

#include <string>
#include <vector>

#include "gelukit/gelu.h"
#include "gelukit/tensor.h"

namespace gelukit {

// Number of worker threads of Halide's thread pool (shared by all gelukit kernels in the
// process). n >= 1; throws Error(InvalidArgument) otherwise. Default: the HL_NUM_THREADS
// environment variable, else the number of cores.
// Known limitation (Halide's pool): the setting caps how many workers are created; lowering it
// after a call has already created more workers does not stop those from taking tasks. Set the
// smallest count first (or HL_NUM_THREADS before the first call) when the count must be exact.
void set_num_threads(int n);
int num_threads();

// x86-64 instruction sets the kernel libraries are built for, in dispatch order.
// The two newest are vendor-tuned (LLVM -mcpu=sapphirerapids / znver4) and may use instructions
// only their vendor implements (znver4 code contains AMD's SSE4a `insertq`, which faults on
// Intel), so each is dispatched only on its vendor's CPUs; the cap order puts both above
// AVX512Skylake, the vendor-neutral AVX-512 level.
enum class Isa { SSE41 = 0, AVX2 = 1, AVX512Skylake = 2, AVX512Zen4 = 3, AVX512SapphireRapids = 4 };
// "sse41", "avx2", "avx512_skylake", "avx512_zen4", "avx512_sapphirerapids"
const char *isa_name(Isa isa);
Isa isa_from_name(const std::string &name);  // throws Error(InvalidArgument) on unknown names

// Caps the instruction set the multi-target kernels may dispatch to (the CPU's own limit still
// applies). Halide selects a target once per kernel, at its first call, so this must be called
// before any kernel runs; later calls throw Error(InvalidArgument). The GELUKIT_MAX_ISA
// environment variable (an isa_name) sets the same cap at start-up.
void set_max_isa(Isa isa);
// The highest instruction set any kernel has dispatched to so far ("none" before a first call).
std::string dispatched_isa();

enum class Direction { Forward, Backward };

// One row of the kernel registry (cmake/GelukitKernels.cmake).
struct KernelInfo {
    std::string name;  // e.g. "gelu_fwd_f32_erf_acc_hand"
    Direction direction;
    DType dtype;
    Form form;
    Math math;
    Schedule schedule;
};
const std::vector<KernelInfo> &gelu_kernels();

}  // namespace gelukit
