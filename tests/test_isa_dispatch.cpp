// Multi-target dispatch: CTest runs the suite once per CPU sub-target with GELUKIT_MAX_ISA set
// (x86-64: sse41, avx2, avx512_skylake, avx512_zen4, avx512_sapphirerapids; arm-64 under qemu:
// neon, neon_fp16, and QEMU_CPU=cortex-a57, a CPU without FP16). This test checks the cap was
// honoured and that the capped ISA itself ran when the CPU has it (the vendor-tuned targets only
// on their vendor's CPUs; CPU features are read here independently of Halide's detection);
// other tests then exercise that sub-target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace gelukit {
namespace {

#if defined(__x86_64__)
constexpr Isa kHighest = Isa::AVX512SapphireRapids;

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
    default:
        return false;
    }
}

bool cpu_has_zen4_set() {
    return cpu_has(Isa::AVX512Skylake) && __builtin_cpu_supports("avx512bf16") &&
               __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") &&
               __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512bitalg") &&
               __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512ifma");
}
#elif defined(__aarch64__)
constexpr Isa kHighest = Isa::NeonFp16;

bool cpu_has(Isa isa) {
    // Linux arm64 uapi hwcap.h: HWCAP_ASIMDHP = 1 << 10 (Advanced SIMD half precision).
    constexpr unsigned long kHwcapAsimdHp = 1ul << 10;
    switch (isa) {
    case Isa::Neon:
        return true;  // Advanced SIMD is mandatory in AArch64
    case Isa::NeonFp16:
        return (getauxval(AT_HWCAP) & kHwcapAsimdHp) != 0;
    default:
        return false;
    }
}
#endif

TEST(IsaDispatch, CapIsHonouredAndCappedIsaRuns) {
    const char *env = std::getenv("GELUKIT_MAX_ISA");
    Isa cap = env ? isa_from_name(env) : kHighest;
    std::vector<float> x(1000, 1.0f), y(1000);
    gelu_forward(TensorView::contiguous(x.data(), DType::F32, {1000}),
                 TensorView::contiguous(y.data(), DType::F32, {1000}));
    std::string got = dispatched_isa();
    ASSERT_NE(got, "none");
    Isa ran = isa_from_name(got);
    EXPECT_LE(static_cast<int>(ran), static_cast<int>(cap)) << "dispatched " << got << " above cap " << isa_name(cap);
    if (cpu_has(cap)) {
        EXPECT_EQ(ran, cap) << "the CPU has " << isa_name(cap) << " but " << got << " ran";
    } else if (cap == Isa::NeonFp16) {
        // A CPU without FP16 (QEMU_CPU=cortex-a57) must fall back to the emulated NEON code.
        EXPECT_EQ(ran, Isa::Neon) << got;
    } else if (cap == Isa::AVX512Zen4 && cpu_has(Isa::AVX512Skylake)) {
        // Zen 4 code is AMD-only: an Intel CPU with every Zen 4 feature must fall to Skylake.
        EXPECT_EQ(ran, Isa::AVX512Skylake) << got;
    } else {
        std::printf("[ INFO ] CPU lacks %s; dispatched %s\n", isa_name(cap), got.c_str());
    }
    // The fp16 conversion path follows the sub-target that ran (G49: say which code was used).
    const bool native_half = ran != Isa::SSE41 && ran != Isa::Neon;
    EXPECT_EQ(half_conversion_path(), native_half ? "native" : "emulated");
    std::printf("[ INFO ] dispatched %s; fp16 conversions: %s\n", got.c_str(), half_conversion_path().c_str());
    // Halide caches the choice per kernel: a later cap change must be refused, loudly.
    EXPECT_THROW(set_max_isa(kHighest), Error);
}

TEST(IsaDispatch, LevelsOfAnotherArchitectureAreRejected) {
#if defined(__x86_64__)
    EXPECT_THROW(isa_from_name("neon_fp16"), Error);
#else
    EXPECT_THROW(isa_from_name("avx2"), Error);
#endif
    EXPECT_THROW(isa_from_name("avx1024"), Error);
}

}  // namespace
}  // namespace gelukit
