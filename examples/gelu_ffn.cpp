// Downstream example: GELU on a vector and a small feed-forward block through an installed
// gelukit, each checked against a double-precision reference written here (not gelukit's
// formula). Exit status 0 only if both agree within the stated bounds.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gelukit/cuda.h"
#include "gelukit/error.h"
#include "gelukit/ffn.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"

namespace {

// Exact GELU, x * Phi(x) with Phi(x) = erfc(-x / sqrt(2)) / 2 (Hendrycks & Gimpel 2016, eq. 1).
double gelu_reference(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

// Distance in float32 units in the last place between two finite floats.
int64_t ulp_distance(float a, float b) {
    auto ordered = [](float f) {
        int32_t i;
        std::memcpy(&i, &f, sizeof i);
        return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
    };
    return std::llabs(ordered(a) - ordered(b));
}

// Small deterministic values in [-1, 1) (a 32-bit LCG; no <random> distribution differences).
float next_value(uint32_t &state) {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
}

}  // namespace

int main() {
    try {
        // GELU forward, float32, 2001 points in [-10, 10]. Bound: 2 ULP (the accurate kernels
        // are documented at <= 1 ULP on the float32 grid; 2 leaves room for the reference's
        // own rounding to float).
        const int64_t n = 2001;
        std::vector<float> x(n), y(n);
        for (int64_t i = 0; i < n; ++i) x[i] = -10.0f + 0.01f * static_cast<float>(i);
        gelukit::gelu_forward(gelukit::TensorView::contiguous(x.data(), gelukit::DType::F32, {n}),
                              gelukit::TensorView::contiguous(y.data(), gelukit::DType::F32, {n}));
        // The ISA the multi-target library picked for this CPU (known after the first call).
        std::printf("gelukit example: dispatched ISA %s\n", gelukit::dispatched_isa().c_str());
        int64_t worst_ulp = 0;
        for (int64_t i = 0; i < n; ++i) {
            float ref = static_cast<float>(gelu_reference(x[i]));
            if (ref == 0.0f && y[i] == 0.0f) continue;
            worst_ulp = std::max(worst_ulp, ulp_distance(y[i], ref));
        }
        std::printf("GELU f32 erf: %lld points, max error %lld ULP (bound 2)\n",
                    static_cast<long long>(n), static_cast<long long>(worst_ulp));
        if (worst_ulp > 2) return 1;

        // FFN out = W2 * GELU(W1 * h + b1) + b2, d_model 16, d_ff 64, 5 tokens, PyTorch layout.
        const int64_t d_model = 16, d_ff = 64, m = 5;
        uint32_t state = 12345u;
        std::vector<float> w1(d_ff * d_model), b1(d_ff), w2(d_model * d_ff), b2(d_model), h(m * d_model),
            out(m * d_model);
        for (auto *v : {&w1, &b1, &w2, &b2, &h})
            for (float &e : *v) e = next_value(state);
        gelukit::FeedForwardWeights w;
        w.w1 = gelukit::TensorView::contiguous(w1.data(), gelukit::DType::F32, {d_ff, d_model});
        w.b1 = gelukit::TensorView::contiguous(b1.data(), gelukit::DType::F32, {d_ff});
        w.w2 = gelukit::TensorView::contiguous(w2.data(), gelukit::DType::F32, {d_model, d_ff});
        w.b2 = gelukit::TensorView::contiguous(b2.data(), gelukit::DType::F32, {d_model});
        gelukit::FeedForward ffn(w, gelukit::FeedForwardOptions{});
        ffn.forward(gelukit::TensorView::contiguous(h.data(), gelukit::DType::F32, {m, d_model}),
                    gelukit::TensorView::contiguous(out.data(), gelukit::DType::F32, {m, d_model}));

        // Reference in double. Bound per output: float32 accumulation over K terms, about
        // K * 2^-24 * sum|terms| per GEMM (Higham eq. 3.5); 4x that covers both GEMMs, the
        // GELU (|GELU'| <= 1.13) and the output rounding for these sizes.
        double worst_ratio = 0.0;
        for (int64_t r = 0; r < m; ++r) {
            std::vector<double> a(d_ff), a_abs(d_ff);
            for (int64_t f = 0; f < d_ff; ++f) {
                double s = b1[f], s_abs = std::fabs(b1[f]);
                for (int64_t k = 0; k < d_model; ++k) {
                    s += double(w1[f * d_model + k]) * h[r * d_model + k];
                    s_abs += std::fabs(double(w1[f * d_model + k]) * h[r * d_model + k]);
                }
                a[f] = gelu_reference(s);
                a_abs[f] = 1.13 * s_abs;
            }
            for (int64_t o = 0; o < d_model; ++o) {
                double s = b2[o], s_abs = std::fabs(b2[o]);
                for (int64_t f = 0; f < d_ff; ++f) {
                    s += w2[o * d_ff + f] * a[f];
                    s_abs += std::fabs(double(w2[o * d_ff + f])) * (std::fabs(a[f]) + a_abs[f] * d_model * 0x1p-24);
                }
                double bound = 4.0 * (d_ff + d_model) * 0x1p-24 * s_abs + 0x1p-24 * std::fabs(s);
                worst_ratio = std::max(worst_ratio, std::fabs(out[r * d_model + o] - s) / bound);
            }
        }
        std::printf("FFN f32 erf %lldx%lld->%lld->%lld: max |error| / bound = %.3f (must be <= 1)\n",
                    static_cast<long long>(m), static_cast<long long>(d_model), static_cast<long long>(d_ff),
                    static_cast<long long>(d_model), worst_ratio);
        if (!(worst_ratio <= 1.0)) return 1;

        // Bad input is an exception, not a crash: a shape mismatch must throw gelukit::Error.
        try {
            gelukit::gelu_forward(gelukit::TensorView::contiguous(x.data(), gelukit::DType::F32, {n}),
                                  gelukit::TensorView::contiguous(y.data(), gelukit::DType::F32, {n - 1}));
            std::printf("shape mismatch was not refused\n");
            return 1;
        } catch (const gelukit::Error &e) {
            std::printf("shape mismatch refused: %s\n", e.what());
        }
        // CUDA (packages built with GELUKIT_CUDA): the same GELU on the GPU from host memory, or,
        // without a usable device, a clean NoDevice error. The CUDA kernels use the float32
        // ("fast") formulation: bound 8 ULP, as for the CPU's Math::Fast erf forward kernels.
        if (gelukit::cuda::built_with_cuda()) {
            const gelukit::cuda::DeviceStatus dev = gelukit::cuda::cuda_device_available();
            std::vector<float> y_gpu(n);
            try {
                gelukit::cuda::gelu_forward_host(
                    gelukit::TensorView::contiguous(x.data(), gelukit::DType::F32, {n}),
                    gelukit::TensorView::contiguous(y_gpu.data(), gelukit::DType::F32, {n}));
                if (!dev.available) {
                    std::printf("CUDA call succeeded although the probe said: %s\n", dev.reason.c_str());
                    return 1;
                }
                int64_t worst_gpu = 0;
                for (int64_t i = 0; i < n; ++i) {
                    float ref = static_cast<float>(gelu_reference(x[i]));
                    if (ref == 0.0f && y_gpu[i] == 0.0f) continue;
                    worst_gpu = std::max(worst_gpu, ulp_distance(y_gpu[i], ref));
                }
                std::printf("CUDA GELU f32 erf on %s: max error %lld ULP (bound 8)\n", dev.name.c_str(),
                            static_cast<long long>(worst_gpu));
                if (worst_gpu > 8) return 1;
            } catch (const gelukit::Error &e) {
                if (dev.available || e.code() != gelukit::ErrorCode::NoDevice) throw;
                std::printf("CUDA kernels linked; no usable device here: %s\n", e.what());
            }
        }
        std::printf("gelukit example: OK\n");
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gelukit example failed: %s\n", e.what());
        return 1;
    }
}
