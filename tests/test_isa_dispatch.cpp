// Multi-target dispatch: CTest runs the suite once per x86 sub-target with GELUKIT_MAX_ISA set
// (sse41, avx2, avx512_skylake, avx512_zen4, avx512_sapphirerapids). This test checks the cap
// was honoured and that the capped ISA itself ran when the CPU has it (the vendor-tuned targets
// only on their vendor's CPUs); other tests then exercise that sub-target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace gelukit {
namespace {

bool cpu_has_zen4_set();

bool proc_cpuinfo_has(const std::string &flag) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) == 0) {
            return (line + " ").find(" " + flag + " ") != std::string::npos;
        }
    }
    return false;
}

bool cpu_has(Isa isa) {
    __builtin_cpu_init();
    const bool intel = __builtin_cpu_is("intel"), amd = __builtin_cpu_is("amd");
    switch (isa) {
    case Isa::SSE41:
        return __builtin_cpu_supports("sse4.1");
    case Isa::AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::AVX512Skylake:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512cd");
    case Isa::AVX512SapphireRapids:
        // Halide's check: the Zen 4 set plus AVX-VNNI and AVX512-FP16; Intel only (gelukit).
        // (GCC 12's __builtin_cpu_supports does not detect these two; read the kernel's flags.)
        return intel && cpu_has_zen4_set() && proc_cpuinfo_has("avx_vnni") && proc_cpuinfo_has("avx512_fp16");
    case Isa::AVX512Zen4:
        return amd && cpu_has_zen4_set();
    }
    return false;
}

bool cpu_has_zen4_set() {
    return cpu_has(Isa::AVX512Skylake) && __builtin_cpu_supports("avx512bf16") &&
               __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") &&
               __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512bitalg") &&
               __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512ifma");
}

TEST(IsaDispatch, CapIsHonouredAndCappedIsaRuns) {
    const char *env = std::getenv("GELUKIT_MAX_ISA");
    Isa cap = env ? isa_from_name(env) : Isa::AVX512SapphireRapids;
    std::vector<float> x(1000, 1.0f), y(1000);
    gelu_forward(TensorView::contiguous(x.data(), DType::F32, {1000}),
                 TensorView::contiguous(y.data(), DType::F32, {1000}));
    std::string got = dispatched_isa();
    ASSERT_NE(got, "none");
    Isa ran = isa_from_name(got);
    EXPECT_LE(static_cast<int>(ran), static_cast<int>(cap)) << "dispatched " << got << " above cap " << isa_name(cap);
    if (cpu_has(cap)) {
        EXPECT_EQ(ran, cap) << "the CPU has " << isa_name(cap) << " but " << got << " ran";
    } else if (cap == Isa::AVX512Zen4 && cpu_has(Isa::AVX512Skylake)) {
        // Zen 4 code is AMD-only: an Intel CPU with every Zen 4 feature must fall to Skylake.
        EXPECT_EQ(ran, Isa::AVX512Skylake) << got;
    } else {
        std::printf("[ INFO ] CPU lacks %s; dispatched %s\n", isa_name(cap), got.c_str());
    }
    // Halide caches the choice per kernel: a later cap change must be refused, loudly.
    EXPECT_THROW(set_max_isa(Isa::SSE41), Error);
}

}  // namespace
}  // namespace gelukit
