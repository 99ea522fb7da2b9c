// GELU entry points: argument checks, layout normalisation and dispatch to the kernel
// libraries of the registry (generated gelu_kernels.inc).
#include "gelukit/gelu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "gelukit/error.h"
#include "gelukit/generated/kernel_headers.h"
#include "gelukit/runtime.h"
#include "halide_glue.h"

namespace gelukit {
namespace {

using ForwardFn = int (*)(halide_buffer_t *, float, halide_buffer_t *);
using BackwardFn = int (*)(halide_buffer_t *, halide_buffer_t *, float, halide_buffer_t *);

struct KernelEntry {
    KernelInfo info;
    bool unit_stride_only;  // autoscheduled: compiled for innermost stride 1
    void (*fn)();           // ForwardFn or BackwardFn, by info.direction
};

constexpr Direction kDir_fwd = Direction::Forward, kDir_bwd = Direction::Backward;
constexpr DType kDType_f32 = DType::F32, kDType_bf16 = DType::BF16, kDType_f16 = DType::F16;
constexpr Form kForm_erf = Form::Erf, kForm_tanh = Form::Tanh, kForm_sigmoid = Form::Sigmoid;
constexpr Math kMath_acc = Math::Accurate, kMath_fast = Math::Fast;
constexpr Schedule kSched_naive = Schedule::Naive, kSched_hand = Schedule::Hand,
                   kSched_adams2019 = Schedule::Adams2019, kSched_tuned = Schedule::Tuned;

const std::vector<KernelEntry> &registry() {
    static const std::vector<KernelEntry> entries = {
#define GELUKIT_GELU_KERNEL(name, dir, dtype, form, math, sched, unit)                             \
    KernelEntry{KernelInfo{#name, kDir_##dir, kDType_##dtype, kForm_##form, kMath_##math, kSched_##sched}, \
                unit, reinterpret_cast<void (*)()>(&name)},
#include "gelukit/generated/gelu_kernels.inc"
#undef GELUKIT_GELU_KERNEL
    };
    return entries;
}

const KernelEntry &find_kernel(Direction dir, DType dtype, const GeluOptions &o) {
    for (const KernelEntry &e : registry()) {
        if (e.info.direction == dir && e.info.dtype == dtype && e.info.form == o.form && e.info.math == o.math &&
            e.info.schedule == o.schedule) {
            return e;
        }
    }
    throw Error(ErrorCode::Unsupported, std::string("no GELU kernel is built for ") +
                                            (dir == Direction::Forward ? "forward" : "backward") + " dtype=" +
                                            dtype_name(dtype) + " form=" + form_name(o.form) +
                                            " math=" + math_name(o.math) + " schedule=" + schedule_name(o.schedule));
}

// Largest extent handed to one kernel call along any dimension: Halide's halide_dimension_t
// holds int32 extents and strides; longer dimensions are processed in slices of this size.
constexpr int64_t kMaxExtent = int64_t(1) << 30;

struct Operand {
    const char *name;
    TensorView view;
    bool is_output;
};

void validate_view(const char *fn, const Operand &op) {
    const TensorView &v = op.view;
    const std::string where = std::string(fn) + ": " + op.name;
    if (v.dtype != DType::F32 && v.dtype != DType::BF16 && v.dtype != DType::F16) {
        throw Error(ErrorCode::Unsupported,
                    where + ": unsupported dtype value " + std::to_string(static_cast<int>(v.dtype)));
    }
    if (v.rank < 1 || v.rank > TensorView::kMaxRank) {
        throw Error(ErrorCode::InvalidArgument, where + ": rank " + std::to_string(v.rank) + " not in [1, 4]");
    }
    for (int d = 0; d < v.rank; d++) {
        if (v.shape[d] < 0) {
            throw Error(ErrorCode::InvalidArgument, where + ": negative extent in " + v.describe());
        }
        if (v.shape[d] > 1 && v.strides[d] < 1) {
            throw Error(ErrorCode::InvalidArgument,
                        where + ": stride " + std::to_string(v.strides[d]) + " of dimension " + std::to_string(d) +
                            " must be >= 1 (" + v.describe() + ")");
        }
        if (v.shape[d] > 1 && v.strides[d] > std::numeric_limits<int32_t>::max()) {
            throw Error(ErrorCode::TooLarge, where + ": stride " + std::to_string(v.strides[d]) +
                                                 " exceeds 2^31-1 elements (" + v.describe() + ")");
        }
    }
    // (An extent 0 anywhere makes the view empty, whatever the other extents are.)
    int64_t count = v.numel() == 0 ? 0 : 1;
    for (int d = 0; d < v.rank && count != 0; d++) {
        if (__builtin_mul_overflow(count, v.shape[d], &count) || count > (int64_t(1) << 62)) {
            throw Error(ErrorCode::TooLarge, where + ": more than 2^62 elements (" + v.describe() + ")");
        }
    }
    if (v.numel() > 0 && v.data == nullptr) {
        throw Error(ErrorCode::InvalidArgument, where + ": null data pointer for " + v.describe());
    }
    // The bytes the view spans, from its first element to past its last: sum (extent-1) * stride,
    // plus one, times the element size. Each term is below 2^62 * 2^31, so it is computed with
    // overflow checks: a wrapped span would let the overlap checks below (and the kernel) run on
    // wrapped addresses. 2^62 bytes is far beyond any address space, so the limit refuses nothing
    // real.
    if (count > 0) {
        int64_t last = 0, bytes = 0;
        bool overflow = false;
        for (int d = 0; d < v.rank && !overflow; d++) {
            int64_t step = 0;
            overflow = __builtin_mul_overflow(v.shape[d] - 1, v.strides[d] > 0 ? v.strides[d] : 0, &step) ||
                       __builtin_add_overflow(last, step, &last);
        }
        overflow = overflow || __builtin_add_overflow(last, int64_t(1), &last) ||
                   __builtin_mul_overflow(last, int64_t(dtype_size(v.dtype)), &bytes) ||
                   bytes >= (int64_t(1) << 62) ||
                   reinterpret_cast<uintptr_t>(v.data) > std::numeric_limits<uintptr_t>::max() - uintptr_t(bytes);
        if (overflow) {
            throw Error(ErrorCode::TooLarge, where + ": spans 2^62 bytes or more, or past the end of the address space (" +
                                                 v.describe() + ")");
        }
    }
    if (op.is_output) {
        detail::check_output_not_self_overlapping(where, v);
    }
}

void validate_call(const char *fn, const std::vector<Operand> &ops, const GeluOptions &o) {
    for (const Operand &op : ops) {
        validate_view(fn, op);
    }
    const TensorView &ref = ops[0].view;
    for (const Operand &op : ops) {
        if (op.view.dtype != ref.dtype) {
            throw Error(ErrorCode::Unsupported, std::string(fn) + ": dtypes differ (" + ops[0].name + " is " +
                                                    dtype_name(ref.dtype) + ", " + op.name + " is " +
                                                    dtype_name(op.view.dtype) + "); mixed dtypes are not built");
        }
        bool same_shape = op.view.rank == ref.rank;
        for (int d = 0; same_shape && d < ref.rank; d++) {
            same_shape = op.view.shape[d] == ref.shape[d];
        }
        if (!same_shape) {
            throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": shape mismatch: " + ops[0].name + " is " +
                                                        ref.describe() + ", " + op.name + " is " + op.view.describe());
        }
    }
    if (ref.numel() > 0) {
        for (const Operand &out : ops) {
            if (!out.is_output) {
                continue;
            }
            auto [olo, ohi] = detail::byte_range(out.view);
            for (const Operand &in : ops) {
                if (&in == &out || detail::same_view(in.view, out.view)) {
                    continue;
                }
                auto [ilo, ihi] = detail::byte_range(in.view);
                if (ilo < ohi && olo < ihi) {
                    throw Error(ErrorCode::InvalidArgument,
                                std::string(fn) + ": " + out.name + " overlaps " + in.name +
                                    " without being the same view (in-place use must pass identical views)");
                }
            }
        }
    }
    // s must be a normal float (>= 2^-126): below that 1/s overflows float32 (the fast kernels).
    // s in [FLT_MIN, 4096] (FLT_MIN, 8] for the float32 formulation): below FLT_MIN 1/s overflows
    // float32; above the maximum the Phi tail beyond the Mills fit is no longer negligible
    // (gelukit/gelu.h has the numbers).
    const bool fast = o.math == Math::Fast;
    const float max_scale = fast ? kGeluMaxScaleFast : kGeluMaxScale;
    if (!(std::isfinite(o.scale) && o.scale >= kGeluMinScale && o.scale <= max_scale)) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(o.scale));
        throw Error(ErrorCode::InvalidArgument,
                    std::string(fn) + ": scale s = " + buf + " must be finite and > 0, at least 1.17549435e-38 and at most " +
                        (fast ? "8 with Math::Fast (the float32 formulation)" : "4096"));
    }
    if (o.form != Form::Erf && o.scale != 1.0f) {
        throw Error(ErrorCode::InvalidArgument, std::string(fn) + ": scale is defined for Form::Erf only (got form " +
                                                    form_name(o.form) + ", scale " + std::to_string(o.scale) + ")");
    }
}

// Normalised layout: Halide order (innermost first), unit dims dropped, mergeable dims merged.
struct Layout {
    int rank = 0;
    std::array<int64_t, 4> extent{};
    std::vector<std::array<int64_t, 4>> strides;  // per operand
};

Layout normalise(const std::vector<Operand> &ops) {
    const TensorView &ref = ops[0].view;
    Layout l;
    l.strides.resize(ops.size());
    for (int d = ref.rank - 1; d >= 0; d--) {  // innermost first
        if (ref.shape[d] == 1) {
            continue;
        }
        bool merge = l.rank > 0;
        for (std::size_t i = 0; merge && i < ops.size(); i++) {
            merge = ops[i].view.strides[d] == l.strides[i][l.rank - 1] * l.extent[l.rank - 1];
        }
        if (merge) {
            l.extent[l.rank - 1] *= ref.shape[d];
        } else {
            for (std::size_t i = 0; i < ops.size(); i++) {
                l.strides[i][l.rank] = ops[i].view.strides[d];
            }
            l.extent[l.rank++] = ref.shape[d];
        }
    }
    if (l.rank == 0) {  // a single element
        l.rank = 1;
        l.extent[0] = 1;
        for (auto &s : l.strides) {
            s[0] = 1;
        }
    }
    return l;
}

using detail::halide_type_of;
using HalideView = detail::HalideBuffer;

void make_halide_view(HalideView &hv, void *data, DType dt, const Layout &l, int operand) {
    hv.buf.host = static_cast<uint8_t *>(data);
    hv.buf.type = halide_type_of(dt);
    hv.buf.dimensions = 4;
    int64_t span = 1;
    for (int d = 0; d < 4; d++) {
        if (d < l.rank) {
            hv.dims[d] = halide_dimension_t(0, static_cast<int32_t>(l.extent[d]),
                                            static_cast<int32_t>(l.strides[operand][d]));
            span = std::max(span, l.strides[operand][d] * l.extent[d]);
        } else {
            hv.dims[d] = halide_dimension_t(0, 1, static_cast<int32_t>(std::min<int64_t>(span, INT32_MAX)));
        }
    }
}

int call_raw(const KernelEntry &k, std::vector<HalideView> &hv, float scale);

void call_kernel(const KernelEntry &k, std::vector<void *> &ptrs, DType dt, const Layout &l, float scale) {
    std::vector<HalideView> hv(ptrs.size());
    for (std::size_t i = 0; i < ptrs.size(); i++) {
        make_halide_view(hv[i], ptrs[i], dt, l, static_cast<int>(i));
    }
    detail::check_halide_status(call_raw(k, hv, scale), k.info.name);
}

// Runs the kernel, slicing any dimension longer than kMaxExtent into equal slices (each at
// least kMaxExtent/2 long: an autoscheduled kernel's tiles fit in every slice).
void run_sliced(const KernelEntry &k, std::vector<void *> ptrs, DType dt, Layout l, float scale) {
    for (int d = 0; d < l.rank; d++) {
        if (l.extent[d] > kMaxExtent) {
            const int64_t total = l.extent[d];
            const int64_t slices = (total + kMaxExtent - 1) / kMaxExtent;
            const int64_t len = (total + slices - 1) / slices;
            const std::size_t esize = dtype_size(dt);
            for (int64_t start = 0; start < total; start += len) {
                Layout part = l;
                part.extent[d] = std::min(len, total - start);
                std::vector<void *> p = ptrs;
                for (std::size_t i = 0; i < p.size(); i++) {
                    p[i] = static_cast<char *>(p[i]) + start * l.strides[i][d] * static_cast<int64_t>(esize);
                }
                run_sliced(k, p, dt, part, scale);
            }
            return;
        }
    }
    call_kernel(k, ptrs, dt, l, scale);
}

// Strided copy between two layouts of the same extents (used to pack views for kernels built
// for unit innermost stride). Element-wise memcpy: not a hot path.
void strided_copy(const void *src, const std::array<int64_t, 4> &src_strides, void *dst,
                  const std::array<int64_t, 4> &dst_strides, const Layout &l, std::size_t esize) {
    std::array<int64_t, 4> e{1, 1, 1, 1};
    for (int d = 0; d < l.rank; d++) {
        e[d] = l.extent[d];
    }
    for (int64_t i3 = 0; i3 < e[3]; i3++) {
        for (int64_t i2 = 0; i2 < e[2]; i2++) {
            for (int64_t i1 = 0; i1 < e[1]; i1++) {
                for (int64_t i0 = 0; i0 < e[0]; i0++) {
                    int64_t so = i0 * src_strides[0] + i1 * src_strides[1] + i2 * src_strides[2] + i3 * src_strides[3];
                    int64_t dof = i0 * dst_strides[0] + i1 * dst_strides[1] + i2 * dst_strides[2] + i3 * dst_strides[3];
                    std::memcpy(static_cast<char *>(dst) + dof * esize, static_cast<const char *>(src) + so * esize,
                                esize);
                }
            }
        }
    }
}

int call_raw(const KernelEntry &k, std::vector<HalideView> &hv, float scale) {
    if (k.info.direction == Direction::Forward) {
        return reinterpret_cast<ForwardFn>(k.fn)(&hv[0].buf, scale, &hv[1].buf);
    }
    return reinterpret_cast<BackwardFn>(k.fn)(&hv[0].buf, &hv[1].buf, scale, &hv[2].buf);
}

// Autoscheduled kernels split their loops with TailStrategy::ShiftInwards: an extent below a
// split factor makes the last tile start before 0 (G39: "accessed at -5"). A bounds query
// (null host pointers) asks the pipeline which region each buffer needs for a dense 1-D extent
// n; the extent is grown until the pipeline stays inside [0, n).
int64_t schedule_safe_extent(const KernelEntry &k, int64_t n, DType dt, float scale, std::size_t operands) {
    int64_t want = n;
    for (int iter = 0; iter < 16; iter++) {
        Layout l;
        l.rank = 1;
        l.extent[0] = want;
        l.strides.assign(operands, {1, 0, 0, 0});
        std::vector<HalideView> hv(operands);
        for (std::size_t i = 0; i < operands; i++) {
            make_halide_view(hv[i], nullptr, dt, l, static_cast<int>(i));
        }
        detail::check_halide_status(call_raw(k, hv, scale), k.info.name + " (bounds query)");
        int64_t lo = 0, hi = want;
        for (const HalideView &h : hv) {
            lo = std::min<int64_t>(lo, h.dims[0].min);
            hi = std::max<int64_t>(hi, int64_t(h.dims[0].min) + h.dims[0].extent);
        }
        if (lo >= 0 && hi <= want) {
            return want;
        }
        want = want - lo + (hi - want);
    }
    throw Error(ErrorCode::Halide, k.info.name + ": could not find an extent its schedule accepts for n = " +
                                       std::to_string(n));
}

void dispatch(const char *fn, Direction dir, const std::vector<Operand> &ops, const GeluOptions &o) {
    detail::ensure_initialized();
    validate_call(fn, ops, o);
    const DType dt = ops[0].view.dtype;
    const KernelEntry &k = find_kernel(dir, dt, o);
    if (ops[0].view.numel() == 0) {
        return;
    }
    Layout l = normalise(ops);
    std::vector<void *> ptrs;
    for (const Operand &op : ops) {
        ptrs.push_back(op.view.data);
    }
    bool dense_1d = l.rank == 1;
    for (const auto &s : l.strides) {
        dense_1d = dense_1d && s[0] == 1;
    }
    const int64_t n = ops[0].view.numel();
    if (!k.unit_stride_only) {
        run_sliced(k, ptrs, dt, l, o.scale);
        return;
    }
    // Autoscheduled kernel: dense 1-D operands of an extent its schedule accepts.
    // In place is not safe here: ShiftInwards tiles overlap, so the overlap would be computed
    // again from already-written outputs (GELU(GELU(x))). Aliased calls take the packed path.
    bool aliased = false;
    for (const Operand &out : ops) {
        for (const Operand &in : ops) {
            aliased = aliased || (out.is_output && !in.is_output && detail::same_view(in.view, out.view));
        }
    }
    const int64_t n_run = n > kMaxExtent ? n : schedule_safe_extent(k, n, dt, o.scale, ops.size());
    if (dense_1d && n_run == n && !aliased) {
        run_sliced(k, ptrs, dt, l, o.scale);
        return;
    }
    // Pack every operand into a dense (zero-padded) buffer, run, unpack the output.
    const std::size_t esize = dtype_size(dt);
    std::array<int64_t, 4> dense{0, 0, 0, 0};
    int64_t step = 1;
    for (int d = 0; d < l.rank; d++) {
        dense[d] = step;
        step *= l.extent[d];
    }
    std::vector<std::vector<char>> storage(ops.size(), std::vector<char>(static_cast<std::size_t>(n_run) * esize, 0));
    Layout packed;
    packed.rank = 1;
    packed.extent[0] = n_run;
    packed.strides.assign(ops.size(), {1, 0, 0, 0});
    std::vector<void *> packed_ptrs;
    for (std::size_t i = 0; i < ops.size(); i++) {
        if (!ops[i].is_output) {
            strided_copy(ptrs[i], l.strides[i], storage[i].data(), dense, l, esize);
        }
        packed_ptrs.push_back(storage[i].data());
    }
    run_sliced(k, packed_ptrs, dt, packed, o.scale);
    for (std::size_t i = 0; i < ops.size(); i++) {
        if (ops[i].is_output) {
            strided_copy(storage[i].data(), dense, ptrs[i], l.strides[i], l, esize);
        }
    }
}

}  // namespace

void gelu_forward(const TensorView &x, const TensorView &y, const GeluOptions &options) {
    dispatch("gelu_forward", Direction::Forward, {{"x", x, false}, {"y", y, true}}, options);
}

void gelu_backward(const TensorView &x, const TensorView &dy, const TensorView &dx, const GeluOptions &options) {
    dispatch("gelu_backward", Direction::Backward, {{"x", x, false}, {"dy", dy, false}, {"dx", dx, true}}, options);
}

Form form_from_name(std::string_view name) {
    static const std::pair<std::string_view, Form> names[] = {
        {"gelu", Form::Erf},           {"gelu_python", Form::Erf},       {"gelu_exact", Form::Erf},
        {"none", Form::Erf},           {"erf", Form::Erf},               {"gelu_new", Form::Tanh},
        {"gelu_pytorch_tanh", Form::Tanh}, {"gelu_fast", Form::Tanh},    {"gelu_tanh", Form::Tanh},
        {"tanh", Form::Tanh},          {"gelu_accurate", Form::Tanh},    {"quick_gelu", Form::Sigmoid},
        {"sigmoid", Form::Sigmoid},
    };
    for (const auto &[n, f] : names) {
        if (n == name) {
            return f;
        }
    }
    throw Error(ErrorCode::InvalidArgument, "unknown GELU name '" + std::string(name) +
                                                "' (known: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, quick_gelu, "
                                                "none, tanh, sigmoid, ...; see gelukit/gelu.h)");
}

const char *form_name(Form form) {
    switch (form) {
    case Form::Erf:
        return "erf";
    case Form::Tanh:
        return "tanh";
    case Form::Sigmoid:
        return "sigmoid";
    }
    return "invalid-form";
}

const char *math_name(Math math) {
    return math == Math::Accurate ? "acc" : math == Math::Fast ? "fast" : "invalid-math";
}

const char *schedule_name(Schedule sched) {
    switch (sched) {
    case Schedule::Naive:
        return "naive";
    case Schedule::Hand:
        return "hand";
    case Schedule::Adams2019:
        return "adams2019";
    case Schedule::Tuned:
        return "tuned";
    }
    return "invalid-schedule";
}

const std::vector<KernelInfo> &gelu_kernels() {
    static const std::vector<KernelInfo> infos = [] {
        std::vector<KernelInfo> v;
        for (const KernelEntry &e : registry()) {
            v.push_back(e.info);
        }
        return v;
    }();
    return infos;
}

}  // namespace gelukit
