// fma_peak: float32 FMA throughput, measured with a register-blocked loop of independent FMAs.
//
// Why the accumulator counts below: an FMA on Skylake-SP .. Sapphire Rapids has a latency of 4
// cycles and two FMA ports (p0 and p5 for zmm on parts with the second 512-bit unit), so a core
// can only retire 2 FMAs per cycle if at least 4 x 2 = 8 independent dependency chains are in
// flight. Each chain here is one accumulator register (acc = acc * a + b depends on its own
// previous value only). We use 16 zmm accumulators: twice the minimum, so the loop still runs at
// peak if the latency is 5 cycles (Haswell/Broadwell, some AMD parts: 5 x 2 = 10) or if the
// scheduler loses a cycle now and then, and it still fits the 32 zmm registers with the two
// constant operands and no spills. AVX2 has only 16 ymm registers, so that path uses 12
// accumulators (>= 10 for the 5-cycle parts) + 2 constants. SSE2 has no FMA instruction: a
// multiply and an add per accumulator, 12 chains of (4-cycle mul + 4-cycle add).
//
// The constants are a = 0.999999, b = 1e-6: acc converges towards b / (1 - a) = 1, so the values
// neither overflow nor become subnormal (subnormal results can cost microcode assists). The
// accumulators are summed and stored to a volatile sink at the end, so the compiler cannot drop
// the loop; the function is also noinline so it is one visible hot loop in objdump
// (vfmadd...ps zmm, 16 of them per unrolled iteration).
#include "fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kSecondsPerRun = 0.2;
constexpr int kRepetitions = 3;
// FMAs per accumulator between two clock reads: 16 x 4096 zmm FMAs are ~33 us at 2 GHz, so the
// clock read (and the accumulator spills around it) cost well under 0.1 %.
constexpr int64_t kInnerIterations = 4096;

volatile float g_sink;  // where the accumulators end up, so the loops are live

enum class Isa { Avx512, Avx2, Sse };

Isa detect_isa() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        return Isa::Avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        return Isa::Avx2;
    }
    return Isa::Sse;
}

// Each kernel runs until `deadline` and returns the number of FLOP it did.

__attribute__((target("avx512f"), noinline)) double fma_loop_avx512(Clock::time_point deadline) {
    constexpr int kAcc = 16;  // see the top of this file
    constexpr int kLanes = 16;
    const __m512 a = _mm512_set1_ps(0.999999f);
    const __m512 b = _mm512_set1_ps(1e-6f);
    __m512 acc[kAcc];
    for (int i = 0; i < kAcc; i++) {
        acc[i] = _mm512_set1_ps(static_cast<float>(i));
    }
    int64_t blocks = 0;
    do {
        for (int64_t it = 0; it < kInnerIterations; it++) {
#pragma GCC unroll 16
            for (int i = 0; i < kAcc; i++) {
                acc[i] = _mm512_fmadd_ps(acc[i], a, b);
            }
        }
        blocks++;
    } while (Clock::now() < deadline);
    __m512 s = acc[0];
    for (int i = 1; i < kAcc; i++) {
        s = _mm512_add_ps(s, acc[i]);
    }
    // Stored and summed by hand: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized.
    alignas(64) float lanes[kLanes];
    _mm512_store_ps(lanes, s);
    float total = 0.0f;
    for (float v : lanes) {
        total += v;
    }
    g_sink = total;
    return 2.0 * kLanes * kAcc * static_cast<double>(kInnerIterations) * static_cast<double>(blocks);
}

__attribute__((target("avx2,fma"), noinline)) double fma_loop_avx2(Clock::time_point deadline) {
    constexpr int kAcc = 12;  // 16 ymm registers: 12 accumulators + 2 constants
    constexpr int kLanes = 8;
    const __m256 a = _mm256_set1_ps(0.999999f);
    const __m256 b = _mm256_set1_ps(1e-6f);
    __m256 acc[kAcc];
    for (int i = 0; i < kAcc; i++) {
        acc[i] = _mm256_set1_ps(static_cast<float>(i));
    }
    int64_t blocks = 0;
    do {
        for (int64_t it = 0; it < kInnerIterations; it++) {
#pragma GCC unroll 12
            for (int i = 0; i < kAcc; i++) {
                acc[i] = _mm256_fmadd_ps(acc[i], a, b);
            }
        }
        blocks++;
    } while (Clock::now() < deadline);
    __m256 s = acc[0];
    for (int i = 1; i < kAcc; i++) {
        s = _mm256_add_ps(s, acc[i]);
    }
    alignas(32) float lanes[kLanes];
    _mm256_store_ps(lanes, s);
    float total = 0.0f;
    for (float v : lanes) {
        total += v;
    }
    g_sink = total;
    return 2.0 * kLanes * kAcc * static_cast<double>(kInnerIterations) * static_cast<double>(blocks);
}

__attribute__((noinline)) double fma_loop_sse(Clock::time_point deadline) {
    constexpr int kAcc = 12;  // 16 xmm registers: 12 accumulators + 2 constants
    constexpr int kLanes = 4;
    const __m128 a = _mm_set1_ps(0.999999f);
    const __m128 b = _mm_set1_ps(1e-6f);
    __m128 acc[kAcc];
    for (int i = 0; i < kAcc; i++) {
        acc[i] = _mm_set1_ps(static_cast<float>(i));
    }
    int64_t blocks = 0;
    do {
        for (int64_t it = 0; it < kInnerIterations; it++) {
#pragma GCC unroll 12
            for (int i = 0; i < kAcc; i++) {
                acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], a), b);  // no FMA in SSE: mul + add
            }
        }
        blocks++;
    } while (Clock::now() < deadline);
    __m128 s = acc[0];
    for (int i = 1; i < kAcc; i++) {
        s = _mm_add_ps(s, acc[i]);
    }
    alignas(16) float lanes[kLanes];
    _mm_store_ps(lanes, s);
    g_sink = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    return 2.0 * kLanes * kAcc * static_cast<double>(kInnerIterations) * static_cast<double>(blocks);
}

double run_loop(Isa isa, Clock::time_point deadline) {
    switch (isa) {
    case Isa::Avx512:
        return fma_loop_avx512(deadline);
    case Isa::Avx2:
        return fma_loop_avx2(deadline);
    case Isa::Sse:
        break;
    }
    return fma_loop_sse(deadline);
}

// One repetition: all threads wait at a spin barrier, then each runs for kSecondsPerRun and
// times itself; the result is the sum of the per-thread rates in GFLOP/s.
double one_repetition(Isa isa, int threads) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> gflops(static_cast<std::size_t>(threads), 0.0);
    auto body = [&](int t) {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        const Clock::time_point start = Clock::now();
        const auto deadline =
            start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kSecondsPerRun));
        const double flop = run_loop(isa, deadline);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        gflops[static_cast<std::size_t>(t)] = flop / seconds * 1e-9;
    };
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; t++) {
        pool.emplace_back(body, t);
    }
    while (ready.load() < threads) {
        std::this_thread::yield();
    }
    go.store(true, std::memory_order_release);
    for (std::thread &th : pool) {
        th.join();
    }
    double total = 0.0;
    for (double g : gflops) {
        total += g;
    }
    return total;
}

}  // namespace

double measure_fma_peak_gflops(int threads) {
    threads = std::max(threads, 1);
    const Isa isa = detect_isa();
    double best = 0.0;
    for (int r = 0; r < kRepetitions; r++) {
        best = std::max(best, one_repetition(isa, threads));
    }
    return best;
}

const char *fma_peak_isa() {
    switch (detect_isa()) {
    case Isa::Avx512:
        return "avx512f";
    case Isa::Avx2:
        return "avx2+fma";
    case Isa::Sse:
        break;
    }
    return "sse2";
}
