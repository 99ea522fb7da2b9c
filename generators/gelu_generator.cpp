// Pointwise GELU generators: forward y = GELU(x) and backward dx = dy * GELU'(x).
//
// Registered generators: gelu_forward, gelu_backward. One source, several instantiations via
// GeneratorParams (cmake/GelukitKernels.cmake holds the registry):
//   form   = erf | tanh | sigmoid    the GELU variant (erf = exact x*Phi(x/s))
//   math   = acc | fast              acc: float64 internals, <= 1 ULP of the storage type;
//                                    fast: float32 internals (a few float32 ULP)
//   sched  = naive | hand            ignored when an autoscheduler is set (adams2019 builds)
//   vector_multiple, parallel_grain  knobs of the hand schedule (see schedule_cpu)
//   gpu_block, gpu_elems             threads per block and elements per thread of the GPU
//                                    schedule (schedule_gpu)
// Buffer element types come from PARAMS x.type=..., y.type=... (float32, float16, bfloat16).
//
// Tensors are 4-D (the runtime maps rank 1-4 onto 4-D with unit extents). Strides are arbitrary
// for naive/hand: the hand schedule specialises on a unit innermost stride; autoscheduled
// libraries keep Halide's default unit-stride constraint (the runtime packs other views).
#include "Halide.h"
#include "common/gelu_math.h"

namespace {

using namespace Halide;
using gelukit::GeluForm;
using gelukit::MathMode;

enum class ScheduleKind { Naive, Hand };

const std::map<std::string, GeluForm> kFormNames = {
    {"erf", GeluForm::Erf}, {"tanh", GeluForm::Tanh}, {"sigmoid", GeluForm::Sigmoid}};
const std::map<std::string, MathMode> kMathNames = {{"acc", MathMode::Accurate}, {"fast", MathMode::Fast}};
const std::map<std::string, ScheduleKind> kScheduleNames = {{"naive", ScheduleKind::Naive},
                                                            {"hand", ScheduleKind::Hand}};

template<typename Self>
class GeluBase : public Generator<Self> {
public:
    GeneratorParam<GeluForm> form{"form", GeluForm::Erf, kFormNames};
    GeneratorParam<MathMode> math{"math", MathMode::Accurate, kMathNames};
    GeneratorParam<ScheduleKind> sched{"sched", ScheduleKind::Hand, kScheduleNames};
    // Vector width = natural float32 vector width of the target times this (ILP across
    // independent vectors hides the latency of the ~40-deep dependent polynomial/exp chain).
    // 0 = the default of effective_vector_multiple() (schedule files and the tuner use 1-8).
    GeneratorParam<int> vector_multiple{"vector_multiple", 0, 0, 8};
    // Elements per parallel task: large enough (tens of microseconds) to amortise Halide's
    // thread-pool dispatch, small enough to balance 512x3072 activations over a few cores.
    GeneratorParam<int> parallel_grain{"parallel_grain", 16384, 256, 1 << 24};
    // Threads per block of the GPU schedule (schedule_gpu; 32-1024, a multiple of the warp).
    GeneratorParam<int> gpu_block{"gpu_block", 256, 32, 1024};
    // Elements per GPU thread in the dense (one-dimension) specialization of schedule_gpu:
    // unrolled, gpu_block apart so that each load instruction of a warp stays coalesced; more
    // independent loads in flight per thread (Little's law: bandwidth = bytes in flight /
    // latency). 1-16.
    GeneratorParam<int> gpu_elems{"gpu_elems", 4, 1, 16};

protected:
    Var d0{"d0"}, d1{"d1"}, d2{"d2"}, d3{"d3"};

    Type compute_t() const {
        // G46 / FK-21: float64 on a GPU is 1/2 (sm_80) to 1/64 (consumer parts) of the float32
        // rate; GPU kernels are built with float32 internals only.
        if (this->get_target().has_gpu_feature() && math == MathMode::Accurate) {
            throw std::invalid_argument("gelu: math=acc (float64 internals) is not built for GPU targets; use math=fast");
        }
        return gelukit::compute_type(math);
    }

    // GPU targets convert bfloat16 on its bit pattern (gelu_math.h, storage_to_f32).
    bool bf16_bits() const {
        return this->get_target().has_gpu_feature();
    }

    // 1/s in the compute type, evaluated once per call (hoisted by Halide); exact when s = 1.
    // In float64 the rounding of 1/s (2^-53) stays negligible after the tail amplifies it by
    // z^2 <= 225; a float32 1/s cost up to 54 ULP at x = -39, s = 3.
    Expr inverse_scale(const Expr &scale) const {
        Type t = compute_t();
        return Halide::Internal::make_const(t, 1.0) / cast(t, scale);
    }

    void relax_strides(std::initializer_list<OutputImageParam> bufs) {
        if (this->using_autoscheduler()) {
            return;  // autoschedulers assume the default unit innermost stride
        }
        for (OutputImageParam b : bufs) {
            b.dim(0).set_stride(Expr());
        }
    }

    // The one visible branch on target/schedule kind (style.md, pattern 2).
    void schedule_pointwise(Func out, std::initializer_list<OutputImageParam> bufs, const Expr &scale) {
        if (this->using_autoscheduler()) {
            // Estimates: one BERT-base FFN activation (512 tokens x d_ff 3072), flattened.
            for (OutputImageParam b : bufs) {
                b.set_estimates({{0, 512 * 3072}, {0, 1}, {0, 1}, {0, 1}});
            }
            return;
        }
        if (this->get_target().has_gpu_feature()) {
            schedule_gpu(out, bufs);
        } else if (sched == ScheduleKind::Hand) {
            schedule_cpu(out, bufs, scale);
        }
        // naive: Halide's default (serial, scalar, inlined).
    }

    void schedule_gpu(Func out, std::initializer_list<OutputImageParam> bufs) {
        // Three loop nests, the first that applies is used. Measured on an H200 (2026-12-04,
        // bench/cuda/device_check.sh and h200-2026-12-04.txt; f32 forward erf, N = 2^26;
        // device-to-device copy of the same bytes: 4.05 TB/s):
        //  1. one dense dimension (the runtime passes every dense view, whatever its rank, as
        //     [n, 1, 1, 1]) with unit strides and n a multiple of gpu_block * gpu_elems = 1024
        //     (every BERT/GPT activation: d_ff = 3072 is a multiple of 1024, whatever M):
        //     gpu_elems elements per thread, gpu_block apart (each warp-wide load stays
        //     coalesced), unrolled inside the thread loop (outside it, Halide puts a barrier
        //     between the iterations) and without guards (a GuardWithIf body puts a branch
        //     around each element's load; RoundUp is exact here). 208 us, 2.58 TB/s (64% of the
        //     copy). bf16 takes about as long (201 us), so the ~85 SASS instructions per element
        //     of the GELU math (ptxas sm_90, nvdisasm) limit it, not memory. Sweep (wall clock,
        //     best of 5 x 20 calls): 1 / 2 / 4 / 8 / 16 elements per 256-thread block: 250 /
        //     210 / 192 / 185 / 185 us; 4 at 128 / 512 threads: 186 / 199 us. 4 x 256 is kept:
        //     within 4% of the best, and 8 would need n to be a multiple of 2048 (odd M x 3072
        //     is not), and 256 threads serve nest 2 best.
        //  2. one dense dimension, any other n: one element per thread, the tail guarded.
        //     263 us at n = 2^26 - 1 (321 us with 128-thread blocks, 272 with 512).
        //  3. anything else: all block indices are fused into one grid dimension: grid y and z
        //     are limited to 65535 blocks, which a [100000, 768] view with a padded row stride
        //     (d1 = 100000) would exceed; grid x allows 2^31 - 1. Recovering (block, d1, d2, d3)
        //     from the fused index costs 3 integer divisions and 5 remainders by runtime
        //     extents per thread (div.s32 / rem.s32 in the PTX, ~20 instructions each): 764 us
        //     for an 8192 x 8192 view with row stride 8224 (0.70 TB/s), which is what every
        //     call cost before nests 1 and 2 existed (772 us for the dense 2^26).
        if (gpu_block % 32 != 0) {
            throw std::invalid_argument("gelu: gpu_block must be a multiple of the warp size (32)");
        }
        Expr flat = Halide::Internal::const_true();
        for (OutputImageParam b : bufs) {
            flat = flat && b.dim(0).stride() == 1 && b.dim(1).extent() == 1 && b.dim(2).extent() == 1 &&
                   b.dim(3).extent() == 1;
        }
        const int per_block = int(gpu_block) * int(gpu_elems);
        Expr whole = out.output_buffer().dim(0).extent() % per_block == 0;
        Var bx{"bx"}, tx{"tx"}, b{"b"}, xi{"xi"}, u{"u"};
        out.specialize(flat && whole)
            .split(d0, bx, xi, per_block, TailStrategy::RoundUp)
            .split(xi, u, tx, gpu_block, TailStrategy::RoundUp)
            .reorder(u, tx, bx)
            .unroll(u)
            .gpu_blocks(bx)
            .gpu_threads(tx);
        out.specialize(flat).split(d0, bx, tx, gpu_block, TailStrategy::GuardWithIf).gpu_blocks(bx).gpu_threads(tx);
        out.split(d0, bx, tx, gpu_block, TailStrategy::GuardWithIf)
            .fuse(bx, d1, b)
            .fuse(b, d2, b)
            .fuse(b, d3, b)
            .gpu_blocks(b)
            .gpu_threads(tx);
    }

    // The float32 (fast) kernels interleave two vectors per iteration on AVX-512: their loop
    // is ~56 instructions with a ~70-cycle dependent chain through the reciprocal and two
    // polynomials, and in 32 registers the doubled loop does not spill. Measured 2026-12-07 on
    // the Zen 4 VM (gelukit_bench, N = 1,572,864, one thread, builds with 1 and 2 alternated,
    // six rounds with the order swapped; README, GELU speed): tanh forward -10.8%, sigmoid
    // forward -9.3%, erf backward -9.3%; erf forward +0.2% (its doubled loop reloads
    // constants: 127 instructions, not 2 x 56), tanh backward -3.1%, sigmoid backward +1.5%,
    // against -3% to +6% for unchanged controls. The Intel AVX-512 sub-targets get the same
    // width unmeasured. AVX2 and SSE4.1 (16 registers: the doubled loops spill) read mixed
    // (sigmoid forward up to +22%) and keep 1, as do the float64 (acc) kernels (no gain) and
    // ARM (not measured: only qemu here). The tuned kernels set it from the schedule file
    // (1-8; the tuner's default candidate, 1, is this default only for acc kernels).
    int effective_vector_multiple() const {
        if (vector_multiple > 0) {
            return vector_multiple;
        }
        // AVX-512: 16 float32 lanes (the avx512_* sub-targets do not all set Target::AVX512).
        const bool avx512 = this->get_target().arch == Target::X86 && this->natural_vector_size(Float(32)) >= 16;
        return math == MathMode::Fast && avx512 ? 2 : 1;
    }

    void schedule_cpu(Func out, std::initializer_list<OutputImageParam> bufs, const Expr &scale) {
        const int lanes = this->natural_vector_size(Float(32)) * effective_vector_multiple();
        const int grain_vectors = std::max(1, parallel_grain / lanes);
        Expr unit_stride = Halide::Internal::const_true();
        for (OutputImageParam b : bufs) {
            unit_stride = unit_stride && b.dim(0).stride() == 1;
        }
        Var vo{"vo"}, vi{"vi"}, chunk{"chunk"}, task{"task"};
        // Full-width vectors with the tail as one predicated (masked) vector rather than a scalar
        // loop; chunks of parallel_grain elements (and the outer dims) form the parallel tasks.
        auto tile = [&](Stage s) {
            s.split(d0, vo, vi, lanes, TailStrategy::Predicate)
                .vectorize(vi)
                .split(vo, chunk, vo, grain_vectors, TailStrategy::GuardWithIf)
                .fuse(chunk, d1, task)
                .fuse(task, d2, task)
                .fuse(task, d3, task)
                .parallel(task);
        };
        // Unit innermost stride: dense vector loads and stores.
        // Standard GELU (s = 1, the erf form's only common scale) gets its own copy of the loop,
        // in which z = x (Halide substitutes the parameter's value): no z = x / s product per
        // lane, |x| and |z| are one value, and the float64 loop has fewer constants to keep in
        // registers (avx512_zen4 acc forward 108 -> 101 instructions per 16 elements; measured
        // 2026-12-07, N = 1,572,864, one thread: acc forward 1.39 -> 1.29, backward 1.92 -> 1.81,
        // fast forward 0.733 -> 0.695 ns/element, three alternated runs of each build).
        if (form == GeluForm::Erf) {
            tile(out.specialize(unit_stride && scale == 1.0f));
        }
        tile(out.specialize(unit_stride));
        // Any other stride (e.g. every other column): the same loops with strided (gathered)
        // vector loads and stores.
        tile(Stage(out));
    }
};

class GeluForward : public GeluBase<GeluForward> {
public:
    Input<Buffer<void, 4>> x{"x"};
    Input<float> scale{"scale"};  // s of x*Phi(x/s); erf form only (1 for standard GELU)
    Output<Buffer<void, 4>> y{"y"};

    void generate() {
        relax_strides({x, y});
        y(d0, d1, d2, d3) = gelukit::gelu_forward_output(x(d0, d1, d2, d3), form, inverse_scale(scale), compute_t(),
                                                          bf16_bits());
    }

    void schedule() {
        if (using_autoscheduler()) {
            scale.set_estimate(1.0f);
        }
        schedule_pointwise(y, {x, y}, scale);
    }
};

class GeluBackward : public GeluBase<GeluBackward> {
public:
    Input<Buffer<void, 4>> x{"x"};    // forward input
    Input<Buffer<void, 4>> dy{"dy"};  // gradient of the loss w.r.t. GELU(x)
    Input<float> scale{"scale"};
    Output<Buffer<void, 4>> dx{"dx"};

    void generate() {
        relax_strides({x, dy, dx});
        dx(d0, d1, d2, d3) = gelukit::gelu_backward_output(x(d0, d1, d2, d3), dy(d0, d1, d2, d3), form,
                                                           inverse_scale(scale), compute_t(), bf16_bits());
    }

    void schedule() {
        if (using_autoscheduler()) {
            scale.set_estimate(1.0f);
        }
        schedule_pointwise(dx, {x, dy, dx}, scale);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(GeluForward, gelu_forward)
HALIDE_REGISTER_GENERATOR(GeluBackward, gelu_backward)
