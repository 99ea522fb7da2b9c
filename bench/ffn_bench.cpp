// FFN benchmarks: gelukit's fused feed-forward kernels next to oneDNN, in one process.
//
// Names (report tools split on '/'):
//   ffn/<dtype>/<form>/<variant>/M:<m>/d_model:<d>/d_ff:<f>/threads:<t>
//     variant   gelukit: <kind>_<schedule> (ffn_hand, ffn_adams2019, ffn_naive, geglu_hand, ...),
//               each the registry kernel of that schedule pinned by name; <kind>_amx: the Intel
//               AMX kernels, Schedule::Hand unpinned, registered only where AMX is usable (there
//               Hand runs ffn_bf16_erf_amx_panels; the row-task ffn_bf16_erf_amx is pinnable)
//               onednn_fused    matmul + bias + GELU post-op, then matmul + bias (weights in
//                               oneDNN's preferred blocked layout, reordered once)
//               onednn_unfused  matmul + bias, a separate eltwise GELU, matmul + bias
//   Workloads: BERT-base (768 -> 3072, M 128 / 512), MiniLM (d_model 384: the real
//   all-MiniLM-L6-v2 layer-0 weights, its own embedded tokens as input, M 16 / 128), GPT-2 (tanh
//   form, 768 -> 3072), GeGLU (T5 v1.1 base shape, 768 -> 2048, variant geglu_*), and the first
//   layer alone (variant linear_gelu_*, 512 x 768 -> 3072: hand vs Adams2019).
// Counters:
//   GFLOPs      FLOP per second / 1e9, FLOP = 2 * M * (d_model * d_ff per GEMM) (bias and GELU not
//               counted, as oneDNN and papers count)
//   pct_peak    GFLOPs / the float32 FMA peak measured by fma_peak.cpp at the same thread count
//               (bf16 rows too: gelukit's bf16 hand kernel runs on vdpbf16ps; its _amx kernel
//               and oneDNN's bf16 on AMX tiles where the CPU has them, which exceed the float32
//               FMA peak, see README)
//   ms          milliseconds per call (real time)
//   max_abs_err minilm rows: max |out - double reference| over the output (gelukit and oneDNN)
#include "ffn_bench.h"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fma_peak.h"
#include "gelukit/error.h"
#include "gelukit/ffn.h"
#include "gelukit/runtime.h"
#include "minilm.h"
#include "onednn_ffn.h"

namespace gelukit::bench {
namespace {

std::map<int, double> g_peak;  // threads -> GFLOP/s

struct Workload {
    std::string name;
    FfnKind kind;
    Form form;
    int64_t M, d_model, d_ff;
    bool real_weights;  // MiniLM layer 0
};

std::vector<Workload> workloads() {
    return {
        {"bert_base", FfnKind::Ffn, Form::Erf, 128, 768, 3072, false},
        {"bert_base", FfnKind::Ffn, Form::Erf, 512, 768, 3072, false},
        {"minilm", FfnKind::Ffn, Form::Erf, 16, 384, 1536, true},
        {"minilm", FfnKind::Ffn, Form::Erf, 128, 384, 1536, true},
        {"gpt2", FfnKind::Ffn, Form::Tanh, 512, 768, 3072, false},
        {"geglu", FfnKind::GeGLU, Form::Erf, 512, 768, 2048, false},
        {"bert_base_linear_gelu", FfnKind::LinearGelu, Form::Erf, 512, 768, 3072, false},
    };
}

// Weights and input of a workload, float32, PyTorch layouts.
struct Data {
    std::vector<float> h, w1, b1, v, w2, b2;
    std::vector<double> ref;  // minilm: double reference of the output
};

std::vector<float> normal(std::size_t n, double scale, std::mt19937 &rng) {
    std::normal_distribution<float> nd(0.0f, float(scale));
    std::vector<float> x(n);
    for (float &f : x) {
        f = nd(rng);
    }
    return x;
}

const Data &data_for(const Workload &w) {
    static std::map<std::string, Data> cache;
    const std::string key = w.name + "/" + std::to_string(w.M) + "/" + ffn_kind_name(w.kind);
    auto it = cache.find(key);
    if (it != cache.end()) {
        return it->second;
    }
    Data d;
    if (w.real_weights) {
        SafeTensorsFile file(minilm::default_weights_path());
        int64_t tokens = 0;
        const std::vector<float> sentence = minilm::embedded_tokens(file, &tokens);
        const minilm::LayerFfn L = minilm::load_layer_ffn(file, 0);
        d.w1 = L.w1, d.b1 = L.b1, d.w2 = L.w2, d.b2 = L.b2;
        // M rows: the sentence's tokens, repeated (a batch of the same sentence).
        for (int64_t m = 0; m < w.M; m++) {
            const float *row = &sentence[std::size_t((m % tokens) * w.d_model)];
            d.h.insert(d.h.end(), row, row + w.d_model);
        }
        d.ref.resize(std::size_t(w.M * w.d_model));
        minilm::reference_ffn(L, d.h.data(), w.M, false, d.ref.data());
    } else {
        std::mt19937 rng(42);
        d.h = normal(std::size_t(w.M * w.d_model), 1.0, rng);
        d.w1 = normal(std::size_t(w.d_ff * w.d_model), 1.0 / std::sqrt(double(w.d_model)), rng);
        d.b1 = normal(std::size_t(w.d_ff), 0.1, rng);
        if (w.kind == FfnKind::GeGLU) {
            d.v = normal(std::size_t(w.d_ff * w.d_model), 1.0 / std::sqrt(double(w.d_model)), rng);
        }
        d.w2 = normal(std::size_t(w.d_model * w.d_ff), 1.0 / std::sqrt(double(w.d_ff)), rng);
        d.b2 = normal(std::size_t(w.d_model), 0.1, rng);
    }
    return cache.emplace(key, std::move(d)).first->second;
}

uint16_t to_bf16(float f) {  // round to nearest even (inputs are finite)
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) {
    const uint32_t b = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

// Storage of one tensor in the benchmark dtype.
struct Tensor {
    std::vector<float> f;
    std::vector<uint16_t> b;
    DType dt;
    Tensor(const std::vector<float> &x, DType dtype) : dt(dtype) {
        if (dt == DType::F32) {
            f = x;
        } else {
            b.resize(x.size());
            std::transform(x.begin(), x.end(), b.begin(), to_bf16);
        }
    }
    void *data() {
        return dt == DType::F32 ? static_cast<void *>(f.data()) : static_cast<void *>(b.data());
    }
    double at(std::size_t i) const {
        return dt == DType::F32 ? f[i] : from_bf16(b[i]);
    }
};

void set_counters(benchmark::State &state, double flops, int threads) {
    state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["ms"] = benchmark::Counter(1e-3, benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
    const double peak = g_peak.count(threads) ? g_peak[threads] : 0.0;
    if (peak > 0) {
        state.counters["pct_peak"] = benchmark::Counter(flops * 1e-9 * 100.0 / peak,
                                                        benchmark::Counter::kIsIterationInvariantRate);
    }
}

double max_abs_err(const Tensor &out, const std::vector<double> &ref) {
    double e = 0.0;
    for (std::size_t i = 0; i < ref.size(); i++) {
        e = std::max(e, std::fabs(out.at(i) - ref[i]));
    }
    return e;
}

// borrow: FeedForwardOptions::borrow_weights, the kernel that packs panels per task itself.
// kernel: the registry kernel pinned by name (FeedForwardOptions::kernel); empty: by schedule.
void BM_Gelukit(benchmark::State &state, Workload w, DType dt, Schedule sched, bool borrow, int threads,
                const std::string &kernel) {
    try {
        gelukit::set_num_threads(threads);
        const Data &d = data_for(w);
        Tensor w1(d.w1, dt), b1(d.b1, dt), v(d.v, dt), w2(d.w2, dt), b2(d.b2, dt), h(d.h, dt);
        const int64_t d_out = w.kind == FfnKind::LinearGelu ? w.d_ff : w.d_model;
        Tensor out(std::vector<float>(std::size_t(w.M * d_out)), dt);
        FeedForwardWeights fw;
        fw.w1 = TensorView::contiguous(w1.data(), dt, {w.d_ff, w.d_model});
        fw.b1 = TensorView::contiguous(b1.data(), dt, {w.d_ff});
        if (w.kind == FfnKind::GeGLU) {
            fw.v = TensorView::contiguous(v.data(), dt, {w.d_ff, w.d_model});
        }
        if (w.kind != FfnKind::LinearGelu) {
            fw.w2 = TensorView::contiguous(w2.data(), dt, {w.d_model, w.d_ff});
            fw.b2 = TensorView::contiguous(b2.data(), dt, {w.d_model});
        }
        FeedForwardOptions o;
        o.kind = w.kind, o.form = w.form, o.dtype = dt, o.schedule = sched, o.borrow_weights = borrow;
        o.kernel = kernel;
        FeedForward ffn(fw, o);
        const TensorView hv = TensorView::contiguous(h.data(), dt, {w.M, w.d_model});
        const TensorView ov = TensorView::contiguous(out.data(), dt, {w.M, d_out});
        ffn.forward(hv, ov);  // warm-up (Halide picks its sub-target at the first call)
        for (auto _ : state) {
            ffn.forward(hv, ov);
        }
        set_counters(state, ffn.flops_per_row() * double(w.M), threads);
        if (!d.ref.empty()) {
            state.counters["max_abs_err"] = max_abs_err(out, d.ref);
        }
    } catch (const std::exception &e) {
        state.SkipWithError(e.what());
    }
}

void BM_OneDnn(benchmark::State &state, Workload w, DType dt, bool fused, int threads) {
    try {
        omp_set_num_threads(threads);  // before construction: brgemm fixes its split then
        const Data &d = data_for(w);
        OnednnFfn ffn(w.M, w.d_model, w.d_ff, dt == DType::BF16, w.form == Form::Tanh, fused, d.w1.data(),
                      d.b1.data(), d.w2.data(), d.b2.data());
        Tensor h(d.h, dt), out(std::vector<float>(std::size_t(w.M * w.d_model)), dt);
        ffn.run(h.data(), out.data());
        for (auto _ : state) {
            ffn.run(h.data(), out.data());
        }
        set_counters(state, ffn.flops(), threads);
        if (!d.ref.empty()) {
            state.counters["max_abs_err"] = max_abs_err(out, d.ref);
        }
        state.SetLabel(ffn.impl_info());
    } catch (const std::exception &e) {
        // The usual bf16 failure on CPUs without AVX-512 (e.g. the Zen 3 VM): oneDNN 2.6's bf16
        // matmul kernels need AVX-512, so it finds no primitive. Say so rather than leave only
        // oneDNN's generic message.
        const bool no_bf16_matmul = dt == DType::BF16 && !__builtin_cpu_supports("avx512f") &&
                                    std::string(e.what()).find("primitive descriptor") != std::string::npos;
        const std::string why =
            no_bf16_matmul ? "oneDNN has no bf16 matmul for this CPU (its bf16 kernels need AVX-512): " : "";
        state.SkipWithError((why + e.what()).c_str());
    }
}

std::string name(const Workload &w, DType dt, const std::string &variant, int threads) {
    const char *form = w.kind == FfnKind::SwiGLU ? "silu" : form_name(w.form);
    return std::string("ffn/") + dtype_name(dt) + "/" + form + "/" + variant + "/M:" + std::to_string(w.M) +
           "/d_model:" + std::to_string(w.d_model) + "/d_ff:" + std::to_string(w.d_ff) +
           "/threads:" + std::to_string(threads);
}

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
// The AMX kernels: <row>_amx (row tasks) and <row>_amx_panels (panel tasks, small M).
bool is_amx(const FfnKernelInfo &k) {
    return ends_with(k.name, "_amx") || ends_with(k.name, "_amx_panels");
}

// The name of the built kernel for (kind, dtype, form, schedule, layout), AMX ones excluded
// ("" if none is built).
std::string built_name(FfnKind kind, DType dt, Form form, Schedule s, bool packed = true) {
    for (const FfnKernelInfo &k : ffn_kernels()) {
        if (k.kind == kind && k.dtype == dt && k.form == form_name(form) && k.schedule == s &&
            k.packed_weights == packed && !is_amx(k)) {
            return k.name;
        }
    }
    return "";
}
bool built(FfnKind kind, DType dt, Form form, Schedule s, bool packed = true) {
    return !built_name(kind, dt, form, s, packed).empty();
}

// The AMX kernel for (kind, dtype, form) if one is built and runs on this machine (pinning it
// is refused with Unsupported where AMX is not usable: CPU, OS grant, GELUKIT_MAX_ISA).
std::string usable_amx(FfnKind kind, DType dt, Form form) {
    for (const FfnKernelInfo &k : ffn_kernels()) {
        if (!ends_with(k.name, "_amx") || k.kind != kind || k.dtype != dt || k.form != form_name(form)) {
            continue;
        }
        std::vector<float> zeros(64 * 64, 0.0f);  // large enough for f32 and bf16 64 x 64
        FeedForwardWeights fw;
        fw.w1 = TensorView::contiguous(zeros.data(), dt, {64, 64});
        fw.w2 = TensorView::contiguous(zeros.data(), dt, {64, 64});
        FeedForwardOptions o;
        o.kind = kind, o.dtype = dt, o.form = form, o.kernel = k.name;
        try {
            FeedForward probe(fw, o);
            return k.name;
        } catch (const gelukit::Error &) {
            return "";
        }
    }
    return "";
}

}  // namespace

void add_ffn_context(int max_threads) {
    for (int t = 1; t <= max_threads; t++) {
        g_peak[t] = measure_fma_peak_gflops(t);
        benchmark::AddCustomContext("fma_peak_gflops_threads:" + std::to_string(t), std::to_string(g_peak[t]));
    }
    benchmark::AddCustomContext("fma_peak_isa", fma_peak_isa());
}

void register_ffn_benchmarks(int threads) {
    for (const Workload &w : workloads()) {
        for (DType dt : {DType::F32, DType::BF16}) {
            for (Schedule s : {Schedule::Hand, Schedule::Tuned, Schedule::Adams2019, Schedule::Naive}) {
                // The scalar naive schedule only on the smallest workload (seconds per call else).
                if (s == Schedule::Naive && (w.M > 16 || threads > 1)) {
                    continue;
                }
                auto add = [&](const std::string &variant, bool borrow, const std::string &kernel = "") {
                    benchmark::RegisterBenchmark(name(w, dt, variant, threads).c_str(), [=](benchmark::State &st) {
                        BM_Gelukit(st, w, dt, s, borrow, threads, kernel);
                    })
                        ->UseRealTime()
                        ->Unit(benchmark::kMillisecond);
                };
                const std::string variant = std::string(ffn_kind_name(w.kind)) + "_" + schedule_name(s);
                if (s == Schedule::Tuned) {
                    // One row: whichever weight layout the schedule file chose (an unpacked tuned
                    // kernel is given a plain copy of the weights, like the packed one).
                    if (built(w.kind, dt, w.form, s, true) || built(w.kind, dt, w.form, s, false)) {
                        add(variant, /*borrow=*/false);
                    }
                    continue;
                }
                // The packed kernel, and where built the one reading nn.Linear matrices
                // ("<kind>_hand_unpacked": borrowed weights, panels packed per task). Pinned by
                // name: Schedule::Hand alone takes the AMX kernel where it runs, which has its
                // own row ("<kind>_amx").
                for (bool packed : {true, false}) {
                    const std::string kernel = built_name(w.kind, dt, w.form, s, packed);
                    if (!kernel.empty()) {
                        add(packed ? variant : variant + "_unpacked", /*borrow=*/!packed, kernel);
                    }
                }
                if (s == Schedule::Hand) {
                    // "<kind>_amx": Schedule::Hand as a user gets it where AMX runs (not pinned):
                    // the panel kernel.
                    if (!usable_amx(w.kind, dt, w.form).empty()) {
                        add(std::string(ffn_kind_name(w.kind)) + "_amx", /*borrow=*/false);
                    }
                }
            }
            if (w.kind != FfnKind::Ffn) {
                continue;  // oneDNN has no GeGLU primitive to compare with
            }
            for (bool fused : {true, false}) {
                benchmark::RegisterBenchmark(name(w, dt, fused ? "onednn_fused" : "onednn_unfused", threads).c_str(),
                                             [=](benchmark::State &st) { BM_OneDnn(st, w, dt, fused, threads); })
                    ->UseRealTime()
                    ->Unit(benchmark::kMillisecond);
            }
        }
    }
}

}  // namespace gelukit::bench
