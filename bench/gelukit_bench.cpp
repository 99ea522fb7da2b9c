// gelukit_bench: every GELU kernel of the registry next to its peers, in one process; the FFN
// workloads and their oneDNN peers are in ffn_bench.cpp (names ffn/...).
//
// Benchmark names (one family per operator; report tools split on '/'):
//   gelu/<direction>/<dtype>/<form>/<variant>/N:<n>/threads:<t>
//     direction  forward | backward
//     dtype      f32 | bf16 | f16
//     form       erf | tanh | sigmoid
//     variant    <math>_<schedule> for gelukit kernels (acc_hand, fast_hand, acc_naive, acc_adams2019)
//                onednn      oneDNN eltwise (eltwise_gelu_erf / eltwise_gelu_tanh), when oneDNN builds it
//                scalar_ref  a plain float loop over std::erfc / std::tanh (forward f32, threads:1)
//                memcpy      std::memcpy of the input to the output: the memory-traffic floor (threads:1)
// Google Benchmark appends "/real_time" to every name because all of them use UseRealTime().
//
// "threads:<t>" is the size of the kernel's own pool (Halide's for gelukit, OpenMP's for oneDNN),
// not Google Benchmark's ->Threads(): one caller thread times one call per iteration, which is
// how a framework calls an activation. All threads:1 benchmarks are registered (and so run)
// before any threads:2 one: Halide's pool never shrinks. halide_set_num_threads() only limits
// how many workers are *created*; a worker that exists keeps taking tasks (its A-team size follows
// the task count, not the setting), so a threads:1 run after a threads:2 run would still use two
// threads. Running the counts in ascending order keeps every threads:<t> row at t threads.
//
// Counters are rates over real time, so they compare across N, dtypes and thread counts:
//   items_per_second  elements per second
//   bytes_per_second  bytes read + written per second (what the call must move through memory)
//   ns_per_elem       nanoseconds per element (the inverse of items_per_second, in ns)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "gelukit/error.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "gelukit/tensor.h"
#include "ffn_bench.h"

#ifndef GELUKIT_HALIDE_TARGETS  // set by bench/CMakeLists.txt from cmake/GelukitKernels.cmake
#define GELUKIT_HALIDE_TARGETS "unknown"
#endif
#ifndef GELUKIT_HALIDE_FEATURES
#define GELUKIT_HALIDE_FEATURES "unknown"
#endif

namespace {

using gelukit::Direction;
using gelukit::DType;
using gelukit::Form;
using gelukit::Math;
using gelukit::Schedule;

// 4096: one small activation, where call overhead shows. 1572864 = 512 tokens x d_ff 3072, the
// FFN hidden activation of BERT-base at sequence length 512 (fits in L2+L3 on big cores only).
// 16777216: 64 MiB of f32, far beyond the caches: a pure DRAM-bandwidth case.
constexpr int64_t kSizes[] = {4096, 1572864, 16777216};
constexpr int kThreadCounts[] = {1, 2};  // ascending: see the top of this file
// The naive schedule is serial float64 scalar code (tens of ns per element): at 16M elements one
// call takes most of a second, so it is only measured up to the BERT size.
constexpr int64_t kNaiveMaxN = 1572864;
// Fixed seeds: every run, every variant and every peer sees the same inputs.
constexpr uint32_t kSeedX = 0x6e1u;
constexpr uint32_t kSeedDy = 0x6e2u;

enum class Impl { Gelukit, OneDnn, ScalarRef, Memcpy };

struct Spec {
    Impl impl;
    Direction direction;
    DType dtype;
    Form form;
    Math math = Math::Accurate;          // Impl::Gelukit only
    Schedule schedule = Schedule::Hand;  // Impl::Gelukit only
    int64_t n;
    int threads;
};

const char *direction_name(Direction d) {
    return d == Direction::Forward ? "forward" : "backward";
}

std::string variant_name(const Spec &s) {
    switch (s.impl) {
    case Impl::Gelukit:
        return std::string(gelukit::math_name(s.math)) + "_" + gelukit::schedule_name(s.schedule);
    case Impl::OneDnn:
        return "onednn";
    case Impl::ScalarRef:
        return "scalar_ref";
    case Impl::Memcpy:
        return "memcpy";
    }
    return "invalid";
}

std::string benchmark_name(const Spec &s) {
    return std::string("gelu/") + direction_name(s.direction) + "/" + gelukit::dtype_name(s.dtype) + "/" +
           gelukit::form_name(s.form) + "/" + variant_name(s) + "/N:" + std::to_string(s.n) +
           "/threads:" + std::to_string(s.threads);
}

// ---------------------------------------------------------------------------------------------
// Inputs

// 64-byte aligned (one cache line, one AVX-512 vector) so no variant pays for split loads that
// another does not.
class AlignedBuffer {
public:
    explicit AlignedBuffer(std::size_t bytes) {
        const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
        data_ = std::aligned_alloc(64, rounded);
        if (data_ == nullptr) {
            throw std::bad_alloc();
        }
    }
    ~AlignedBuffer() {
        std::free(data_);
    }
    AlignedBuffer(const AlignedBuffer &) = delete;
    AlignedBuffer &operator=(const AlignedBuffer &) = delete;
    void *get() const {
        return data_;
    }

private:
    void *data_ = nullptr;
};

// float -> bfloat16, round to nearest even (NaN stays a quiet NaN).
uint16_t float_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

// float -> IEEE binary16: GCC 12's _Float16 conversion rounds to nearest even (F16C or libgcc).
uint16_t float_to_f16(float f) {
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
}

// n values uniform over [lo, hi], rounded once into the storage type. The mt19937 output
// sequence is fixed by the C++ standard; the mapping to [lo, hi] is done here rather than by
// std::uniform_real_distribution (whose algorithm is implementation-defined), so the inputs are
// the same with every standard library.
void fill_uniform(void *data, DType dtype, int64_t n, float lo, float hi, uint32_t seed) {
    std::mt19937 gen(seed);
    const double step = (static_cast<double>(hi) - lo) / 4294967295.0;
    for (int64_t i = 0; i < n; i++) {
        const float v = static_cast<float>(lo + step * static_cast<double>(gen()));
        switch (dtype) {
        case DType::F32:
            static_cast<float *>(data)[i] = v;
            break;
        case DType::BF16:
            static_cast<uint16_t *>(data)[i] = float_to_bf16(v);
            break;
        case DType::F16:
            static_cast<uint16_t *>(data)[i] = float_to_f16(v);
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// oneDNN peer

dnnl::memory::data_type onednn_type(DType dt) {
    switch (dt) {
    case DType::F32:
        return dnnl::memory::data_type::f32;
    case DType::BF16:
        return dnnl::memory::data_type::bf16;
    case DType::F16:
        return dnnl::memory::data_type::f16;
    }
    return dnnl::memory::data_type::undef;
}

// oneDNN has the exact (erf) and tanh GELU; QuickGELU (sigmoid form) has no eltwise algorithm.
bool onednn_has_form(Form form) {
    return form == Form::Erf || form == Form::Tanh;
}

dnnl::algorithm onednn_algorithm(Form form) {
    return form == Form::Erf ? dnnl::algorithm::eltwise_gelu_erf : dnnl::algorithm::eltwise_gelu_tanh;
}

// One eltwise primitive over a dense 1-D tensor of n elements. Construction throws dnnl::error
// when oneDNN has no implementation (e.g. a dtype this CPU or this oneDNN version lacks).
struct OnednnGelu {
    dnnl::engine engine;
    dnnl::primitive primitive;
    std::string impl;  // implementation oneDNN chose, e.g. "jit:avx512_core"

    OnednnGelu(Direction dir, DType dtype, Form form, int64_t n) : engine(dnnl::engine::kind::cpu, 0) {
        const dnnl::memory::desc md({n}, onednn_type(dtype), dnnl::memory::format_tag::a);
        const dnnl::algorithm alg = onednn_algorithm(form);
        if (dir == Direction::Forward) {
            // forward_inference: no workspace, the configuration a framework's eval path uses.
            const dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, 0.0f, 0.0f);
            const dnnl::eltwise_forward::primitive_desc pd(d, engine);
            impl = pd.impl_info_str();
            primitive = dnnl::eltwise_forward(pd);
        } else {
            // The backward primitive needs a forward_training primitive_desc as its hint. These
            // algorithms take the source x (not y) as input, the same contract as gelu_backward.
            const dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg, md, 0.0f, 0.0f);
            const dnnl::eltwise_forward::primitive_desc fpd(fd, engine);
            const dnnl::eltwise_backward::desc bd(alg, md, md, 0.0f, 0.0f);
            const dnnl::eltwise_backward::primitive_desc pd(bd, engine, fpd);
            impl = pd.impl_info_str();
            primitive = dnnl::eltwise_backward(pd);
        }
    }
};

bool onednn_supports(Direction dir, DType dtype, Form form) {
    if (!onednn_has_form(form)) {
        return false;
    }
    try {
        OnednnGelu probe(dir, dtype, form, 4096);
        return true;
    } catch (const dnnl::error &) {
        return false;
    }
}

// ---------------------------------------------------------------------------------------------
// Scalar reference: what a straightforward C++ port of the formulas costs (libm per element,
// float arithmetic as written; -O3 without -ffast-math leaves the libm calls scalar).

constexpr float kSqrt1_2 = 0.7071067811865475244f;
constexpr float kSqrt2OverPi = 0.7978845608028654f;

void scalar_ref_erf(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = x[i] * 0.5f * std::erfc(-x[i] * kSqrt1_2);
    }
}

void scalar_ref_tanh(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    }
}

// ---------------------------------------------------------------------------------------------
// The one benchmark body.

void BM_Gelu(benchmark::State &state, const Spec &spec) {
    const int64_t n = spec.n;
    const std::size_t esize = gelukit::dtype_size(spec.dtype);
    const std::size_t bytes = static_cast<std::size_t>(n) * esize;
    const bool backward = spec.direction == Direction::Backward;

    // Bytes each call must move: forward reads x and writes y; backward reads x and dy and writes
    // dx. memcpy moves one input and one output whatever the direction, and says so.
    const int operands = (spec.impl == Impl::Memcpy || !backward) ? 2 : 3;

    try {
        // Inputs are made once per benchmark, outside the timed loop. The output is written once
        // here too, so page faults on first touch are not timed.
        AlignedBuffer x(bytes), dy(backward ? bytes : 0), out(bytes);
        fill_uniform(x.get(), spec.dtype, n, -6.0f, 6.0f, kSeedX);
        if (backward) {
            fill_uniform(dy.get(), spec.dtype, n, -1.0f, 1.0f, kSeedDy);
        }
        std::memset(out.get(), 0, bytes);

        // oneDNN objects live here so the loop below only executes the primitive.
        std::unique_ptr<OnednnGelu> dnn;
        dnnl::stream stream;
        std::unordered_map<int, dnnl::memory> args;

        std::function<void()> call;  // one call of the variant on the buffers above
        switch (spec.impl) {
        case Impl::Gelukit: {
            gelukit::set_num_threads(spec.threads);
            const auto xv = gelukit::TensorView::contiguous(x.get(), spec.dtype, {n});
            const auto ov = gelukit::TensorView::contiguous(out.get(), spec.dtype, {n});
            gelukit::GeluOptions opt;
            opt.form = spec.form;
            opt.math = spec.math;
            opt.schedule = spec.schedule;
            // Through the public entry points, so argument checks and dispatch are in the time,
            // as a user would pay them (visible at N=4096 only).
            if (backward) {
                const auto dyv = gelukit::TensorView::contiguous(dy.get(), spec.dtype, {n});
                call = [xv, dyv, ov, opt] { gelukit::gelu_backward(xv, dyv, ov, opt); };
            } else {
                call = [xv, ov, opt] { gelukit::gelu_forward(xv, ov, opt); };
            }
            break;
        }
        case Impl::OneDnn: {
            // oneDNN here uses the OpenMP runtime; some implementations size their work split when
            // the primitive is created, so the thread count is set first.
            omp_set_num_threads(spec.threads);
            dnn = std::make_unique<OnednnGelu>(spec.direction, spec.dtype, spec.form, n);
            stream = dnnl::stream(dnn->engine);
            const dnnl::memory::desc md({n}, onednn_type(spec.dtype), dnnl::memory::format_tag::a);
            args.emplace(DNNL_ARG_SRC, dnnl::memory(md, dnn->engine, x.get()));
            if (backward) {
                args.emplace(DNNL_ARG_DIFF_DST, dnnl::memory(md, dnn->engine, dy.get()));
                args.emplace(DNNL_ARG_DIFF_SRC, dnnl::memory(md, dnn->engine, out.get()));
            } else {
                args.emplace(DNNL_ARG_DST, dnnl::memory(md, dnn->engine, out.get()));
            }
            state.SetLabel(dnn->impl);
            call = [&dnn, &stream, &args] {
                dnn->primitive.execute(stream, args);
                stream.wait();
            };
            break;
        }
        case Impl::ScalarRef: {
            const float *xp = static_cast<const float *>(x.get());
            float *yp = static_cast<float *>(out.get());
            if (spec.form == Form::Erf) {
                call = [xp, yp, n] { scalar_ref_erf(xp, yp, n); };
            } else {
                call = [xp, yp, n] { scalar_ref_tanh(xp, yp, n); };
            }
            break;
        }
        case Impl::Memcpy: {
            const void *src = x.get();
            void *dst = out.get();
            call = [src, dst, bytes] { std::memcpy(dst, src, bytes); };
            break;
        }
        }

        // Warm-up, untimed: a Halide multi-target kernel picks its ISA at its first call and oneDNN
        // may JIT at its first execution; both would otherwise land in the first iteration.
        call();

        for (auto _ : state) {
            call();
            // The results are only ever written to memory; keep the compiler from assuming the
            // buffers are dead after the call (matters for the inlined scalar_ref and memcpy).
            benchmark::DoNotOptimize(out.get());
            benchmark::ClobberMemory();
        }
    } catch (const gelukit::Error &e) {
        state.SkipWithError(e.what());
        return;
    } catch (const dnnl::error &e) {
        state.SkipWithError((std::string("oneDNN: ") + e.what()).c_str());
        return;
    } catch (const std::exception &e) {
        state.SkipWithError(e.what());
        return;
    }

    const int64_t iterations = static_cast<int64_t>(state.iterations());
    state.SetItemsProcessed(iterations * n);
    state.SetBytesProcessed(iterations * static_cast<int64_t>(operands * bytes));
    // value * iterations / seconds = (n * 1e-9) * iterations / seconds, i.e. elements per ns;
    // kInvert makes it ns per element. The seconds are real time (UseRealTime below), so this is
    // exactly real_time / n. The console reporter appends "s" to every inverted rate ("1.54s");
    // the number is nanoseconds, as in the JSON output.
    state.counters["ns_per_elem"] = benchmark::Counter(
        static_cast<double>(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void register_one(const Spec &spec) {
    benchmark::RegisterBenchmark(benchmark_name(spec).c_str(), [spec](benchmark::State &st) { BM_Gelu(st, spec); })
        ->UseRealTime()  // threaded kernels: CPU time of the caller alone would hide the workers
        ->Unit(benchmark::kMicrosecond);
}

// Registers every kernel of gelukit::gelu_kernels() x N x threads; the peers of a
// (direction, dtype, form, N, threads) group follow its gelukit kernels.
void register_benchmarks() {
    using Group = std::tuple<Direction, DType, Form>;
    std::vector<Group> groups;  // registry order
    for (const gelukit::KernelInfo &k : gelukit::gelu_kernels()) {
        const Group g{k.direction, k.dtype, k.form};
        if (std::find(groups.begin(), groups.end(), g) == groups.end()) {
            groups.push_back(g);
        }
    }
    std::map<Group, bool> onednn_ok;
    for (const Group &g : groups) {
        const auto [dir, dtype, form] = g;
        // f32 always (a failure then shows as an error row); other dtypes only where oneDNN has an
        // implementation on this CPU.
        onednn_ok[g] = onednn_has_form(form) && (dtype == DType::F32 || onednn_supports(dir, dtype, form));
    }

    // Thread counts outermost and ascending (see the top of this file: Halide's pool only grows).
    for (const int t : kThreadCounts) {
        for (const Group &g : groups) {
            const auto [dir, dtype, form] = g;
            for (const int64_t n : kSizes) {
                for (const gelukit::KernelInfo &k : gelukit::gelu_kernels()) {
                    if (k.direction != dir || k.dtype != dtype || k.form != form) {
                        continue;
                    }
                    if (k.schedule == Schedule::Naive && n > kNaiveMaxN) {
                        continue;
                    }
                    register_one(Spec{Impl::Gelukit, dir, dtype, form, k.math, k.schedule, n, t});
                }
                if (onednn_ok[g]) {
                    register_one(Spec{Impl::OneDnn, dir, dtype, form, Math::Accurate, Schedule::Hand, n, t});
                }
                // Single-threaded peers: one entry per group at threads:1.
                if (t != 1) {
                    continue;
                }
                if (dir == Direction::Forward && dtype == DType::F32 && (form == Form::Erf || form == Form::Tanh)) {
                    register_one(Spec{Impl::ScalarRef, dir, dtype, form, Math::Accurate, Schedule::Hand, n, t});
                }
                register_one(Spec{Impl::Memcpy, dir, dtype, form, Math::Accurate, Schedule::Hand, n, t});
            }
        }
        gelukit::bench::register_ffn_benchmarks(t);  // same thread count, before any larger one
    }
}

// Facts that decide how the numbers read; they go into the "context" of the console and JSON
// output. AddCustomContext must run before RunSpecifiedBenchmarks.
void add_context() {
    // The dispatched ISA is only known once a kernel has run: Halide's multi-target wrapper picks
    // its sub-target at the first call.
    std::string isa;
    try {
        // One thread: a warm-up on the default pool (one thread per core) would create the Halide
        // worker that no later set_num_threads(1) can idle (see the top of this file).
        gelukit::set_num_threads(1);
        std::vector<float> x(4096, 0.5f), y(4096);
        gelukit::GeluOptions opt;  // erf, acc, hand: gelu_fwd_f32_erf_acc_hand
        gelukit::gelu_forward(gelukit::TensorView::contiguous(x.data(), DType::F32, {4096}),
                              gelukit::TensorView::contiguous(y.data(), DType::F32, {4096}), opt);
        isa = gelukit::dispatched_isa();
    } catch (const gelukit::Error &e) {
        isa = std::string("none (warm-up failed: ") + e.what() + ")";
    }
    benchmark::AddCustomContext("gelukit_dispatched_isa", isa);
    if (const char *cap = std::getenv("GELUKIT_MAX_ISA")) {
        benchmark::AddCustomContext("gelukit_max_isa", cap);
    }
    benchmark::AddCustomContext("gelukit_kernels", std::to_string(gelukit::gelu_kernels().size()));
    benchmark::AddCustomContext("halide_targets", GELUKIT_HALIDE_TARGETS);
    benchmark::AddCustomContext("halide_features", GELUKIT_HALIDE_FEATURES);

    const dnnl_version_t *v = dnnl_version();
    std::string dnnl = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    if (v->hash != nullptr) {
        dnnl += std::string(" (hash ") + v->hash + ")";
    }
    benchmark::AddCustomContext("onednn_version", dnnl);
    benchmark::AddCustomContext("onednn_cpu_runtime", v->cpu_runtime == DNNL_RUNTIME_OMP ? "omp"
                                                      : v->cpu_runtime == DNNL_RUNTIME_TBB ? "tbb"
                                                      : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "seq"
                                                                                           : "other");
}

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    add_context();
    gelukit::bench::add_ffn_context(kThreadCounts[std::size(kThreadCounts) - 1]);
    register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
