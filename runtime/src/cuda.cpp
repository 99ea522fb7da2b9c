// CUDA entry points (gelukit/cuda.h): device probe, Halide CUDA context/stream hooks, argument
// checks and the calls into the CUDA kernel libraries (generated cuda_kernels.inc).
//
// The CUDA driver is reached through dlopen("libcuda.so.1"), like Halide's own CUDA runtime
// does: the library builds and links on machines without the CUDA toolkit or a driver, and a
// missing driver is an Error at run time, never a load failure or an abort (G42, FK-30).
#include "gelukit/cuda.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "gelukit/error.h"
#include "halide_glue.h"

#if GELUKIT_HAVE_CUDA
#include "HalideRuntimeCuda.h"
#include "gelukit/generated/cuda_ffn_kernel_headers.h"
#include "gelukit/generated/cuda_kernel_headers.h"
#endif
#include "common/ffn_layout.h"

namespace gelukit::cuda {
namespace {

// --- The driver API subset gelukit itself needs (probe, primary context) ---------------------
// Types and values from the CUDA driver API (cuda.h), declared here so no CUDA header is needed.
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

struct Driver {
    std::string error;  // non-empty: unusable, and why
    CUresult (*cuInit)(unsigned) = nullptr;
    CUresult (*cuDriverGetVersion)(int *) = nullptr;
    CUresult (*cuDeviceGetCount)(int *) = nullptr;
    CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
    CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
    CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;

    std::string describe(CUresult r) const {
        const char *name = nullptr;
        if (cuGetErrorName && cuGetErrorName(r, &name) == 0 && name) {
            return std::string(name) + " (" + std::to_string(r) + ")";
        }
        return "CUresult " + std::to_string(r);
    }
};

const Driver &driver() {
    static const Driver d = [] {
        Driver d;
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
        }
        if (!lib) {
            const char *why = dlerror();
            d.error = std::string("the NVIDIA driver library could not be loaded (dlopen of libcuda.so.1 and "
                                  "libcuda.so failed: ") +
                      (why ? why : "no message") + "): no NVIDIA driver is installed on this machine";
            return d;
        }
        auto sym = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
            if (!fn && d.error.empty()) {
                d.error = std::string("libcuda.so.1 lacks ") + name;
            }
        };
        sym(d.cuInit, "cuInit");
        sym(d.cuDriverGetVersion, "cuDriverGetVersion");
        sym(d.cuDeviceGetCount, "cuDeviceGetCount");
        sym(d.cuDeviceGet, "cuDeviceGet");
        sym(d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
        sym(d.cuDeviceGetName, "cuDeviceGetName");
        sym(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
        sym(d.cuGetErrorName, "cuGetErrorName");
        if (d.error.empty()) {
            CUresult r = d.cuInit(0);
            if (r != 0) {
                d.error = "cuInit failed: " + d.describe(r) + " (driver present, no usable device?)";
            }
        }
        return d;  // the library stays loaded for the life of the process (as Halide's does)
    }();
    return d;
}

DeviceStatus probe(int device) noexcept {
    DeviceStatus s;
#if !GELUKIT_HAVE_CUDA
    (void)device;
    s.reason = "gelukit was built without CUDA (GELUKIT_CUDA=OFF)";
    return s;
#else
    try {
        const Driver &d = driver();
        if (!d.error.empty()) {
            s.reason = d.error;
            return s;
        }
        d.cuDriverGetVersion(&s.driver_version);
        CUresult r = d.cuDeviceGetCount(&s.device_count);
        if (r != 0 || s.device_count <= 0) {
            s.reason = r != 0 ? "cuDeviceGetCount failed: " + d.describe(r) : std::string("no CUDA device present");
            return s;
        }
        if (device < 0 || device >= s.device_count) {
            s.reason = "device " + std::to_string(device) + " does not exist (" + std::to_string(s.device_count) +
                       " device(s))";
            return s;
        }
        CUdevice dev = 0;
        if ((r = d.cuDeviceGet(&dev, device)) != 0) {
            s.reason = "cuDeviceGet failed: " + d.describe(r);
            return s;
        }
        char name[256] = {0};
        d.cuDeviceGetName(name, sizeof(name) - 1, dev);
        s.name = name;
        d.cuDeviceGetAttribute(&s.major, kAttrComputeCapabilityMajor, dev);
        d.cuDeviceGetAttribute(&s.minor, kAttrComputeCapabilityMinor, dev);
        if (s.major < 8) {
            s.reason = "device " + std::to_string(device) + " (" + s.name + ") has compute capability " +
                       std::to_string(s.major) + "." + std::to_string(s.minor) +
                       "; the kernels are PTX for sm_80 and need 8.0 or newer";
            return s;
        }
        s.available = true;
    } catch (...) {
        s.reason = "unexpected exception while probing the CUDA driver";
    }
    return s;
#endif
}

}  // namespace

DeviceStatus cuda_device_available(int device) noexcept {
    return probe(device);
}

bool built_with_cuda() noexcept {
    return GELUKIT_HAVE_CUDA != 0;
}

const char *schedule_name(Schedule s) {
    return s == Schedule::Hand ? "hand" : s == Schedule::Anderson2021 ? "anderson2021" : s == Schedule::Tuned ? "tuned" : "?";
}

const char *halide_target() {
#if GELUKIT_HAVE_CUDA
    return GELUKIT_CUDA_HALIDE_TARGET;
#else
    return "";
#endif
}

namespace {

// --- Registry ---------------------------------------------------------------------------------
// The generated signatures (user_context target feature: a leading const void *).
using ForwardFn = int (*)(const void *, halide_buffer_t *, float, halide_buffer_t *);
using BackwardFn = int (*)(const void *, halide_buffer_t *, halide_buffer_t *, float, halide_buffer_t *);

struct Entry {
    KernelInfo info;
    void (*fn)();
};

#if GELUKIT_HAVE_CUDA
constexpr Direction kDir_fwd = Direction::Forward, kDir_bwd = Direction::Backward;
constexpr DType kDType_f32 = DType::F32, kDType_bf16 = DType::BF16, kDType_f16 = DType::F16;
constexpr Form kForm_erf = Form::Erf, kForm_tanh = Form::Tanh, kForm_sigmoid = Form::Sigmoid;
constexpr Schedule kSched_hand = Schedule::Hand, kSched_anderson2021 = Schedule::Anderson2021,
                   kSched_tuned = Schedule::Tuned;
#endif

const std::vector<Entry> &registry() {
    static const std::vector<Entry> entries = {
#if GELUKIT_HAVE_CUDA
#define GELUKIT_CUDA_GELU_KERNEL(name, dir, dtype, form, sched)                                          \
    Entry{KernelInfo{#name, kDir_##dir, kDType_##dtype, kForm_##form, kSched_##sched},                    \
          reinterpret_cast<void (*)()>(&name)},
#include "gelukit/generated/cuda_kernels.inc"
#undef GELUKIT_CUDA_GELU_KERNEL
#endif
    };
    return entries;
}

const Entry &find_kernel(Direction dir, DType dtype, const GeluOptions &o) {
    for (const Entry &e : registry()) {
        if (e.info.direction == dir && e.info.dtype == dtype && e.info.form == o.form &&
            e.info.schedule == o.schedule) {
            return e;
        }
    }
    throw Error(ErrorCode::Unsupported,
                std::string("no CUDA GELU kernel is built for ") + (dir == Direction::Forward ? "forward" : "backward") +
                    " dtype=" + dtype_name(dtype) + " form=" + form_name(o.form) +
                    " schedule=" + schedule_name(o.schedule) +
                    (built_with_cuda() ? "" : " (gelukit was built with GELUKIT_CUDA=OFF)"));
}

// --- Argument checks (before any device call) -------------------------------------------------
struct Operand {
    const char *name;
    TensorView view;
    bool is_output;
};

// Largest byte span of one view: the CUDA libraries are built without large_buffers (32-bit
// indexing in the kernels, the faster choice on GPUs), so Halide refuses spans >= 2^31 bytes.
constexpr int64_t kMaxSpanBytes = (int64_t(1) << 31) - 1;

int64_t span_elements(const TensorView &v) {
    int64_t last = 0;
    for (int d = 0; d < v.rank; d++) {
        last += (v.shape[d] - 1) * v.strides[d];
    }
    return last + 1;
}

void validate_view(const std::string &fn, const Operand &op) {
    const TensorView &v = op.view;
    const std::string where = fn + ": " + op.name;
    if (v.dtype != DType::F32 && v.dtype != DType::BF16 && v.dtype != DType::F16) {
        throw Error(ErrorCode::Unsupported, where + ": unsupported dtype value " + std::to_string(int(v.dtype)));
    }
    if (v.rank < 1 || v.rank > TensorView::kMaxRank) {
        throw Error(ErrorCode::InvalidArgument, where + ": rank " + std::to_string(v.rank) + " not in [1, 4]");
    }
    for (int d = 0; d < v.rank; d++) {
        if (v.shape[d] < 0) {
            throw Error(ErrorCode::InvalidArgument, where + ": negative extent in " + v.describe());
        }
        if (v.shape[d] > 1 && v.strides[d] < 1) {
            throw Error(ErrorCode::InvalidArgument, where + ": stride " + std::to_string(v.strides[d]) +
                                                        " of dimension " + std::to_string(d) + " must be >= 1 (" +
                                                        v.describe() + ")");
        }
        if (v.shape[d] > std::numeric_limits<int32_t>::max() ||
            (v.shape[d] > 1 && v.strides[d] > std::numeric_limits<int32_t>::max())) {
            throw Error(ErrorCode::TooLarge, where + ": extent or stride beyond 2^31-1 (" + v.describe() + ")");
        }
    }
    if (v.numel() == 0) {
        return;
    }
    if (v.data == nullptr) {
        throw Error(ErrorCode::InvalidArgument, where + ": null data pointer for " + v.describe());
    }
    // (extents and strides < 2^31 each: the products below cannot overflow int64)
    if (span_elements(v) * int64_t(dtype_size(v.dtype)) > kMaxSpanBytes) {
        throw Error(ErrorCode::TooLarge, where + ": spans 2^31 bytes or more (" + v.describe() +
                                             "); the CUDA kernels use 32-bit indexing: call them per slice");
    }
    if (op.is_output) {
        detail::check_output_not_self_overlapping(where, v);
    }
}

void validate_call(const std::string &fn, const std::vector<Operand> &ops, const GeluOptions &o) {
    for (const Operand &op : ops) {
        validate_view(fn, op);
    }
    const TensorView &ref = ops[0].view;
    for (const Operand &op : ops) {
        if (op.view.dtype != ref.dtype) {
            throw Error(ErrorCode::Unsupported, fn + ": dtypes differ (" + ops[0].name + " is " + dtype_name(ref.dtype) +
                                                    ", " + op.name + " is " + dtype_name(op.view.dtype) + ")");
        }
        bool same_shape = op.view.rank == ref.rank;
        for (int d = 0; same_shape && d < ref.rank; d++) {
            same_shape = op.view.shape[d] == ref.shape[d];
        }
        if (!same_shape) {
            throw Error(ErrorCode::InvalidArgument, fn + ": shape mismatch: " + ops[0].name + " is " + ref.describe() +
                                                        ", " + op.name + " is " + op.view.describe());
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
                    throw Error(ErrorCode::InvalidArgument, fn + ": " + out.name + " overlaps " + in.name +
                                                                " without being the same view (in place: pass identical views)");
                }
            }
        }
    }
    // s in [FLT_MIN, 4096] (FLT_MIN, 8] for the float32 formulation): below FLT_MIN 1/s overflows
    // float32; above the maximum the Phi tail beyond the Mills fit is no longer negligible
    // (gelukit/gelu.h has the numbers).
    const bool fast = true;  // every CUDA kernel uses the float32 formulation (README, CUDA)
    const float max_scale = fast ? kGeluMaxScaleFast : kGeluMaxScale;
    if (!(std::isfinite(o.scale) && o.scale >= kGeluMinScale && o.scale <= max_scale)) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(o.scale));
        throw Error(ErrorCode::InvalidArgument,
                    fn + ": scale s = " + buf + " must be finite and > 0, at least 1.17549435e-38 and at most " +
                        (fast ? "8 with Math::Fast (the float32 formulation)" : "4096"));
    }
    if (o.form != Form::Erf && o.scale != 1.0f) {
        throw Error(ErrorCode::InvalidArgument, fn + ": scale is defined for Form::Erf only (got form " +
                                                    form_name(o.form) + ")");
    }
    if (o.schedule != Schedule::Hand && o.schedule != Schedule::Anderson2021 && o.schedule != Schedule::Tuned) {
        throw Error(ErrorCode::InvalidArgument, fn + ": unknown schedule value " + std::to_string(int(o.schedule)));
    }
}

#if GELUKIT_HAVE_CUDA

// --- Halide CUDA hooks ------------------------------------------------------------------------
// The user_context of every CUDA kernel call and copy: where it runs.
struct CallContext {
    void *context;  // CUcontext, never null once resolved
    void *stream;   // CUstream or null (legacy default stream)
};

std::mutex g_primary_mutex;
std::map<int, CUcontext> g_primary;  // device ordinal -> retained primary context (kept for the process)

// The primary context of `device`, retained once. Throws NoDevice. The probe (seven driver
// queries) runs only until the context is retained: it used to run on every call, part of the
// host time a call spends before its kernel starts (README, CUDA: 14-18 us per call at
// N = 1,572,864 against 6.5 us of kernel).
CUcontext primary_context(int device) {
    {
        std::lock_guard<std::mutex> lock(g_primary_mutex);
        auto it = g_primary.find(device);
        if (it != g_primary.end()) {
            return it->second;
        }
    }
    DeviceStatus s = probe(device);
    if (!s.available) {
        throw Error(ErrorCode::NoDevice, "no usable CUDA device: " + s.reason);
    }
    std::lock_guard<std::mutex> lock(g_primary_mutex);
    auto it = g_primary.find(device);
    if (it != g_primary.end()) {
        return it->second;
    }
    const Driver &d = driver();
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    CUresult r = d.cuDeviceGet(&dev, device);
    if (r == 0) {
        r = d.cuDevicePrimaryCtxRetain(&ctx, dev);
    }
    if (r != 0 || !ctx) {
        throw Error(ErrorCode::NoDevice, "cuDevicePrimaryCtxRetain(device " + std::to_string(device) +
                                             ") failed: " + d.describe(r));
    }
    g_primary[device] = ctx;
    return ctx;
}

halide_cuda_acquire_context_t g_default_acquire = nullptr;
// The device whose primary context serves Halide calls without a user_context (set by
// initialize(); 0 by default).
std::atomic<int> g_default_device{0};

// Halide asks for a context before every CUDA call. Ours: the call's context (gelukit calls),
// else the primary context of the default device (Halide calls without user_context),
// so everything gelukit launches shares the CUDA runtime API's context.
extern "C" int gelukit_cuda_acquire_context(void *user_context, void **ctx, bool create) {
    if (user_context) {
        *ctx = static_cast<CallContext *>(user_context)->context;
        return 0;
    }
    const int device = g_default_device.load();
    {
        std::lock_guard<std::mutex> lock(g_primary_mutex);
        auto it = g_primary.find(device);
        if (it != g_primary.end()) {
            *ctx = it->second;
            return 0;
        }
    }
    if (!create) {
        *ctx = nullptr;
        return 0;
    }
    try {
        *ctx = primary_context(device);
        return 0;
    } catch (const Error &e) {
        halide_error(user_context, e.what());
        return halide_error_code_gpu_device_error;
    }
}

extern "C" int gelukit_cuda_release_context(void * /*user_context*/) {
    return 0;
}

extern "C" int gelukit_cuda_get_stream(void *user_context, void * /*ctx*/, void **stream) {
    *stream = user_context ? static_cast<CallContext *>(user_context)->stream : nullptr;
    return 0;
}

std::once_flag g_hooks_once;

void install_hooks() {
    detail::ensure_initialized();  // gelukit's Halide error handler (no abort)
    std::call_once(g_hooks_once, [] {
        g_default_acquire = halide_set_cuda_acquire_context(&gelukit_cuda_acquire_context);
        halide_set_cuda_release_context(&gelukit_cuda_release_context);
        halide_set_cuda_get_stream(&gelukit_cuda_get_stream);
    });
}

CallContext resolve(const Launch &launch) {
    install_hooks();
    CallContext cc{launch.context, launch.stream};
    if (!cc.context) {
        cc.context = primary_context(launch.device);  // throws NoDevice with the probe's reason
    }
    return cc;
}

// --- Buffers ----------------------------------------------------------------------------------
// A view as a 4-D Halide buffer (Halide order: innermost first; unit dimensions padded with the
// view's span as stride).
detail::HalideBuffer make_buffer(const TensorView &v, void *host) {
    detail::HalideBuffer hb;
    hb.buf.host = static_cast<uint8_t *>(host);
    hb.buf.type = detail::halide_type_of(v.dtype);
    hb.buf.dimensions = 4;
    const int64_t span = span_elements(v);
    for (int d = 0; d < 4; d++) {
        if (d < v.rank) {
            const int src = v.rank - 1 - d;
            const int64_t stride = v.shape[src] > 1 ? v.strides[src] : 1;
            hb.dims[d] = halide_dimension_t(0, int32_t(v.shape[src]), int32_t(stride));
        } else {
            hb.dims[d] = halide_dimension_t(0, 1, int32_t(std::min<int64_t>(span, INT32_MAX)));
        }
    }
    return hb;
}

// Device buffers of one call: wrapped user pointers (detached at the end, never freed) or
// Halide-allocated copies (freed at the end).
class DeviceBuffers {
public:
    explicit DeviceBuffers(CallContext *cc) : cc_(cc) {
    }
    DeviceBuffers(const DeviceBuffers &) = delete;
    DeviceBuffers &operator=(const DeviceBuffers &) = delete;
    // Releases the device side of every buffer. Statuses are not checked here (a destructor
    // cannot throw); a failure is still reported to gelukit's Halide error handler.
    ~DeviceBuffers() {
        for (auto &[hb, wrapped] : bufs_) {
            if (hb->buf.device) {
                if (wrapped) {
                    halide_cuda_detach_device_ptr(cc_, &hb->buf);
                } else {
                    halide_device_free(cc_, &hb->buf);
                }
            }
        }
    }
    void wrap(detail::HalideBuffer &hb, const TensorView &v, const std::string &what) {
        bufs_.push_back({&hb, true});
        detail::check_halide_status(
            halide_cuda_wrap_device_ptr(cc_, &hb.buf, uint64_t(reinterpret_cast<uintptr_t>(v.data))), what);
    }
    void upload(detail::HalideBuffer &hb, const std::string &what) {
        bufs_.push_back({&hb, false});
        hb.buf.set_host_dirty(true);
        detail::check_halide_status(halide_copy_to_device(cc_, &hb.buf, halide_cuda_device_interface()), what);
    }
    void allocate(detail::HalideBuffer &hb, const std::string &what) {
        bufs_.push_back({&hb, false});
        detail::check_halide_status(halide_device_malloc(cc_, &hb.buf, halide_cuda_device_interface()), what);
    }

private:
    CallContext *cc_;
    std::vector<std::pair<detail::HalideBuffer *, bool>> bufs_;
};

void run(const Entry &k, CallContext &cc, std::vector<detail::HalideBuffer> &hb, const std::vector<int> &arg,
         float scale) {
    int status;
    if (k.info.direction == Direction::Forward) {
        status = reinterpret_cast<ForwardFn>(k.fn)(&cc, &hb[arg[0]].buf, scale, &hb[arg[1]].buf);
    } else {
        status = reinterpret_cast<BackwardFn>(k.fn)(&cc, &hb[arg[0]].buf, &hb[arg[1]].buf, scale, &hb[arg[2]].buf);
    }
    detail::check_halide_status(status, k.info.name);
}

// A dense row-major view: its elements are those of a 1-D view of numel() elements.
bool is_dense(const TensorView &v) {
    int64_t expect = 1;
    for (int d = v.rank - 1; d >= 0; d--) {
        if (v.shape[d] > 1 && v.strides[d] != expect) {
            return false;
        }
        expect *= v.shape[d];
    }
    return true;
}

// Anderson2021 kernels keep Halide's default constraints and the autoscheduler's tiles: unit
// innermost stride; 64-wide tiles along the innermost dimension with TailStrategy::ShiftInwards
// (the schedule it emitted for every GELU row: split(d0, 64, ShiftInwards), 64 threads per
// block), which would reach before index 0 when that extent is below 64 (G39 on the CPU); grid
// y and z (d1, d2*d3) below 65535 blocks. These are checked here, before any device call. With
// a device present, a Halide bounds query (null host and device pointers) then confirms that
// the kernel stays inside every input; it cannot run without a driver, because a CUDA pipeline
// initialises its kernels (cuInit, module load) before it answers a bounds query.
constexpr int64_t kAndersonTile = 64;

void check_autoscheduled(const std::string &fn, const Entry &k, const std::vector<Operand> &ops) {
    for (const Operand &op : ops) {
        const TensorView &v = op.view;
        if (v.shape[v.rank - 1] > 1 && v.strides[v.rank - 1] != 1) {
            throw Error(ErrorCode::Unsupported, fn + ": the " + k.info.name + " kernel (anderson2021) needs a unit "
                                                     "innermost stride; " + op.name + " is " + v.describe() +
                                                     " (use Schedule::Hand)");
        }
    }
    const TensorView &v = ops[0].view;
    if (v.shape[v.rank - 1] < kAndersonTile) {
        throw Error(ErrorCode::Unsupported, fn + ": the " + k.info.name + " kernel (anderson2021) needs an innermost "
                                                 "extent of at least 64 (its tiles shift inwards); got " +
                                                 v.describe() + " (use Schedule::Hand)");
    }
    const int64_t y_blocks = v.rank >= 2 ? v.shape[v.rank - 2] : 1;
    const int64_t z_blocks = v.rank >= 3 ? v.numel() / std::max<int64_t>(1, v.shape[v.rank - 1] * y_blocks) : 1;
    if (y_blocks > 65535 || z_blocks > 65535) {
        throw Error(ErrorCode::Unsupported, fn + ": the " + k.info.name + " kernel (anderson2021) launches a grid "
                                                 "of more than 65535 blocks in y or z for " + v.describe() +
                                                 "; use Schedule::Hand");
    }
}

// The bounds query of an autoscheduled kernel (device present: see check_autoscheduled).
void bounds_query_autoscheduled(const std::string &fn, const Entry &k, const std::vector<Operand> &ops,
                                CallContext &cc) {
    std::vector<detail::HalideBuffer> q;
    for (const Operand &op : ops) {
        q.push_back(make_buffer(op.view, nullptr));
    }
    const std::vector<detail::HalideBuffer> given = q;
    std::vector<int> arg(ops.size());
    for (std::size_t i = 0; i < arg.size(); i++) {
        arg[i] = int(i);
    }
    run(k, cc, q, arg, 1.0f);
    for (std::size_t i = 0; i + 1 < ops.size(); i++) {
        for (int d = 0; d < 4; d++) {
            const halide_dimension_t &want = q[i].dims[d], &have = given[i].dims[d];
            if (want.min < have.min || want.min + want.extent > have.min + have.extent) {
                throw Error(ErrorCode::Unsupported, fn + ": the " + k.info.name + " kernel (anderson2021) would read " +
                                                        ops[i].name + " outside " + ops[i].view.describe() +
                                                        "; use Schedule::Hand");
            }
        }
    }
}

// ops: inputs first, the output last. Identical views share one Halide buffer (in place).
void call(const std::string &fn, Direction dir, std::vector<Operand> ops, const GeluOptions &o,
          const Launch &launch, bool device_memory) {
    validate_call(fn, ops, o);
    const Entry &k = find_kernel(dir, ops[0].view.dtype, o);
    if (ops[0].view.numel() == 0) {
        return;
    }
    // Dense views of the same shape (every operand of a pointwise call has the view's shape)
    // go to the kernel as one dimension [n, 1, 1, 1]: the hand schedule's specialization for
    // that case has no index divisions (gelu_generator.cpp, schedule_gpu), and the
    // autoscheduled kernels' 2-D/3-D grids stay within 65535 blocks in y and z. (Halide's
    // extents are int32; validate_call already caps a view at 2^31 bytes, the check below
    // only keeps that assumption explicit.)
    bool dense = ops[0].view.numel() <= INT32_MAX;
    for (const Operand &op : ops) {
        dense = dense && is_dense(op.view);
    }
    if (dense) {
        for (Operand &op : ops) {
            const int64_t n = op.view.numel();
            op.view = TensorView::contiguous(op.view.data, op.view.dtype, {n});
        }
    }
    if (k.info.schedule == Schedule::Anderson2021) {
        check_autoscheduled(fn, k, ops);
    }
    CallContext cc = resolve(launch);
    if (k.info.schedule == Schedule::Anderson2021) {
        bounds_query_autoscheduled(fn, k, ops, cc);
    }
    std::vector<detail::HalideBuffer> hb;
    hb.reserve(ops.size());
    std::vector<int> arg(ops.size());
    for (std::size_t i = 0; i < ops.size(); i++) {
        arg[i] = int(hb.size());
        for (std::size_t j = 0; j < i; j++) {
            if (detail::same_view(ops[j].view, ops[i].view)) {
                arg[i] = arg[j];
            }
        }
        if (arg[i] == int(hb.size())) {
            hb.push_back(make_buffer(ops[i].view, device_memory ? nullptr : ops[i].view.data));
        }
    }
    DeviceBuffers dev(&cc);
    const std::size_t out = ops.size() - 1;
    for (std::size_t i = 0; i < hb.size(); i++) {
        // An output that is also an input (in place) is uploaded like an input.
        const bool read = std::find(arg.begin(), arg.begin() + out, int(i)) != arg.begin() + out;
        const TensorView &v = ops[std::find(arg.begin(), arg.end(), int(i)) - arg.begin()].view;
        if (device_memory) {
            dev.wrap(hb[i], v, fn + ": wrapping the device pointer of " + v.describe());
        } else if (read) {
            dev.upload(hb[i], fn + ": copy to the device of " + v.describe());
        } else {
            dev.allocate(hb[i], fn + ": device allocation for " + v.describe());
        }
    }
    run(k, cc, hb, arg, o.scale);
    detail::HalideBuffer &y = hb[arg[out]];
    if (!device_memory) {
        // The output is device-dirty; the copy back synchronizes with the kernel.
        detail::check_halide_status(halide_copy_to_host(&cc, &y.buf), fn + ": copy to the host");
    } else if (launch.synchronize) {
        detail::check_halide_status(halide_device_sync(&cc, &y.buf), fn + ": synchronize");
    }
}

}  // namespace

void initialize(int device) {
    Launch l;
    l.device = device;
    resolve(l);
    g_default_device.store(device);
}

namespace {

#else  // !GELUKIT_HAVE_CUDA

void call(const std::string &fn, Direction dir, std::vector<Operand> ops, const GeluOptions &o,
          const Launch &, bool) {
    validate_call(fn, ops, o);
    find_kernel(dir, ops[0].view.dtype, o);  // throws Unsupported
}

}  // namespace

void initialize(int device) {
    DeviceStatus s = probe(device);
    throw Error(ErrorCode::NoDevice, "no usable CUDA device: " + s.reason);
}

namespace {
#endif

}  // namespace

void gelu_forward_device(const TensorView &x, const TensorView &y, const GeluOptions &o, const Launch &l) {
    call("cuda::gelu_forward_device", Direction::Forward, {{"x", x, false}, {"y", y, true}}, o, l, true);
}

void gelu_backward_device(const TensorView &x, const TensorView &dy, const TensorView &dx, const GeluOptions &o,
                          const Launch &l) {
    call("cuda::gelu_backward_device", Direction::Backward, {{"x", x, false}, {"dy", dy, false}, {"dx", dx, true}}, o,
         l, true);
}

void gelu_forward_host(const TensorView &x, const TensorView &y, const GeluOptions &o, const Launch &l) {
    call("cuda::gelu_forward_host", Direction::Forward, {{"x", x, false}, {"y", y, true}}, o, l, false);
}

void gelu_backward_host(const TensorView &x, const TensorView &dy, const TensorView &dx, const GeluOptions &o,
                        const Launch &l) {
    call("cuda::gelu_backward_host", Direction::Backward, {{"x", x, false}, {"dy", dy, false}, {"dx", dx, true}}, o, l,
         false);
}

const std::vector<KernelInfo> &kernels() {
    static const std::vector<KernelInfo> infos = [] {
        std::vector<KernelInfo> v;
        for (const Entry &e : registry()) {
            v.push_back(e.info);
        }
        return v;
    }();
    return infos;
}

// --- Feed-forward blocks ------------------------------------------------------------------------
namespace {

using ffn_layout::kPanel;

struct FfnEntry {
    FfnKernelInfo info;
    void (*fn)();
};

[[maybe_unused]] FfnKind ffn_kind_of(const std::string &k) {
    return k == "linear_gelu" ? FfnKind::LinearGelu
         : k == "ffn"         ? FfnKind::Ffn
         : k == "geglu"       ? FfnKind::GeGLU
                              : FfnKind::SwiGLU;
}

const std::vector<FfnEntry> &ffn_registry() {
    static const std::vector<FfnEntry> entries = {
#if GELUKIT_HAVE_CUDA
#define GELUKIT_CUDA_FFN_KERNEL(name, kind, dtype, form, sched)                                             \
    FfnEntry{FfnKernelInfo{#name, ffn_kind_of(#kind), kDType_##dtype, #form, kSched_##sched},                 \
             reinterpret_cast<void (*)()>(&name)},
#include "gelukit/generated/cuda_ffn_kernels.inc"
#undef GELUKIT_CUDA_FFN_KERNEL
#endif
    };
    return entries;
}

// The generated signatures per kind (ffn_generator.cpp configure()).
using LinearGeluFn = int (*)(const void *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);
using FfnFn = int (*)(const void *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                      halide_buffer_t *, bool, int32_t, halide_buffer_t *);
using GatedFn = int (*)(const void *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *,
                        halide_buffer_t *, halide_buffer_t *, bool, int32_t, halide_buffer_t *);

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

void check_weight(const char *what, const TensorView &t, int64_t rows, int64_t cols) {
    const std::string where = std::string("cuda::FeedForward: ") + what;
    if (t.data == nullptr) {
        throw Error(ErrorCode::InvalidArgument, where + " is null");
    }
    if (t.dtype != DType::F32) {
        throw Error(ErrorCode::Unsupported, where + " is " + t.describe() + "; the CUDA FFN libraries are float32");
    }
    if (t.rank != 2 || t.shape[0] != rows || t.shape[1] != cols || t.strides[1] != 1 || t.strides[0] != cols) {
        throw Error(ErrorCode::InvalidArgument, where + " is " + t.describe() + ", expected dense row-major f32[" +
                                                    std::to_string(rows) + "," + std::to_string(cols) + "]");
    }
}

void check_bias(const char *what, const TensorView &t, int64_t n) {
    if (t.data != nullptr && (t.dtype != DType::F32 || t.rank != 1 || t.shape[0] != n || (n > 1 && t.strides[0] != 1))) {
        throw Error(ErrorCode::InvalidArgument, std::string("cuda::FeedForward: ") + what + " is " + t.describe() +
                                                    ", expected dense f32[" + std::to_string(n) + "] or null");
    }
}

// W [n][k] (PyTorch layout) into float32 panels: packed[po][kk][pi] (ffn_layout.h with
// kpair = 1), zero-padded to k_padded columns and whole panels of n.
std::vector<float> pack_panels(const TensorView &w, int64_t n, int64_t k, int64_t k_padded) {
    std::vector<float> p(std::size_t(ceil_div(n, kPanel) * kPanel * k_padded), 0.0f);
    const float *src = static_cast<const float *>(w.data);
    for (int64_t row = 0; row < n; row++) {
        const int64_t po = row / kPanel, pi = row % kPanel;
        for (int64_t col = 0; col < k; col++) {
            p[std::size_t((po * k_padded + col) * kPanel + pi)] = src[row * k + col];
        }
    }
    return p;
}

std::vector<float> pack_bias(const TensorView &b, int64_t n) {
    std::vector<float> p(std::size_t(ceil_div(n, kPanel) * kPanel), 0.0f);
    for (int64_t i = 0; b.data != nullptr && i < n; i++) {
        p[std::size_t(i)] = static_cast<const float *>(b.data)[i];
    }
    return p;
}

}  // namespace

const std::vector<FfnKernelInfo> &ffn_kernels() {
    static const std::vector<FfnKernelInfo> infos = [] {
        std::vector<FfnKernelInfo> v;
        for (const FfnEntry &e : ffn_registry()) {
            v.push_back(e.info);
        }
        return v;
    }();
    return infos;
}

struct FeedForward::Impl {
    FeedForwardOptions options;
    const FfnEntry *kernel = nullptr;
    int64_t d_model = 0, d_ff = 0, d_out2 = 0;
    void *context = nullptr;  // CUcontext holding the weights
    // Packed host copies (kept: Halide's buffers point at them) and their device twins.
    std::vector<float> w1, b1, v, w2, b2;
    detail::HalideBuffer W1, B1, V, W2, B2;

    bool gated() const {
        return options.kind == FfnKind::GeGLU || options.kind == FfnKind::SwiGLU;
    }
    bool second_gemm() const {
        return options.kind != FfnKind::LinearGelu;
    }
    int64_t d_out() const {
        return second_gemm() ? d_out2 : d_ff;
    }
    ~Impl();
};

#if GELUKIT_HAVE_CUDA
FeedForward::Impl::~Impl() {
    CallContext cc{context, nullptr};
    for (detail::HalideBuffer *b : {&W1, &B1, &V, &W2, &B2}) {
        if (b->buf.device) {
            halide_device_free(&cc, &b->buf);  // status not checked: a destructor cannot throw
        }
    }
}
#else
FeedForward::Impl::~Impl() = default;
#endif

FeedForward::FeedForward(const FeedForwardWeights &w, const FeedForwardOptions &options, const Launch &launch)
    : impl_(std::make_unique<Impl>()) {
    Impl &im = *impl_;
    im.options = options;
    if (options.dtype != DType::F32) {
        throw Error(ErrorCode::Unsupported, std::string("cuda::FeedForward: dtype ") + dtype_name(options.dtype) +
                                                " is not built for CUDA (f32 only)");
    }
    if (options.residual && options.kind == FfnKind::LinearGelu) {
        throw Error(ErrorCode::InvalidArgument, "cuda::FeedForward: residual needs Ffn, GeGLU or SwiGLU");
    }
    const std::string form = options.kind == FfnKind::SwiGLU ? "silu" : form_name(options.form);
    const std::string not_built = built_with_cuda() ? "" : " (gelukit was built with GELUKIT_CUDA=OFF)";
    if (!options.kernel.empty()) {
        for (const FfnEntry &e : ffn_registry()) {
            if (e.info.name == options.kernel) {
                im.kernel = &e;
            }
        }
        if (!im.kernel) {
            throw Error(ErrorCode::Unsupported, "cuda::FeedForward: no CUDA FFN kernel named '" + options.kernel +
                                                    "' is built (cuda::ffn_kernels())" + not_built);
        }
        if (im.kernel->info.kind != options.kind || im.kernel->info.form != form) {
            throw Error(ErrorCode::InvalidArgument, "cuda::FeedForward: kernel " + options.kernel + " is not a " +
                                                        ffn_kind_name(options.kind) + " with form " + form);
        }
    } else {
        // gelukit::Schedule (the CPU enum of FeedForwardOptions): Hand and Tuned have CUDA rows.
        if (options.schedule != gelukit::Schedule::Hand && options.schedule != gelukit::Schedule::Tuned) {
            throw Error(ErrorCode::Unsupported, "cuda::FeedForward: schedule " + std::string(gelukit::schedule_name(options.schedule)) +
                                                    " has no CUDA FFN kernels (hand or tuned)");
        }
        const Schedule want = options.schedule == gelukit::Schedule::Tuned ? Schedule::Tuned : Schedule::Hand;
        for (const FfnEntry &e : ffn_registry()) {
            if (e.info.kind == options.kind && e.info.form == form && e.info.schedule == want) {
                im.kernel = &e;
            }
        }
        if (!im.kernel) {
            throw Error(ErrorCode::Unsupported, std::string("cuda::FeedForward: no CUDA ") + ffn_kind_name(options.kind) +
                                                    " kernel for form " + form + " with schedule " +
                                                    schedule_name(want) + not_built);
        }
    }
    if (w.w1.data == nullptr || w.w1.rank != 2 || w.w1.shape[0] < 1 || w.w1.shape[1] < 1) {
        throw Error(ErrorCode::InvalidArgument, "cuda::FeedForward: w1 must be a non-empty [d_ff, d_model] matrix");
    }
    im.d_ff = w.w1.shape[0];
    im.d_model = w.w1.shape[1];
    check_weight("w1", w.w1, im.d_ff, im.d_model);
    check_bias("b1", w.b1, im.d_ff);
    if (im.gated()) {
        check_weight("v", w.v, im.d_ff, im.d_model);
    }
    if (im.second_gemm()) {
        if (w.w2.data == nullptr || w.w2.rank != 2 || w.w2.shape[0] < 1) {
            throw Error(ErrorCode::InvalidArgument, "cuda::FeedForward: w2 must be a [d_out, d_ff] matrix");
        }
        im.d_out2 = w.w2.shape[0];
        check_weight("w2", w.w2, im.d_out2, im.d_ff);
        check_bias("b2", w.b2, im.d_out2);
        if (options.residual && im.d_out2 != im.d_model) {
            throw Error(ErrorCode::InvalidArgument, "cuda::FeedForward: residual needs d_out == d_model");
        }
    }
    const int64_t panels_ff = ceil_div(im.d_ff, kPanel), ff_pad = panels_ff * kPanel;
    const int64_t panels_out = ceil_div(std::max<int64_t>(im.d_out2, 1), kPanel);
    // 32-bit indexing on the device: every packed weight below 2^31 bytes.
    if (ff_pad * im.d_model * 4 > kMaxSpanBytes || panels_out * kPanel * ff_pad * 4 > kMaxSpanBytes) {
        throw Error(ErrorCode::TooLarge, "cuda::FeedForward: a packed weight matrix would exceed 2^31 bytes");
    }
#if GELUKIT_HAVE_CUDA
    CallContext cc = resolve(launch);  // NoDevice here, before the packing work
    im.context = cc.context;
    const halide_type_t f32(halide_type_float, 32);
    const int64_t K = im.d_model;
    auto panels = [&](detail::HalideBuffer &hb, std::vector<float> &data, int64_t k, int64_t np) {
        hb = detail::HalideBuffer(data.data(), f32, {{1, 1}, {kPanel, 1}, {k, kPanel}, {np, k * kPanel}});
    };
    im.w1 = pack_panels(w.w1, im.d_ff, K, K);
    im.b1 = pack_bias(w.b1, im.d_ff);
    panels(im.W1, im.w1, K, panels_ff);
    im.B1 = detail::HalideBuffer(im.b1.data(), f32, {{kPanel, 1}, {panels_ff, kPanel}});
    std::vector<detail::HalideBuffer *> upload = {&im.W1, &im.B1};
    if (im.gated()) {
        im.v = pack_panels(w.v, im.d_ff, K, K);
        panels(im.V, im.v, K, panels_ff);
        upload.push_back(&im.V);
    }
    if (im.second_gemm()) {
        // The second GEMM reduces over the padded d_ff (whole panels; the extra activation
        // columns are forced to 0 by the kernel): W2 gets zero columns up to ff_pad.
        im.w2 = pack_panels(w.w2, im.d_out2, im.d_ff, ff_pad);
        im.b2 = pack_bias(w.b2, im.d_out2);
        panels(im.W2, im.w2, ff_pad, panels_out);
        im.B2 = detail::HalideBuffer(im.b2.data(), f32, {{kPanel, 1}, {panels_out, kPanel}});
        upload.push_back(&im.W2);
        upload.push_back(&im.B2);
    }
    for (detail::HalideBuffer *b : upload) {
        b->buf.set_host_dirty(true);
        detail::check_halide_status(halide_copy_to_device(&cc, &b->buf, halide_cuda_device_interface()),
                                    "cuda::FeedForward: uploading the packed weights");
    }
#else
    (void)launch;
#endif
}

FeedForward::~FeedForward() = default;

int64_t FeedForward::d_model() const {
    return impl_->d_model;
}
int64_t FeedForward::d_ff() const {
    return impl_->d_ff;
}
int64_t FeedForward::d_out() const {
    return impl_->d_out();
}

namespace {

#if GELUKIT_HAVE_CUDA
void ffn_call(const FeedForward::Impl &im, const TensorView &h, const TensorView &out, const Launch &launch,
              bool device_memory, int64_t d_out) {
    const std::string fn = device_memory ? "cuda::FeedForward::forward_device" : "cuda::FeedForward::forward_host";
    auto bad = [&](const std::string &msg) { return Error(ErrorCode::InvalidArgument, fn + ": " + msg); };
    if (h.dtype != DType::F32 || out.dtype != DType::F32) {
        throw bad("h is " + h.describe() + " and out is " + out.describe() + "; both must be f32");
    }
    if (h.rank != 2 || h.shape[1] != im.d_model || out.rank != 2 || out.shape[0] != h.shape[0] ||
        out.shape[1] != d_out) {
        throw bad("h is " + h.describe() + " and out is " + out.describe() + "; expected [M, " +
                  std::to_string(im.d_model) + "] and [M, " + std::to_string(d_out) + "]");
    }
    const int64_t M = h.shape[0];
    if (M == 0) {
        return;
    }
    if (h.data == nullptr || out.data == nullptr) {
        throw bad(std::string(h.data == nullptr ? "h" : "out") + " is null");
    }
    for (const TensorView *t : {&h, &out}) {
        if (t->strides[1] != 1 || (M > 1 && t->strides[0] < t->shape[1])) {
            throw bad(t->describe() + ": rows must be contiguous and must not overlap (strides [>= cols, 1])");
        }
        if (span_elements(*t) * 4 > kMaxSpanBytes) {
            throw Error(ErrorCode::TooLarge, fn + ": " + t->describe() + " spans 2^31 bytes or more");
        }
    }
    {
        const uintptr_t hl = reinterpret_cast<uintptr_t>(h.data), ol = reinterpret_cast<uintptr_t>(out.data);
        const uintptr_t hh = hl + uintptr_t(span_elements(h)) * 4, oh = ol + uintptr_t(span_elements(out)) * 4;
        if (hl < oh && ol < hh) {
            throw bad("out overlaps h");
        }
    }
    CallContext cc = resolve(launch);
    if (cc.context != im.context) {
        throw bad("called in another CUDA context than the one holding the weights (Launch::context / device)");
    }
    const halide_type_t f32(halide_type_float, 32);
    std::vector<detail::HalideBuffer> io = {
        detail::HalideBuffer(device_memory ? nullptr : h.data, f32, {{im.d_model, 1}, {M, h.strides[0]}}),
        detail::HalideBuffer(device_memory ? nullptr : out.data, f32, {{d_out, 1}, {M, out.strides[0]}})};
    DeviceBuffers dev(&cc);
    if (device_memory) {
        dev.wrap(io[0], h, fn + ": wrapping h");
        dev.wrap(io[1], out, fn + ": wrapping out");
    } else {
        dev.upload(io[0], fn + ": copy of h to the device");
        dev.allocate(io[1], fn + ": device allocation for out");
    }
    // The weights are only read: the kernel gets copies of their (uploaded) buffer descriptors.
    detail::HalideBuffer W1 = im.W1, B1 = im.B1, V = im.V, W2 = im.W2, B2 = im.B2;
    const bool residual = im.options.residual;
    const int32_t d_ff = int32_t(im.d_ff);
    int status;
    switch (im.options.kind) {
    case FfnKind::LinearGelu:
        status = reinterpret_cast<LinearGeluFn>(im.kernel->fn)(&cc, &io[0].buf, &W1.buf, &B1.buf, &io[1].buf);
        break;
    case FfnKind::Ffn:
        status = reinterpret_cast<FfnFn>(im.kernel->fn)(&cc, &io[0].buf, &W1.buf, &B1.buf, &W2.buf, &B2.buf, residual,
                                                        d_ff, &io[1].buf);
        break;
    default:
        status = reinterpret_cast<GatedFn>(im.kernel->fn)(&cc, &io[0].buf, &W1.buf, &B1.buf, &V.buf, &W2.buf, &B2.buf,
                                                          residual, d_ff, &io[1].buf);
        break;
    }
    detail::check_halide_status(status, im.kernel->info.name);
    if (!device_memory) {
        detail::check_halide_status(halide_copy_to_host(&cc, &io[1].buf), fn + ": copy to the host");
    } else if (launch.synchronize) {
        detail::check_halide_status(halide_device_sync(&cc, &io[1].buf), fn + ": synchronize");
    }
}
#endif

}  // namespace

void FeedForward::forward_device(const TensorView &h, const TensorView &out, const Launch &launch) const {
#if GELUKIT_HAVE_CUDA
    ffn_call(*impl_, h, out, launch, true, d_out());
#else
    (void)h, (void)out, (void)launch;
#endif
}

void FeedForward::forward_host(const TensorView &h, const TensorView &out, const Launch &launch) const {
#if GELUKIT_HAVE_CUDA
    ffn_call(*impl_, h, out, launch, false, d_out());
#else
    (void)h, (void)out, (void)launch;
#endif
}

}  // namespace gelukit::cuda
