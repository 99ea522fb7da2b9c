// onednn_ffn: the oneDNN peer of gelukit's FfnKind::Ffn (see gelukit/ffn.h)
//
//   out = GELU(h·W1ᵀ + b1)·W2ᵀ + b2
//
//   h   [M, d_model]     row-major, f32 or bf16 (the dtype chosen by `bf16`)
//   w1  [d_ff, d_model]  row-major float, PyTorch nn.Linear layout
//   b1  [d_ff]           float, or nullptr: no bias
//   w2  [d_model, d_ff]  row-major float
//   b2  [d_model]        float, or nullptr
//   out [M, d_model]     row-major, same dtype as h
//
// GELU is oneDNN's eltwise_gelu_erf (tanh_form = false) or eltwise_gelu_tanh (tanh_form = true).
// bf16: h, the weights, the intermediate activation and out are bf16; the biases stay f32
// (oneDNN's bf16 matmul takes an f32 bias and adds it to the f32 accumulator, as gelukit does).
// oneDNN accumulates in f32 in both dtypes.
//   fused = true:  matmul(h, W1ᵀ, b1) with a GELU eltwise post-op -> a; matmul(a, W2ᵀ, b2) -> out.
//                  For bf16, GELU is applied to the f32 accumulator and rounded to bf16 once,
//                  which is gelukit's contract.
//   fused = false: matmul(h, W1ᵀ, b1) -> a; eltwise GELU on a in place; matmul(a, W2ᵀ, b2) -> out.
//                  For bf16, the pre-activation is rounded to bf16 before GELU (a second
//                  rounding that the fused path and gelukit do not have): the price of an
//                  unfused framework graph.
//
// The weights are converted (bf16) and reordered once, in the constructor, into the blocked layout
// oneDNN picks for the matmul (format_tag::any); the primitives and the intermediate a [M, d_ff]
// are created once as well, so run() only executes. The caller's float buffers may be freed after
// construction.
//
// Threads: oneDNN here runs on OpenMP. Some implementations (brgemm matmul) fix their work split
// when the primitive is created, so call omp_set_num_threads() *before* constructing an OnednnFfn
// and keep that count while calling run(). run() is not safe to call concurrently on one object
// (it re-points the src/dst memory objects and shares the intermediate a).
// Errors: dnnl::error when oneDNN has no implementation (e.g. bf16 on a CPU without AVX-512).
#pragma once

#include <cstdint>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

class OnednnFfn {
public:
    OnednnFfn(int64_t M, int64_t d_model, int64_t d_ff, bool bf16, bool tanh_form, bool fused, const float *w1,
              const float *b1, const float *w2, const float *b2);

    // out = FFN(h). h and out in the dtype chosen at construction; synchronous (waits on the
    // stream before returning).
    void run(const void *h, void *out);

    // The implementations oneDNN chose, e.g. "brg:avx512_core_amx" for each matmul and
    // "jit:avx512_core" for the separate eltwise (empty for the fused variant), joined as
    // "<matmul1>+<eltwise>+<matmul2>" or "<matmul1>+<matmul2>".
    std::string impl_info() const;

    // FLOP of one run(): 2·M·d_model·d_ff per GEMM, two GEMMs (bias and GELU not counted).
    double flops() const;

private:
    int64_t M_, d_model_, d_ff_;
    bool fused_;
    dnnl::engine engine_;
    dnnl::stream stream_;
    dnnl::matmul mm1_, mm2_;
    dnnl::eltwise_forward gelu_;  // fused == false only
    std::string impl1_, impl2_, impl_gelu_;
    dnnl::memory src_, w1_, b1_, a_, w2_, b2_, dst_;
    bool has_b1_, has_b2_;
};

// "oneDNN v2.6.3 (commit <hash>), cpu_runtime=OpenMP, effective_isa=avx512_core_amx"
std::string onednn_version_string();
