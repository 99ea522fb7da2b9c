// Transformer feed-forward generator: GEMM + bias + GELU (or SiLU-gated) epilogue, optionally
// followed by the second GEMM + bias + residual, in one Halide pipeline.
//
// Registered generator: ffn. GeneratorParams (cmake/GelukitKernels.cmake holds the registry):
//   kind   = linear_gelu | ffn | geglu | swiglu
//   form   = erf | tanh | sigmoid          GELU form of the epilogue (swiglu: SiLU, form unused)
//   dtype  = float32 | bfloat16            storage type of h, weights and out (f32 accumulation)
//   math   = acc | fast                    GELU/SiLU epilogue in float64 (acc, CPU rows) or float32
//                                          (fast; the only choice on GPU targets: no float64 in
//                                          device code, handed case G46)
//   sched  = naive | hand                  ignored when an autoscheduler is set (adams2019) and on
//                                          GPU targets (schedule_gpu)
//   m_block                                token rows per parallel task (hand schedule), 0 =
//                                          target default (effective_m_block)
//   avx512_tile_rows                       rows of the AVX-512 register tile, 0 = default (8)
//   avx2_tile_rows, avx2_tile_vectors      the AVX2 register tile, 0 = default (4 x 3 vectors)
//   k_block                                K block of both GEMMs, 0 = target default (AVX2 128)
//   epilogue_at                            0: d_ff activation per task (fused), 1: at root,
//                                          -1 = default (effective_epilogue_at)
//   gpu_rows                               token rows per GPU thread block (schedule_gpu)
//   pack_weights                           1: w1/v/w2 are runtime-packed panels; 0: nn.Linear
//                                          matrices, packed per task in the pipeline (f32 CPU)
//   amx                                    1: both GEMMs on Intel AMX tiles (tdpbf16ps; kind ffn,
//                                          bfloat16, avx512_sapphirerapids only; schedule_amx)
//   amx_panels                             with amx=1: 1 = parallel over weight panels, all M rows
//                                          per task, 128-row groups above M = 256 (schedule_amx_panels)
//
// Arguments (Halide dimension order: innermost first):
//   h      (k, m)            activations, M x d_model row-major
//   w1     (kk, pi, ko, po)  packed W1 (generators/common/ffn_layout.h), d_ff x d_model;
//                            with pack_weights=0: (k, n), the nn.Linear matrix [d_ff][d_model]
//   b1     (pi, po)          float32 bias, zero-padded to whole panels (zeros when absent)
//   v      (kk, pi, ko, po)  packed V (geglu, swiglu); pack_weights=0: (k, n) like w1
//   w2     (kk, pi, ko, po)  packed W2, d_out x d_ff (ffn, geglu, swiglu; d_out = d_model in a
//                            transformer block); pack_weights=0: (k, n), [d_out][d_ff]
//   b2     (pi, po)          float32 bias (ffn, geglu, swiglu)
//   residual (bool)          out += h (ffn, geglu, swiglu)
//   d_ff (int)               the real d_ff (ffn, geglu, swiglu): the activation columns of the
//                            padded last panel are forced to 0 (with h = -inf, 0-weight columns
//                            would otherwise compute -inf * 0 = NaN and poison every output)
//   large_tasks (bool)       amx=1 only: tasks of kAmxRows (64) token rows, else kAmxMinRows (16);
//                            the runtime chooses from M and the thread count (schedule_amx)
//   out    (n, m)            M x d_ff (linear_gelu) or M x d_out, row-major
// With amx=1 w1 and w2 are the same packed panels seen as 3-D (kk, pi, row), row = po * (K / 2)
// + ko (the panels are contiguous, so this is the same memory): Halide 21's AMX matcher
// (ExtractTileOperations) only recognises the weight tile load when the panel index is part of
// the row index (with a separate 4th dimension it stopped with "Store to AMX tile allocation of
// a non-tile value"). The runtime keeps the extra padding contract of schedule_amx: d_model and
// the padded d_ff multiples of 32 (one tile's K), M >= the task's rows (16, or 64 with
// large_tasks).
// Padding contract (the runtime keeps it): d_model is a multiple of kpair (bf16: even; the
// runtime copies h with a zero column otherwise), w1/v/w2/b1/b2 are zero beyond the real sizes
// (packed weights; nn.Linear matrices have exactly the real sizes, see panels() in generate()).
// A zero bias is exactly "no bias": the float32 sums start from +0 either way.
//
// Numerics: products accumulate in float32 (bf16 x bf16 products are exact in float32). The
// epilogue evaluates GELU of the float32 pre-activation in float64 with the pointwise kernels'
// math (gelu_math.h, Math::Accurate: <= 1 float32 ULP), then rounds once to the storage type;
// with math=fast in float32 (gelu_math.h, Math::Fast: a few float32 ULP).
// With bf16 the GELU output is rounded to bf16 for the second GEMM (handed case G28: bias added
// in float32, one rounding).
#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "Halide.h"
#include "common/ffn_layout.h"
#include "common/gelu_math.h"

namespace {

using namespace Halide;
using gelukit::GeluForm;
using gelukit::MathMode;
using gelukit::ffn_layout::kAmxK;
using gelukit::ffn_layout::kAmxMinRows;
using gelukit::ffn_layout::kAmxPanelsPerTask;
using gelukit::ffn_layout::kAmxRows;
using gelukit::ffn_layout::kPanel;

enum class FfnKind { LinearGelu, Ffn, GeGLU, SwiGLU };
enum class ScheduleKind { Naive, Hand };

const std::map<std::string, FfnKind> kKindNames = {
    {"linear_gelu", FfnKind::LinearGelu}, {"ffn", FfnKind::Ffn}, {"geglu", FfnKind::GeGLU}, {"swiglu", FfnKind::SwiGLU}};
const std::map<std::string, GeluForm> kFormNames = {
    {"erf", GeluForm::Erf}, {"tanh", GeluForm::Tanh}, {"sigmoid", GeluForm::Sigmoid}};
const std::map<std::string, MathMode> kMathNames = {{"acc", MathMode::Accurate}, {"fast", MathMode::Fast}};
const std::map<std::string, ScheduleKind> kScheduleNames = {{"naive", ScheduleKind::Naive},
                                                            {"hand", ScheduleKind::Hand}};

// SiLU(x) = x * sigma(x) (Elfwing et al. 2017; SwiGLU, Shazeer 2020) in float64 with the same
// exp and reciprocal as the GELU forms: x / (1 + e^-x) for x >= 0, x e^x / (1 + e^x) below.
// |x| is clamped to 700 (exp_neg_f64's range), beyond which x e^-|x| is far below float32's
// smallest subnormal and the clamp changes nothing for finite x; x = +-inf gives the limits +inf and -0 (an -inf pre-activation comes
// from float32 overflow of the GEMM), x = NaN is left to the caller.
Expr silu_f64(const Expr &x_f32) {
    const Type t = Float(64);
    using gelukit::detail::k;
    Expr x = cast<double>(x_f32);
    Expr ax = min(abs(x), k(t, 700.0));
    Expr ev = gelukit::detail::exp_neg_f64(ax, /*fine=*/true);  // e^{-|x|}
    Expr inv = gelukit::detail::reciprocal(k(t, 1.0) + ev, t);   // 1 / (1 + e^{-|x|})
    const gelukit::StorageClass c = gelukit::classify(x_f32);
    return select(c.is_pos_inf, x, c.is_neg_inf, k(t, -0.0), x >= k(t, 0.0), x * inv, x * ev * inv);
}

// SiLU in float32 (math=fast), with the float32 exp of the GELU tanh form (gelu_math.h,
// exp_neg_f32): e^{-|x|} from a 2^-17 fixed-point split of |x| (exact Cody-Waite reduction in
// integers), x / (1 + e^-|x|) for x >= 0, x e^-|x| / (1 + e^-|x|) below, the 2^-n scaling applied
// last so that subnormal results round once. |x| is clamped to 110: beyond it |x| e^-|x| is below
// float32's smallest subnormal, so x < -110 gives -0 and x > 110 gives x. +-inf give the limits.
Expr silu_f32(const Expr &x) {
    const Type t = Float(32);
    using gelukit::detail::k;
    const double lim = 110.0;
    Expr xc = clamp(x, k(t, -lim), k(t, lim));
    Expr ax = abs(xc);
    gelukit::detail::SplitExp e = gelukit::detail::exp_neg_f32(ax);  // ax 2^17 <= 1.45e7 < 2^24
    Expr ev = gelukit::detail::ldexp_neg(e.mant, e.n);
    Expr inv = gelukit::detail::reciprocal(k(t, 1.0) + ev, t);
    // The first product pinned, as in gelu_sigma: unpinned, LLVM may form 2^-n first (0 beyond
    // n = 149; a host JIT of this function gave 0 for -1.0e-43 at x = -103.6, found by review
    // 2026-12-07; the CUDA PTX happened to keep the order).
    Expr y_neg = gelukit::detail::ldexp_neg(xc * e.mant * inv, e.n, gelukit::detail::negative_lane_mask(x));
    const gelukit::StorageClass c = gelukit::classify(x);
    return select(c.is_pos_inf, x, c.is_neg_inf || x < k(t, -lim), k(t, -0.0), x >= k(t, 0.0), x * inv, y_neg);
}

class FeedForwardGenerator : public Generator<FeedForwardGenerator> {
public:
    GeneratorParam<FfnKind> kind{"kind", FfnKind::Ffn, kKindNames};
    GeneratorParam<GeluForm> form{"form", GeluForm::Erf, kFormNames};
    GeneratorParam<Type> dtype{"dtype", Float(32)};
    GeneratorParam<MathMode> math{"math", MathMode::Accurate, kMathNames};
    GeneratorParam<ScheduleKind> sched{"sched", ScheduleKind::Hand, kScheduleNames};
    // Token rows per parallel task of the hand schedule; 0 = the default, effective_m_block().
    GeneratorParam<int> m_block{"m_block", 0, 0, 4096};
    // Token rows of the AVX-512 register tile (tile_rows): 0 = the reasoned default (8; 4 for
    // the gated kinds). 1-9: 9 rows x 3 accumulators + 3 weights + 1 broadcast = 31 of the 32
    // zmm registers is the most that fits. Other targets ignore it (AVX2 has its own knobs
    // below; the SSE4.1 and NEON one-row tiles are already at their register limit).
    GeneratorParam<int> avx512_tile_rows{"avx512_tile_rows", 0, 0, 9};
    // The AVX2 register tile (8-lane float32 targets; 16 ymm registers): avx2_tile_rows token
    // rows (0 = the default 4) x avx2_tile_vectors vectors of 8 features (0 = the default 3:
    // half of the 48-feature panel; 1, 2, 3 or 6). A tile narrower than the panel walks the
    // panel's slices outside its k loop. Registers: rows x vectors accumulators + vectors
    // weights + 1 broadcast must fit 16 (see tile_rows for the measurements).
    GeneratorParam<int> avx2_tile_rows{"avx2_tile_rows", 0, 0, 12};
    GeneratorParam<int> avx2_tile_vectors{"avx2_tile_vectors", 0, 0, 6};
    // K blocking of both GEMMs (hand schedule), in elements of the reduction. Without it each
    // register tile runs the whole K loop with its accumulators in registers, and the tile's
    // weight slice (24 x K floats = 72 KiB at K = 768) is re-read from L2 by every row tile.
    // With it the accumulators of a whole panel x m_block live in a small buffer (48 x 32
    // floats = 6 KiB), and for each K block every row tile of the task runs over that block, so
    // the block's weights (48 x 128 floats = 24 KiB) are read from L1 by all of them; the cost
    // is one load and store of the tile's accumulators per block.
    // 0 = the target's default (AVX2: 128; AVX-512, SSE4.1, NEON: none, their tiles were
    // measured without it); 8-4096, a multiple of 8 (whole bf16 pairs); a value >= K is one
    // block, i.e. no K blocking.
    GeneratorParam<int> k_block{"k_block", 0, 0, 4096};
    // Summation order of each output of the float32 GEMMs (CPU hand schedule): partial sums of
    // acc_block consecutive K terms, each started from 0 in the register tile, added in turn to
    // the output (which starts at the bias): a two-level sum (Halide rfactor, schedule_gemm).
    // Where K is blocked over an m block of several tiles (k_block; the AVX2 default, the Intel
    // f32 ffn's 256-row tasks with a k_block, the tuned linear_gelu's k_block 4096) a partial sum
    // never spans two K blocks: b = min(acc_block, k_block). One FMA chain over all K (0) adds
    // every term to an accumulator that grows to the size of the result, so its rounding error
    // grows with K x |result| (bound gamma_K, Higham, "Accuracy and Stability of Numerical
    // Algorithms", 2nd ed., sec. 3.1); with blocks of b terms the bound is gamma_(b + K/b).
    // Simulated in float32 on all-MiniLM-L6-v2 (scripts/sim_ffn_summation.py, K = 384 and
    // 1536): layer 0 max |error| against double 1.16e-4 with one chain -> 3.2e-5 with b = 128
    // (rms 1.5e-6 -> 4.4e-7), the other layers 2-7x (max) and ~3x (rms) lower. Measured
    // (gelukit_bench, MiniLM layer 0, M = 16, real weights, Zen 4, 2026-12-06): 1.13e-4 -> 2.95e-5
    // (oneDNN's fused matmul: 3.71e-5). The cost is zeroing the tile and one load, add and store
    // of it per block, ~100 instructions per 128 x 35: BERT-base 512 x 768 x 3072 on Zen 4
    // (gelukit_tune JIT, interleaved, 15 repetitions) one chain was ~3% faster at 1 and 2
    // threads (run-to-run noise on that VM is a few %); in gelukit_bench `ffn_hand` went from
    // 0.975x / 0.945x to 0.962x / 0.940x oneDNN at 1 / 2 threads (runs of the same hour). In the
    // K-blocked path with b = k_block the tile was already loaded and stored once per block, so
    // the cost is the zeroing and one add per block: not measurable on the AVX2 ffn default
    // (BERT-base, JIT for avx2-fma-f16c on Zen 4, 2 x 21 interleaved repetitions per thread
    // count: one chain 0.4-1.4% slower, noise); with b < k_block each b terms add a load and
    // store: the tuned linear_gelu (9 x 48 tile, k_block 4096) 1-2.5% slower on Zen 4.
    // -1 = the default (128 for float32; 0 for bf16); 0 = one chain; 1-4096 = b (float32 CPU
    // hand schedule only: configure() refuses it elsewhere). The GPU schedule already adds
    // 16-term register sums to its shared accumulators (kGpuKBlock).
    GeneratorParam<int> acc_block{"acc_block", -1, -1, 4096};
    // Where the d_ff activation (bias + GELU epilogue of the first GEMM) is computed, for the
    // kinds with a second GEMM (ffn, geglu, swiglu): 0 = per task (m_block rows x d_ff, in L2,
    // read by the second GEMM of the same task: the fused order), 1 = root (all M x d_ff
    // written once, then the second GEMM over all of it: oneDNN's unfused order, which
    // streams the weights once per m_block pass instead of once per task of both GEMMs).
    // -1 = the default, effective_epilogue_at().
    GeneratorParam<int> epilogue_at{"epilogue_at", -1, -1, 1};
    // Token rows per thread block of the GPU schedule (schedule_gpu_gemm): each thread owns
    // 4 rows x 3 features, so a block has 16 x gpu_rows/4 threads (32 rows: 128 threads), one
    // 48 x gpu_rows float32 accumulator tile in shared memory per accumulator (two for geglu and
    // swiglu) and the staged K block of both operands, 16 x (48 + gpu_rows) floats:
    // gpu_shared_bytes(). A multiple of 8 (whole warps), 8-128; the gated kinds at most 96, where
    // the block still fits the 48 KiB of shared memory CUDA gives a kernel without opting in
    // (Halide's CUDA runtime launches with dynamic shared memory and does not opt in).
    // Default 64 (256 threads per block), measured on an H200 (2026-12-04, f32 erf ffn,
    // BERT-base 768 -> 3072 -> 768, wall clock, best of 5 x 10 calls, bitwise-identical outputs
    // for every value): gpu_rows 16 / 32 / 64 / 96 / 128 took 1090 / 827 / 703 / 858 / 885 us
    // at M = 512 and 4270 / 3498 / 3243 / 3516 / 3439 us at M = 4096.
    GeneratorParam<int> gpu_rows{"gpu_rows", 64, 8, 128};
    // Weight layout of the inputs w1, v, w2 (CPU hand schedule, float32):
    //   1 = panels packed once by the runtime (ffn_layout.h), 4-D inputs: the GEMMs stream each
    //       panel contiguously;
    //   0 = the caller's PyTorch nn.Linear matrices, 2-D inputs (dim 0 = in features, dense;
    //       dim 1 = out features), packed inside the pipeline: each task copies the weight panel
    //       it multiplies into a local panel buffer (schedule_pack) before its GEMM, so no packed
    //       copy is kept (FeedForwardOptions::borrow_weights) at the price of one panel copy
    //       per task, i.e. the weights are re-read ceil(M / m_block) times (README, "Weights are
    //       owned or borrowed", has the measurements).
    // bfloat16 keeps 1 (its vdpbf16ps pairs along K need an even K, which the packed copy pads).
    GeneratorParam<int> pack_weights{"pack_weights", 1, 0, 1};
    // Both GEMMs on AMX tiles (schedule_amx): 0 = no (vector FMA/vdpbf16ps tiles), 1 = yes.
    GeneratorParam<int> amx{"amx", 0, 0, 1};
    // With amx=1: 0 = parallel tasks of token rows (schedule_amx); 1 = parallel over weight
    // panels and, above M = 256, 128-row groups (schedule_amx_panels; what Schedule::Hand runs).
    GeneratorParam<int> amx_panels{"amx_panels", 0, 0, 1};

    Input<Buffer<>> *h = nullptr;
    Input<Buffer<>> *w1 = nullptr;
    Input<Buffer<>> *b1 = nullptr;
    Input<Buffer<>> *v = nullptr;
    Input<Buffer<>> *w2 = nullptr;
    Input<Buffer<>> *b2 = nullptr;
    Input<bool> *residual = nullptr;
    Input<int> *d_ff_real = nullptr;
    Input<bool> *large_tasks = nullptr;  // amx only
    Output<Buffer<>> *out = nullptr;

    void configure() {
        const Type st = dtype;
        // Halide 21 does not enforce a GeneratorParam's min/max: the ranges are checked here
        // (the same as cmake/GelukitSchedules.cmake's), so that a direct generator run with a
        // bad value fails with the knob's name rather than building a nonsense schedule.
        const std::pair<const GeneratorParam<int> *, std::array<int, 2>> ranges[] = {
            {&m_block, {0, 4096}},      {&avx512_tile_rows, {0, 9}}, {&avx2_tile_rows, {0, 12}},
            {&avx2_tile_vectors, {0, 6}}, {&k_block, {0, 4096}},     {&epilogue_at, {-1, 1}},
            {&gpu_rows, {8, 128}},       {&pack_weights, {0, 1}},     {&amx, {0, 1}}, {&amx_panels, {0, 1}},
            {&acc_block, {-1, 4096}}};
        for (const auto &[param, range] : ranges) {
            const int value = *param;
            if (value < range[0] || value > range[1]) {
                throw std::invalid_argument("ffn: " + param->name() + " = " + std::to_string(value) + " is outside [" +
                                            std::to_string(range[0]) + ", " + std::to_string(range[1]) + "]");
            }
        }
        if (avx2_tile_vectors != 0 && kPanel % (8 * avx2_tile_vectors) != 0) {
            throw std::invalid_argument("ffn: avx2_tile_vectors must be 0, 1, 2, 3 or 6 (slices of the 48-feature panel)");
        }
        if (k_block % 8 != 0) {
            throw std::invalid_argument("ffn: k_block must be 0 (the target's default) or a multiple of 8");
        }
        if (gpu_rows % 8 != 0) {
            throw std::invalid_argument("ffn: gpu_rows must be a multiple of 8 (whole warps per block)");
        }
        if (get_target().has_gpu_feature() && gpu_shared_bytes() > kGpuSharedLimit) {
            throw std::invalid_argument("ffn: gpu_rows=" + std::to_string(int(gpu_rows)) + " needs " +
                                        std::to_string(gpu_shared_bytes()) +
                                        " bytes of shared memory per block, more than the " +
                                        std::to_string(kGpuSharedLimit) + " a CUDA kernel gets without opting in" +
                                        (gated() ? " (gated kinds: gpu_rows <= 96)" : ""));
        }
        if (epilogue_at > 0 && kind == FfnKind::LinearGelu) {
            throw std::invalid_argument("ffn: epilogue_at applies to the kinds with a second GEMM; linear_gelu's "
                                        "epilogue is always in the output tile");
        }
        if (st != Float(32) && st != BFloat(16)) {
            throw std::invalid_argument("ffn: dtype must be float32 or bfloat16");
        }
        if (get_target().has_gpu_feature() && math == MathMode::Accurate) {
            throw std::invalid_argument("ffn: math=acc (float64 epilogue) is not built for GPU targets; use math=fast");
        }
        // The float32 CPU hand schedule: the only one with unpacked weights and partial sums.
        const bool f32_cpu_hand = st == Float(32) && !get_target().has_gpu_feature() && sched == ScheduleKind::Hand &&
                                  !using_autoscheduler();
        if (acc_block > 0 && !f32_cpu_hand) {
            throw std::invalid_argument("ffn: acc_block > 0 (partial sums) is built for the float32 CPU hand schedule "
                                        "only; elsewhere use -1 (the default) or 0");
        }
        if (pack_weights == 0 && !f32_cpu_hand) {
            throw std::invalid_argument("ffn: pack_weights=0 (weights read in nn.Linear layout) is built for the "
                                        "float32 CPU hand schedule only");
        }
        if (amx && (kind != FfnKind::Ffn || st != BFloat(16) || sched != ScheduleKind::Hand || using_autoscheduler() ||
                    !get_target().has_feature(Target::AVX512_SapphireRapids) || get_target().has_gpu_feature())) {
            throw std::invalid_argument("ffn: amx=1 is built for kind=ffn, dtype=bfloat16, the hand schedule and an "
                                        "x86-64 avx512_sapphirerapids target only");
        }
        if (amx_panels && !amx) {
            throw std::invalid_argument("ffn: amx_panels=1 needs amx=1");
        }
        const int wdims = amx ? 3 : pack_weights ? 4 : 2;
        h = add_input<Buffer<>>("h", st, 2);
        w1 = add_input<Buffer<>>("w1", st, wdims);
        b1 = add_input<Buffer<>>("b1", Float(32), 2);
        if (gated()) {
            v = add_input<Buffer<>>("v", st, wdims);
        }
        if (kind != FfnKind::LinearGelu) {
            w2 = add_input<Buffer<>>("w2", st, wdims);
            b2 = add_input<Buffer<>>("b2", Float(32), 2);
            residual = add_input<bool>("residual");
            d_ff_real = add_input<int>("d_ff");
        }
        if (amx && !amx_panels) {
            large_tasks = add_input<bool>("large_tasks");
        }
        out = add_output<Buffer<>>("out", st, 2);
    }

    void generate() {
        const Type st = dtype;
        kpair = gelukit::ffn_layout::kpair_for_bits(st.bits());
        Input<Buffer<>> &H = *h;
        Expr M = H.dim(1).extent();

        // Inputs as Funcs. The hand and naive schedules only read inside the packed panels; the
        // Adams2019 schedule shifts its tiles inwards (TailStrategy::ShiftInwards), which reads
        // outside them when a tensor is smaller than its tile: see clamped_read. (Wrapping the
        // inputs in BoundaryConditions::repeat_edge made Adams2019 run for over 13 minutes and
        // 8 GB per target: measured, and abandoned.)
        auto input = [&](Input<Buffer<>> *b) -> Func { return Func(*b); };
        // Autoscheduled kernels read the packed weights and biases with the k-block and panel
        // indices clamped to the real ones. The runtime runs them on a zero-padded scratch output
        // at least as large as their tiles (runtime/src/ffn.cpp), whose columns past d_out (or
        // d_ff) would otherwise ask for panels the caller's weights do not have (Adams2019's ffn
        // schedule read W2 panels [0, 64) for BERT-base's 16 with a 3072-column scratch), and
        // Adams2019 computes input wrappers over tiles of k shifted inwards, which start before
        // k = 0 when K is below the tile (the bounds query asked for h columns [-11, -8] at
        // d_model = 5). Clamped, every shape runs; the extra columns repeat the last panel and are
        // never copied out, the extra k values are never summed. The hand and naive schedules
        // read only real panels and keep plain reads. The runtime keeps its bounds query as a
        // check. The clamps are written into the reads at the GEMMs' definitions (clamped_read),
        // not into wrapper Funcs: each wrapper was one more stage for Adams2019 to place, and its
        // search took 165 s (ffn) and 229 s (linear_gelu) per arm-64 target, one at a time,
        // against 25 s and 27 s inline, two side by side (2026-12-08, Zen 4 VM). Only the two dimensions
        // that can exceed their extent are clamped: clamping all four of the weights' (as
        // repeat_edge would) took 2.5 minutes instead of 41 s for the ffn on one x86 target
        // with the wrappers (2026-12-07), and repeat_edge over 13 minutes (above).
        auto clamped_read = [&](Input<Buffer<>> *b, const Func &f, std::vector<Expr> at) -> Expr {
            // Autoscheduled kernels always read packed panels (pack_weights=0 is hand-only,
            // configure() above), so the dimensions below are those of the panels.
            if (!using_autoscheduler()) {
                return f(at);
            }
            for (int d = 0; d < (*b).dimensions(); d++) {
                // The k-block and panel dimensions: ko and po of the weights (kk, pi, ko, po), po
                // of the biases (pi, po). kk and pi have their full extents (kpair, kPanel) in
                // every problem.
                const bool tiled = (*b).dimensions() == 4 ? d >= 2 : d == 1;
                if (tiled) {
                    at[size_t(d)] = clamp(at[size_t(d)], 0, (*b).dim(d).extent() - 1);
                }
            }
            return (*b)(at);
        };
        // pack_weights = 0: the panel view of an nn.Linear matrix W [N][K] (Halide dims (k, n)),
        // packed[po][ko][pi][kk] = W[po * kPanel + pi][ko] (kpair = 1: float32 only). Features
        // past N (the last panel's padding) repeat row N - 1: their results are never used
        // (linear_gelu does not store them; the other kinds zero the activation there, and
        // their second GEMM reduces over exactly d_ff, see r2).
        auto panels = [&](Input<Buffer<>> *b, const char *name) -> Func {
            if (pack_weights) {
                return input(b);
            }
            // Two stages, so that both the reads of W and the writes of the panel are dense:
            // blocks (8 k x 8 features) read along W's rows, then the panel gathers each block's
            // columns (stride-8 loads of a local block, which Halide turns into dense loads and
            // a register transpose).
            // The block of k = 8 ko + ki starts at 8 ko, except that the last one is shifted
            // inwards to end at K (so every read is a whole dense row piece inside W); with
            // K < 8 the block reads clamped k instead (specialised away for K >= 8).
            Func blk{std::string(name) + "_blocks"}, p{std::string(name) + "_panel"};
            Var kk{"kk"}, kb{"kb"}, ki{"ki"}, fi{"fi"}, ko{"ko"}, fo{"fo"};
            Expr K = (*b).dim(0).extent(), wide = K >= 8;
            auto start = [&](const Expr &block) { return select(wide, min(block * 8, K - 8), block * 8); };
            Expr nrow = po * kPanel + fo * 8 + fi;
            blk(ki, fi, ko, fo, po) = (*b)(select(wide, start(ko) + ki, min(ko * 8 + ki, K - 1)),
                                           min(nrow, (*b).dim(1).extent() - 1));
            p(kk, pi, kb, po) = blk(kb - start(kb / 8), pi % 8, kb / 8, pi / 8, po);
            packs.push_back(p);
            pack_blocks.push_back(blk);
            pack_wide.push_back(wide);
            return p;
        };
        W1 = panels(w1, "w1"), B1 = input(b1);
        if (v) {
            V = panels(v, "v");
        }
        if (w2) {
            W2 = panels(w2, "w2"), B2 = input(b2);
        }
        // h with its row index clamped: register tiles and m-blocks past the last token read the
        // last row (their results are never stored), so no input padding is needed for M.
        Func Hf = input(h);
        // Autoscheduled: k clamped too (Adams2019 computes h's wrapper over tiles of k shifted
        // inwards, which start before k = 0 when d_model is below the tile; those values are
        // never summed).
        hc(k, m) = to_f32(Hf(using_autoscheduler() ? clamp(k, 0, H.dim(0).extent() - 1) : Expr(k), clamp(m, 0, M - 1)));

        // First GEMM in panel coordinates (pi, po) of the packed weights, accumulated in float32
        // on top of the bias: z1 = h W1^T + b1.
        Expr z1_biased;  // z1 plus b1 at (pi, po, m)
        if (amx) {
            // AMX: tiles of 16 rows x 16 features accumulate from zero over K in steps of 32
            // (one bf16 tile row of 64 bytes, r1.x); the bias is added in the epilogue (a
            // tile's store must copy the accumulator unchanged). h is read unclamped: the runtime
            // guarantees M >= the rows of a task (kAmxMinRows, or kAmxRows with large_tasks), so
            // the shifted-in last task stays inside h.
            Expr K = H.dim(0).extent();
            r1 = RDom(0, kAmxK, 0, K / kAmxK, "r1");
            mm1(pi, po, m) = 0.0f;
            mm1(pi, po, m) += to_f32(Hf(r1.y * kAmxK + r1.x, m)) *
                              to_f32((*w1)(r1.x % 2, pi, r1.y * (kAmxK / 2) + r1.x / 2 + po * (K / 2)));
            z1(pi, po, m) = mm1(pi, po, m);
            z1_biased = z1(pi, po, m) + B1(pi, po);
        } else {
            r1 = RDom(0, kpair, 0, H.dim(0).extent() / kpair, "r1");
            Expr k1 = r1.y * kpair + r1.x;
            z1(pi, po, m) = clamped_read(b1, B1, {pi, po});
            z1(pi, po, m) += hc(k1, m) * to_f32(clamped_read(w1, W1, {r1.x, pi, r1.y, po}));
            z1_biased = z1(pi, po, m);
            if (gated()) {
                zv(pi, po, m) = 0.0f;
                zv(pi, po, m) += hc(k1, m) * to_f32(clamped_read(v, V, {r1.x, pi, r1.y, po}));
            }
        }

        // The epilogue, in the compute type (float64 for acc, float32 for fast), rounded once to
        // the storage type.
        const Type ct = gelukit::compute_type(math);
        Expr z = z1_biased;
        Expr act;
        if (kind == FfnKind::SwiGLU) {
            act = (math == MathMode::Accurate ? silu_f64(z) : silu_f32(z)) * cast(ct, zv(pi, po, m));
        } else {
            act = gelukit::gelu_eval(z, form, /*gradient=*/false, Internal::make_const(ct, 1.0), ct,
                                     bf16_bits());  // s = 1
            if (gated()) {
                if (form == GeluForm::Erf) {
                    // The erf forward gets x = -inf right only after rounding (x is raised to
                    // -65536 first, gelu_math.h): here its tiny nonzero value would meet the gate
                    // unrounded, and an infinite gate would give -+inf. GELU(-inf) is -0, so the
                    // product is NaN (as IEEE 754's 0 * inf, and as the tanh and sigmoid forms,
                    // whose gelu_eval selects -0, give).
                    act = select(gelukit::classify(z).is_neg_inf, Internal::make_const(ct, -0.0), act);
                }
                act = act * cast(ct, zv(pi, po, m));
            }
        }
        Expr act_st = gelukit::narrow_to_storage(act, st, bf16_bits());
        // NaN in -> NaN out, whatever fast-math assumes (checked on the float32 bit pattern).
        act_st = select(gelukit::classify(z).is_nan, gelukit::quiet_nan(st), act_st);
        if (d_ff_real) {
            act_st = select(pi + po * kPanel < *d_ff_real, act_st, Internal::make_zero(st));
        }
        a(n, m) = act_st_at(act_st, n);

        Output<Buffer<>> &O = *out;
        if (kind == FfnKind::LinearGelu) {
            O(n, m) = a(n, m);
            return;
        }
        // Second GEMM over the (padded) d_ff: z2 = a W2^T + b2, then the residual. Packed
        // weights have zero rows up to whole panels; nn.Linear weights have exactly d_ff
        // columns, so the reduction stops there (a padded column would multiply GELU(.) = 0 by a
        // weight that may be inf).
        Expr y;
        if (amx) {
            // d_ff padded to whole panels (b1 has one column of 48 per panel), a multiple of 32.
            Expr d_ff_pad = (*b1).dim(1).extent() * kPanel;
            r2 = RDom(0, kAmxK, 0, d_ff_pad / kAmxK, "r2");
            mm2(pi, po, m) = 0.0f;
            mm2(pi, po, m) += to_f32(a(r2.y * kAmxK + r2.x, m)) *
                              to_f32((*w2)(r2.x % 2, pi, r2.y * (kAmxK / 2) + r2.x / 2 + po * (d_ff_pad / 2)));
            z2(pi, po, m) = mm2(pi, po, m);
            y = z2(n % kPanel, n / kPanel, m) + B2(n % kPanel, n / kPanel);
        } else {
            Expr d_ff_pad = pack_weights ? (*w1).dim(3).extent() * kPanel : (*w2).dim(0).extent();
            r2 = RDom(0, kpair, 0, d_ff_pad / kpair, "r2");
            Expr k2 = r2.y * kpair + r2.x;
            z2(pi, po, m) = clamped_read(b2, B2, {pi, po});
            z2(pi, po, m) += to_f32(a(k2, m)) * to_f32(clamped_read(w2, W2, {r2.x, pi, r2.y, po}));
            y = z2(n % kPanel, n / kPanel, m);
        }
        // The residual reads h at the output's column; clamped so that bounds inference never
        // asks h for columns it lacks when d_out > d_model (the runtime only allows residual
        // when d_out == d_model).
        Expr res = to_f32(Hf(clamp(n, 0, H.dim(0).extent() - 1), clamp(m, 0, M - 1)));
        y = select(*residual, y + res, y);
        O(n, m) = gelukit::f32_to_storage(y, st, bf16_bits());
    }

    void schedule() {
        // Packed weights and biases are dense panels of kPanel (ffn_layout.h); declaring the
        // extents and strides lets Halide emit aligned dense vector loads.
        for (Input<Buffer<>> *w : {w1, v, w2}) {
            if (w && amx) {
                // 3-D view of the panels (see the argument list at the top), its strides left
                // symbolic: with constant ones (2, 96) the simplifier folded the tile's weight
                // index into a form Halide 21's AMX matcher does not recognise.
                continue;
            } else if (w && !pack_weights) {
                // nn.Linear matrices: dense rows of K, starting at 0.
                w->dim(0).set_min(0).dim(1).set_min(0);
            } else if (w) {
                w->dim(0).set_bounds(0, kpair).dim(1).set_bounds(0, kPanel).set_stride(kpair)
                    .dim(2).set_min(0).set_stride(kpair * kPanel).dim(3).set_min(0);
            }
        }
        for (Input<Buffer<>> *b : {b1, b2}) {
            if (b) {
                b->dim(0).set_bounds(0, kPanel).dim(1).set_min(0);
            }
        }
        // Tensors start at index 0 (the runtime's buffers always do). Without this an output
        // column n maps to panel (n % 48, n / 48) through a per-lane division of the unknown
        // out.min: the epilogue's loads of the accumulators became 16 scalar loads per vector
        // (stmt: ramp(.. + out.min.0, 1, 16) / x16(48)) and linear_gelu ran at 80 instead of
        // ~130 GFLOP/s.
        if (!amx) {  // (amx: h's mins stay symbolic, for the AMX matcher as above)
            (*h).dim(0).set_min(0).dim(1).set_min(0);
        }
        (*out).dim(0).set_min(0).dim(1).set_min(0);
        if (using_autoscheduler()) {
            set_estimates();
            return;
        }
        if (get_target().has_gpu_feature()) {
            schedule_gpu();
            return;
        }
        if (sched == ScheduleKind::Naive) {
            // Serial scalar loops, one full pass per stage (reductions are at root by default);
            // the activation too, else Halide inlines it into the second GEMM and evaluates the
            // GELU d_out times per element (measured: minutes for a 64 x 384 x 1536 block).
            a.compute_root();
            return;
        }
        if (amx) {
            schedule_amx();
            return;
        }
        schedule_hand();
    }

private:
    Var k{"k"}, m{"m"}, n{"n"}, pi{"pi"}, po{"po"};
    Func hc{"hc"}, z1{"z1"}, zv{"zv"}, a{"a"}, z2{"z2"};
    Func mm1{"mm1"}, mm2{"mm2"};  // amx: the AMX accumulator tiles of the two GEMMs
    Func W1, V, W2, B1, B2;
    std::vector<Func> packs;  // pack_weights = 0: the in-pipeline panels of w1 (v) and w2
    std::vector<Func> pack_blocks;  // and their 8 x 8 blocks (same order)
    std::vector<Expr> pack_wide;    // and K >= 8 (the specialisation of their schedule)
    RDom r1, r2;
    int kpair = 1;

    bool gated() const {
        return kind == FfnKind::GeGLU || kind == FfnKind::SwiGLU;
    }

    // GPU targets convert bfloat16 on its bit pattern (gelu_math.h, storage_to_f32).
    bool bf16_bits() const {
        return get_target().has_gpu_feature();
    }
    Expr to_f32(const Expr &e) const {
        return gelukit::storage_to_f32(e, bf16_bits());
    }

    // a(n, m) is the epilogue at panel coordinates (n % kPanel, n / kPanel).
    Expr act_st_at(const Expr &act_st, const Expr &nn) {
        return substitute(pi.name(), nn % kPanel, substitute(po.name(), nn / kPanel, act_st));
    }

    void set_estimates() {
        // BERT-base FFN, M = 512 tokens: 768 -> 3072 -> 768.
        const int d_model = 768, d_ff = 3072, M = 512;
        (*h).set_estimates({{0, d_model}, {0, M}});
        (*w1).set_estimates({{0, kpair}, {0, kPanel}, {0, d_model / kpair}, {0, d_ff / kPanel}});
        (*b1).set_estimates({{0, kPanel}, {0, d_ff / kPanel}});
        if (v) {
            (*v).set_estimates({{0, kpair}, {0, kPanel}, {0, d_model / kpair}, {0, d_ff / kPanel}});
        }
        if (w2) {
            (*w2).set_estimates({{0, kpair}, {0, kPanel}, {0, d_ff / kpair}, {0, d_model / kPanel}});
            (*b2).set_estimates({{0, kPanel}, {0, d_model / kPanel}});
            (*residual).set_estimate(false);
            (*d_ff_real).set_estimate(d_ff);
            (*out).set_estimates({{0, d_model}, {0, M}});
        } else {
            (*out).set_estimates({{0, d_ff}, {0, M}});
        }
    }

    // Register tile: kPanel (48) output features x mr token rows, accumulated in registers over
    // the whole K loop: kPanel/lanes accumulator vectors per row, plus the weight vectors of a k
    // step and the broadcast h values.
    //  AVX-512 (32 zmm): 3 x 8 rows = 24 accumulators + 3 weights + 1 broadcast, no spills.
    //    Measured on one Sapphire Rapids core (Halide JIT, 512x768x3072, no epilogue):
    //    142 GFLOP/s = 81% of the 175 GFLOP/s FMA peak.
    //  AVX2 (16 ymm): 3 vectors (24 features, two slices per panel) x 4 rows = 12 accumulators +
    //    3 weights + 1 broadcast = 16, no spills in the k loop (assembly checked), with K blocks
    //    of 128. The earlier 6 x 2 tile needed 19 registers: LLVM spilled 3 accumulators per k
    //    step, a store-reload on their dependency chain. Measured on the Zen 3 VM (gelukit_tune,
    //    Halide JIT, 2 threads, 512 x 768 x 3072, each interleaved with the old default, final
    //    test): ffn 98.7 -> 64.1 ms with this 4 x 3 tile and K blocks of 128 (the search's best);
    //    linear_gelu 47.5 -> 28.6 ms with 4 x 2 vectors, K blocks of 128, m_block 256, while 6 x 2
    //    vectors without K blocking reached only 41.5 ms and K blocks with the old tile 41.5 ms:
    //    both the spill-free tile and L1-resident weights are needed. SSE4.1 (16 xmm): 12 x 1 row.
    //  AArch64 NEON (32 q): 12 x 1 row. LLVM loads the step's 12 weight vectors up front, so 2
    //    rows (24 accumulators + 12 weights + broadcasts = 38 > 32) spilled 7-21 q-registers per
    //    K step (build-aarch64/generators/inspect/ffn_f32_erf_hand.s); 1 row does not (the gated
    //    kinds' 12-accumulator loops had none).
    // Gated kinds carry two accumulator sets (W1 and V), so half the rows, except on AVX2: in the
    // hand schedule z1 and zv are separate loop nests, and halved AVX2 tiles used only 2 x 3
    // accumulators, 10 of the 16 ymm (found in review); full 4-row tiles there: see the README's
    // FFN speed section for the measurement. (AVX-512 keeps the halving: not measured.)
    // The x86 float32 vector widths the tiles are chosen for (ARM NEON is 4 lanes, like SSE4.1).
    bool avx2_tile() const {
        return get_target().arch != Target::ARM && natural_vector_size(Float(32)) == 8;
    }
    bool avx512_tile() const {
        return get_target().arch != Target::ARM && natural_vector_size(Float(32)) >= 16;
    }

    int tile_rows(bool two_accumulator_sets) const {
        int mr = avx512_tile() ? 8 : avx2_tile() ? 4 : 1;
        if (avx512_tile() && avx512_tile_rows > 0) {
            mr = avx512_tile_rows;  // a tuned value (generators/schedules/)
        }
        if (avx2_tile() && avx2_tile_rows > 0) {
            mr = avx2_tile_rows;  // a tuned value (generators/schedules/)
        }
        // On AVX2 the two sets are separate loop nests (z1 and zv each compute_at their own
        // level, schedule_hand), so each nest has the full 16 ymm: no halving there.
        if (two_accumulator_sets && !avx2_tile()) {
            mr = std::max(1, mr / 2);
        }
        return mr;
    }

    // Features of a register tile: the whole panel, or on AVX2 avx2_tile_vectors vectors.
    int tile_features() const {
        if (avx2_tile()) {
            return avx2_tile_vectors > 0 ? 8 * avx2_tile_vectors : 24;
        }
        return kPanel;
    }

    // K terms per partial sum (acc_block): the knob, else 128 for float32 and one chain (0) for
    // bf16: not measured there, and the bf16 output's own rounding (2^-8 relative) is far above
    // the float32 summation error.
    int effective_acc_block() const {
        if (acc_block >= 0) {
            return acc_block;
        }
        return kpair == 1 ? 128 : 0;
    }
    // K block in elements: the knob, else the target's default (AVX2: 128, see tile_rows;
    // elsewhere none: the AVX-512 and NEON tiles were measured without K blocking).
    int effective_k_block() const {
        if (k_block > 0) {
            return k_block;
        }
        return avx2_tile() ? 128 : 0;
    }

    // The float32 whole-block FFN (kind ffn) on AVX-512: the unfused order (epilogue_at 1) and
    // tasks of one register tile of rows (m_block = tile rows, 8). Measured on the 2-vCPU Zen 4
    // VM (gelukit_tune, Halide JIT, BERT-base 512 x 768 x 3072, candidates interleaved with the
    // incumbent): epilogue_at 0 -> 1 at m_block 32: 26.95 -> 24.88 ms on 2 threads (p = 1e-8),
    // equal on 1 thread (58.4 / 56.4 ms, p = 1); then m_block 32 -> 8: 52.1 -> 46.8 ms on 1
    // thread. The tuner had picked both on Zen 4 (m_block 8, epilogue_at 1, k_block 64) and
    // epilogue_at 1 on Zen 3 (AVX2, m_block 96). So for this kernel the unfused order is the
    // default on every CPU target and one-tile tasks on the Zen 4 sub-target (on the Intel
    // AVX-512 sub-targets 256 rows, see effective_m_block; on AVX2 the Zen 3 optimum was 96 rows,
    // not one 4-row tile; SSE4.1 and NEON were not measured: 32). The gated kinds, linear_gelu
    // and bf16 keep 32 rows and the fused epilogue (not measured otherwise).
    bool f32_ffn_block() const {
        return kind == FfnKind::Ffn && Type(dtype) == Float(32);
    }
    // Token rows per task. 32 by default: the d_ff intermediate of one task stays in L2
    // (32 x 3072 x 4 B = 384 KiB) and M = 512 gives 16 tasks, enough to balance 2-16 cores.
    // The float32 whole-block FFN on AVX-512 (see f32_ffn_block): one register tile (8 rows) on
    // the Zen 4 sub-target, 256 rows on the Intel ones (Sapphire Rapids, Skylake feature sets).
    // Each task streams its weight panels from L3 once, so small tasks multiply the L3 traffic
    // by M / m_block: 64 x 9.4 MB per GEMM at BERT-base with 8 rows, which Zen 4's L3 delivered
    // but Intel's mesh L3 does not. Measured on a 2-vCPU Intel Xeon (Emerald Rapids, AVX-512,
    // 2026-12-03; gelukit_tune, Halide JIT, 512 x 768 x 3072, interleaved with the incumbent,
    // epilogue_at 1, no K blocking): 1 thread m_block 8 57.5 ms, 32 41.3, 256 36.4-36.8, 512
    // 36.5-37.0 (oneDNN 33.0 ms in the AOT bench); 2 threads m_block 8 33.8, 128 27.7, 256 23.7,
    // 512 23.2. (K blocks of 96-192 and 6- or 7-row tiles were slower there.)
    int effective_m_block() const {
        if (m_block > 0) {
            return m_block;
        }
        if (f32_ffn_block() && avx512_tile()) {
            return get_target().has_feature(Target::AVX512_Zen4) ? tile_rows(false) : 256;
        }
        return 32;
    }
    int effective_epilogue_at() const {
        if (epilogue_at >= 0) {
            return epilogue_at;
        }
        return f32_ffn_block() ? 1 : 0;
    }

    // rows: the extent of z's m dimension where it is computed (mr: one register tile; with K
    // blocking the whole m block, walked in register tiles of mr rows inside each K block).
    void schedule_gemm(Func z, const RDom &r, int mr, int lanes, int rows) {
        // The consumer's tiles are guarded at the tensor edges (GuardWithIf), so Halide would
        // shrink the last tile's region to a non-constant size; fixing the realized extent keeps
        // every tile a full kPanel x mr register block (rows past M read the clamped last row).
        z.bound_extent(pi, kPanel).bound_extent(po, 1);
        Stage u = z.update();
        auto pair_lanes = [&](Stage s) {
            if (kpair > 1) {
                // bf16 pairs along k reduce into one float32 lane: Halide matches vdpbf16ps.
                s.atomic().vectorize(r.x);
            }
        };
        const int tf = tile_features();
        // K terms per partial sum (acc_block; 0: one FMA chain; float32 only, configure()).
        const int b = effective_acc_block();
        // The register tile of a stage whose pi extent is one tile (tf features) and m extent mr:
        // k outermost, every k step does tf/lanes weight loads, mr broadcasts of h and
        // mr*tf/lanes FMAs into the tile (unrolled pi and m).
        auto fma_tile = [&](Stage s, const RVar &k) {
            s.reorder(r.x, pi, po, m, k);
            pair_lanes(s);
            s.vectorize(pi, lanes).unroll(pi).unroll(m);
        };
        // Partial sums: rfactor keeps the preserved (outer) K loops in z's update and moves the
        // inner K steps k into zp, one register tile (tf features x mr rows) started from 0 and
        // computed at loop `at` of z's update, which then adds it to z's tile (in registers or
        // on the stack; z starts at the bias). zp's update is the FMA tile.
        auto partial_sum_tile = [&](const std::vector<std::pair<RVar, Var>> &preserved, const VarOrRVar &at,
                                    const RVar &k) {
            Func zp = u.rfactor(preserved);
            zp.compute_at(LoopLevel(z, at)).bound_extent(pi, tf).bound_extent(po, 1).bound_extent(m, mr);
            zp.vectorize(pi, lanes).unroll(pi).unroll(m);
            fma_tile(zp.update(), k);
        };
        Var ps{"ps"}, pf{"pf"}, kv{"kv"}, kv2{"kv2"};
        RVar rko{"rko"}, rki{"rki"}, rkb{"rkb"}, rkt{"rkt"};
        if (rows == mr) {
            // The whole K loop runs in this one register tile (no K blocking, or an m block of
            // one tile).
            z.bound_extent(m, mr).vectorize(pi, lanes).unroll(pi).unroll(m);
            if (b > 0) {
                // K in blocks of b terms, each summed in zp; a tile narrower than the panel walks
                // the panel's slices (ps) outside the blocks.
                u.split(r.y, rko, rki, b, TailStrategy::GuardWithIf);
                partial_sum_tile({{rko, kv}}, rko, rki);
                if (tf == kPanel) {
                    u.reorder(pi, po, m, rko).vectorize(pi, lanes).unroll(pi).unroll(m);
                } else {
                    u.split(pi, ps, pf, tf).reorder(pf, po, m, rko, ps).vectorize(pf, lanes).unroll(pf).unroll(m);
                }
            } else if (tf == kPanel) {
                fma_tile(u, r.y);
            } else {
                // A tile of tf features: the panel's slices (ps) outside the k loop.
                u.split(pi, ps, pf, tf).reorder(r.x, pf, po, m, r.y, ps);
                pair_lanes(u);
                u.vectorize(pf, lanes).unroll(pf).unroll(m);
            }
            return;
        }
        // K blocking (k_block): K block outermost, then the register tiles of the m block, then
        // the block's k steps; the tile's accumulators are loaded once per block (LLVM keeps them
        // in registers over the k loop: the buffer is local and cannot alias the inputs).
        // The m block's rows are computed as far as the consumer needs them, rounded up to whole
        // register tiles (a short last block, or M = 1, costs at most one partial tile, not a
        // whole block); the storage is fixed at the rounded block (48 x rows floats: on the stack
        // up to Halide's 16 KiB limit, i.e. m_block <= 85; larger blocks are one halide_malloc
        // per task and panel, small next to the block's GEMM).
        // With partial sums, a register tile sums each K block (or each b terms of it, b <
        // k_block) from 0 and adds it to the buffer: for b >= k_block the same one load and
        // store of the tile per K block as the chain, plus zeroing and one add; for b < k_block
        // one load, add and store per b terms (k_block / b times the chain's).
        Var mt{"mt"}, mri{"mri"};
        const int kb = std::max(1, effective_k_block() / kpair);
        z.bound_storage(m, rows);
        z.split(m, mt, mri, mr, TailStrategy::RoundUp).vectorize(pi, lanes).unroll(pi).unroll(mri);
        u.split(r.y, rko, rki, kb, TailStrategy::GuardWithIf);
        if (b > 0 && b < kb) {
            u.split(rki, rkb, rkt, b, TailStrategy::GuardWithIf);
            partial_sum_tile({{rko, kv}, {rkb, kv2}}, rkb, rkt);
            u.split(m, mt, mri, mr, TailStrategy::RoundUp).split(pi, ps, pf, tf).reorder(pf, po, mri, rkb, ps, mt, rko);
        } else if (b > 0) {
            partial_sum_tile({{rko, kv}}, ps, rki);
            u.split(m, mt, mri, mr, TailStrategy::RoundUp).split(pi, ps, pf, tf).reorder(pf, po, mri, ps, mt, rko);
        } else {
            u.split(m, mt, mri, mr, TailStrategy::RoundUp)
                .split(pi, ps, pf, tf)
                .reorder(r.x, pf, po, mri, rki, ps, mt, rko);
            pair_lanes(u);
        }
        u.vectorize(pf, lanes).unroll(pf).unroll(mri);
    }

    // GPU (CUDA) schedule. Each GEMM is one kernel over output tiles of one weight panel
    // (kPanel = 48 features) x gpu_rows token rows per block (shown for 32 rows: 16 x 8 = 128
    // threads; the default is 64 rows, 256 threads, see gpu_rows). The
    // block's 48 x 32 accumulators live in shared memory (6 KiB), each thread owning a 3 x 4
    // tile of them: for every k it reads 3 weights and 4 activations and does 12 FMAs
    // (unrolled; the register-tiling idea of Halide's apps/cuda_mat_mul). The K loop runs in
    // blocks of kGpuKBlock: for each, the block's threads first copy the panel's 48 x 16 weights
    // (3 KiB) and the 16 x 32 activations (2 KiB) from global into shared memory, coalesced (16
    // consecutive threads read 16 consecutive floats along each operand's contiguous dimension),
    // then, after a barrier (Halide inserts it), every thread runs its 3 x 4 tile over the 16 k
    // from shared memory: each global element is read once per block instead of once per thread
    // that uses it (16 x for the weights, 8 x for the activations). Within a K block a thread
    // sums its tile in registers (rfactor, below) and adds it to the shared accumulators once
    // per block. The epilogue then reads the tile back with the output's own 3 x 4 thread mapping
    // after a barrier. 4 warps per block; BERT-base GEMM1 (M 512, d_ff 3072) launches 64 x 16 =
    // 1024 blocks; shared memory per block 11 KiB (32 rows; gated kinds 17 KiB: gpu_shared_bytes), so occupancy is bounded by registers,
    // not by shared memory. Two-GEMM kinds store the d_ff activation in global memory between the
    // two kernels (M x d_ff: 6 MiB float32 at BERT-base, L2-resident on A100/H100).
    // Not measured on a GPU (none is lent here): the block sizes are reasoned, not tuned.
    static constexpr int kGpuKBlock = 16;
    static constexpr int kGpuSharedLimit = 48 * 1024;

    // Shared memory of one GEMM thread block of schedule_gpu (Halide allocates it dynamically
    // and reuses the staging buffers between the accumulators of a gated kind): the float32
    // accumulator tiles plus one staged K block of weights and activations. geglu at 32 rows:
    // (2 * 48 * 32 + 16 * (48 + 32)) * 4 = 17 KiB; at 128 rows 59 KiB (refused).
    int gpu_shared_bytes() const {
        const int accumulators = gated() ? 2 : 1;
        return (accumulators * kPanel * gpu_rows + kGpuKBlock * (kPanel + gpu_rows)) * 4;
    }

    struct GpuOperands {
        Func acc;      // the accumulator Func (z1, zv or z2)
        Func act;      // activations (k, m): hc or a
        Func weights;  // packed panels (kk, pi, kb, po): W1, V or W2
    };

    void schedule_gpu_gemm(Func out_f, std::vector<GpuOperands> gemms, const RDom &r) {
        Var no{"no"}, ni{"ni"}, mo{"mo"}, mi{"mi"}, tn{"tn"}, rn{"rn"}, tm{"tm"}, rm{"rm"};
        const int rows = gpu_rows, cols_per_thread = 3, rows_per_thread = 4;  // gpu_rows: 64 by default
        const int col_threads = kPanel / cols_per_thread, row_threads = rows / rows_per_thread;  // 16 x 8
        out_f.split(n, no, ni, kPanel, TailStrategy::GuardWithIf)
            .split(m, mo, mi, rows, TailStrategy::GuardWithIf)
            .split(ni, tn, rn, cols_per_thread, TailStrategy::RoundUp)
            .split(mi, tm, rm, rows_per_thread, TailStrategy::RoundUp)
            .reorder(rn, rm, tn, tm, no, mo)
            .gpu_blocks(no, mo)
            .gpu_threads(tn, tm);
        // The epilogue's 3 x 4 loop is not unrolled: one copy of the GELU code per thread (the
        // unrolled erf epilogue took Halide 130 s to lower per library; the epilogue is a small
        // part of the K-long GEMM).
        for (GpuOperands &g : gemms) {
            Func f = g.acc;
            Var pt{"pt"}, pr{"pr"}, mt{"mt"}, mr{"mr"};
            RVar rko{"rko"}, rki{"rki"};
            // A whole tile even at the tensor edges (rows past M read the clamped last row).
            f.compute_at(out_f, no).bound_extent(pi, kPanel).bound_extent(po, 1).bound_extent(m, rows);
            f.split(pi, pt, pr, cols_per_thread)
                .split(m, mt, mr, rows_per_thread)
                .reorder(pr, mr, pt, mt, po)
                .gpu_threads(pt, mt)
                .unroll(pr)
                .unroll(mr);
            // K in blocks of kGpuKBlock (the tail guarded: no operand is read past K). rfactor
            // turns each block's sum into its own Func, `part`, computed inside the thread loops:
            // a thread's 3 x 4 partial sums are then registers (12 floats, constant indices
            // after unrolling), and only the block loop (rko) is left at block level, where the
            // operands can be staged. f (shared memory) adds each block's partial sums once.
            // (With f accumulated directly, Halide keeps the K-block loop's accumulators either
            // in shared memory, where LLVM cannot tell them from the staged operands and stores
            // them after every FMA, or, stored in registers, as a 6 KiB per-thread local array:
            // ptxas -v, sm_90.) Summation order: blocks of 16 k, each summed from 0 in float32,
            // then added in order: within the GEMM error bound the tests use.
            f.update().split(r.y, rko, rki, kGpuKBlock, TailStrategy::GuardWithIf);
            Var kv{"kv"};
            Func part = f.update().rfactor(rko, kv);
            f.update()
                .split(pi, pt, pr, cols_per_thread)
                .split(m, mt, mr, rows_per_thread)
                .reorder(pr, mr, pt, mt, rko, po)
                .gpu_threads(pt, mt)
                .unroll(pr)
                .unroll(mr);
            part.compute_at(f, pt).unroll(pi).unroll(m);
            part.update().reorder(pi, m, r.x, rki, kv, po).unroll(pi).unroll(m).unroll(r.x);
            // Shared-memory copies of this K block's operands (computed at the block-level K
            // loop, outside the thread loops: Halide places them in shared memory and puts a
            // barrier before their use).
            Func ws = g.weights.in(part);
            std::vector<Var> wa = ws.args();  // (kk, pi, kb, po)
            Var wpo{"wpo"}, wpi{"wpi"}, wko{"wko"}, wki{"wki"};
            ws.compute_at(f, rko)
                .split(wa[1], wpo, wpi, col_threads, TailStrategy::GuardWithIf)
                .split(wa[2], wko, wki, std::min(row_threads, kGpuKBlock), TailStrategy::GuardWithIf)
                .reorder(wa[0], wpi, wki, wpo, wko, wa[3])
                .gpu_threads(wpi, wki);
            Func as = g.act.in(part);
            std::vector<Var> aa = as.args();  // (k, m)
            Var ako{"ako"}, aki{"aki"}, amo{"amo"}, ami{"ami"};
            as.compute_at(f, rko)
                .split(aa[0], ako, aki, std::min(col_threads, kGpuKBlock), TailStrategy::GuardWithIf)
                .split(aa[1], amo, ami, row_threads, TailStrategy::GuardWithIf)
                .reorder(aki, ami, ako, amo)
                .gpu_threads(aki, ami);
        }
    }

    void schedule_gpu() {
        Output<Buffer<>> &O = *out;
        std::vector<GpuOperands> first{{z1, hc, W1}};
        if (gated()) {
            first.push_back({zv, hc, V});
        }
        if (kind == FfnKind::LinearGelu) {
            schedule_gpu_gemm(O, first, r1);
            return;
        }
        a.compute_root();
        schedule_gpu_gemm(a, first, r1);
        schedule_gpu_gemm(O, {{z2, a, W2}}, r2);
    }

    // AMX token rows per parallel task: kAmxRows with the input large_tasks, else kAmxMinRows
    // (one accumulator tile's rows); the runtime pads M up to the task's rows (the tasks shift
    // inwards) and chooses the size from M and the thread count (amx_task_rows in
    // runtime/src/ffn.cpp). Why two sizes: a task streams both weight matrices once (4.5 MiB
    // each at BERT-base, more than L2), so rows per task set the weight traffic per token
    // (per row, a 16-row task cost 1.67x a 64-row one, measured there); but fewer, larger tasks
    // leave cores idle (M = 512 is 8 tasks of 64 rows) and a 64-row task at M = 16 computes 4x
    // the work.

    // Intel AMX (Sapphire Rapids and later; bfloat16 ffn only): each GEMM is a loop over 16 x 16
    // float32 accumulator tiles (tdpbf16ps: a 16-row x 32-K tile of h or of the activation times
    // a 16-K-pair x 16-feature tile of the packed panel, 16 x 16 x 32 multiply-adds), found by
    // Halide's ExtractTileOperations from the vectorized (K, features, rows) update below. Per task
    // (kAmxRows or kAmxMinRows token rows): GEMM 1 over all d_ff panels (3 tiles of 16 features
    // per 48-feature panel) into z1, the bias + GELU epilogue into the bf16 activation a (task rows
    // x d_ff, L2), GEMM 2 into z2, then bias, residual and rounding into out. One accumulator tile
    // per K loop: Halide 21 allows one live AMX allocation, so each step loads both operand tiles
    // (the packed panel layout keeps the weight tile's 16 rows 192 bytes apart, one stream).
    // Loop order inside a task: panel (po), 16-feature slice (pio), then the task's 16-row blocks
    // (mio) innermost, so a slice of weights (16 features x K: 24 KiB at K = 768) is loaded from L3
    // once per task and reused from L1 by the other row blocks; the task's h rows (64 x K bf16,
    // 96 KiB) stay in L2.
    // Measured (gelukit_bench, 2026-12-05/06, 2-vCPU Intel Xeon VM with AMX, BERT-base
    // 512 x 768 x 3072, median of 3, 1 / 2 threads; bench/RESULTS.md "Intel AMX (history)"): row blocks outermost
    // with 32-row tasks (every block streamed all of W1 and W2 from L3) 16.2 / 7.08 ms; row blocks
    // innermost 11.8 / 5.32 ms; 64-row tasks 9.61 / 5.03 ms; oneDNN's AMX kernel 5.9-7.0 /
    // 3.1-3.5 ms in the same runs. 16-row tasks below M = 128: MiniLM 16 x 384 x 1536 took
    // 0.378 ms with one 64-row task, 0.114 ms with one 16-row task. The registry builds it with
    // math=fast (float32 epilogue): perf put the float64 GELU at ~25% of the call; 9.24 -> 8.10 ms.
    // Unrolling the K loop by 2 gave 9.25 ms (LLVM reuses tmm1/tmm2; the chain through the one
    // accumulator tile stays serial).
    void schedule_amx() {
        if (amx_panels) {
            schedule_amx_panels();
            return;
        }
        Output<Buffer<>> &O = *out;
        Var mo{"mo"}, mi{"mi"}, no{"no"}, ni{"ni"};
        auto tasks = [&](Stage s, int rows) {
            s.split(m, mo, mi, rows, TailStrategy::ShiftInwards)
                .split(n, no, ni, 16, TailStrategy::GuardWithIf)
                .reorder(ni, mi, no, mo)
                .vectorize(ni)
                .parallel(mo);
        };
        // specialize() copies the schedule so far; the tiles below are shared by both cases.
        tasks(O.specialize(*large_tasks), kAmxRows);
        tasks(O, kAmxMinRows);
        amx_tiles(z1, mm1, r1, O, mo);
        a.compute_at(O, mo).vectorize(n, 16);
        amx_tiles(z2, mm2, r2, O, mo);
    }

    // The GEMM accumulators z of both AMX schedules, computed at (consumer, at): 16 x 16 tiles
    // (16 features x 16 token rows) in AMX tile memory (mm), the row blocks innermost; the rows'
    // last block shifted inwards (the row-task kernel's tasks are whole blocks, the panel
    // kernel's M or 128 rows may not be).
    void amx_tiles(Func z, Func mm, const RDom &r, Func consumer, const Var &at) {
        Var pio{"pio"}, pii{"pii"}, mio{"mio"}, mii{"mii"};
        z.compute_at(consumer, at)
            .split(pi, pio, pii, 16)
            .split(m, mio, mii, 16, TailStrategy::ShiftInwards)
            .reorder(pii, mii, mio, pio, po)
            .vectorize(pii)
            .vectorize(mii);
        mm.compute_at(z, mio).store_in(MemoryType::AMXTile).vectorize(pi).vectorize(m);
        mm.update().reorder({r.x, pi, m, r.y, po}).atomic().vectorize(r.x).vectorize(pi).vectorize(m);
    }

    // Weight panels per parallel task of schedule_amx_panels (96 features: the padded d_ff is a
    // whole number of panel pairs, see the runtime's panels_ff), and its token rows per task
    // where M > 2 * kAmxRowGroup (below, all M rows). Row groups measured (2-vCPU Intel VM,
    // 2026-12-06, against the row-task kernel called alternately, BERT-base and MiniLM, M = 384,
    // 512, 1024, 1 and 2 threads): 64 rows 0.91-1.09x, 128 rows 0.98-1.13x, 256 rows 0.75-1.07x.
    static constexpr int kAmxRowGroup = 128;

    // AMX parallel over weight panels (amx_panels=1; the kernel Schedule::Hand runs): schedule_amx
    // computes whole row tasks (M = 48 pays for 64 rows) and leaves threads idle at small M
    // (M = 16: one task, one core). Here each GEMM is parallel over weight panels and, where
    // M > 256, 128-row groups: GEMM 1 + epilogue into the activation a at root (M x d_ff bf16) in
    // tasks of kAmxPanelsPerTask d_ff panels, then GEMM 2 + bias + residual in tasks of
    // kAmxPanelsPerTask output panels. The same 16 x 16 tiles and loop order inside a task as
    // schedule_amx (row blocks innermost); the rows are split in 16-row blocks shifted inwards
    // (the runtime pads M to at least 16).
    void schedule_amx_panels() {
        Output<Buffer<>> &O = *out;
        Var no{"no"}, ni{"ni"}, nio{"nio"}, nii{"nii"}, mg{"mg"}, mr{"mr"};
        auto panel_tasks = [&](Func f) {
            // M > 2 * kAmxRowGroup: tasks of (panels, 128-row group), the last group shifted
            // inwards; below, every task takes all M rows. (specialize() copies the schedule so
            // far: both cases are written out in full.)
            f.specialize((*out).dim(1).extent() > 2 * kAmxRowGroup)
                .split(n, no, ni, kPanel * kAmxPanelsPerTask, TailStrategy::GuardWithIf)
                .split(ni, nio, nii, 16, TailStrategy::GuardWithIf)
                .split(m, mg, mr, kAmxRowGroup, TailStrategy::ShiftInwards)
                .reorder(nii, mr, nio, no, mg)
                .vectorize(nii)
                .parallel(no)
                .parallel(mg);
            f.split(n, no, ni, kPanel * kAmxPanelsPerTask, TailStrategy::GuardWithIf)
                .split(ni, nio, nii, 16, TailStrategy::GuardWithIf)
                .reorder(nii, m, nio, no)
                .vectorize(nii)
                .parallel(no);
        };
        a.compute_root();
        panel_tasks(a);
        amx_tiles(z1, mm1, r1, a, no);
        panel_tasks(O);
        amx_tiles(z2, mm2, r2, O, no);
    }

    void schedule_hand() {
        const int lanes = natural_vector_size(Float(32));
        const int mr1 = tile_rows(gated());  // rows of a GEMM1 tile (W1, and V when gated)
        const int mr2 = tile_rows(false);    // rows of an output tile of the second GEMM
        const int mb = std::max<int>(mr2, (effective_m_block() / mr2) * mr2);
        Output<Buffer<>> &O = *out;
        Var mo{"mo"}, mi{"mi"}, mio{"mio"}, mii{"mii"}, no{"no"}, ni{"ni"};

        // Output tiles of kPanel x mr, guarded at the edges; tasks are blocks of up to mb token
        // rows (task_rows below; and, nested, the output's panels, which keeps 2+ cores busy when M is small).
        const int mr_out = kind == FfnKind::LinearGelu ? mr1 : mr2;
        // Loop order inside a task: weight panel (no) outside the row tiles (mio), so each panel
        // (48 x K floats: 144 KiB at K = 768, 576 KiB at K = 3072) is read from L3 once per task
        // and from L2 by the task's other mb / mr row tiles.
        // Parallel tasks of task_rows (<= mb) rows x one panel, row tiles of mr inside, guarded at the edges
        // (the output, and the d_ff activation when it is computed at root).
        //
        // The task's rows: mb where M is a multiple of it, else balanced shares of M. With
        // GuardWithIf a task's row tile loop (mio) always runs mb / mr times, and the GEMM tiles
        // computed at mio (or at no for the K-blocked buffer) are evaluated for every one of
        // them; only the stores past M are guarded. With a constant mb = 512, M = 128 computed
        // 4x the GEMM work and M = 1 64x (measured on Zen 4, AVX-512, 1 thread, 128 x 768 x 3072:
        // 47.5 ms for the unpacked kernel vs 13.2 ms for m_block 32), and M = 513 would compute a
        // second full block for one row. So where M is not a multiple of mb the blocks are
        // ceil(M / mb) shares of M, each rounded up to whole register tiles (fewer than n_tasks * mr
        // rows are computed past M in all, possibly all in the last task, e.g. M = 17, mb = 16,
        // mr = 8: tasks of 16 and 1 rows; unpacked M = 128: 14.4 ms). That split factor is symbolic
        // (every buffer sized from it too); where M is a multiple of mb a specialisation keeps
        // the constant factor, i.e. the previous loop nest (whether the symbolic one is slower
        // was not resolved on the noisy VM: bench/RESULTS.md, "FFN speed (history)", Zen 4).
        // (max(): M = 0 is never run, the runtime returns first, but keeps the factor positive.)
        Expr M = max((*h).dim(1).extent(), 1);
        Expr n_tasks = (M + (mb - 1)) / mb;
        Expr task_rows = ((M + n_tasks - 1) / n_tasks + (mr_out - 1)) / mr_out * mr_out;
        auto tile_tasks = [&](Func f, const Var &outer, const Var &inner, int mr) {
            auto tasks = [&](Stage s, const Expr &rows) {
                s.split(m, outer, inner, rows, TailStrategy::GuardWithIf)
                    .split(n, no, ni, kPanel, TailStrategy::GuardWithIf)
                    .split(inner, mio, mii, mr, TailStrategy::GuardWithIf)
                    .reorder(ni, mii, mio, no, outer)
                    .vectorize(ni, lanes)
                    .parallel(outer)
                    .parallel(no);
            };
            // specialize() copies the schedule so far; what follows it is the general case's.
            tasks(f.specialize(M % mb == 0), mb);
            tasks(f, task_rows);
        };
        tile_tasks(O, mo, mi, mr_out);
        // Without K blocking each GEMM's accumulators are computed per register tile (mio);
        // with it, per panel (no) of the m block, the K-block loop outside the row tiles.
        const bool kb = effective_k_block() > 0;
        // The K-blocked accumulator buffer holds whole register tiles (m block rounded up).
        auto kb_rows = [&](int mr) { return kb ? (mb + mr - 1) / mr * mr : mr; };
        if (kind == FfnKind::LinearGelu) {
            // GEMM and epilogue per output tile: the pre-activation never leaves registers/L1.
            for (Func z : {z1, zv}) {
                if (z.defined()) {
                    schedule_gemm(z.compute_at(O, kb ? no : mio), r1, mr1, lanes, kb_rows(mr1));
                }
            }
            schedule_pack(W1, O, no, lanes);
            schedule_pack(V, O, no, lanes);
            return;
        }
        schedule_gemm(z2.compute_at(O, kb ? no : mio), r2, mr2, lanes, kb_rows(mr2));
        schedule_pack(W2, O, no, lanes);
        Var ao{"ao"}, ai{"ai"};
        if (effective_epilogue_at() == 0) {
            // Whole block: per task of task_rows token rows, the d_ff intermediate a (mb x d_ff: 384 KiB
            // at d_ff 3072, L2-resident) is computed tile by tile (GEMM1 + epilogue), then read by
            // the second GEMM's tiles; it never makes a round trip through memory.
            a.compute_at(O, mo)
                .split(n, no, ni, kPanel, TailStrategy::RoundUp)
                .split(m, mio, mii, mr1, TailStrategy::RoundUp)
                .reorder(ni, mii, mio, no)
                .vectorize(ni, lanes)
                .parallel(no);
        } else {
            // Unfused order: all of a first (tasks of task_rows x one panel, like the output), then
            // the second GEMM reads it back from L3/memory (M x d_ff x 4 B: 6 MiB at BERT-base).
            // GuardWithIf on m: a has exactly M rows here (the runtime's rows, no padding).
            a.compute_root();
            tile_tasks(a, ao, ai, mr1);
        }
        for (Func z : {z1, zv}) {
            if (z.defined()) {
                schedule_gemm(z.compute_at(a, kb ? no : mio), r1, mr1, lanes, kb_rows(mr1));
            }
        }
        schedule_pack(W1, a, no, lanes);
        schedule_pack(V, a, no, lanes);
    }

    // pack_weights = 0: the panel of an nn.Linear matrix that a task's GEMM multiplies (kPanel
    // features x all of K) is copied into a local buffer at the task's panel loop (no), so the
    // micro-kernel reads the same contiguous panel as with runtime-packed weights. One copy per
    // task and panel: the whole matrix is copied ceil(M / m_block) times per call (at least once, so
    // at small M the copy dominates). Per 8 k x 8 features: a block of 8 dense row pieces of W
    // (a fixed-size stack buffer: every block dimension is bounded, else Halide sized it
    // symbolically and called halide_malloc per block, 73,728 times per BERT-base call; found
    // in review), then the panel's 8 rows of 8 features read from the block. The first version
    // vectorized across the panel's features straight from W: gathers of 48 rows 12 KiB apart,
    // all in one L1 set, +38% time at BERT-base.
    void schedule_pack(Func p, Func consumer, const Var &panel_loop, int lanes) {
        if (pack_weights || !p.defined() ||
            std::none_of(packs.begin(), packs.end(), [&](const Func &f) { return f.name() == p.name(); })) {
            return;
        }
        size_t i = 0;
        while (packs[i].name() != p.name()) {
            i++;
        }
        Func blk = pack_blocks[i];
        const std::vector<Var> args = p.args();  // kk, pi, kb, po
        const std::vector<Var> bargs = blk.args();  // ki, fi, ko, fo, po
        Var kbo{"kbo"}, kbi{"kbi"}, pio{"pio"}, pii{"pii"};
        p.compute_at(consumer, panel_loop)
            .bound_extent(args[0], 1)
            .bound_extent(args[1], kPanel)
            .bound_extent(args[3], 1)
            .split(args[2], kbo, kbi, 8, TailStrategy::GuardWithIf)
            .split(args[1], pio, pii, 8)
            .reorder(args[0], pii, kbi, pio, kbo, args[3])
            .vectorize(pii)
            .unroll(kbi);
        p.specialize(pack_wide[i]);  // after the schedule, which the specialisation inherits
        // One block per (kbo, pio): 8 dense row reads of 8 k.
        blk.compute_at(p, pio)
            .bound(bargs[0], 0, 8)
            .bound(bargs[1], 0, 8)
            .bound_extent(bargs[2], 1)
            .bound_extent(bargs[3], 1)
            .bound_extent(bargs[4], 1)
            .vectorize(bargs[0])
            .unroll(bargs[1]);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(FeedForwardGenerator, ffn)
