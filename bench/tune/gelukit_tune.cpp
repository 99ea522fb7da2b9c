// gelukit_tune: searches the knob space of gelukit's hand schedules on this machine and writes
// the winners to the schedule file the build reads (cmake/GelukitSchedules.cmake).
//
// For each kernel of the build's tuned set (GELUKIT_TUNED_GELU / GELUKIT_TUNED_FFN in
// cmake/GelukitKernels.cmake, compiled in):
//   1. the generator (generators/*.cpp, linked into this binary) is JIT-compiled for the host
//      with the default knobs: the incumbent;
//   2. candidates: random knob combinations first, then local refinement (one knob moved to a
//      neighbouring value of the current best; random again once the best's neighbours are all
//      measured), until --trials or --budget-s is used up or every point of the space is
//      measured; plus
//      Halide's autoschedulers (Adams2019, Mullapudi2016, Li2018) on the same pipeline;
//   3. every candidate's output is checked against an independent double-precision reference
//      (tests/support/reference.cpp; the per-kernel ULP bounds of tests/support/tolerances.h
//      for GELU, a K-scaled bound for the FFN) before it is timed; a wrong candidate is
//      discarded, never chosen;
//   4. timing: --repetitions single calls after a warm-up, interleaved with calls of the
//      incumbent (A B A B ...: a drift of the machine's speed hits both alike); a candidate
//      replaces the incumbent only if its median is lower AND a one-sided Mann-Whitney U test
//      says its times are lower with p < --alpha (the VM this was written on varies by 15% and
//      more over minutes). The winner is finally timed against the default the same way,
//      with twice the repetitions and fresh samples; unless it wins that test too (p < alpha)
//      the default knobs are written. Speedup, p-value and verdict go into the file.
// The file keeps the kernels it already has that were not tuned in this run.
//
// JIT code is compiled for the host target (Halide's get_jit_target_from_environment), the
// most specific sub-target the build's multi-target libraries also dispatch to on this CPU; the
// knobs are written relative to the target (vector width multiple, elements per task, rows per
// task, AVX-512 tile rows), so the build applies them to every sub-target of the library.
// Shipped: the best hand-knob candidate (the `tuned` schedule). An autoscheduler that beats it
// is reported (its kernels ship as the `adams2019` schedule where built), not shipped as `tuned`.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "Halide.h"
#include "support/reference.h"
#include "support/tolerances.h"

namespace {

using Halide::Buffer;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using gelukit::DType;
using gelukit::Form;

[[noreturn]] void fail(const std::string &msg) {
    std::cerr << "gelukit_tune: error: " << msg << "\n";
    std::exit(2);
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, sep)) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

// One --space value (`arg` is the whole --space argument, for the message): all of `v` must be a
// decimal integer (surrounding blanks and a leading '+' allowed), so that "2abc" or "1.9" are
// refused rather than read as 2 and 1 (std::stoi parses a prefix).
int parse_space_value(const std::string &arg, const std::string &v) {
    const auto b = v.find_first_not_of(" \t");
    const std::string t = b == std::string::npos ? "" : v.substr(b, v.find_last_not_of(" \t") - b + 1);
    const char *first = t.data() + (t.size() > 1 && t[0] == '+' && t[1] >= '0' && t[1] <= '9' ? 1 : 0);
    const char *last = t.data() + t.size();
    int value = 0;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) fail("--space " + arg + ": '" + v + "' is out of range");
    if (t.empty() || ec != std::errc() || ptr != last) fail("--space " + arg + ": '" + v + "' is not an integer");
    return value;
}

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? NAN : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// One-sided Mann-Whitney U test (Mann & Whitney 1947), normal approximation with the tie
// correction: p-value of "samples a tend to be smaller than samples b".
double mann_whitney_p_less(const std::vector<double> &a, const std::vector<double> &b) {
    struct Obs {
        double v;
        int group;
    };
    std::vector<Obs> all;
    for (double v : a) all.push_back({v, 0});
    for (double v : b) all.push_back({v, 1});
    std::sort(all.begin(), all.end(), [](const Obs &x, const Obs &y) { return x.v < y.v; });
    const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size()), n = n1 + n2;
    double rank_sum_a = 0, tie_term = 0;
    for (size_t i = 0; i < all.size();) {
        size_t j = i;
        while (j < all.size() && all[j].v == all[i].v) j++;
        const double avg_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
        const double t = static_cast<double>(j - i);
        tie_term += t * t * t - t;
        for (size_t k = i; k < j; k++) {
            if (all[k].group == 0) rank_sum_a += avg_rank;
        }
        i = j;
    }
    const double u_a = rank_sum_a - n1 * (n1 + 1) / 2;  // small when a's values are small
    const double mean = n1 * n2 / 2;
    const double var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
    if (var <= 0) return 1.0;
    const double z = (u_a - mean + 0.5) / std::sqrt(var);  // continuity correction
    return 0.5 * std::erfc(-z / std::sqrt(2.0));           // P(Z <= z)
}

// ---------------------------------------------------------------------------------------------
// Knob spaces (the GeneratorParams of generators/*.cpp; ranges in cmake/GelukitSchedules.cmake).

struct Knob {
    std::string name;
    std::vector<int> values;  // searched values, ascending
    int default_value;
    int min, max;  // the range a schedule file may hold (cmake/GelukitSchedules.cmake checks the same)
    int step = 1;  // values must be multiples of it (gpu_block: 32, k_block and gpu_rows: 8)
    std::vector<int> excluded = {};  // in range but refused by the generator (avx2_tile_vectors 4, 5)
    // The default is a sentinel for "the generator's choice" (m_block 0, epilogue_at -1), whose
    // effective value depends on the target and kernel: no number is "next to" it.
    bool default_is_generator_choice = false;

    // The build's rule for a value (cmake/GelukitSchedules.cmake): an integer in [min, max],
    // a multiple of step, not excluded.
    bool accepts(int64_t v) const {
        return v >= min && v <= max && v % step == 0 && std::find(excluded.begin(), excluded.end(), v) == excluded.end();
    }
    std::string rule() const {
        std::string r = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
        if (step > 1) r += ", a multiple of " + std::to_string(step);
        for (int e : excluded) r += ", not " + std::to_string(e);
        return r;
    }
};

using Knobs = std::map<std::string, int>;

std::vector<Knob> gelu_knobs() {
    // vector_multiple: independent vectors per iteration (ILP for the ~40-deep dependent chain);
    // the default candidate 1 is the hand schedule's for the acc kernels tuned here (the
    // generator's 0 = auto picks 2 only for fast math on AVX-512: a fast row added to the tuned
    // set would need 2 here, or 0 accepted as "the generator's choice").
    // parallel_grain: elements per parallel task (dispatch overhead vs balance).
    return {{"vector_multiple", {1, 2, 3, 4, 6, 8}, 1, 1, 8},
            {"parallel_grain", {2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144}, 16384, 256, 1 << 24}};
}

// second_gemm: the kinds with a second GEMM (ffn, geglu, swiglu) also have epilogue_at.
std::vector<Knob> ffn_knobs(bool second_gemm = true) {
    // m_block: token rows per task (L2 residency of the d_ff intermediate vs task count; 0 = the
    //   generator's default, effective_m_block(): for the f32 ffn on AVX-512 one register tile (Zen 4) or
    //   256 rows (Intel sub-targets), else 32);
    // avx512_tile_rows: register tile rows (0 = the default 8);
    // avx2_tile_rows x avx2_tile_vectors: the AVX2 register tile (0 = the default 4 x 3);
    // k_block: K block of both GEMMs (0 = the target's default: 128 on AVX2, none elsewhere;
    //   4096 = one block, no K blocking; 32-384 keep a panel's weight block of 6-72 KiB in
    //   L1/L2 for all row tiles of a task);
    // epilogue_at: the d_ff activation per task (0, fused) or for all M first (1, unfused); -1 =
    //   the generator's default (1 for the f32 ffn, else 0);
    // acc_block: K terms per partial sum of each output (-1 = the generator's default, 128 for
    //   float32; 0 = one FMA chain over K; within one K block where K is blocked). An accuracy
    //   choice (3.8x lower FFN error on MiniLM, 0-3% of speed: the generator's comment), so it
    //   is searched only when asked (--space acc_block=...): a speed search would trade the
    //   accuracy away unseen;
    // pack_weights: panels packed once by the runtime (1) or the nn.Linear matrices read and
    //   packed per task inside the kernel (0: no packed copy, FeedForwardOptions::borrow_weights).
    //   Searched only when asked (--space pack_weights=0,1): it changes what the tuned kernel
    //   needs from its caller (a tuned unpacked kernel serves borrow_weights, and without
    //   borrowing FeedForward keeps a plain copy), and its cost grows at small M, which the
    //   tuning workload's M does not show.
    std::vector<Knob> k = {{"m_block", {8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512}, 0, 0, 4096, 1, {}, true},
                           {"pack_weights", {1}, 1, 0, 1},
                           {"avx512_tile_rows", {0, 4, 5, 6, 7, 9}, 0, 0, 9},
                           {"avx2_tile_rows", {0, 1, 2, 3, 6}, 0, 0, 12},
                           {"avx2_tile_vectors", {0, 1, 2, 6}, 0, 0, 6, 1, {4, 5}},
                           {"k_block", {0, 32, 64, 256, 384, 4096}, 0, 0, 4096, 8},
                           {"acc_block", {-1}, -1, -1, 4096, 1, {}, true}};
    if (second_gemm) k.push_back({"epilogue_at", {0, 1}, -1, -1, 1, 1, {}, true});
    return k;
}

// The GPU knobs of the CUDA hand schedules (searched with --target cuda; the CUDA schedule file).
std::vector<Knob> gpu_knobs(bool gelu) {
    // gpu_block: threads per block (whole warps); gpu_elems: elements per thread in the dense
    // nest (loads in flight per thread); gpu_rows: token rows per FFN thread block (16 x
    // gpu_rows/4 threads; the generator refuses sizes whose shared memory exceeds 48 KiB).
    if (gelu) return {{"gpu_block", {64, 128, 256, 512, 1024}, 256, 32, 1024, 32}, {"gpu_elems", {1, 2, 4, 8, 16}, 4, 1, 16, 1}};
    return {{"gpu_rows", {16, 24, 32, 48, 64, 80, 96, 128}, 64, 8, 128, 8}};
}

std::string knobs_label(const Knobs &k) {
    std::string s;
    for (const auto &[n, v] : k) s += (s.empty() ? "" : " ") + n + "=" + std::to_string(v);
    return s;
}

// ---------------------------------------------------------------------------------------------
// Workloads: bind a built generator's inputs, run it, check the output.

// Storage of the workloads' Halide buffers: 128-byte aligned like Halide's own allocation
// (HALIDE_RUNTIME_BUFFER_ALLOCATION_ALIGNMENT), so candidates are timed on the alignment the
// benchmarks and callers see; but a failed allocation throws std::bad_alloc (main reports it),
// where Halide's constructs into the null pointer (a segfault for a huge workload).
class AlignedStore {
public:
    template<typename T>
    Buffer<T> buffer(const std::vector<int> &sizes) {
        return Buffer<T>(static_cast<T *>(get(sizeof(T), sizes)), sizes);
    }
    Buffer<> buffer(const Halide::Type &t, const std::vector<int> &sizes) {
        return Buffer<>(t, get(t.bytes(), sizes), sizes);
    }

private:
    struct Free {
        void operator()(void *p) const {
            std::free(p);
        }
    };
    std::vector<std::unique_ptr<void, Free>> blocks_;
    void *get(std::size_t elem_bytes, const std::vector<int> &sizes) {
        std::size_t bytes = elem_bytes;
        for (int n : sizes) {
            bytes *= std::size_t(n);
        }
        void *p = std::aligned_alloc(128, std::max<std::size_t>(128, (bytes + 127) / 128 * 128));
        if (p == nullptr) {
            throw std::bad_alloc();
        }
        blocks_.emplace_back(p);
        return p;
    }
};

struct Workload {
    virtual ~Workload() = default;
    virtual std::string generator() const = 0;
    virtual std::map<std::string, std::string> fixed_params() const = 0;
    virtual std::string describe() const = 0;
    virtual void bind(Halide::Internal::AbstractGenerator &g) = 0;
    virtual Halide::Realization outputs() = 0;
    // Empty string: correct; else what was wrong.
    virtual std::string check() = 0;
    // Fills the outputs with NaN bit patterns (all ones) before a candidate's checked run, so
    // that an element a candidate does not write fails the check instead of passing with the
    // previous candidate's value. host_dirty: a GPU pipeline copies them to the device first.
    void poison() {
        Halide::Realization outs = outputs();
        for (size_t i = 0; i < outs.size(); i++) {
            Halide::Buffer<> b = outs[i];
            if (b.has_device_allocation()) b.device_free();
            std::memset(b.data(), 0xFF, b.size_in_bytes());
            b.set_host_dirty(true);
        }
    }
};

const char *halide_type_name(DType dt) {
    return dt == DType::F32 ? "float32" : dt == DType::BF16 ? "bfloat16" : "float16";
}

Halide::Type halide_type(DType dt) {
    return dt == DType::F32 ? Halide::Float(32) : dt == DType::BF16 ? Halide::BFloat(16) : Halide::Float(16);
}

uint32_t load_bits(const Buffer<> &b, size_t i, DType dt) {
    if (dt == DType::F32) return reinterpret_cast<const uint32_t *>(b.data())[i];
    return reinterpret_cast<const uint16_t *>(b.data())[i];
}

void store_bits(Buffer<> &b, size_t i, uint32_t v, DType dt) {
    if (dt == DType::F32) {
        reinterpret_cast<uint32_t *>(b.data())[i] = v;
    } else {
        reinterpret_cast<uint16_t *>(b.data())[i] = static_cast<uint16_t>(v);
    }
}

struct GeluWorkload final : Workload {
    bool backward;
    DType dt;
    Form form;
    gelukit::Math math;
    int64_t n;
    AlignedStore store;
    Buffer<> x, dy, out;

    GeluWorkload(bool bwd, DType d, Form f, gelukit::Math m, int64_t elems, uint32_t seed)
        : backward(bwd), dt(d), form(f), math(m), n(elems) {
        // 4-D like the generators' buffers (the runtime maps rank 1-4 onto 4-D). Values: normal
        // activations (sd 3: both tails and the root window of GELU') plus every 997th element
        // from a wide range, so the check covers the far tails too.
        const Halide::Type t = halide_type(dt);
        const std::vector<int> sizes = {static_cast<int>(n), 1, 1, 1};
        x = store.buffer(t, sizes);
        dy = store.buffer(t, sizes);
        out = store.buffer(t, sizes);
        std::mt19937 rng(seed);
        std::normal_distribution<double> act(0.0, 3.0);
        std::uniform_real_distribution<double> wide(-60.0, 60.0), grad(-2.0, 2.0);
        for (int64_t i = 0; i < n; i++) {
            const double v = (i % 997 == 0) ? wide(rng) : act(rng);
            store_bits(x, i, gelukit::test::round_to_bits({v, 0}, dt), dt);
            store_bits(dy, i, gelukit::test::round_to_bits({grad(rng), 0}, dt), dt);
        }
    }
    std::string generator() const override {
        return backward ? "gelu_backward" : "gelu_forward";
    }
    std::map<std::string, std::string> fixed_params() const override {
        const char *form_param = form == Form::Erf ? "erf" : form == Form::Tanh ? "tanh" : "sigmoid";
        std::map<std::string, std::string> p = {{"form", form_param},
                                                {"math", math == gelukit::Math::Accurate ? "acc" : "fast"},
                                                {"x.type", halide_type_name(dt)}};
        if (backward) {
            p["dy.type"] = p["dx.type"] = halide_type_name(dt);
        } else {
            p["y.type"] = halide_type_name(dt);
        }
        return p;
    }
    std::string describe() const override {
        return "N=" + std::to_string(n);
    }
    void bind(Halide::Internal::AbstractGenerator &g) override {
        g.input_parameter("x")[0].set_buffer(x);
        if (backward) g.input_parameter("dy")[0].set_buffer(dy);
        g.input_parameter("scale")[0].set_scalar<float>(1.0f);
    }
    Halide::Realization outputs() override {
        return Halide::Realization({out});
    }
    // The reference of every element, computed once (the reference is ~50 ns per element, and
    // every candidate is checked): its correctly rounded bits and its value (backward: times dy).
    std::vector<uint32_t> want_bits;
    std::vector<double> want_value;
    void reference() {
        want_bits.resize(size_t(n));
        want_value.resize(size_t(n));
        for (int64_t i = 0; i < n; i++) {
            const double xv = gelukit::test::bits_to_double(load_bits(x, i, dt), dt);
            gelukit::test::RefValue r;
            if (backward) {
                const double d = gelukit::test::bits_to_double(load_bits(dy, i, dt), dt);
                const gelukit::test::RefValue gr = gelukit::test::gelu_grad_ref(form, xv);
                r = {d * gr.hi, d * gr.lo};
            } else {
                r = gelukit::test::gelu_ref(form, xv);
            }
            want_bits[size_t(i)] = gelukit::test::round_to_bits(r, dt);
            want_value[size_t(i)] = r.hi + r.lo;
        }
    }
    // The test suite's criteria (tests/support/tolerances.h; test_gelu_kernels.cpp, test_cuda.cpp):
    // the per-kernel ULP bound; backward also within the root window of GELU' an absolute bound
    // times |dy|, and for float32 fast math 2^-22 |dy| anywhere (cancellation near the root).
    std::string check() override {
        const gelukit::Direction dir = backward ? gelukit::Direction::Backward : gelukit::Direction::Forward;
        const int64_t tol = gelukit::test::ulp_tolerance(math, dir, dt, form);
        const double root = gelukit::test::grad_root(form);
        if (want_bits.empty()) reference();
        for (int64_t i = 0; i < n; i++) {
            const double xv = gelukit::test::bits_to_double(load_bits(x, i, dt), dt);
            const uint32_t got = load_bits(out, i, dt);
            const int64_t e = gelukit::test::ulp_distance(got, want_bits[size_t(i)], dt);
            if (e > tol && backward) {
                const double dyv = std::fabs(gelukit::test::bits_to_double(load_bits(dy, i, dt), dt));
                const double abs_err = std::fabs(gelukit::test::bits_to_double(got, dt) - want_value[size_t(i)]);
                const bool in_window = std::fabs(xv - root) < 0.01 && (dt == DType::F32 || math == gelukit::Math::Fast);
                if (in_window && abs_err <= gelukit::test::root_window_abs_tolerance(math) * dyv) continue;
                if (dt == DType::F32 && math == gelukit::Math::Fast &&
                    abs_err <= gelukit::test::fast_backward_abs_tolerance() * dyv) {
                    continue;
                }
            }
            if (e > tol) {
                char buf[160];
                std::snprintf(buf, sizeof(buf), "x=%.9g: %lld ULP from the reference (bound %lld)", xv,
                              static_cast<long long>(e), static_cast<long long>(tol));
                return buf;
            }
        }
        return "";
    }
};

// FFN workloads, float32, exact GELU: h [M][d_model] row-major, weights in nn.Linear layout
// packed into the generator's panels (generators/common/ffn_layout.h: kPanel = 48).
struct FfnWorkload final : Workload {
    static constexpr int kPanel = 48;
    bool whole_ffn;  // ffn (two GEMMs) or linear_gelu
    bool fast;       // math=fast (float32 GELU epilogue: the CUDA kernels) or acc (float64, CPU)
    int m, d_model, d_ff;
    std::vector<float> h, w1, b1, w2, b2;  // PyTorch layouts
    AlignedStore store;
    Buffer<float> hb, w1p, b1p, w2p, b2p, w1raw, w2raw, out;
    std::vector<double> ref, bound;

    static int panels(int n) {
        return (n + kPanel - 1) / kPanel;
    }
    // packed[po][ko][pi][0] = W[po*kPanel + pi][ko]; Halide dims (kk, pi, ko, po).
    Buffer<float> pack(const std::vector<float> &w, int n_out, int k_in, int k_pad) {
        Buffer<float> p = store.buffer<float>({1, kPanel, k_pad, panels(n_out)});
        p.fill(0.0f);
        for (int o = 0; o < n_out; o++) {
            for (int k = 0; k < k_in; k++) p(0, o % kPanel, k, o / kPanel) = w[size_t(o) * k_in + k];
        }
        return p;
    }
    Buffer<float> pack_bias(const std::vector<float> &b) {
        Buffer<float> p = store.buffer<float>({kPanel, panels(static_cast<int>(b.size()))});
        p.fill(0.0f);
        for (size_t i = 0; i < b.size(); i++) p(int(i % kPanel), int(i / kPanel)) = b[i];
        return p;
    }

    FfnWorkload(bool ffn, bool fast_math, int m_, int dm, int dff, uint32_t seed)
        : whole_ffn(ffn), fast(fast_math), m(m_), d_model(dm), d_ff(dff) {
        std::mt19937 rng(seed);
        // BERT-like scales: LayerNorm-ed activations ~N(0,1), weights ~N(0, 0.02) (BERT's init).
        std::normal_distribution<float> act(0.0f, 1.0f), wgt(0.0f, 0.02f);
        auto fill = [&](std::vector<float> &v, size_t count, std::normal_distribution<float> &d) {
            v.resize(count);
            for (float &e : v) e = d(rng);
        };
        fill(h, size_t(m) * d_model, act);
        fill(w1, size_t(d_ff) * d_model, wgt);
        fill(b1, d_ff, wgt);
        fill(w2, size_t(d_model) * d_ff, wgt);
        fill(b2, d_model, wgt);
        hb = store.buffer<float>({d_model, m});
        std::copy(h.begin(), h.end(), hb.data());
        w1p = pack(w1, d_ff, d_model, d_model);
        b1p = pack_bias(b1);
        w2p = pack(w2, d_model, d_ff, panels(d_ff) * kPanel);
        b2p = pack_bias(b2);
        // pack_weights = 0 candidates read the nn.Linear matrices themselves: Halide dims (k, n).
        w1raw = Buffer<float>(w1.data(), d_model, d_ff);
        w2raw = Buffer<float>(w2.data(), d_ff, d_model);
        out = store.buffer<float>({ffn ? d_model : d_ff, m});
        reference();
    }
    // Double-precision ground truth and a rigorous per-output error bound for float32
    // accumulation, K u sum|terms| (Higham, "Accuracy and Stability of Numerical Algorithms",
    // 2nd ed., eq. 3.5; u = 2^-24), for each GEMM; for the whole FFN the first GEMM's bound
    // is propagated through |GELU'| <= 1.13 and |W2|, plus the rounding of the activation (acc
    // math: 1 ULP; fast math, the CUDA rows' float32 epilogue: 224 ULP, the bound of the CUDA
    // FFN tests (tests/test_cuda.cpp: the largest fast-math GELU bound, the tanh form's, of
    // tests/support/tolerances.h)).
    void reference() {
        const double u = std::ldexp(1.0, -24);
        const double act_ulps = fast ? 224.0 : 1.0;
        std::vector<double> a(size_t(m) * d_ff), a_err(size_t(m) * d_ff);
        for (int r = 0; r < m; r++) {
            for (int f = 0; f < d_ff; f++) {
                double z = b1[f], s = std::fabs(b1[f]);
                for (int k = 0; k < d_model; k++) {
                    const double t = double(h[size_t(r) * d_model + k]) * w1[size_t(f) * d_model + k];
                    z += t;
                    s += std::fabs(t);
                }
                const gelukit::test::RefValue g = gelukit::test::gelu_ref(Form::Erf, z);
                const double act = g.hi + g.lo;  // lo: the reference's correction term (reference.h)
                a[size_t(r) * d_ff + f] = act;
                a_err[size_t(r) * d_ff + f] = 1.13 * (d_model + 2) * u * s + act_ulps * u * std::fabs(act);
            }
        }
        if (!whole_ffn) {
            ref = a;
            bound = a_err;
            for (double &b : bound) b = 2 * b + 1e-30;
            return;
        }
        ref.assign(size_t(m) * d_model, 0.0);
        bound.assign(size_t(m) * d_model, 0.0);
        for (int r = 0; r < m; r++) {
            for (int o = 0; o < d_model; o++) {
                double y = b2[o], s = std::fabs(b2[o]), prop = 0;
                for (int f = 0; f < d_ff; f++) {
                    const double w = w2[size_t(o) * d_ff + f];
                    const double t = a[size_t(r) * d_ff + f] * w;
                    y += t;
                    s += std::fabs(t);
                    prop += a_err[size_t(r) * d_ff + f] * std::fabs(w);
                }
                ref[size_t(r) * d_model + o] = y;
                // x2: slack for the bound's own rounding and the output rounding.
                bound[size_t(r) * d_model + o] = 2 * ((d_ff + 2) * u * s + prop) + u * std::fabs(y) + 1e-30;
            }
        }
    }
    std::string generator() const override {
        return "ffn";
    }
    std::map<std::string, std::string> fixed_params() const override {
        return {{"kind", whole_ffn ? "ffn" : "linear_gelu"}, {"form", "erf"}, {"dtype", "float32"}, {"math", fast ? "fast" : "acc"}};
    }
    std::string describe() const override {
        return "M=" + std::to_string(m) + " d_model=" + std::to_string(d_model) + " d_ff=" + std::to_string(d_ff);
    }
    void bind(Halide::Internal::AbstractGenerator &g) override {
        // The weight inputs are 4-D panels (pack_weights = 1) or 2-D matrices (pack_weights = 0).
        const bool packed = g.input_parameter("w1")[0].dimensions() == 4;
        g.input_parameter("h")[0].set_buffer(hb);
        g.input_parameter("w1")[0].set_buffer(packed ? w1p : w1raw);
        g.input_parameter("b1")[0].set_buffer(b1p);
        if (whole_ffn) {
            g.input_parameter("w2")[0].set_buffer(packed ? w2p : w2raw);
            g.input_parameter("b2")[0].set_buffer(b2p);
            g.input_parameter("residual")[0].set_scalar<bool>(false);
            g.input_parameter("d_ff")[0].set_scalar<int>(d_ff);
        }
    }
    Halide::Realization outputs() override {
        return Halide::Realization({out});
    }
    std::string check() override {
        const int cols = whole_ffn ? d_model : d_ff;
        for (int r = 0; r < m; r++) {
            for (int c = 0; c < cols; c++) {
                const size_t i = size_t(r) * cols + c;
                const double err = std::fabs(double(out(c, r)) - ref[i]);
                if (!(err <= bound[i])) {
                    char buf[200];
                    std::snprintf(buf, sizeof(buf), "out[%d][%d] = %.9g, reference %.9g: error %.3g > bound %.3g", r, c,
                                  double(out(c, r)), ref[i], err, bound[i]);
                    return buf;
                }
            }
        }
        return "";
    }
};

// ---------------------------------------------------------------------------------------------
// Candidates: compile, check, time.

struct Candidate {
    std::string autoscheduler;  // empty: the hand schedule with `knobs`
    Knobs knobs;
    std::string label() const {
        return autoscheduler.empty() ? "hand " + knobs_label(knobs) : autoscheduler;
    }
};

// A compiled candidate: its generator (owns the bound input Parameters) and JIT pipeline.
struct Compiled {
    Halide::Internal::AbstractGeneratorPtr gen;
    Halide::Pipeline pipeline;
};

struct Result {
    Candidate cand;
    bool ok = false;
    std::string error;
    double compile_s = 0;
    std::vector<double> times_ms;  // this candidate
    std::vector<double> rival_ms;  // the rival it was timed against, interleaved (may be empty)
    double median_ms = NAN;
    std::shared_ptr<Compiled> compiled;
};

struct Options {
    int repetitions = 15;
    Halide::Target target;
    bool gpu = false;  // target has a GPU feature: outputs are synchronised / copied back
    std::map<std::string, std::string> autoscheduler_params;  // e.g. parallelism
};

std::string one_line(std::string msg) {
    // Halide's messages span lines and start with "Error:"; an empty one says so.
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    const std::string body = msg.substr(std::min(msg.size(), msg.rfind("Error:", 0) == 0 ? size_t(6) : size_t(0)));
    if (body.find_first_not_of(' ') == std::string::npos) return "Halide error without a message";
    return msg.size() > 300 ? msg.substr(0, 300) + "..." : msg;
}

// One call; on a GPU target until its kernels are done (device_sync of every output: the
// launches are asynchronous), so the time covers the launch and the kernels, not the copies
// (inputs stay on the device after the first call, outputs are not copied back).
double time_call_ms(Compiled &c, Workload &w, const Options &opt) {
    Halide::Realization outs = w.outputs();
    const auto s = Clock::now();
    c.pipeline.realize(outs, opt.target);
    if (opt.gpu) {
        for (size_t i = 0; i < outs.size(); i++) outs[i].device_sync();
    }
    return seconds_since(s) * 1e3;
}

// Times `r` against `rival` (if any) with interleaved calls, A B A B ..., so that a slow drift
// of the machine (this VM's speed varies by 15% and more over minutes) affects both alike.
void time_interleaved(Result &r, Result *rival, Workload &w, const Options &opt, int repetitions) {
    r.times_ms.clear();
    r.rival_ms.clear();
    time_call_ms(*r.compiled, w, opt);  // warm-up
    if (rival) time_call_ms(*rival->compiled, w, opt);
    for (int i = 0; i < repetitions; i++) {
        r.times_ms.push_back(time_call_ms(*r.compiled, w, opt));
        if (rival) r.rival_ms.push_back(time_call_ms(*rival->compiled, w, opt));
    }
    r.median_ms = median(r.times_ms);
}

// Compiles the candidate, checks its output against the reference, then times it (against
// `rival` when given).
Result evaluate(Workload &w, const Candidate &c, const Options &opt, Result *rival) {
    Result r{c};
    // The phase a failure happened in goes into the message (Halide's own can be empty).
    const char *phase = "building the pipeline";
    try {
        const auto t0 = Clock::now();
        Halide::AutoschedulerParams asp;
        if (!c.autoscheduler.empty()) {
            asp = Halide::AutoschedulerParams(c.autoscheduler, opt.autoscheduler_params);
        }
        auto comp = std::make_shared<Compiled>();
        comp->gen = Halide::Internal::GeneratorRegistry::create(w.generator(), Halide::GeneratorContext(opt.target, asp));
        if (!comp->gen) throw std::runtime_error("generator " + w.generator() + " is not linked in");
        for (const auto &[k, v] : w.fixed_params()) comp->gen->set_generatorparam_value(k, v);
        if (c.autoscheduler.empty()) {
            comp->gen->set_generatorparam_value("sched", "hand");
            for (const auto &[k, v] : c.knobs) comp->gen->set_generatorparam_value(k, std::to_string(v));
        }
        comp->pipeline = comp->gen->build_pipeline();
        if (!c.autoscheduler.empty()) {
            phase = "autoscheduling";
            comp->pipeline.apply_autoscheduler(opt.target, asp);
        }
        w.bind(*comp->gen);
        phase = "JIT-compiling and running";
        w.poison();
        time_call_ms(*comp, w, opt);  // JIT compile + first run
        r.compile_s = seconds_since(t0);
        if (opt.gpu) {
            Halide::Realization outs = w.outputs();
            for (size_t i = 0; i < outs.size(); i++) outs[i].copy_to_host();
        }
        r.error = w.check();
        if (!r.error.empty()) {
            r.error = "wrong result: " + r.error;
            return r;
        }
        r.compiled = comp;
        phase = "timing";
        time_interleaved(r, rival, w, opt, opt.repetitions);
        r.ok = true;
    } catch (const Halide::Error &e) {
        r.error = std::string("while ") + phase + ": " + one_line(e.what());
    } catch (const std::exception &e) {
        r.error = std::string("while ") + phase + ": " + one_line(e.what());
    }
    return r;
}

// Progress on stderr: one line rewritten in place, with the ETA from the trials done so far
// (bounded by the time budget left).
void progress(const std::string &kernel, int done, int total, double elapsed, double budget, const Result &best) {
    const int width = 24;
    const int filled = total > 0 ? std::min(width, done * width / total) : width;
    const double per_trial = done > 0 ? elapsed / done : 0;
    const double eta = std::min(per_trial * (total - done), std::max(0.0, budget - elapsed));
    std::fprintf(stderr, "\r%-22s [%s%s] %3d/%-3d %5.0f s  ETA %4.0f s  best %.3f ms (%s)   ", kernel.c_str(),
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done, total, elapsed, eta,
                 best.median_ms, best.cand.label().c_str());
    std::fflush(stderr);
}

struct TuneSettings {
    int trials = 30;
    double budget_s = 60;
    double alpha = 0.01;
    uint32_t seed = 1;
    std::vector<std::string> autoschedulers;
    std::map<std::string, std::vector<int>> restrict_space;  // --space knob=v1,v2
};

json tune_kernel(const std::string &name, Workload &w, std::vector<Knob> space, const Options &opt,
                 const TuneSettings &ts) {
    for (Knob &k : space) {
        auto it = ts.restrict_space.find(k.name);
        if (it != ts.restrict_space.end()) k.values = it->second;
    }
    std::mt19937 rng(ts.seed);
    const auto t0 = Clock::now();
    Knobs defaults;
    for (const Knob &k : space) defaults[k.name] = k.default_value;

    std::cerr << "gelukit_tune: " << name << " (" << w.describe() << ")\n";
    Result incumbent = evaluate(w, {"", defaults}, opt, nullptr);
    if (!incumbent.ok) fail(name + ": the default schedule failed: " + incumbent.error);
    Result default_result = incumbent;
    int discarded = 0;
    std::map<Knobs, bool> seen = {{defaults, true}};

    auto random_knobs = [&]() {
        Knobs k;
        for (const Knob &kn : space) k[kn.name] = kn.values[rng() % kn.values.size()];
        return k;
    };
    // A point of the searched space next to base: knobs whose value lies outside the space (a
    // default not among the --space values) are first moved into it, then one knob is moved to a
    // neighbouring value. Every candidate is thus in the space. A numeric value outside the space
    // (parallel_grain 16384 with --space parallel_grain=2048,4096) goes to the space's nearest
    // value; a "generator's choice" sentinel (m_block 0, epilogue_at -1) has no numeric
    // neighbour (m_block 0 is 8 on AVX-512 but 32 on AVX2 for the f32 ffn), so it goes to a
    // random value.
    auto neighbour = [&](const Knobs &base) {
        Knobs k = base;
        for (const Knob &kn : space) {
            const int v = base.at(kn.name);
            if (std::find(kn.values.begin(), kn.values.end(), v) != kn.values.end()) continue;
            if (kn.default_is_generator_choice && v == kn.default_value) {
                k[kn.name] = kn.values[rng() % kn.values.size()];
            } else {
                k[kn.name] = *std::min_element(kn.values.begin(), kn.values.end(),
                                               [&](int a, int b) { return std::abs(a - v) < std::abs(b - v); });
            }
        }
        const Knob &kn = space[rng() % space.size()];
        auto pos = std::find(kn.values.begin(), kn.values.end(), k.at(kn.name));
        int i = int(pos - kn.values.begin());
        i = std::clamp(i + ((rng() % 2) ? 1 : -1), 0, int(kn.values.size()) - 1);
        k[kn.name] = kn.values[i];
        return k;
    };
    size_t space_size = 1;
    for (const Knob &kn : space) space_size *= kn.values.size();
    // Points of the searched space measured so far (the defaults count if they lie in it: a
    // default outside the --space values, e.g. m_block 0 (the generator's choice) with
    // --space m_block=8,16, does not).
    size_t space_seen = 1;
    for (const Knob &kn : space) {
        if (std::find(kn.values.begin(), kn.values.end(), kn.default_value) == kn.values.end()) space_seen = 0;
    }

    // Every searched candidate, in order (the file's "candidates": what was tried, not only the
    // winner).
    json candidates_log = json::array();
    int done = 1;
    const int total = ts.trials;
    int stale = 0;
    while (done < total && seconds_since(t0) < ts.budget_s && space_seen < space_size && stale < 1000) {
        // First half random sampling, then refinement around the incumbent; once 50 draws in a
        // row found only measured neighbours (the incumbent's neighbourhood is done), random
        // sampling again.
        Knobs k = done < total / 2 || stale >= 50 ? random_knobs() : neighbour(incumbent.cand.knobs);
        if (seen.count(k)) {
            stale++;
            continue;
        }
        stale = 0;
        seen[k] = true;
        space_seen++;
        Result r = evaluate(w, {"", k}, opt, &incumbent);
        done++;
        candidates_log.push_back({{"knobs", knobs_label(k)},
                                  {"ok", r.ok},
                                  {"median_ms", r.ok ? json(r.median_ms) : json(nullptr)},
                                  {"incumbent_median_ms_alongside", r.ok ? json(median(r.rival_ms)) : json(nullptr)}});
        if (!r.ok) {
            discarded++;
            std::fprintf(stderr, "\n  %s: discarded: %s\n", r.cand.label().c_str(), r.error.c_str());
        } else if (r.median_ms < median(r.rival_ms) && mann_whitney_p_less(r.times_ms, r.rival_ms) < ts.alpha) {
            incumbent = r;  // faster than the incumbent timed alongside it
        }
        progress(name, done, total, seconds_since(t0), ts.budget_s, incumbent);
    }
    std::fprintf(stderr, "\n");

    // The verdict: the winner against the default, interleaved, with twice the repetitions and
    // fresh samples (the search compared ~30 candidates at --alpha each, so one of them can win
    // by chance). Only a winner that is faster here too is written; otherwise the defaults are.
    time_interleaved(incumbent, &default_result, w, opt, 2 * opt.repetitions);
    double tuned_ms = incumbent.median_ms, default_ms = median(incumbent.rival_ms);
    double p_tuned = incumbent.cand.knobs == defaults ? 1.0 : mann_whitney_p_less(incumbent.times_ms, incumbent.rival_ms);
    std::string verdict = incumbent.cand.knobs == defaults ? "no candidate beat the default during the search"
                                                            : "the search winner beat the default again";
    if (incumbent.cand.knobs != defaults && !(tuned_ms < default_ms && p_tuned < ts.alpha)) {
        char buf[200];
        std::snprintf(buf, sizeof(buf), "the search winner (%s) did not beat the default in the final test (%.3f vs %.3f ms, p = %.2g): default kept",
                      knobs_label(incumbent.cand.knobs).c_str(), tuned_ms, default_ms, p_tuned);
        verdict = buf;
        std::fprintf(stderr, "  %s\n", buf);
        incumbent = default_result;
        time_interleaved(incumbent, nullptr, w, opt, 2 * opt.repetitions);
        tuned_ms = default_ms = incumbent.median_ms;
        p_tuned = 1.0;
    }

    json autos = json::array();
    for (const std::string &as : ts.autoschedulers) {
        Result r = evaluate(w, {as, {}}, opt, &incumbent);
        json a = {{"autoscheduler", as}, {"ok", r.ok}};
        if (r.ok) {
            a["median_ms"] = r.median_ms;
            a["tuned_median_ms_alongside"] = median(r.rival_ms);
            a["p_faster_than_tuned"] = mann_whitney_p_less(r.times_ms, r.rival_ms);
        } else {
            a["error"] = r.error;
        }
        std::fprintf(stderr, "  %-14s %s\n", as.c_str(),
                     r.ok ? (std::to_string(r.median_ms) + " ms").c_str() : ("failed: " + r.error).c_str());
        autos.push_back(a);
    }

    json params = json::object();
    for (const auto &[k, v] : incumbent.cand.knobs) params[k] = v;
    json entry = {{"generator", w.generator()},
                  {"params", params},
                  {"measured",
                   {{"workload", w.describe()},
                    {"default_median_ms", default_ms},
                    {"tuned_median_ms", tuned_ms},
                    {"speedup", default_ms / tuned_ms},
                    {"p_value_vs_default", p_tuned},
                    {"verdict", verdict},
                    {"repetitions", 2 * opt.repetitions},
                    {"trials", done},
                    {"discarded", discarded},
                    {"seconds", seconds_since(t0)},
                    {"candidates", candidates_log}}},
                  {"autoschedulers", autos}};
    return entry;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            return line.substr(line.find(':') + 2);
        }
    }
    return "unknown";
}

// The GPU the CUDA file was tuned on, as nvidia-smi names it: name, driver and compute
// capability (name and driver where nvidia-smi has no compute_cap field), or "unknown". The
// device is HL_GPU_DEVICE, which main() pins (default 0) together with CUDA_DEVICE_ORDER =
// PCI_BUS_ID, nvidia-smi's numbering; under CUDA_VISIBLE_DEVICES the numbers differ, so it is
// recorded alongside.
std::string gpu_model() {
    const char *dev = std::getenv("HL_GPU_DEVICE");
    const std::string index = dev && *dev ? dev : "0";
    if (index.find_first_not_of("0123456789") != std::string::npos) return "unknown (HL_GPU_DEVICE=" + index + ")";
    std::string s;
    for (const char *fields : {"name,driver_version,compute_cap", "name,driver_version"}) {
        const std::string cmd = std::string("nvidia-smi --query-gpu=") + fields + " --format=csv,noheader -i " + index + " 2>/dev/null";
        s.clear();
        if (FILE *p = popen(cmd.c_str(), "r")) {
            char buf[256];
            while (std::fgets(buf, sizeof(buf), p)) s += buf;
            if (pclose(p) != 0) s.clear();
        }
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        if (!s.empty()) break;
    }
    if (s.empty()) s = "unknown";
    s += " (device " + index + ")";
    if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
        s += ", CUDA_VISIBLE_DEVICES=" + std::string(visible);
    }
    return s;
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// The existing file's kernels, if it is a valid schedule file for this arch; a corrupt one is
// moved aside (<file>.corrupt) with a message, never silently merged or lost. Kept entries are
// checked as the build checks them (generator, known knobs, integers in range): one bad entry
// carried over would make the build reject the whole merged file, fresh results included, so
// such an entry is dropped with a message.
// The other architecture's schedule file named as --out (a well-formed file whose "arch" is not
// `arch`): the file's name and what it is, else "". Checked before anything runs, so that such a
// file is refused rather than moved aside as corrupt.
std::string other_arch_file(const std::string &path, const std::string &arch) {
    if (!std::filesystem::exists(path)) return "";
    std::ifstream in(path);
    const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("format") || j["format"] != "gelukit-schedules" || !j.contains("arch") ||
        !j["arch"].is_string() || j["arch"] == arch) {
        return "";
    }
    return path + " is the schedule file of \"" + j["arch"].get<std::string>() + "\", not of \"" + arch + "\"";
}

// The kernel names the CUDA schedule file may hold (cmake/GelukitSchedules.cmake's rule): the
// CUDA GELU rows (math=fast, hence "_fast") and the CUDA FFN rows (float32).
bool cuda_kernel_name(const std::string &name) {
    static const std::regex rule("gelu_(fwd|bwd)_(f32|bf16|f16)_(erf|tanh|sigmoid)_fast|"
                                 "(ffn|linear_gelu|geglu)_f32_(erf|tanh|sigmoid)|swiglu_f32_silu");
    return std::regex_match(name, rule);
}

json load_existing(const std::string &path, const std::string &arch) {
    const bool cuda_file = arch == "cuda";
    if (!std::filesystem::exists(path)) return json::object();
    std::ifstream in(path);
    json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    // Types are checked before values are read (json::value throws on a type mismatch).
    const auto is = [&](const char *key, json::value_t t) { return j.is_object() && j.contains(key) && j[key].type() == t; };
    const bool valid = is("format", json::value_t::string) && j["format"] == "gelukit-schedules" &&
                       (is("version", json::value_t::number_unsigned) || is("version", json::value_t::number_integer)) &&
                       j["version"] == 1 && is("arch", json::value_t::string) && j["arch"] == arch &&
                       is("kernels", json::value_t::object);
    if (!valid) {
        const std::string aside = path + ".corrupt";
        std::error_code ec;
        std::filesystem::rename(path, aside, ec);
        if (ec) {
            fail(path + " is not a valid version-1 schedule file for " + arch + " and cannot be moved aside to " +
                 aside + " (" + ec.message() + "); nothing was tuned");
        }
        std::cerr << "gelukit_tune: " << path << " is not a valid version-1 schedule file for " << arch
                  << "; moved to " << aside << " and starting a new file\n";
        return json::object();
    }
    json kept = json::object();
    const auto starts = [](const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; };
    for (const auto &[name, entry] : j["kernels"].items()) {
        // The build's rules (cmake/GelukitSchedules.cmake): lower-case name with a GELU or FFN
        // prefix that implies the generator; known knobs (the CPU knobs in a CPU file, the GPU
        // knobs in the CUDA file), integers in range.
        const bool gelu = starts(name, "gelu_fwd_") || starts(name, "gelu_bwd_");
        const bool ffn = starts(name, "ffn_") || starts(name, "linear_gelu_") || starts(name, "geglu_") ||
                         starts(name, "swiglu_");
        const std::string generator = !gelu ? "ffn" : starts(name, "gelu_fwd_") ? "gelu_forward" : "gelu_backward";
        std::vector<Knob> space = cuda_file ? gpu_knobs(gelu) : gelu ? gelu_knobs() : ffn_knobs(!starts(name, "linear_gelu_"));
        // The build and the generator accept epilogue_at -1 (the default) and 0 for linear_gelu
        // (cmake/GelukitSchedules.cmake rejects only values above 0 there).
        if (!cuda_file && starts(name, "linear_gelu_")) space.push_back({"epilogue_at", {}, -1, -1, 0});
        std::string why;
        if (!(gelu || ffn) || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
            why = "not a GELU or FFN kernel name";
        } else if (cuda_file && !cuda_kernel_name(name)) {
            why = "not a CUDA kernel name";
        } else if (!entry.is_object() || !entry.contains("generator") || entry["generator"] != generator) {
            why = "its generator is not " + generator;
        } else if (!entry.contains("params") || !entry["params"].is_object()) {
            why = "no params object";
        } else {
            for (const auto &[knob, value] : entry["params"].items()) {
                const auto k = std::find_if(space.begin(), space.end(), [&](const Knob &kb) { return kb.name == knob; });
                if (k == space.end()) {
                    why = "unknown knob " + knob;
                } else if (!value.is_number_integer() || !k->accepts(value.get<int64_t>())) {
                    why = knob + " is not " + k->rule();
                }
            }
        }
        if (why.empty()) {
            kept[name] = entry;
        } else {
            std::cerr << "gelukit_tune: dropping the stored entry of " << name << " from " << path << " (" << why
                      << ")\n";
        }
    }
    return kept;
}

// --out, checked before anything runs (a run takes minutes, and its result would be lost at the
// end): not a directory or another non-regular file, readable if it exists, and its directory
// (or, where that does not exist yet, the nearest existing ancestor, under which it will be
// created) must accept new files: the temporary file, the rename into place and an invalid
// file's move aside (<file>.corrupt) all happen there. Probed by creating and removing a file:
// access(2) says yes to root even where the file system refuses new files (/proc).
void check_out_path(const std::string &out_path, const std::string &default_path) {
    namespace fs = std::filesystem;
    if (out_path.empty()) fail("--out: empty path");
    const fs::path out(out_path);
    std::error_code ec;
    const fs::file_status st = fs::status(out, ec);
    if (fs::is_directory(st)) {
        fail("--out " + out_path + " is a directory; name the schedule file itself (e.g. " +
             (out / fs::path(default_path).filename()).string() + ")");
    }
    if (fs::exists(st)) {
        if (!fs::is_regular_file(st)) fail("--out " + out_path + " exists and is not a regular file");
        std::ifstream in(out_path);
        if (!in) fail("--out " + out_path + ": cannot read it (" + std::strerror(errno) + ")");
    } else if (st.type() != fs::file_type::not_found) {
        fail("--out " + out_path + ": cannot examine it (" + ec.message() + ")");
    } else if (!out.has_filename()) {
        fail("--out " + out_path + " names a directory; name the schedule file itself");
    }
    fs::path dir = out.parent_path();
    if (dir.empty()) dir = ".";
    while (!fs::exists(fs::status(dir, ec))) {
        const fs::path up = dir.parent_path();
        if (up.empty() || up == dir) {
            dir = up.empty() ? fs::path(".") : up;
            break;
        }
        dir = up;
    }
    if (!fs::is_directory(fs::status(dir, ec))) {
        fail("--out " + out_path + ": " + dir.string() + " is not a directory");
    }
    const fs::path probe = dir / (".gelukit_tune-probe-" + std::to_string(::getpid()));
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fail("--out " + out_path + ": cannot create files in " + dir.string() + " (" + std::strerror(errno) +
             "); the schedule file is written there");
    }
    ::close(fd);
    ::unlink(probe.c_str());
}

// A kernel of the tuned set: its schedule-file name, its workload, its knob space.
struct Entry {
    std::string name;
    std::function<std::unique_ptr<Workload>()> make;
    std::vector<Knob> space;
};

// Empty when a GPU pipeline runs on this machine's device; else why not (Halide's message: no
// driver library, no device, ...). A 64-element copy with the target's GPU feature, realized
// and copied back.
std::string probe_gpu(const Halide::Target &target) {
    try {
        Halide::Var x("x"), xo("xo"), xi("xi");
        Halide::Func f("gelukit_tune_probe");
        f(x) = x * 2;
        f.gpu_tile(x, xo, xi, 32);
        Buffer<int> out = f.realize({64}, target);
        out.copy_to_host();
        for (int i = 0; i < 64; i++) {
            if (out(i) != 2 * i) return "the probe kernel computed a wrong value";
        }
        return "";
    } catch (const Halide::Error &e) {
        return one_line(e.what());
    } catch (const std::exception &e) {
        return one_line(e.what());
    }
}

// Every point of each kernel's searched space, and each autoscheduler, is generated, scheduled
// and JIT-compiled for the target, nothing runs (no device needed). Counts: compiled; refused by
// the generator (a knob combination it rejects with a message, e.g. an FFN block whose shared
// memory exceeds 48 KiB: the search discards those too); failed (anything else: a defect).
bool compile_only_run(const std::vector<Entry> &entries, const std::vector<std::string> &only,
                      const Options &opt, const TuneSettings &ts) {
    int compiled = 0, refused = 0, failed = 0;
    // Each JIT compile takes 0.1-30 s: a whole CPU FFN space (~16k points) is not a check.
    // Refused before anything is compiled.
    constexpr size_t max_points = 512;
    for (const Entry &e : entries) {
        if (!only.empty() && std::find(only.begin(), only.end(), e.name) == only.end()) continue;
        size_t points = 1;
        for (const Knob &k : e.space) {
            auto it = ts.restrict_space.find(k.name);
            points *= it != ts.restrict_space.end() ? it->second.size() : k.values.size();
        }
        if (points > max_points) {
            fail("--compile-only: " + e.name + "'s space has " + std::to_string(points) + " points (at most " +
                 std::to_string(max_points) + "); restrict it with --space or --kernel");
        }
    }
    for (const Entry &e : entries) {
        if (!only.empty() && std::find(only.begin(), only.end(), e.name) == only.end()) continue;
        std::vector<Knob> space = e.space;
        for (Knob &k : space) {
            auto it = ts.restrict_space.find(k.name);
            if (it != ts.restrict_space.end()) k.values = it->second;
        }
        // The candidates: every point of the space (odometer order), then the autoschedulers.
        std::vector<Candidate> cands;
        std::vector<size_t> idx(space.size(), 0);
        for (bool more = true; more;) {
            Knobs k;
            for (size_t i = 0; i < space.size(); i++) k[space[i].name] = space[i].values[idx[i]];
            cands.push_back({"", k});
            more = false;
            for (size_t i = 0; i < space.size() && !more; i++) {
                if (++idx[i] < space[i].values.size()) {
                    more = true;
                } else {
                    idx[i] = 0;
                }
            }
        }
        for (const std::string &as : ts.autoschedulers) cands.push_back({as, {}});
        std::unique_ptr<Workload> w = e.make();
        for (const Candidate &c : cands) {
            const char *phase = "building the pipeline";
            try {
                Halide::AutoschedulerParams asp;
                if (!c.autoscheduler.empty()) asp = Halide::AutoschedulerParams(c.autoscheduler, opt.autoscheduler_params);
                auto gen = Halide::Internal::GeneratorRegistry::create(w->generator(), Halide::GeneratorContext(opt.target, asp));
                for (const auto &[k, v] : w->fixed_params()) gen->set_generatorparam_value(k, v);
                if (c.autoscheduler.empty()) {
                    gen->set_generatorparam_value("sched", "hand");
                    for (const auto &[k, v] : c.knobs) gen->set_generatorparam_value(k, std::to_string(v));
                }
                Halide::Pipeline p = gen->build_pipeline();
                phase = "autoscheduling";
                if (!c.autoscheduler.empty()) p.apply_autoscheduler(opt.target, asp);
                phase = "JIT-compiling";
                p.compile_jit(opt.target);
                compiled++;
            } catch (const std::exception &ex) {
                const bool by_generator = std::string(phase) == "building the pipeline" && c.autoscheduler.empty();
                (by_generator ? refused : failed)++;
                std::fprintf(stderr, "  %s %s: %s while %s: %s\n", e.name.c_str(), c.label().c_str(),
                             by_generator ? "refused" : "FAILED", phase, one_line(ex.what()).c_str());
            }
        }
        std::fprintf(stderr, "gelukit_tune: %s: %zu candidates for %s\n", e.name.c_str(), cands.size(),
                     opt.target.to_string().c_str());
    }
    std::printf("compile-only: %d compiled, %d refused by the generator, %d failed\n", compiled, refused, failed);
    return failed == 0 && compiled > 0;
}

}  // namespace

static int tune_main(int argc, char **argv) {
    CLI::App app{"gelukit_tune: tune the knobs of gelukit's hand schedules on this machine and write "
                 "the schedule file the build reads"};
    std::vector<std::string> kernels;
    std::string out_path = GELUKIT_SCHEDULE_FILE_DEFAULT;
    TuneSettings ts;
    Options opt;
    int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int64_t gelu_n = 512 * 3072;
    int ffn_m = 512, ffn_d_model = 768, ffn_d_ff = 3072;
    std::string autoschedulers;
    std::vector<std::string> space_args;
    bool list = false, compile_only = false;
    std::string target_kind = "host";
    int gpu_sms = 108;
    app.add_option("--kernel", kernels, "kernel(s) to tune (default: the build's whole tuned set; see --list)");
    app.add_flag("--list", list, "print the tunable kernels and their knob spaces, then exit");
    app.add_option("--target", target_kind,
                   "host: the CPU kernels (JIT for this CPU, the CPU schedule file); cuda: the CUDA kernels' GPU "
                   "knobs (JIT for the build's CUDA target, run on this machine's GPU; the CUDA schedule file)")
        ->check(CLI::IsMember({"host", "cuda"}));
    app.add_flag("--compile-only", compile_only,
                 "JIT-compile every candidate of the searched space (and the autoschedulers) without running "
                 "anything, report, write no file (a check that needs no GPU)");
    app.add_option("--gpu-sms", gpu_sms, "--target cuda: Anderson2021's parallelism (the GPU's SM count; the build uses 108)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--out", out_path, "schedule file to write (merged with the kernels it already has)");
    app.add_option("--trials", ts.trials, "candidates per kernel, the default included")->check(CLI::Range(1, 100000));
    app.add_option("--budget-s", ts.budget_s, "seconds per kernel for the knob search (autoschedulers come after)")
        ->check(CLI::PositiveNumber);
    app.add_option("--repetitions", opt.repetitions, "timed calls per candidate")->check(CLI::Range(3, 100000));
    app.add_option("--alpha", ts.alpha, "significance level of the Mann-Whitney test against the incumbent")
        ->check(CLI::Range(1e-9, 0.5));
    app.add_option("--threads", threads, "Halide thread pool size (HL_NUM_THREADS)")->check(CLI::Range(1, 1024));
    app.add_option("--seed", ts.seed, "random seed of the search");
    app.add_option("--autoschedulers", autoschedulers,
                   "comma-separated, or 'none' (default: Adams2019,Mullapudi2016,Li2018 on the host, Anderson2021 "
                   "on cuda)");
    app.add_option("--space", space_args, "restrict a knob's values: knob=v1,v2,... (repeatable)");
    app.add_option("--gelu-n", gelu_n, "elements of the GELU workload (default 1,572,864; --target cuda: 16,776,192 = 5461 x 3072)")->check(CLI::Range(int64_t(1024), int64_t(1) << 28));
    app.add_option("--ffn-m", ffn_m, "tokens M of the FFN workload")->check(CLI::Range(1, 65536));
    app.add_option("--ffn-d-model", ffn_d_model, "d_model of the FFN workload")->check(CLI::Range(1, 65536));
    app.add_option("--ffn-d-ff", ffn_d_ff, "d_ff of the FFN workload")->check(CLI::Range(1, 262144));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        // CLI11 prints the message (or the help: status 0); a bad argument exits 2, like fail().
        return app.exit(e) == 0 ? 0 : 2;
    }
    const bool cuda = target_kind == "cuda";
    if (cuda && std::string(GELUKIT_CUDA_TARGET).empty()) {
        fail("--target cuda: this build has no CUDA kernels (GELUKIT_CUDA=OFF)");
    }
    if (cuda && app.count("--gelu-n") == 0) {
        // M = 5461 tokens x d_ff 3072 (~2^24 elements, ~50 us of an H200's time per f32 call:
        // launch overhead < 20%). M odd on purpose: N is then a multiple of 1024 but not of 2048,
        // as the activations of most batch sizes are, so a candidate whose gpu_block * gpu_elems
        // does not divide such sizes runs (and is timed and checked on) the guarded one-element
        // nest it would take in an engine, not the dense nest a power-of-two N would flatter.
        gelu_n = int64_t(5461) * 3072;
    }
    if (!cuda && app.count("--gpu-sms") != 0) fail("--gpu-sms is for --target cuda (Anderson2021's parallelism)");
    if (cuda && app.count("--out") == 0) out_path = GELUKIT_CUDA_SCHEDULE_FILE_DEFAULT;
    if (autoschedulers.empty()) autoschedulers = cuda ? "Anderson2021" : "Adams2019,Mullapudi2016,Li2018";

    // The tuned set, as the build defines it.
    std::vector<Entry> entries;
    // --target cuda: GELUKIT_CUDA_TUNED_GELU rows dir:dtype:form (math fast) and
    // GELUKIT_CUDA_TUNED_FFN rows kind:f32:form (cmake/GelukitCudaKernels.cmake), GPU knobs.
    for (const std::string &row : split(cuda ? GELUKIT_CUDA_TUNED_GELU : "", ',')) {
        const auto p = split(row, ':');
        if (p.size() != 3) fail("bad GELUKIT_CUDA_TUNED_GELU row '" + row + "'");
        const bool bwd = p[0] == "bwd";
        const DType dt = p[1] == "f32" ? DType::F32 : p[1] == "bf16" ? DType::BF16 : DType::F16;
        const Form form = p[2] == "erf" ? Form::Erf : p[2] == "tanh" ? Form::Tanh : Form::Sigmoid;
        entries.push_back({"gelu_" + p[0] + "_" + p[1] + "_" + p[2] + "_fast",
                           [=] { return std::make_unique<GeluWorkload>(bwd, dt, form, gelukit::Math::Fast, gelu_n, ts.seed); },
                           gpu_knobs(true)});
    }
    for (const std::string &row : split(cuda ? GELUKIT_CUDA_TUNED_FFN : "", ',')) {
        const auto p = split(row, ':');
        if (p.size() != 3 || p[1] != "f32" || p[2] != "erf") fail("unsupported GELUKIT_CUDA_TUNED_FFN row '" + row + "'");
        const bool whole = p[0] == "ffn";
        entries.push_back({p[0] + "_" + p[1] + "_" + p[2],
                           [=] { return std::make_unique<FfnWorkload>(whole, true, ffn_m, ffn_d_model, ffn_d_ff, ts.seed); },
                           gpu_knobs(false)});
    }
    for (const std::string &row : split(cuda ? "" : GELUKIT_TUNED_GELU, ',')) {
        const auto p = split(row, ':');  // dir:dtype:form:math
        if (p.size() != 4) fail("bad GELUKIT_TUNED_GELU row '" + row + "'");
        const bool bwd = p[0] == "bwd";
        const DType dt = p[1] == "f32" ? DType::F32 : p[1] == "bf16" ? DType::BF16 : DType::F16;
        const Form form = p[2] == "erf" ? Form::Erf : p[2] == "tanh" ? Form::Tanh : Form::Sigmoid;
        const gelukit::Math math = p[3] == "acc" ? gelukit::Math::Accurate : gelukit::Math::Fast;
        entries.push_back({"gelu_" + p[0] + "_" + p[1] + "_" + p[2] + "_" + p[3],
                           [=] { return std::make_unique<GeluWorkload>(bwd, dt, form, math, gelu_n, ts.seed); },
                           gelu_knobs()});
    }
    for (const std::string &row : split(cuda ? "" : GELUKIT_TUNED_FFN, ',')) {
        const auto p = split(row, ':');  // kind:dtype:form
        if (p.size() != 3 || p[1] != "f32" || p[2] != "erf") fail("unsupported GELUKIT_TUNED_FFN row '" + row + "'");
        const bool whole = p[0] == "ffn";
        entries.push_back({p[0] + "_" + p[1] + "_" + p[2],
                           [=] { return std::make_unique<FfnWorkload>(whole, false, ffn_m, ffn_d_model, ffn_d_ff, ts.seed); },
                           ffn_knobs(whole)});
    }
    if (list) {
        for (const Entry &e : entries) {
            std::cout << e.name << ":";
            for (const Knob &k : e.space) {
                std::cout << " " << k.name << " in {";
                for (size_t i = 0; i < k.values.size(); i++) std::cout << (i ? "," : "") << k.values[i];
                std::cout << "} (default " << k.default_value << ")";
            }
            std::cout << "\n";
        }
        return 0;
    }
    for (const std::string &k : kernels) {
        if (std::none_of(entries.begin(), entries.end(), [&](const Entry &e) { return e.name == k; })) {
            fail("'" + k + "' is not in the tuned set (gelukit_tune --list)");
        }
    }
    for (const std::string &s : space_args) {
        const auto eq = s.find('=');
        if (eq == std::string::npos) fail("--space wants knob=v1,v2,... (got '" + s + "')");
        std::vector<int> values;
        for (const std::string &v : split(s.substr(eq + 1), ',')) {
            values.push_back(parse_space_value(s, v));
        }
        if (values.empty()) fail("--space " + s + ": no values");
        const std::string knob = s.substr(0, eq);
        std::vector<Knob> all = cuda ? gpu_knobs(true) : gelu_knobs();
        for (const Knob &k : cuda ? gpu_knobs(false) : ffn_knobs()) all.push_back(k);
        const auto k = std::find_if(all.begin(), all.end(), [&](const Knob &kb) { return kb.name == knob; });
        if (k == all.end()) {
            std::vector<Knob> other = cuda ? gelu_knobs() : gpu_knobs(true);
            for (const Knob &o : cuda ? ffn_knobs() : gpu_knobs(false)) other.push_back(o);
            const bool elsewhere = std::any_of(other.begin(), other.end(), [&](const Knob &o) { return o.name == knob; });
            fail("--space " + s + ": unknown knob '" + knob + "'" +
                 (elsewhere ? (cuda ? " for --target cuda (a CPU knob: tune it with --target host)"
                                    : " for the host (a GPU knob: tune it with --target cuda)")
                            : std::string(" (gelukit_tune --list)")));
        }
        for (int v : values) {
            if (!k->accepts(v)) {
                fail("--space " + s + ": " + knob + " must be " + k->rule() + " (got " + std::to_string(v) + ")");
            }
        }
        std::sort(values.begin(), values.end());
        values.erase(std::unique(values.begin(), values.end()), values.end());
        ts.restrict_space[s.substr(0, eq)] = values;
    }
    // --out before anything runs (plugins, device probe, tuning): a path that cannot be written,
    // or the other target's file, is refused now, not after the search.
    const std::string arch = cuda ? "cuda" : GELUKIT_ARCH_TRIPLE;
    if (!compile_only) {
        const std::string default_out = cuda ? GELUKIT_CUDA_SCHEDULE_FILE_DEFAULT : GELUKIT_SCHEDULE_FILE_DEFAULT;
        check_out_path(out_path, default_out);
        if (const std::string other = other_arch_file(out_path, arch); !other.empty()) {
            fail(other + ": name this target's file with --out (default " + default_out + ")");
        }
    }
    if (autoschedulers != "none") ts.autoschedulers = split(autoschedulers, ',');
    const std::map<std::string, std::string> plugins = {{"Adams2019", GELUKIT_PLUGIN_ADAMS2019},
                                                        {"Mullapudi2016", GELUKIT_PLUGIN_MULLAPUDI2016},
                                                        {"Li2018", GELUKIT_PLUGIN_LI2018},
                                                        {"Anderson2021", GELUKIT_PLUGIN_ANDERSON2021}};
    for (const std::string &as : ts.autoschedulers) {
        auto it = plugins.find(as);
        if (it == plugins.end() || std::string(it->second).empty()) {
            fail("unknown autoscheduler '" + as + "' (Adams2019, Mullapudi2016, Li2018; Anderson2021 with --target cuda)");
        }
        if ((as == "Anderson2021") != cuda) {
            fail("autoscheduler " + as + (cuda ? " does not schedule GPU pipelines (--target cuda: Anderson2021)"
                                               : " is a GPU autoscheduler (use it with --target cuda)"));
        }
        // GELUKIT_TUNE_PLUGIN_DIR: where a relocated tuner finds the plugins (the build's paths
        // are compiled in; bench/cuda/pack_prebuilt.sh --tune sets it for a GPU machine).
        std::string plugin = it->second;
        if (const char *dir = std::getenv("GELUKIT_TUNE_PLUGIN_DIR"); dir && *dir) {
            plugin = std::string(dir) + "/" + plugin.substr(plugin.find_last_of('/') + 1);
        }
        try {
            Halide::load_plugin(plugin);
        } catch (const Halide::Error &e) {
            fail("autoscheduler " + as + ": cannot load its plugin " + plugin + ": " + one_line(e.what()));
        }
    }

    // The JIT runtime reads HL_NUM_THREADS when its thread pool starts (first parallel call).
    setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
    opt.target = Halide::get_jit_target_from_environment();
    opt.autoscheduler_params = {{"parallelism", std::to_string(threads)}};
    if (cuda) {
        // The host JIT target plus the GPU features of the build's CUDA target (cuda,
        // cuda_capability_*): the same device code the CUDA libraries carry.
        const Halide::Target built(GELUKIT_CUDA_TARGET);
        for (Halide::Target::Feature f : {Halide::Target::CUDA, Halide::Target::CUDACapability30,
                                          Halide::Target::CUDACapability32, Halide::Target::CUDACapability35,
                                          Halide::Target::CUDACapability50, Halide::Target::CUDACapability61,
                                          Halide::Target::CUDACapability70, Halide::Target::CUDACapability75,
                                          Halide::Target::CUDACapability80, Halide::Target::CUDACapability86}) {
            if (built.has_feature(f)) opt.target = opt.target.with_feature(f);
        }
        opt.gpu = true;
        opt.autoscheduler_params = {{"parallelism", std::to_string(gpu_sms)}};
    }

    if (compile_only) {
        return compile_only_run(entries, kernels, opt, ts) ? 0 : 1;
    }
    if (cuda) {
        // One device, named the same way by Halide's CUDA runtime (which otherwise takes the
        // last device) and by nvidia-smi for the file's record (gpu_model).
        setenv("HL_GPU_DEVICE", "0", /*overwrite=*/0);
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", /*overwrite=*/0);
        // Without a device every candidate would fail: say so once, write nothing.
        const std::string why = probe_gpu(opt.target);
        if (!why.empty()) {
            std::cerr << "gelukit_tune: --target cuda needs a CUDA device, and none is usable here: " << why
                      << "\ngelukit_tune: nothing was tuned and " << out_path << " was not touched\n";
            return 3;
        }
    }

    json kernels_json = load_existing(out_path, arch);
    json summary = json::array();
    for (const Entry &e : entries) {
        if (!kernels.empty() && std::find(kernels.begin(), kernels.end(), e.name) == kernels.end()) continue;
        std::unique_ptr<Workload> w = e.make();
        // avx512_tile_rows changes nothing on a host without AVX-512, the avx2_tile_* knobs
        // nothing unless the host's widest float32 vectors are AVX2's 8 lanes (tile_rows and
        // tile_features in ffn_generator.cpp): searching them only spends trials on identical
        // code. (The sub-targets the host does not run keep their defaults in the file.)
        std::vector<Knob> space = e.space;
        const bool x86 = opt.target.arch == Halide::Target::X86 && !cuda;
        // The generator's own test (avx512_tile / avx2_tile): the natural float32 vector width,
        // which a target string such as x86-64-linux-avx512_skylake (HL_JIT_TARGET) implies
        // without naming the plain avx512 feature.
        const int f32_lanes = x86 ? opt.target.natural_vector_size(Halide::Float(32)) : 0;
        const bool avx512 = f32_lanes >= 16;
        const bool avx2 = f32_lanes == 8;
        space.erase(std::remove_if(space.begin(), space.end(),
                                   [&](const Knob &k) {
                                       return (!avx2 && k.name.rfind("avx2_", 0) == 0) ||
                                              (!avx512 && k.name == "avx512_tile_rows");
                                   }),
                    space.end());
        json entry = tune_kernel(e.name, *w, space, opt, ts);
        kernels_json[e.name] = entry;
        summary.push_back({e.name, entry});
    }

    json file = {{"format", "gelukit-schedules"},
                 {"version", 1},
                 {"arch", arch},
                 {"tuned_on",
                  {{cuda ? "jit_target" : "host_target", opt.target.to_string()},
                   {"cpu", cpu_model()},
                   {"threads", threads},
                   {"gpu", cuda ? gpu_model() : "none"},
                   {"gpu_sms", cuda ? gpu_sms : 0},
                   {"date", utc_now()},
                   {"tool", "gelukit_tune (bench/tune/gelukit_tune.cpp)"}}},
                 {"kernels", kernels_json}};
    // --out was checked before the search; should writing fail anyway, the results go to stdout
    // rather than being lost.
    const auto write_failed = [&](const std::string &why) {
        std::cout << file.dump(2) << "\n" << std::flush;
        fail(why + "; the schedule file's content is printed above");
    };
    const std::filesystem::path out(out_path);
    std::error_code ec;
    if (out.has_parent_path()) {
        std::filesystem::create_directories(out.parent_path(), ec);
        if (ec) write_failed("cannot create the directory " + out.parent_path().string() + " (" + ec.message() + ")");
    }
    const std::string tmp = out_path + ".tmp";
    {
        std::ofstream os(tmp);
        os << file.dump(2) << "\n";
        os.close();
        if (!os) {
            std::filesystem::remove(tmp, ec);
            write_failed("cannot write " + tmp);
        }
    }
    std::filesystem::rename(tmp, out_path, ec);
    if (ec) {
        const std::string why = ec.message();
        std::filesystem::remove(tmp, ec);
        write_failed("cannot rename " + tmp + " to " + out_path + " (" + why + ")");
    }

    // Summary table: default vs tuned vs autoscheduled, one run.
    std::printf("\n| kernel | workload | default ms | tuned ms | speedup | p | tuned knobs |");
    for (const std::string &as : ts.autoschedulers) std::printf(" %s ms |", as.c_str());
    std::printf("\n|---|---|---:|---:|---:|---:|---|");
    for (size_t i = 0; i < ts.autoschedulers.size(); i++) std::printf("---:|");
    std::printf("\n");
    for (const json &row : summary) {
        const json &en = row[1];
        const json &m = en["measured"];
        std::string knobs;
        for (const auto &[k, v] : en["params"].items()) knobs += (knobs.empty() ? "" : " ") + k + "=" + v.dump();
        std::printf("| %s | %s | %.3f | %.3f | %.2fx | %.2g | %s |", row[0].get<std::string>().c_str(),
                    m["workload"].get<std::string>().c_str(), m["default_median_ms"].get<double>(),
                    m["tuned_median_ms"].get<double>(), m["speedup"].get<double>(),
                    m["p_value_vs_default"].get<double>(), knobs.c_str());
        for (const json &a : en["autoschedulers"]) {
            if (a["ok"].get<bool>()) {
                std::printf(" %.3f |", a["median_ms"].get<double>());
            } else {
                std::printf(" failed |");
            }
        }
        std::printf("\n");
    }
    if (cuda) {
        std::printf("\nwrote %s (JIT target %s, GPU %s); rebuild to ship the cuda_*_tuned kernels\n", out_path.c_str(),
                    opt.target.to_string().c_str(), gpu_model().c_str());
    } else {
        std::printf("\nwrote %s (host target %s, %d threads); rebuild to ship the tuned kernels\n", out_path.c_str(),
                    opt.target.to_string().c_str(), threads);
    }
    return 0;
}

// Last resort: an exception nothing above handled ends in a message and status 2, not in
// std::terminate's abort.
int main(int argc, char **argv) {
    try {
        return tune_main(argc, argv);
    } catch (const std::bad_alloc &) {
        std::cerr << "gelukit_tune: error: out of memory (the GELU workload holds 3 x --gelu-n elements, the FFN "
                     "workload --ffn-m x --ffn-d-model activations and 2 x --ffn-d-model x --ffn-d-ff weights, "
                     "twice: try smaller sizes)\n";
    } catch (const std::exception &e) {
        std::cerr << "gelukit_tune: error: " << e.what() << "\n";
    } catch (...) {
        std::cerr << "gelukit_tune: error: unknown exception\n";
    }
    return 2;
}
