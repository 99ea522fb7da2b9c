// gelukit::FeedForward: weight packing, argument checks and dispatch to the FFN kernel libraries.
#include "gelukit/ffn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/ffn_layout.h"
#include "gelukit/error.h"
#include "gelukit/generated/ffn_kernel_headers.h"
#include "gelukit/runtime.h"
#include "halide_glue.h"

namespace gelukit {
namespace {

using ffn_layout::kPanel;
using ArgvFn = int (*)(void **);

struct FfnEntry {
    FfnKernelInfo info;
    ArgvFn fn;
};

FfnKind kind_of(const char *s) {
    const std::string k = s;
    return k == "linear_gelu" ? FfnKind::LinearGelu
         : k == "ffn"         ? FfnKind::Ffn
         : k == "geglu"       ? FfnKind::GeGLU
                              : FfnKind::SwiGLU;
}
DType dtype_of(const char *s) {
    return std::string(s) == "bf16" ? DType::BF16 : DType::F32;
}
Schedule schedule_of(const char *s) {
    const std::string k = s;
    return k == "naive" ? Schedule::Naive : k == "hand" ? Schedule::Hand : k == "tuned" ? Schedule::Tuned : Schedule::Adams2019;
}

const std::vector<FfnEntry> &registry() {
    static const std::vector<FfnEntry> entries = {
#define GELUKIT_FFN_KERNEL(name, kind, dtype, form, schedule, packed) \
    {{#name, kind_of(#kind), dtype_of(#dtype), #form, schedule_of(#schedule), packed != 0}, &name##_argv},
#include "gelukit/generated/ffn_kernels.inc"
#undef GELUKIT_FFN_KERNEL
    };
    return entries;
}

bool ends_with(const std::string &s, const char *suffix) {
    const std::size_t n = std::strlen(suffix);
    return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}
// The AMX kernels (generators/ffn_generator.cpp) are named <row>_amx (schedule_amx: parallel
// tasks of token rows) and <row>_amx_panels (schedule_amx_panels: parallel over weight panels,
// for small M).
bool is_amx_panels(const FfnEntry &e) {
    return ends_with(e.info.name, "_amx_panels");
}
bool is_amx(const FfnEntry &e) {
    return ends_with(e.info.name, "_amx") || is_amx_panels(e);
}

// The kernel for the options: the pinned one (options.kernel), else for the schedule: with
// borrow_weights the one that reads nn.Linear matrices; otherwise the first packed one where
// both are built (Schedule::Hand), else the one that exists (a tuned kernel built unpacked).
const FfnEntry &find_kernel(const FeedForwardOptions &o) {
    const std::string form = o.kind == FfnKind::SwiGLU ? "silu" : form_name(o.form);
    const std::string wanted = std::string(ffn_kind_name(o.kind)) + " kernel for dtype " + dtype_name(o.dtype) +
                               ", form " + form;
    if (!o.kernel.empty()) {
        for (const FfnEntry &e : registry()) {
            if (e.info.name != o.kernel) {
                continue;
            }
            if (e.info.kind != o.kind || e.info.dtype != o.dtype || e.info.form != form) {
                throw Error(ErrorCode::InvalidArgument, "FeedForward: kernel " + o.kernel + " is not a " + wanted +
                                                            " (the options' kind, dtype and form)");
            }
            if (o.borrow_weights && e.info.packed_weights) {
                throw Error(ErrorCode::Unsupported, "FeedForward: kernel " + o.kernel +
                                                        " reads packed weights; borrow_weights needs an _unpacked kernel");
            }
            return e;
        }
        throw Error(ErrorCode::Unsupported, "FeedForward: no FFN kernel named '" + o.kernel +
                                                "' is built (see gelukit::ffn_kernels())");
    }
    const FfnEntry *packed = nullptr, *unpacked = nullptr;
    for (const FfnEntry &e : registry()) {
        if (e.info.kind == o.kind && e.info.dtype == o.dtype && e.info.form == form &&
            e.info.schedule == o.schedule && !is_amx(e)) {
            const FfnEntry *&slot = e.info.packed_weights ? packed : unpacked;
            slot = slot != nullptr ? slot : &e;
        }
    }
    const FfnEntry *found = o.borrow_weights ? unpacked : packed != nullptr ? packed : unpacked;
    if (found == nullptr) {
        throw Error(ErrorCode::Unsupported,
                    "FeedForward: no " + wanted + ", schedule " + schedule_name(o.schedule) +
                        (o.borrow_weights ? " that reads unpacked (borrowed) weights (built for f32, Form::Erf, Ffn "
                                            "and LinearGelu, Schedule::Hand; or use borrow_weights = false)"
                                          : "") +
                        " (see gelukit::ffn_kernels())");
    }
    return *found;
}

// [begin, end) of a view's bytes (rows may be padded). The span is computed with overflow checks
// and must stay below 2^62 bytes and inside the address space (TensorView's limits, tensor.h):
// rows and row stride up to 2^31 - 1 each reach 2^64 bytes, and a wrapped end would let the
// overlap checks below pass views that do overlap.
std::pair<const uint8_t *, const uint8_t *> byte_range(const void *data, int64_t rows, int64_t row_stride,
                                                       int64_t cols, std::size_t es, const char *what) {
    const auto *b = static_cast<const uint8_t *>(data);
    int64_t elems = 0, bytes = 0;
    const bool overflow = rows > 0 && (__builtin_mul_overflow(rows - 1, row_stride, &elems) ||
                                       __builtin_add_overflow(elems, cols, &elems) ||
                                       __builtin_mul_overflow(elems, int64_t(es), &bytes));
    if (overflow || bytes >= (int64_t(1) << 62) ||
        reinterpret_cast<uintptr_t>(b) > std::numeric_limits<uintptr_t>::max() - uintptr_t(bytes)) {
        throw Error(ErrorCode::TooLarge, std::string("FeedForward::forward: ") + what +
                                             " spans 2^62 bytes or more, or past the end of the address space");
    }
    return {b, b + bytes};
}

constexpr int64_t kMaxDim = INT32_MAX;
// Largest d_model / d_ff: a packed panel is kPanel x (K rounded up to a pair) elements, and the
// stride between panels must fit Halide's int32 (2 * 22,369,621 * 48 <= 2^31 - 1). Checked on each
// extent before any product of extents is formed, so no product can overflow int64.
constexpr int64_t kMaxFeatures = 44739242;
// The Adams2019 FFN libraries are scheduled for the BERT-base estimate (generators/ffn_generator.cpp
// set_estimates: 512 tokens, 768 -> 3072 -> 768); none of their output tiles is larger than that
// estimate's output: 512 x 3072 for linear_gelu (out is M x d_ff), 512 x 768 for the kinds that
// end in the second GEMM (out is M x d_model). These are the upper end of the scratch shapes
// autosched_output_shape() tries; the output tiles Halide 21's Adams2019 chose are 256 rows x 384
// columns (linear_gelu) and 16 x 16 (ffn) on x86 since 2026-12-08 (arm-64: 128 x 384, 16 x 4),
// 16 x 48 before (seen in
// build/generators/inspect/*_adams2019.stmt). Their weight and bias reads are clamped to
// the last real panel (clamped_read in ffn_generator.cpp), so a scratch output of any size is
// readable for every problem.
constexpr int64_t kAutoschedMaxRows = 512, kAutoschedMaxColsFirstGemm = 3072, kAutoschedMaxColsSecondGemm = 768;
// The smallest rows / columns tried first (then doubled): one AVX-512 register tile's rows, one
// weight panel (ffn_layout::kPanel).
constexpr int64_t kAutoschedFirstRows = 16, kAutoschedFirstCols = 48;
// The AMX kernel (generators/ffn_generator.cpp, schedule_amx): its tasks are kAmxRows or
// kAmxMinRows token rows (amx_task_rows; shifted inwards, so M is padded up to the task size),
// its GEMMs step K by kAmxK (d_model and the padded d_ff are padded to multiples of it: zero
// columns of h and zero weights add nothing), and it indexes with 32 bits (tensors of 2^31
// bytes or more go to the hand kernel).
using ffn_layout::kAmxK;
using ffn_layout::kAmxMinRows;
using ffn_layout::kAmxPanelsPerTask;
using ffn_layout::kAmxRows;
// Cost of a kAmxRows task over a kAmxMinRows one (amx_task_rows in ffn.h): 12 / 5 = 2.4, from
// the measured 64 x 0.0183 / (16 x 0.0306) ms = 2.39 (BERT-base, one thread, README "Intel AMX").
constexpr int64_t kAmxLargeTaskCost = 12, kAmxSmallTaskCost = 5;

// 64-byte aligned owned storage (one cache line / one zmm).
struct AlignedBytes {
    struct Free {
        void operator()(void *p) const {
            std::free(p);
        }
    };
    std::unique_ptr<uint8_t, Free> ptr;
    std::size_t size = 0;
    void allocate(std::size_t bytes) {
        size = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
        ptr.reset(static_cast<uint8_t *>(std::aligned_alloc(64, size)));
        if (!ptr) {
            throw Error(ErrorCode::TooLarge, "FeedForward: cannot allocate " + std::to_string(bytes) + " bytes");
        }
        std::memset(ptr.get(), 0, size);
    }
};

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

// Checks that `t` is a dense row-major matrix [rows][cols] of dtype dt.
void check_matrix(const char *what, const TensorView &t, DType dt, int64_t rows, int64_t cols) {
    if (t.data == nullptr) {
        throw Error(ErrorCode::InvalidArgument, std::string("FeedForward: ") + what + " is null");
    }
    if (t.dtype != dt) {
        throw Error(ErrorCode::InvalidArgument, std::string("FeedForward: ") + what + " has dtype " +
                                                    dtype_name(t.dtype) + ", expected " + dtype_name(dt));
    }
    if (t.rank != 2 || t.shape[0] != rows || t.shape[1] != cols) {
        throw Error(ErrorCode::InvalidArgument, std::string("FeedForward: ") + what + " is " + t.describe() +
                                                    ", expected shape [" + std::to_string(rows) + "," +
                                                    std::to_string(cols) + "]");
    }
    // (The stride of an extent-1 dimension addresses nothing: any value is accepted there.)
    if ((cols > 1 && t.strides[1] != 1) || (rows > 1 && t.strides[0] != cols)) {
        throw Error(ErrorCode::InvalidArgument, std::string("FeedForward: ") + what + " is " + t.describe() +
                                                    ": weights must be dense row-major (PyTorch nn.Linear layout)");
    }
}

void check_vector(const char *what, const TensorView &t, DType dt, int64_t n) {
    if (t.dtype != dt || t.rank != 1 || t.shape[0] != n || (n > 1 && t.strides[0] != 1)) {
        throw Error(ErrorCode::InvalidArgument, std::string("FeedForward: ") + what + " is " + t.describe() +
                                                    ", expected dense " + dtype_name(dt) + "[" + std::to_string(n) +
                                                    "]");
    }
}

float load_float(const void *p, DType dt, int64_t i) {
    if (dt == DType::F32) {
        return static_cast<const float *>(p)[i];
    }
    const uint32_t bits = uint32_t(static_cast<const uint16_t *>(p)[i]) << 16;  // bf16 = top half
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Packs W [n][k] (PyTorch layout) into panels (ffn_layout.h), zero-padded to k_padded columns
// (the kernel's reduction length: k rounded up to kpair, or for W2 to whole d_ff panels).
// n_panels: the number of panels (>= ceil(n / kPanel); extra ones are zero).
void pack_panels(const TensorView &w, int64_t n, int64_t k, int64_t k_padded, int64_t n_panels, DType dt,
                 AlignedBytes &dst) {
    const int kpair = ffn_layout::kpair_for_bits(int(dtype_size(dt)) * 8);
    const int64_t np = n_panels, kp = ceil_div(k_padded, kpair);
    const std::size_t es = dtype_size(dt);
    dst.allocate(std::size_t(np) * kPanel * kp * kpair * es);
    const uint8_t *src = static_cast<const uint8_t *>(w.data);
    for (int64_t row = 0; row < n; row++) {
        const int64_t po = row / kPanel, pi = row % kPanel;
        for (int64_t col = 0; col < k; col++) {
            const int64_t ko = col / kpair, kk = col % kpair;
            const int64_t idx = ((po * kp + ko) * kPanel + pi) * kpair + kk;
            std::memcpy(dst.ptr.get() + idx * es, src + (row * k + col) * es, es);
        }
    }
}

void pack_bias(const TensorView &b, int64_t n, int64_t n_panels, DType dt, AlignedBytes &dst) {
    dst.allocate(std::size_t(n_panels) * kPanel * sizeof(float));
    float *out = reinterpret_cast<float *>(dst.ptr.get());
    for (int64_t i = 0; b.data != nullptr && i < n; i++) {
        out[i] = load_float(b.data, dt, i);
    }
}

using detail::halide_type_of;
using detail::HalideBuffer;

// Adams2019 shifts its output tiles inwards, so an output smaller than a tile cannot be written in
// place (the tile would start before it). The kernel itself says whether an output shape fits: a
// bounds query with that output (host == nullptr, the inputs real) fails exactly when the shape
// is below a tile in some dimension. Rows are tried at M, then at 16, 32, ... up to the estimate's
// 512 (which always fits), with the widest columns; then columns at d_out, 48, 96, ... up to 3072
// (768) with those rows. Returns the first shape that fits (M x d_out where the output is large
// enough), or the estimate's shape. The queries compute nothing: at MiniLM's M = 16 a call through
// here took as long as a direct call of the kernel on its smallest output (0.7 ms linear_gelu,
// 3.3-3.6 ms ffn with the 16 x 48 tiles of then; review of 2026-12-07).
std::pair<int64_t, int64_t> autosched_output_shape(const FfnEntry &kernel, std::vector<void *> args,
                                                   std::size_t out_arg, halide_type_t type, int64_t M,
                                                   int64_t d_out, int64_t max_cols) {
    const int64_t max_rows = std::max(M, kAutoschedMaxRows);
    max_cols = std::max(d_out, max_cols);
    auto fits = [&](int64_t rows, int64_t cols) {
        HalideBuffer query(nullptr, type, {{cols, 1}, {rows, cols}});
        args[out_arg] = &query.buf;
        const int status = kernel.fn(args.data());
        if (status != 0) {
            detail::clear_halide_error();  // an expected refusal: its message must not linger
        }
        return status == 0;
    };
    // Candidates: want itself, then first, 2 first, ... while below limit, then limit.
    auto first_fit = [](int64_t want, int64_t first, int64_t limit, const auto &ok) {
        if (ok(want)) {
            return want;
        }
        for (int64_t c = first; c < limit; c *= 2) {
            if (c > want && ok(c)) {
                return c;
            }
        }
        return limit;
    };
    const int64_t rows = first_fit(M, kAutoschedFirstRows, max_rows, [&](int64_t r) { return fits(r, max_cols); });
    const int64_t cols = first_fit(d_out, kAutoschedFirstCols, max_cols, [&](int64_t c) { return fits(rows, c); });
    return {rows, cols};
}

// A check kept behind the generator's clamped reads (ffn_generator.cpp, clamped_read): Adams2019
// tiles shift inwards at the tensor edges, and without those clamps they read outside the packed
// panels of a small problem. Halide's bounds query (every buffer with host == nullptr) reports the
// region each input would be read over; any region outside the real buffer is refused here with
// a clear error instead of being left to Halide's generic "accessed at" failure.
void check_autoscheduled_bounds(const FfnEntry *kernel, const std::vector<void *> &args,
                                std::initializer_list<HalideBuffer *> inputs) {
    std::vector<HalideBuffer> query;
    query.reserve(args.size());
    std::vector<void *> qargs = args;
    for (std::size_t i = 0; i < args.size(); i++) {
        for (HalideBuffer *b : inputs) {
            if (args[i] == &b->buf) {
                query.push_back(*b);  // the copy points at its own dims
                query.back().buf.host = nullptr;
                qargs[i] = &query.back().buf;
            }
        }
    }
    if (const int status = kernel->fn(qargs.data()); status != 0) {
        // The constraints of the packed inputs (min 0) already fail the query: same verdict.
        try {
            detail::check_halide_status(status, kernel->info.name + " (bounds query)");
        } catch (const Error &e) {
            throw Error(ErrorCode::Unsupported, "FeedForward: the adams2019 kernel " + kernel->info.name +
                                                    " is scheduled for BERT-sized problems and its tiles do not "
                                                    "fit this one (" + e.what() + "); use Schedule::Hand");
        }
    }
    std::size_t qi = 0;
    for (std::size_t i = 0; i < args.size(); i++) {
        if (qargs[i] == args[i]) {
            continue;
        }
        const halide_buffer_t *real = static_cast<const halide_buffer_t *>(args[i]);
        const halide_buffer_t &need = query[qi++].buf;
        for (int d = 0; d < real->dimensions; d++) {
            if (need.dim[d].min < 0 || need.dim[d].min + need.dim[d].extent > real->dim[d].extent) {
                throw Error(ErrorCode::Unsupported,
                            "FeedForward: the adams2019 kernel " + kernel->info.name +
                                " is scheduled for BERT-sized problems and its tiles do not fit this one (an "
                                "input would be read over [" + std::to_string(need.dim[d].min) + ", " +
                                std::to_string(need.dim[d].min + need.dim[d].extent) + ") of dimension " +
                                std::to_string(d) + ", which has " + std::to_string(real->dim[d].extent) +
                                "); use Schedule::Hand");
            }
        }
    }
}

}  // namespace

const char *ffn_kind_name(FfnKind kind) {
    switch (kind) {
    case FfnKind::LinearGelu:
        return "linear_gelu";
    case FfnKind::Ffn:
        return "ffn";
    case FfnKind::GeGLU:
        return "geglu";
    case FfnKind::SwiGLU:
        return "swiglu";
    }
    return "?";
}

const std::vector<FfnKernelInfo> &ffn_kernels() {
    static const std::vector<FfnKernelInfo> infos = [] {
        std::vector<FfnKernelInfo> v;
        for (const FfnEntry &e : registry()) {
            v.push_back(e.info);
        }
        return v;
    }();
    return infos;
}

int64_t amx_task_rows(int64_t M, int threads) {
    if (M < 1 || M > kMaxDim || threads < 1) {
        throw Error(ErrorCode::InvalidArgument, "amx_task_rows: M (" + std::to_string(M) + ") must be in [1, " +
                                                    std::to_string(kMaxDim) + "] and threads (" +
                                                    std::to_string(threads) + ") >= 1");
    }
    auto rounds = [&](int64_t rows) { return ceil_div(ceil_div(M, rows), int64_t(threads)); };
    return rounds(kAmxRows) * kAmxLargeTaskCost <= rounds(kAmxMinRows) * kAmxSmallTaskCost ? kAmxRows : kAmxMinRows;
}

struct FeedForward::Impl {
    FeedForwardOptions options;
    const FfnEntry *kernel = nullptr;
    // The AMX kernel where it may run (amx_allowed() at construction), else null; `kernel` is
    // then the hand kernel it falls back to (a lowered ISA cap, tensors of 2^31 bytes or more).
    // Schedule::Hand takes the panel-parallel AMX kernel (<row>_amx_panels); pinning takes
    // either (the row-task <row>_amx too).
    const FfnEntry *amx = nullptr;
    int64_t d_model = 0, d_ff = 0, d_out2 = 0;
    // Padded reduction lengths of the packed weights: d_model rounded up to kpair (with an AMX
    // kernel to kAmxK), and the d_ff / d_out panel counts (with AMX, d_ff panels made even so
    // that the padded d_ff, 48 per panel, is a multiple of kAmxK).
    int64_t k_pad = 0, panels_ff = 0, panels_out = 0;
    int kpair = 1;
    AlignedBytes w1, b1, v, w2, b2;
    // Unpacked kernels: the nn.Linear matrices they read (the caller's, or copies in w1/v/w2).
    const void *w1_rows = nullptr, *v_rows = nullptr, *w2_rows = nullptr;

    bool gated() const {
        return options.kind == FfnKind::GeGLU || options.kind == FfnKind::SwiGLU;
    }
    bool second_gemm() const {
        return options.kind != FfnKind::LinearGelu;
    }
    int64_t d_out() const {
        return second_gemm() ? d_out2 : d_ff;
    }
};

FeedForward::FeedForward(const FeedForwardWeights &w, const FeedForwardOptions &options)
    : impl_(std::make_unique<Impl>()) {
    detail::ensure_initialized();
    Impl &im = *impl_;
    im.options = options;
    if (options.dtype != DType::F32 && options.dtype != DType::BF16) {
        throw Error(ErrorCode::Unsupported, std::string("FeedForward: dtype ") + dtype_name(options.dtype) +
                                                " is not supported (f32 or bf16)");
    }
    if (options.residual && options.kind == FfnKind::LinearGelu) {
        throw Error(ErrorCode::InvalidArgument, "FeedForward: residual needs a block whose output is d_model wide "
                                                "(Ffn, GeGLU, SwiGLU), not LinearGelu");
    }
    im.kernel = &find_kernel(options);
    if (is_amx(*im.kernel)) {
        // Pinned AMX kernel: it must be usable here; the hand kernel is its large-tensor fallback.
        if (!detail::amx_allowed()) {
            throw Error(ErrorCode::Unsupported, "FeedForward: kernel " + im.kernel->info.name +
                                                    " needs Intel AMX (AMX-BF16 and the Linux tile-state grant) "
                                                    "and the avx512_sapphirerapids ISA level; not available here");
        }
        im.amx = im.kernel;
        FeedForwardOptions hand = options;
        hand.kernel.clear();
        hand.schedule = Schedule::Hand;
        im.kernel = &find_kernel(hand);
    } else if (options.kernel.empty() && options.schedule == Schedule::Hand && !options.borrow_weights) {
        // Schedule::Hand takes the AMX kernel where one is built for the options and AMX is usable.
        // The panel kernel: as fast as the row-task one or faster at every M measured (README,
        // "Intel AMX"), and parallel over panels x row groups rather than rows only.
        for (const FfnEntry &e : registry()) {
            if (is_amx_panels(e) && e.info.kind == options.kind && e.info.dtype == options.dtype &&
                e.info.form == im.kernel->info.form && e.info.packed_weights && detail::amx_allowed()) {
                im.amx = &e;
                break;
            }
        }
    }
    if (w.w1.data == nullptr || w.w1.rank != 2) {
        throw Error(ErrorCode::InvalidArgument, "FeedForward: w1 must be a [d_ff, d_model] matrix (got " +
                                                    (w.w1.data ? w.w1.describe() : std::string("null")) + ")");
    }
    im.d_ff = w.w1.shape[0];
    im.d_model = w.w1.shape[1];
    if (im.d_ff < 1 || im.d_model < 1) {
        throw Error(ErrorCode::InvalidArgument, "FeedForward: w1 is " + w.w1.describe() + ": empty");
    }
    // Halide strides are int32: a packed panel holds kPanel x (padded K) elements, and the
    // stride between panels must fit (d_model, d_ff <= 44,739,242 after padding).
    if (im.d_model > kMaxFeatures || im.d_ff > kMaxFeatures || ceil_div(im.d_model, 2) * 2 * kPanel > kMaxDim ||
        ceil_div(im.d_ff, kPanel) * kPanel * kPanel > kMaxDim || im.d_ff * im.d_model > (int64_t(1) << 40)) {
        throw Error(ErrorCode::TooLarge, "FeedForward: w1 is " + w.w1.describe() +
                                             ": too large (d_model and d_ff must be <= 44739242, d_model * d_ff "
                                             "<= 2^40)");
    }
    const DType dt = options.dtype;
    im.kpair = ffn_layout::kpair_for_bits(int(dtype_size(dt)) * 8);
    check_matrix("w1", w.w1, dt, im.d_ff, im.d_model);
    if (w.b1.data != nullptr) {
        check_vector("b1", w.b1, dt, im.d_ff);
    }
    const int64_t k_align = im.amx != nullptr ? kAmxK : im.kpair;
    const int64_t k_pad = ceil_div(im.d_model, k_align) * k_align;
    im.k_pad = k_pad;
    im.panels_ff = ceil_div(im.d_ff, kPanel);
    if (im.amx != nullptr) {
        im.panels_ff = ceil_div(im.panels_ff, 2) * 2;  // 96 features per pair: a multiple of kAmxK
    }
    const bool packed = im.kernel->info.packed_weights;
    // An unpacked kernel reads the caller's matrix (borrowed) or FeedForward's plain copy.
    auto keep_rows = [&](const TensorView &t, int64_t rows, int64_t cols, AlignedBytes &copy) -> const void * {
        if (options.borrow_weights) {
            return t.data;
        }
        const std::size_t bytes = std::size_t(rows * cols) * dtype_size(dt);
        copy.allocate(bytes);
        std::memcpy(copy.ptr.get(), t.data, bytes);
        return copy.ptr.get();
    };
    if (packed) {
        pack_panels(w.w1, im.d_ff, im.d_model, k_pad, im.panels_ff, dt, im.w1);
    } else {
        im.w1_rows = keep_rows(w.w1, im.d_ff, im.d_model, im.w1);
    }
    pack_bias(w.b1, im.d_ff, im.panels_ff, dt, im.b1);
    if (im.gated()) {
        check_matrix("v", w.v, dt, im.d_ff, im.d_model);
        if (packed) {
            pack_panels(w.v, im.d_ff, im.d_model, k_pad, im.panels_ff, dt, im.v);
        } else {
            im.v_rows = keep_rows(w.v, im.d_ff, im.d_model, im.v);
        }
    }
    if (im.second_gemm()) {
        if (w.w2.data == nullptr || w.w2.rank != 2 || w.w2.shape[0] < 1) {
            throw Error(ErrorCode::InvalidArgument, "FeedForward: w2 must be a [d_out, d_ff = " + std::to_string(im.d_ff) +
                                                        "] matrix (got " +
                                                        (w.w2.data ? w.w2.describe() : std::string("null")) + ")");
        }
        im.d_out2 = w.w2.shape[0];
        // d_out is an output extent (int32 in Halide); with it bounded, d_out * d_ff cannot overflow.
        if (im.d_out2 > kMaxDim || im.d_out2 * im.d_ff > (int64_t(1) << 40)) {
            throw Error(ErrorCode::TooLarge, "FeedForward: w2 is " + w.w2.describe() +
                                                 ": too large (d_out must be <= 2^31 - 1, d_out * d_ff <= 2^40)");
        }
        check_matrix("w2", w.w2, dt, im.d_out2, im.d_ff);
        if (w.b2.data != nullptr) {
            check_vector("b2", w.b2, dt, im.d_out2);
        }
        if (options.residual && im.d_out2 != im.d_model) {
            throw Error(ErrorCode::InvalidArgument, "FeedForward: residual needs d_out == d_model, but w2 is " +
                                                        w.w2.describe() + " and d_model is " +
                                                        std::to_string(im.d_model));
        }
        // The second GEMM reduces over every column of the padded intermediate (whole panels of
        // d_ff, whose extra columns hold GELU(0) = 0): W2 gets zero rows up to that length.
        im.panels_out = ceil_div(im.d_out2, kPanel);
        if (packed) {
            pack_panels(w.w2, im.d_out2, im.d_ff, im.panels_ff * kPanel, im.panels_out, dt, im.w2);
        } else {
            im.w2_rows = keep_rows(w.w2, im.d_out2, im.d_ff, im.w2);
        }
        pack_bias(w.b2, im.d_out2, im.panels_out, dt, im.b2);
    }
}

namespace {
// h or out with the strides of its extent-1 dimensions made canonical (a single row at row
// stride = its length, a single column at stride 1): such strides address nothing, so any value
// is accepted (as the GELU calls do), and the checks and buffers below see the dense layout.
TensorView canonical_rows(const TensorView &t) {
    TensorView c = t;
    if (c.rank == 2) {
        if (c.shape[1] <= 1) {
            c.strides[1] = 1;
        }
        if (c.shape[0] <= 1) {
            c.strides[0] = c.shape[1];
        }
    }
    return c;
}
}  // namespace

FeedForward::~FeedForward() = default;
FeedForward::FeedForward(FeedForward &&) noexcept = default;
FeedForward &FeedForward::operator=(FeedForward &&) noexcept = default;

int64_t FeedForward::d_model() const {
    return detail::live_impl(impl_, "FeedForward", "d_model").d_model;
}
int64_t FeedForward::d_ff() const {
    return detail::live_impl(impl_, "FeedForward", "d_ff").d_ff;
}
int64_t FeedForward::d_out() const {
    return detail::live_impl(impl_, "FeedForward", "d_out").d_out();
}
const FeedForwardOptions &FeedForward::options() const {
    return detail::live_impl(impl_, "FeedForward", "options").options;
}
const std::string &FeedForward::kernel_name() const {
    const Impl &im = detail::live_impl(impl_, "FeedForward", "kernel_name");
    return im.amx != nullptr && detail::amx_allowed() ? im.amx->info.name : im.kernel->info.name;
}
double FeedForward::flops_per_row() const {
    const Impl &im = detail::live_impl(impl_, "FeedForward", "flops_per_row");
    const double first = 2.0 * double(im.d_model) * double(im.d_ff);
    const double second = 2.0 * double(im.d_ff) * double(im.d_out2);
    switch (im.options.kind) {
    case FfnKind::LinearGelu:
        return first;
    case FfnKind::Ffn:
        return first + second;
    default:
        return 2 * first + second;
    }
}

void FeedForward::forward(const TensorView &h_view, const TensorView &out_view) const {
    const Impl &im = detail::live_impl(impl_, "FeedForward", "forward");
    const DType dt = im.options.dtype;
    const int64_t d_out = im.d_out();
    auto bad = [&](const std::string &msg) { return Error(ErrorCode::InvalidArgument, "FeedForward::forward: " + msg); };
    const TensorView h = canonical_rows(h_view), out = canonical_rows(out_view);
    // Null data is refused unless h is an empty batch ([0, d_model]: nothing is read or written).
    if ((h.data == nullptr || out.data == nullptr) && !(h.rank == 2 && h.shape[0] == 0)) {
        throw bad(std::string(h.data == nullptr ? "h" : "out") + " is null");
    }
    if (h.dtype != dt || out.dtype != dt) {
        throw bad("h is " + h.describe() + " and out is " + out.describe() + "; both must be " + dtype_name(dt) +
                  " like the weights");
    }
    if (h.rank != 2 || h.shape[1] != im.d_model) {
        throw bad("h is " + h.describe() + ", expected [M, d_model = " + std::to_string(im.d_model) + "]");
    }
    const int64_t M = h.shape[0];
    if (out.rank != 2 || out.shape[0] != M || out.shape[1] != d_out) {
        throw bad("out is " + out.describe() + ", expected [M = " + std::to_string(M) + ", " +
                  std::to_string(d_out) + "]");
    }
    if (M < 0) {
        throw bad("h is " + h.describe() + ": negative number of rows");
    }

    if (M > kMaxDim) {
        throw Error(ErrorCode::TooLarge, "FeedForward::forward: M = " + std::to_string(M) + " exceeds 2^31 - 1");
    }
    for (const TensorView *t : {&h, &out}) {
        if (t->strides[0] > kMaxDim) {
            throw Error(ErrorCode::TooLarge, std::string("FeedForward::forward: ") + (t == &h ? "h is " : "out is ") +
                                                 t->describe() + ": row stride exceeds 2^31 - 1 elements");
        }
    }
    // Rows may be padded (row stride >= row length), elements must be contiguous.
    for (const TensorView *t : {&h, &out}) {
        if (t->strides[1] != 1 || (M > 1 && t->strides[0] < t->shape[1])) {
            throw bad((t == &h ? "h is " : "out is ") + t->describe() +
                      ": rows must be contiguous and must not overlap (strides [>= cols, 1])");
        }
    }
    if (M == 0) {
        return;
    }
    const std::size_t es = dtype_size(dt);
    const auto [hb, he] = byte_range(h.data, M, h.strides[0], h.shape[1], es, "h");
    const auto [ob, oe] = byte_range(out.data, M, out.strides[0], out.shape[1], es, "out");
    if (hb < oe && ob < he) {
        throw bad("out overlaps h; the block reads all of h's row while writing it (use a separate buffer)");
    }
    // Borrowed weights are the caller's memory too: out must not overwrite them.
    const struct {
        const char *what;
        const void *rows;
        int64_t n, k;
    } borrowed[] = {{"w1", im.w1_rows, im.d_ff, im.d_model},
                    {"v", im.v_rows, im.d_ff, im.d_model},
                    {"w2", im.w2_rows, im.d_out2, im.d_ff}};
    for (const auto &b : borrowed) {
        if (!im.options.borrow_weights || b.rows == nullptr) {
            continue;
        }
        const auto [wb, we] = byte_range(b.rows, b.n, b.k, b.k, es, b.what);
        if (wb < oe && ob < we) {
            throw bad(std::string("out overlaps the borrowed weight ") + b.what + " (borrow_weights: the kernel reads it "
                      "during the call)");
        }
    }

    // The weights are packed once for the kernel chosen at construction: with an AMX kernel,
    // d_model padded to kAmxK and an even number of d_ff panels (im.k_pad, im.panels_ff). The
    // AMX kernel runs if AMX is still allowed (the ISA cap may have been lowered since) and every
    // buffer it indexes, its per-task z1 / z2 accumulators included, spans less than 2^31 bytes
    // (32-bit indices). Otherwise the vector kernel runs on views of the same panels that leave
    // the AMX padding out (it only needs d_model rounded up to kpair and whole d_ff panels).
    // The row-task kernel takes amx_task_rows rows per task; the panel kernel splits rows in
    // 16-row blocks (M padded to 16 either way, or to the task's 64 rows).
    const bool panels = im.amx != nullptr && is_amx_panels(*im.amx);
    const int64_t amx_task = im.amx != nullptr && !panels ? amx_task_rows(M, num_threads()) : int64_t(kAmxMinRows);
    const int64_t amx_rows = std::max(M, amx_task);
    auto under_2g = [](int64_t elems, std::size_t bytes_per) { return elems < (int64_t(1) << 31) / int64_t(bytes_per); };
    // h is copied (compact rows of im.k_pad) when d_model needs padding or M < the task's rows.
    const int64_t amx_h_stride = (im.k_pad != im.d_model || M < amx_task) ? im.k_pad : h.strides[0];
    // (claim_amx_dispatch last: it checks the cap and marks the dispatch in one step.)
    // Per-task accumulators: row tasks hold amx_task rows x all panels; panel tasks hold all rows
    // x kAmxPanelsPerTask panels, and their activation (all rows x the padded d_ff) is one buffer.
    const bool accumulators_fit =
        panels ? under_2g(amx_rows * kAmxPanelsPerTask * kPanel, sizeof(float)) &&
                     under_2g(amx_rows * im.panels_ff * kPanel, es)
               : under_2g(amx_task * kPanel * std::max(im.panels_ff, im.panels_out), sizeof(float));
    const bool use_amx = im.amx != nullptr && under_2g(amx_rows * amx_h_stride, es) &&
                         under_2g(amx_rows * std::max(out.strides[0], d_out), es) &&
                         under_2g(im.panels_ff * kPanel * std::max(im.k_pad, im.panels_out * kPanel), es) &&
                         accumulators_fit && detail::claim_amx_dispatch();
    // Reduction lengths and d_ff panels of this call, and the panel strides of the packing.
    const int64_t k_pad = use_amx ? im.k_pad : ceil_div(im.d_model, im.kpair) * im.kpair;
    const int64_t panels_ff = use_amx ? im.panels_ff : ceil_div(im.d_ff, kPanel), panels_out = im.panels_out;
    const int64_t run_rows = use_amx ? amx_rows : M;
    void *h_data = h.data;
    int64_t h_row_stride = h.strides[0];
    std::vector<uint16_t> h_copy;
    if (k_pad != im.d_model || run_rows != M) {
        try {
            h_copy.assign(std::size_t(run_rows * k_pad), 0);
        } catch (const std::bad_alloc &) {
            throw Error(ErrorCode::TooLarge, "FeedForward::forward: cannot allocate the padded copy of h");
        }
        for (int64_t m = 0; m < M; m++) {
            std::memcpy(&h_copy[std::size_t(m * k_pad)], hb + std::size_t(m * h.strides[0]) * es, std::size_t(im.d_model) * es);
        }
        h_data = h_copy.data();
        h_row_stride = k_pad;
    }
    const halide_type_t ht = halide_type_of(dt);
    const halide_type_t f32(halide_type_float, 32);
    const int kp = im.kpair;
    HalideBuffer H(h_data, ht, {{k_pad, 1}, {run_rows, h_row_stride}});
    const int64_t ff_pad = panels_ff * kPanel;
    // Packed panels (4-D, ffn_layout.h), or for an unpacked kernel the nn.Linear matrices as
    // Halide (in feature, out feature) with the out features d_model / d_ff apart (2-D).
    // k_padded: the reduction length of this call; k_packed: the one the panels were packed with
    // (their stride), which is larger for the vector kernel on AMX-padded panels.
    const bool packed = im.kernel->info.packed_weights;
    auto weights = [&](const AlignedBytes &panels, const void *rows, int64_t k, int64_t k_padded, int64_t k_packed,
                       int64_t n, int64_t n_panels) {
        if (use_amx) {  // the same panels as 3-D (kk, pi, po * k_padded / 2 + ko): ffn_generator.cpp
            return HalideBuffer(panels.ptr.get(), ht, {{kp, 1}, {kPanel, kp}, {n_panels * (k_padded / kp), kp * kPanel}});
        }
        if (packed) {
            return HalideBuffer(panels.ptr.get(), ht,
                                {{kp, 1}, {kPanel, kp}, {k_padded / kp, kp * kPanel}, {n_panels, k_packed * kPanel}});
        }
        return HalideBuffer(const_cast<void *>(rows), ht, {{k, 1}, {n, k}});
    };
    HalideBuffer W1 = weights(im.w1, im.w1_rows, im.d_model, k_pad, im.k_pad, im.d_ff, panels_ff);
    HalideBuffer B1(im.b1.ptr.get(), f32, {{kPanel, 1}, {panels_ff, kPanel}});
    HalideBuffer V = weights(im.v, im.v_rows, im.d_model, k_pad, im.k_pad, im.d_ff, panels_ff);
    HalideBuffer W2 = weights(im.w2, im.w2_rows, im.d_ff, ff_pad, im.panels_ff * kPanel, im.d_out2, panels_out);
    HalideBuffer B2(im.b2.ptr.get(), f32, {{kPanel, 1}, {panels_out, kPanel}});
    // Adams2019 shifts its output tiles inwards, which writes before the start of an output
    // smaller than a tile: it gets a scratch output of the smallest shape its bounds query
    // accepts (autosched_output_shape, below; allocated after the bounds check) and the real
    // part is copied out. The AMX kernel's last task is shifted inwards to end at row run_rows:
    // with M < the task's rows it writes a scratch output of that many rows.
    const FfnEntry &run = use_amx ? *im.amx : *im.kernel;
    int64_t out_rows = M, out_cols = d_out, out_stride = out.strides[0];
    HalideBuffer O(out.data, ht, {{out_cols, 1}, {out_rows, out_stride}});
    bool residual = im.options.residual;
    int32_t d_ff = int32_t(im.d_ff);

    std::vector<void *> args = {&H.buf, &W1.buf, &B1.buf};
    if (im.gated()) {
        args.push_back(&V.buf);
    }
    if (im.second_gemm()) {
        args.push_back(&W2.buf);
        args.push_back(&B2.buf);
        args.push_back(&residual);
        args.push_back(&d_ff);
    }
    bool large_tasks = amx_task == kAmxRows;  // the row-task AMX kernel's input large_tasks
    if (use_amx && !panels) {
        args.push_back(&large_tasks);
    }
    args.push_back(&O.buf);
    if (run.info.schedule == Schedule::Adams2019) {
        std::tie(out_rows, out_cols) =
            autosched_output_shape(run, args, args.size() - 1, ht, M, d_out,
                                   im.second_gemm() ? kAutoschedMaxColsSecondGemm : kAutoschedMaxColsFirstGemm);
    } else if (run_rows != M) {
        out_rows = run_rows;
    }
    const bool use_scratch = out_rows != M || out_cols != d_out;
    if (use_scratch) {
        out_stride = out_cols;
        O = HalideBuffer(nullptr, ht, {{out_cols, 1}, {out_rows, out_stride}});
    }
    std::vector<uint8_t> scratch;
    if (run.info.schedule == Schedule::Adams2019) {
        check_autoscheduled_bounds(&run, args, {&H, &W1, &B1, &V, &W2, &B2});
    }
    if (use_scratch) {
        try {
            scratch.assign(std::size_t(out_rows * out_cols) * es, 0);
        } catch (const std::bad_alloc &) {
            throw Error(ErrorCode::TooLarge, "FeedForward::forward: cannot allocate the scratch output (" +
                                                 std::to_string(out_rows) + " x " + std::to_string(out_cols) + ") of " +
                                                 run.info.name);
        }
        O.buf.host = scratch.data();
    }
    detail::check_halide_status(run.fn(args.data()), run.info.name);
    if (!scratch.empty()) {
        for (int64_t m = 0; m < M; m++) {
            std::memcpy(static_cast<uint8_t *>(out.data) + std::size_t(m * out.strides[0]) * es,
                        scratch.data() + std::size_t(m * out_cols) * es, std::size_t(d_out) * es);
        }
    }
}

}  // namespace gelukit
