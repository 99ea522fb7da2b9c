// Concurrency (issue 6): 64 threads x 10^4 calls each, alternating GELU (every form, f32 / bf16 /
// f16, forward and backward, some in place) and FFN forward on one shared FeedForward object
// (shared packed weights); every result must be bit-identical to the single-threaded result of
// the same call. Built with ThreadSanitizer (ctest gelukit_concurrency.tsan), which also checks
// the runtime's shared state (lazy initialisation, dispatch, error handler, the thread-count
// getter and setter, called from several threads during the run) for data races. The Halide kernels themselves are not instrumented: TSan sees the
// runtime, the test and every buffer handed to or read back from the kernels on the calling
// threads, not the kernels' own loads and stores inside Halide's thread pool.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/ffn.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace gelukit::test {
namespace {

// The figure; GELUKIT_CONCURRENCY_CALLS overrides it for a quick local run.
int64_t calls_per_thread() {
    const char *env = std::getenv("GELUKIT_CONCURRENCY_CALLS");
    return env ? std::atoll(env) : 10000;
}
constexpr int kThreads = 64;

uint32_t lcg(uint32_t &s) {
    s = s * 1664525u + 1013904223u;
    return s;
}

// Input bit patterns: ordinary values in [-8, 8) plus NaN, +-inf, +-0 and subnormals, so the
// special-value paths run concurrently too.
std::vector<uint32_t> f32_inputs(uint32_t seed, std::size_t n) {
    std::vector<uint32_t> bits(n);
    for (std::size_t i = 0; i < n; ++i) {
        float f = (static_cast<float>(lcg(seed) >> 8) / 8388608.0f - 0.5f) * 16.0f;
        std::memcpy(&bits[i], &f, 4);
    }
    const uint32_t specials[] = {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x00000000u,
                                 0x80000000u, 0x00000001u, 0x807FFFFFu};
    for (std::size_t i = 0; i < std::size(specials) && i < n; ++i) bits[i * 7 % n] = specials[i];
    return bits;
}

// One GELU job: a dtype/form/direction combination on its own data (rank 2, 16 x 40).
struct GeluJob {
    DType dtype;
    GeluOptions options;
    bool backward;
    bool in_place;
    std::vector<uint16_t> x16, dy16;  // bf16 / f16 storage
    std::vector<uint32_t> x32, dy32;  // f32 storage
    std::vector<uint8_t> expected;    // single-threaded output bytes
};

constexpr int64_t kRows = 16, kCols = 40;

// Runs the job into `out` (bytes, resized); in-place jobs copy x to out and pass the same view.
void run_gelu(const GeluJob &job, std::vector<uint8_t> &out) {
    const std::size_t elem = job.dtype == DType::F32 ? 4 : 2;
    const std::size_t n = static_cast<std::size_t>(kRows * kCols);
    out.resize(n * elem);
    const void *x = job.dtype == DType::F32 ? static_cast<const void *>(job.x32.data()) : job.x16.data();
    const void *dy = job.dtype == DType::F32 ? static_cast<const void *>(job.dy32.data()) : job.dy16.data();
    auto view = [&](const void *p) {
        return TensorView::contiguous(const_cast<void *>(p), job.dtype, {kRows, kCols});
    };
    if (job.in_place) {
        std::memcpy(out.data(), x, n * elem);
        TensorView io = view(out.data());
        if (job.backward) {
            gelu_backward(io, view(dy), io, job.options);
        } else {
            gelu_forward(io, io, job.options);
        }
    } else if (job.backward) {
        gelu_backward(view(x), view(dy), view(out.data()), job.options);
    } else {
        gelu_forward(view(x), view(out.data()), job.options);
    }
}

TEST(Concurrency, GeluAndSharedFfnBitIdenticalToSingleThreaded) {
    const int64_t calls = calls_per_thread();
    ASSERT_GE(calls, 2);
    EXPECT_GE(num_threads(), 1) << "num_threads() before the first kernel call";
    // A count other than Halide's default (the CPU count or HL_NUM_THREADS), so that a getter
    // that went through the default (the old set(0)-and-restore emulation) would show.
    const int threads_before = num_threads() == 3 ? 5 : 3;
    set_num_threads(threads_before);
    ASSERT_EQ(num_threads(), threads_before);

    // GELU jobs: every form x dtype x direction, half of them in place.
    std::vector<GeluJob> jobs;
    uint32_t seed = 1;
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
        for (Form form : {Form::Erf, Form::Tanh, Form::Sigmoid}) {
            for (bool backward : {false, true}) {
                GeluJob job;
                job.dtype = dtype;
                job.options.form = form;
                job.backward = backward;
                job.in_place = (jobs.size() % 2) == 1;
                const std::size_t n = static_cast<std::size_t>(kRows * kCols);
                job.x32 = f32_inputs(seed++, n);
                job.dy32 = f32_inputs(seed++, n);
                if (dtype != DType::F32) {
                    // Half storage: the high half of the float32 pattern is a valid bf16 value;
                    // for f16 reinterpret the same 16 bits (NaNs, infs, subnormals included).
                    for (uint32_t b : job.x32) job.x16.push_back(static_cast<uint16_t>(b >> 16));
                    for (uint32_t b : job.dy32) job.dy16.push_back(static_cast<uint16_t>(b >> 16));
                }
                jobs.push_back(std::move(job));
            }
        }
    }
    for (GeluJob &job : jobs) run_gelu(job, job.expected);

    // One FFN object shared by all threads: d_model 64, d_ff 256, 8 tokens, f32 erf, biases.
    const int64_t d_model = 64, d_ff = 256, m = 8;
    uint32_t s = 99;
    auto weights = [&](std::size_t n, float scale) {
        std::vector<float> v(n);
        for (float &f : v) f = (static_cast<float>(lcg(s) >> 8) / 8388608.0f - 0.5f) * scale;
        return v;
    };
    std::vector<float> w1 = weights(d_ff * d_model, 0.25f), b1 = weights(d_ff, 0.5f),
                       w2 = weights(d_model * d_ff, 0.125f), b2 = weights(d_model, 0.5f);
    FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), DType::F32, {d_ff, d_model});
    w.b1 = TensorView::contiguous(b1.data(), DType::F32, {d_ff});
    w.w2 = TensorView::contiguous(w2.data(), DType::F32, {d_model, d_ff});
    w.b2 = TensorView::contiguous(b2.data(), DType::F32, {d_model});
    const FeedForward ffn(w, FeedForwardOptions{});
    // A different h per thread; expected outputs computed single-threaded first.
    std::vector<std::vector<float>> h(kThreads), ffn_expected(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        h[t] = weights(m * d_model, 4.0f);
        ffn_expected[t].resize(m * d_model);
        ffn.forward(TensorView::contiguous(h[t].data(), DType::F32, {m, d_model}),
                    TensorView::contiguous(ffn_expected[t].data(), DType::F32, {m, d_model}));
    }

    std::atomic<int64_t> gelu_calls{0}, ffn_calls{0}, mismatches{0}, errors{0};
    std::atomic<bool> thread_count_changed{false};
    std::vector<std::string> first_error(kThreads);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) {
        pool.emplace_back([&, t] {
            std::vector<uint8_t> out;
            std::vector<float> y(m * d_model);
            try {
                for (int64_t i = 0; i < calls; ++i) {
                    if (i % 2 == 0) {
                        const GeluJob &job = jobs[(t + i / 2) % jobs.size()];
                        run_gelu(job, out);
                        if (out != job.expected) ++mismatches;
                        ++gelu_calls;
                    } else {
                        ffn.forward(TensorView::contiguous(h[t].data(), DType::F32, {m, d_model}),
                                    TensorView::contiguous(y.data(), DType::F32, {m, d_model}));
                        if (std::memcmp(y.data(), ffn_expected[t].data(), y.size() * 4) != 0) ++mismatches;
                        ++ffn_calls;
                    }
                    // The getter and the setter (same value), concurrently with kernel calls and
                    // each other: every read must give the count in use.
                    if (i % 1000 == 999 && num_threads() != threads_before) thread_count_changed = true;
                    if (t % 8 == 0 && i % 1000 == 500) set_num_threads(threads_before);
                }
            } catch (const std::exception &e) {
                ++errors;
                first_error[t] = e.what();
            }
        });
    }
    for (std::thread &th : pool) th.join();

    for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(first_error[t].empty()) << "thread " << t << ": " << first_error[t];
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(mismatches.load(), 0) << "results differing from the single-threaded ones";
    EXPECT_FALSE(thread_count_changed.load());
    EXPECT_EQ(num_threads(), threads_before);
    EXPECT_EQ(gelu_calls.load() + ffn_calls.load(), int64_t{kThreads} * calls);
    std::printf("concurrency: %d threads x %lld calls = %lld GELU + %lld FFN calls, %lld mismatches\n", kThreads,
                static_cast<long long>(calls), static_cast<long long>(gelu_calls.load()),
                static_cast<long long>(ffn_calls.load()), static_cast<long long>(mismatches.load()));
}

}  // namespace
}  // namespace gelukit::test
