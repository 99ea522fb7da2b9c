// Transformer feed-forward blocks with the GELU (or SiLU) fused into the GEMM epilogue.
//
// Kinds (M tokens, d_model in/out features, d_ff hidden features; "·" is a matrix product with
// the weight in PyTorch nn.Linear layout, i.e. h·W1ᵀ):
//   FfnKind::LinearGelu  out = GELU(h·W1ᵀ + b1)                        out: M × d_ff
//   FfnKind::Ffn         out = GELU(h·W1ᵀ + b1)·W2ᵀ + b2 [+ h]           out: M × d_model
//                        (Vaswani et al. 2017, eq. 2, with GELU as in BERT, Devlin et al. 2019)
//   FfnKind::GeGLU       out = (GELU(h·W1ᵀ) ⊙ (h·Vᵀ))·W2ᵀ [+ h]          (Shazeer 2020,
//   FfnKind::SwiGLU      out = (SiLU(h·W1ᵀ) ⊙ (h·Vᵀ))·W2ᵀ [+ h]           "GLU Variants Improve
//                        SiLU(x) = x·σ(x) (Elfwing et al. 2017);           the Transformer", eq. 5/6)
//                        biases b1 (on h·W1ᵀ) and b2 are optional here as everywhere.
// The GELU form (erf / tanh / sigmoid, see gelu.h) is chosen by FeedForwardOptions::form; SwiGLU
// ignores it.
//
// Layouts and shapes (all row-major, dense, dimension 0 outermost, like PyTorch):
//   h    [M, d_model]             activations (M >= 0 tokens; M = 0 does nothing)
//   w1   [d_ff, d_model]          nn.Linear(d_model, d_ff).weight   (BERT: intermediate.dense)
//   b1   [d_ff]                   optional (data == nullptr: no bias)
//   v    [d_ff, d_model]          GeGLU/SwiGLU only: the linear ("up") projection
//   w2   [d_out, d_ff]            nn.Linear(d_ff, d_out).weight     (BERT: output.dense, d_out =
//                                 d_model; any d_out >= 1 is accepted)
//   b2   [d_out]                  optional
//   out  [M, d_out] (or [M, d_ff] for LinearGelu); must not overlap h. Rows of h and out may be
//        padded (row stride >= row length); elements within a row are contiguous.
//   residual requires d_out == d_model.
// Dtypes: DType::F32 everywhere, or DType::BF16 everywhere (weights, biases, h, out). Products
// are accumulated in float32 in both cases; bf16 output is rounded once, to nearest even.
// The pre-activation z = h·W1ᵀ + b1 is kept in float32 (the bias is added to the float32
// accumulator, never rounded to bf16 first: handed case G28), then GELU (SiLU) is evaluated in
// float64 with the accurate math of gelu.h (Math::Accurate, <= 1 float32 ULP of GELU(z)) and
// rounded once to the storage type (the AMX kernel below evaluates it in float32); for bf16 the
// intermediate activation is bf16, as in a bf16 model. Float32 overflow of a GEMM gives +-inf pre-activations, mapped to GELU's limits.
// bf16 subnormals: on Sapphire Rapids / Zen 4 the bf16 products use AVX512_BF16's vdpbf16ps,
// which treats subnormal bf16 inputs and float32 results as zero (Intel SDM, VDPBF16PS: DAZ and
// FTZ regardless of MXCSR); the other x86 sub-targets keep subnormals. Normal values agree.
//
// Weights: by default FeedForward keeps its own copy, so the caller's buffers may be freed
// after construction: packed once into gelukit's GEMM panels (generators/common/ffn_layout.h),
// or, for a kernel that reads nn.Linear matrices itself (pack_weights=0, the `*_unpacked`
// kernels and tuned kernels whose schedule file says so), a plain copy. With
// FeedForwardOptions::borrow_weights = true it keeps no copy of w1, v, w2: it reads the caller's
// matrices on every forward(), so they must stay alive and unchanged while the FeedForward is
// used (biases are still copied: a few KiB). Borrowing needs such a kernel (f32, Form::Erf, Ffn
// or LinearGelu, Schedule::Hand or a tuned kernel built unpacked); the kernel packs each weight
// panel per task itself, which costs time, most at small M where the whole matrix is copied
// for a few rows (README, "Weights are owned or borrowed"). The size limits below (TooLarge)
// apply to borrowed weights too.
//
// Errors: gelukit::Error: InvalidArgument for null data, a missing required weight, shapes that
// do not agree, negative sizes, non-dense weights, rows that are not contiguous, out overlapping
// h (or a borrowed weight), mixed dtypes, a pinned kernel of another kind/dtype/form, any call on
// a moved-from FeedForward; (the stride of an extent-1 dimension is never checked, and M = 0
// accepts null h and out: it does nothing);
// Unsupported for a dtype other than F32/BF16, a kind/form/dtype/schedule that is not built, a
// pinned kernel name that is not built, borrow_weights where no unpacked kernel is built (or a
// packed kernel is pinned); TooLarge for d_model or d_ff > 44,739,242 (int32 strides of the packed
// panels, each checked before any product of sizes), d_out, M or a row stride > 2^31 - 1, or an
// allocation that fails. Nothing aborts.
// Schedules: Hand for every kind, form and dtype; Naive, Adams2019 and Tuned (the hand schedule
// with gelukit_tune's knobs, see gelu.h) for Ffn and LinearGelu, with f32 and Form::Erf
// (ffn_kernels() lists what is built; others throw Unsupported). The Adams2019 kernels are
// scheduled for BERT-base sizes (M ~512, 768 -> 3072) and run every shape: an output smaller than
// their tiles (Halide 21, x86: 256 x 384 for LinearGelu, 16 x 16 for Ffn; arm-64: 128 x 384,
// 16 x 4) runs on a zero-padded scratch output of the smallest shape
// their bounds query accepts, whose cost is that of the padded problem, and the real part is
// copied out. On x86 both compute rows in blocks of 256, so a call with M < 256 costs at least
// a 256-row block (the whole FFN more: its partial block takes a masked path; README,
// Feed-forward blocks). (Should a bounds query still
// find a read outside the weights, the call throws Unsupported: use Hand.)
// Where a
// schedule has both a packed and an unpacked kernel (Hand: ffn_f32_erf_hand and
// ffn_f32_erf_hand_unpacked), borrow_weights picks the unpacked one, else the packed one.
// Intel AMX: on x86-64 builds, Schedule::Hand for Ffn / BF16 / Form::Erf (without
// borrow_weights) runs ffn_bf16_erf_amx_panels, both GEMMs on AMX tiles, parallel over weight
// panels and, above M = 256, 128-row groups (the row-task ffn_bf16_erf_amx, parallel over tasks
// of 64 or 16 token rows, amx_task_rows below, runs only when pinned: it was as fast or slower
// at every M measured, README "Intel AMX"); where AMX is usable: an Intel
// CPU with AMX-TILE and AMX-BF16, Linux granting the tile state (arch_prctl
// ARCH_REQ_XCOMP_PERM, Linux >= 5.16; gelukit requests it), and an ISA cap (set_max_isa,
// GELUKIT_MAX_ISA) of at least avx512_sapphirerapids. Construction checks this without touching
// the dispatch state; a call that runs the AMX kernel counts as a kernel call (set_max_isa() is
// refused afterwards, dispatched_isa() says avx512_sapphirerapids). The vector kernel
// ffn_bf16_erf_hand runs elsewhere, after the cap was lowered below avx512_sapphirerapids, and
// for calls where h, out, the weights or the kernel's accumulators (row tasks: 16 or 64 rows x d_ff
// float32; panel tasks: M rows x 96 float32, and the M x d_ff bf16 activation) would span 2^31
// bytes or more (the AMX kernels index with 32 bits). Results of both
// are within the tests' K-scaled tolerance of the double reference (float32 accumulation of
// exact bf16 products; the summation order differs). The AMX kernel evaluates GELU in float32
// (gelu.h Math::Fast, <= 4 float32 ULP; 9.24 -> 8.10 ms at BERT-base M = 512, one thread,
// bench/RESULTS.md "Intel AMX (history)"):
// its bf16 activation is the correctly rounded GELU(z) for all float32 z but 8,785 of the
// 4.28e9 finite ones (2.1e-6), which are 1 bf16 ULP off (measured over all inputs, README
// "Intel AMX"); pin ffn_bf16_erf_hand for the float64 epilogue. One difference in overflow:
// AMX rounds each bf16 product to float32 before summing, so a row with products overflowing
// to both +inf and -inf gives NaN where the vector kernel's FMA chain gives +-inf or a finite
// value.
// Pinning an AMX kernel (FeedForwardOptions::kernel) runs that one for every M; where AMX is not
// usable it throws Unsupported.
// Threads: forward() runs on Halide's thread pool (gelukit::set_num_threads) and may be called
// concurrently from several threads on one FeedForward (it is read-only after construction).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gelukit/gelu.h"
#include "gelukit/tensor.h"

namespace gelukit {

enum class FfnKind { LinearGelu, Ffn, GeGLU, SwiGLU };

const char *ffn_kind_name(FfnKind kind);  // "linear_gelu", "ffn", "geglu", "swiglu"

struct FeedForwardWeights {
    TensorView w1;  // [d_ff, d_model]
    TensorView b1;  // [d_ff] or data == nullptr
    TensorView v;   // [d_ff, d_model] for GeGLU / SwiGLU, else unused
    TensorView w2;  // [d_out, d_ff] for Ffn / GeGLU / SwiGLU (d_out = d_model in a transformer)
    TensorView b2;  // [d_out] or data == nullptr
};

struct FeedForwardOptions {
    FfnKind kind = FfnKind::Ffn;
    Form form = Form::Erf;              // GELU form of the epilogue (ignored by SwiGLU)
    DType dtype = DType::F32;           // F32 or BF16
    Schedule schedule = Schedule::Hand;  // Hand, Naive or Adams2019 (where built)
    bool residual = false;              // out += h (Ffn / GeGLU / SwiGLU; d_model in == out)
    // Read the caller's w1/v/w2 in place instead of keeping a (packed) copy; see above.
    // Unsupported where no kernel reading nn.Linear matrices is built for the options.
    bool borrow_weights = false;
    // Pin a kernel by its registry name (ffn_kernels(), e.g. "ffn_f32_erf_hand_unpacked")
    // instead of choosing one by schedule: it must be built (else Unsupported) and match kind,
    // dtype and form (else InvalidArgument); with borrow_weights it must be an unpacked one
    // (else Unsupported). `schedule` is then ignored: kernel_name() says what runs.
    std::string kernel;
};

// One compiled FFN kernel library of the registry (cmake/GelukitKernels.cmake).
struct FfnKernelInfo {
    std::string name;  // e.g. "ffn_f32_erf_hand"
    FfnKind kind;
    DType dtype;
    std::string form;  // "erf", "tanh", "sigmoid" or "silu" (SwiGLU)
    Schedule schedule;
    // true: w1, v, w2 in gelukit's packed panels (the runtime packs them); false: the kernel
    // reads PyTorch nn.Linear matrices and packs per task (name suffix "_unpacked", or a tuned
    // kernel with pack_weights=0).
    bool packed_weights = true;
};
const std::vector<FfnKernelInfo> &ffn_kernels();

// Token rows per parallel task of the Intel AMX row-task kernel (ffn_bf16_erf_amx, run when
// pinned by name; Schedule::Hand runs ffn_bf16_erf_amx_panels, see above) for a call with M
// tokens on `threads` threads: 64 or 16. forward() asks it with num_threads().
// A task streams all of W1 and W2 once, so 64-row tasks cost less per row (1.67x less,
// measured: 2-vCPU Intel Xeon with AMX, BERT-base 768 -> 3072 -> 768, one thread, 0.0183 vs
// 0.0306 ms per row), but there are 4x fewer of them to spread over the threads. The rule
// compares the rounds of tasks each size needs, rounds = ceil(tasks / threads), with a 64-row
// task costing 12/5 of a 16-row one (64 x 0.0183 / (16 x 0.0306) = 2.39): 64 rows if
// rounds(64) * 12 <= rounds(16) * 5, else 16. E.g. one thread: M <= 32 -> 16, M >= 33 -> 64
// (M < 64 padded to one task); 56 threads, M = 512: 16 (32 tasks in one round, where 64-row
// tasks would leave 48 threads idle). M is padded up to the task size (the rows past M are
// computed and dropped). The 12/5 was measured at BERT-base and MiniLM shapes; on small ones
// (96 -> 192) a padded 64-row task lost to three 16-row ones at M = 48 (0.020 vs 0.014 ms).
// Throws Error(InvalidArgument) for M < 1, M > 2^31 - 1 or threads < 1.
int64_t amx_task_rows(int64_t M, int threads);

class FeedForward {
public:
    FeedForward(const FeedForwardWeights &weights, const FeedForwardOptions &options);
    ~FeedForward();
    FeedForward(FeedForward &&) noexcept;
    FeedForward &operator=(FeedForward &&) noexcept;

    // out = block(h); h [M, d_model], out [M, d_out()], same dtype as the weights. M = 0 is a
    // valid empty batch.
    void forward(const TensorView &h, const TensorView &out) const;

    int64_t d_model() const;
    int64_t d_ff() const;
    int64_t d_out() const;  // columns of out: w2's rows, or d_ff for LinearGelu
    const FeedForwardOptions &options() const;
    // The registry name of the kernel this FeedForward runs (e.g. "ffn_f32_erf_hand";
    // "ffn_bf16_erf_amx_panels" where the AMX kernel is chosen and still allowed by the ISA cap: the
    // kernel of calls below the 2^31-byte limit described at the top of this file).
    const std::string &kernel_name() const;
    // Multiply-adds per token row times 2: the FLOP count of one row of forward().
    double flops_per_row() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace gelukit
