// Process-wide controls of the gelukit runtime: threads, CPU ISA dispatch, kernel registry.
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

// Instruction-set levels of the CPU kernel libraries' sub-targets (cmake/GelukitKernels.cmake),
// in dispatch order within each architecture; a build knows only its own architecture's levels.
// x86-64: the two newest are vendor-tuned (LLVM -mcpu=sapphirerapids / znver4) and may use
//   instructions only their vendor implements (znver4 code contains AMD's SSE4a `insertq`,
//   which faults on Intel), so each is dispatched only on its vendor's CPUs; the cap order puts
//   both above AVX512Skylake, the vendor-neutral AVX-512 level.
// arm-64: NEON is the AArch64 floor; NeonFp16 adds ARMv8.2-A FP16 (Halide's arm_fp16), detected
//   from the kernel's HWCAP_ASIMDHP bit.
enum class Isa {
    SSE41 = 0,
    AVX2 = 1,
    AVX512Skylake = 2,
    AVX512Zen4 = 3,
    AVX512SapphireRapids = 4,
    Neon = 16,
    NeonFp16 = 17,
};
// "sse41", "avx2", "avx512_skylake", "avx512_zen4", "avx512_sapphirerapids", "neon", "neon_fp16"
const char *isa_name(Isa isa);
// Throws Error(InvalidArgument) on unknown names and on levels of another architecture.
Isa isa_from_name(const std::string &name);

// Caps the instruction set the multi-target kernels may dispatch to (the CPU's own limit still
// applies). Halide selects a target once per kernel, at its first call, so this must be called
// before any kernel runs; later calls throw Error(InvalidArgument). The GELUKIT_MAX_ISA
// environment variable (an isa_name) sets the same cap at start-up.
void set_max_isa(Isa isa);
// The highest instruction set any kernel has dispatched to so far ("none" before a first call).
std::string dispatched_isa();

// Which code the fp16 kernels use to convert between fp16 and their fp32/fp64 internal math
// (G49), derived from dispatched_isa(), the highest sub-target any kernel (of any dtype) has
// selected so far: "native" (x86-64: F16C vcvtph2ps/vcvtps2ph, in the AVX2 and AVX-512
// sub-targets; arm-64: ARMv8.2 FP16 fcvtl/fcvtn, the neon_fp16 sub-target) or "emulated"
// (integer bit manipulation; correct, slower: x86 SSE4.1, ARM without FP16); "none" before any
// kernel ran. Every kernel selects by the same CPU features and cap, so the fp16 kernels take
// that same sub-target. Results are identical either way (one rounding to nearest even). The
// ctest arm_features.fp16_differs_gelu_f16 checks that the neon_fp16 code has the native
// conversions and the neon code none.
std::string half_conversion_path();

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
