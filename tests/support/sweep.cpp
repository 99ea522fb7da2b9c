#include "sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "harness.h"
#include "reference.h"
#include "scale.h"

namespace gelukit::test {

void SweepResult::merge(const SweepResult &o) {
    count += o.count;
    correctly_rounded += o.correctly_rounded;
    root_window_count += o.root_window_count;
    if (o.max_ulp > max_ulp) {
        max_ulp = o.max_ulp;
        worst_bits = o.worst_bits;
    }
    if (o.max_abs_err_root > max_abs_err_root) {
        max_abs_err_root = o.max_abs_err_root;
        worst_root_bits = o.worst_root_bits;
    }
}

std::string SweepResult::summary(DType dt) const {
    char buf[512];
    const int digits = dt == DType::F32 ? 8 : 4;
    std::snprintf(buf, sizeof(buf),
                  "inputs=%llu correctly_rounded=%.5f%% root_window=%llu max_abs_err_root=%.3g "
                  "max_ulp=%lld x=0x%0*X",
                  static_cast<unsigned long long>(count), count ? 100.0 * correctly_rounded / count : 0.0,
                  static_cast<unsigned long long>(root_window_count), max_abs_err_root,
                  static_cast<long long>(max_ulp), digits, worst_bits);
    return buf;
}

namespace {

void compare_range(const SweepConfig &cfg, const std::vector<uint32_t> &in, const std::vector<uint32_t> &out,
                   std::size_t begin, std::size_t end, double root, SweepResult &r) {
    const Form form = cfg.options.form;
    const double s = cfg.options.scale;
    const double dy = bits_to_double(to_bits(cfg.dy, cfg.dtype), cfg.dtype);  // as the kernel sees it
    for (std::size_t i = begin; i < end; i++) {
        double x = bits_to_double(in[i], cfg.dtype);
        bool backward = cfg.direction == Direction::Backward;
        RefValue ref = backward ? times(dy, gelu_grad_ref(form, x, s)) : gelu_ref(form, x, s);
        uint32_t want = round_to_bits(ref, cfg.dtype);
        uint32_t got = out[i];
        int64_t u = ulp_distance(got, want, cfg.dtype);
        r.count++;
        if (u == 0 && (got == want || bits_is_nan(got, cfg.dtype) ||
                       (bits_to_double(got, cfg.dtype) == 0 && bits_to_double(want, cfg.dtype) == 0))) {
            r.correctly_rounded++;
        }
        // The window is 0.01 wide in z = x/s (GELU'(x) is a function of z), i.e. 0.01 s in x.
        if (backward && cfg.dtype == DType::F32 && std::fabs(x - root) < 0.01 * cfg.options.scale) {
            r.root_window_count++;
            double err = std::fabs(bits_to_double(got, cfg.dtype) - (ref.hi + ref.lo));
            if (std::isnan(err) && !(bits_is_nan(got, cfg.dtype) && std::isnan(ref.hi))) {
                err = INFINITY;
            }
            if (err > r.max_abs_err_root) {
                r.max_abs_err_root = err;
                r.worst_root_bits = in[i];
            }
            continue;
        }
        if (u > r.max_ulp) {
            r.max_ulp = u;
            r.worst_bits = in[i];
        }
    }
}

}  // namespace

SweepResult sweep_inputs(const SweepConfig &cfg, const std::vector<uint32_t> &input_bits) {
    const std::size_t n = input_bits.size();
    std::vector<char> x = pack_bits(input_bits, cfg.dtype);
    std::vector<char> dy = pack_bits(std::vector<uint32_t>(n, to_bits(cfg.dy, cfg.dtype)), cfg.dtype);
    std::vector<char> out(x.size());
    const int64_t len = static_cast<int64_t>(n);
    TensorView vx = TensorView::contiguous(x.data(), cfg.dtype, {len});
    TensorView vo = TensorView::contiguous(out.data(), cfg.dtype, {len});
    if (cfg.direction == Direction::Forward) {
        gelu_forward(vx, vo, cfg.options);
    } else {
        gelu_backward(vx, TensorView::contiguous(dy.data(), cfg.dtype, {len}), vo, cfg.options);
    }
    const std::vector<uint32_t> out_bits = unpack_bits(out, cfg.dtype);
    const double root = grad_root(cfg.options.form) * (cfg.options.form == Form::Erf ? cfg.options.scale : 1.0);
    const int t = std::max(1, cfg.threads);
    std::vector<SweepResult> parts(t);
    std::vector<std::thread> workers;
    // A thread that cannot be started (std::system_error, e.g. under a process limit) must not
    // leave the started ones joinable when the vector is destroyed (std::terminate): join them,
    // then pass the error on.
    try {
        for (int k = 0; k < t; k++) {
            workers.emplace_back([&, k] {
                compare_range(cfg, input_bits, out_bits, n * k / t, n * (k + 1) / t, root, parts[k]);
            });
        }
    } catch (...) {
        for (auto &w : workers) {
            w.join();
        }
        throw;
    }
    for (auto &w : workers) {
        w.join();
    }
    SweepResult r;
    for (const auto &p : parts) {
        r.merge(p);
    }
    return r;
}

namespace {

// Sweeps the inputs bits_of(0 .. total-1), in blocks of at most 2^24 (the memory of one block).
template <class BitsOf>
SweepResult sweep_blocks(const SweepConfig &cfg, uint64_t total, BitsOf bits_of, bool show_progress) {
    const uint64_t block = std::min<uint64_t>(total, uint64_t(1) << 24);
    SweepResult r;
    std::vector<uint32_t> in;
    for (uint64_t start = 0; start < total; start += block) {
        in.resize(std::min(block, total - start));
        for (uint64_t i = 0; i < in.size(); i++) {
            in[i] = bits_of(start + i);
        }
        r.merge(sweep_inputs(cfg, in));
        if (show_progress) {
            std::fprintf(stderr, "\r%5.1f%%  max_ulp so far %lld", 100.0 * (start + in.size()) / total,
                         static_cast<long long>(r.max_ulp));
        }
    }
    if (show_progress) {
        std::fprintf(stderr, "\n");
    }
    return r;
}

}  // namespace

SweepResult sweep_exhaustive(const SweepConfig &cfg, bool show_progress) {
    const uint64_t total = cfg.dtype == DType::F32 ? (uint64_t(1) << 32) : (uint64_t(1) << 16);
    return sweep_blocks(cfg, total, [](uint64_t i) { return static_cast<uint32_t>(i); }, show_progress);
}

namespace {

// Storage bits <-> an unsigned key that increases with the value (-0 just below +0), for the
// 32-bit (f32) or 16-bit (bf16, f16) patterns.
uint32_t sign_bit(DType dt) {
    return dt == DType::F32 ? 0x80000000u : 0x8000u;
}

uint32_t order_key(uint32_t bits, DType dt) {
    const uint32_t sb = sign_bit(dt), mag = bits & (sb - 1);
    return (bits & sb) ? (sb - 1) - mag : sb + mag;
}

uint32_t from_order_key(uint32_t key, DType dt) {
    const uint32_t sb = sign_bit(dt);
    return key >= sb ? key - sb : sb | ((sb - 1) - key);
}

}  // namespace

SweepResult sweep_range(const SweepConfig &cfg, double lo, double hi) {
    // The nearest storage values of lo and hi, moved inwards where rounding took them outside.
    uint32_t first = order_key(to_bits(lo, cfg.dtype), cfg.dtype);
    uint32_t last = order_key(to_bits(hi, cfg.dtype), cfg.dtype);
    if (bits_to_double(from_order_key(first, cfg.dtype), cfg.dtype) < lo) {
        first++;
    }
    if (bits_to_double(from_order_key(last, cfg.dtype), cfg.dtype) > hi) {
        last--;
    }
    // A zero end keeps its sign (to_bits(-0.0) is -0): [-0, 0] holds both zeros, [0, x] only +0,
    // and [+0, -0] is numerically the same interval as [-0, +0].
    if (lo == 0.0 && hi == 0.0 && first > last) {
        std::swap(first, last);
    }
    if (first > last) {
        return SweepResult{};
    }
    const uint64_t total = uint64_t(last) - first + 1;
    return sweep_blocks(
        cfg, total, [&](uint64_t i) { return from_order_key(static_cast<uint32_t>(first + i), cfg.dtype); },
        /*show_progress=*/false);
}

SweepResult sweep_sampled(const SweepConfig &cfg, uint64_t samples) {
    if (cfg.dtype != DType::F32) {
        return sweep_exhaustive(cfg);  // 2^16 patterns: always all of them
    }
    std::vector<uint32_t> in;
    in.reserve(samples + 2 * 65536);
    const uint64_t stride = ((uint64_t(1) << 32) / std::max<uint64_t>(samples, 1)) | 1;
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += stride) {
        in.push_back(static_cast<uint32_t>(b));
    }
    // Dense windows where kernels are most likely to go wrong: around 0 (subnormal outputs and
    // the small-|x| branch), the erf tail (|x| in [5, 15]), the gradient's root, and the
    // sigmoid form's tail (-45, -65: |v| = 77, 111, where the float32 kernel's |v| must carry
    // more than float32 precision; 2026-12-07).
    for (float center : {0.0f, 1e-38f, -1e-38f, -5.5f, -13.2f, -10.5f, -0.7518f, 0.75f, 2.27f, 15.0f, -45.0f, -65.0f}) {
        uint32_t c = float_to_bits(center);
        for (uint32_t d = 0; d < scaled(8192u, 1024u); d++) {
            in.push_back(c + d);
            in.push_back(c - d);
        }
    }
    return sweep_inputs(cfg, in);
}

}  // namespace gelukit::test
