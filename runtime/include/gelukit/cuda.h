// GELU on NVIDIA GPUs: the CUDA kernel libraries (cmake/GelukitCudaKernels.cmake) behind a
// checked C++ API.
//
// Formulas: as in gelukit/gelu.h (Hendrycks & Gimpel 2016, arXiv:1606.08415): Form::Erf is
// x * Phi(x / s), Form::Tanh the tanh approximation, Form::Sigmoid x * sigmoid(1.702 x);
// backward dx = dy * GELU'(x). Special values as in gelu.h (NaN -> NaN, +inf -> +inf,
// -inf -> -0).
// Accuracy: float32 internals only (the CPU library's Math::Fast math, generators/common/
// gelu_math.h), a few float32 ULP; fp16/bf16 results are rounded once from float32. There is no
// float64 in the device code (handed case G46; checked on the PTX by ctest).
//
// Memory: two ways to call.
//  * *_device: every TensorView's data is a device address in the CUDA context the call runs
//    in (e.g. from cudaMalloc / cuMemAlloc, or a PyTorch CUDA tensor's data_ptr()). Nothing is
//    copied; the kernel is launched asynchronously on Launch::stream, like any CUDA kernel, and
//    the call returns before it has finished unless Launch::synchronize is set.
//  * *_host: host memory; x (and dy) are copied to a temporary device buffer, the kernel runs,
//    the result is copied back, the device buffers are freed. The call returns when the output
//    holds the result (synchronous). Meant for tests and one-off calls, not for speed.
// Shapes and layouts: as in gelu.h. Rank 1 to 4, PyTorch order (dimension 0 outermost),
// strides in elements, >= 1 for every dimension of extent > 1 (any strides, also a non-unit
// innermost one); x, y (dy, dx) of equal shape and dtype (F32, BF16 or F16). The output may be
// the very same view as an input (in place); other overlaps are refused. Each view must span
// less than 2^31 bytes (the CUDA kernels use 32-bit indexing; larger tensors: call per slice).
// Context and stream (Launch): context = a CUcontext (nullptr: the primary context of
// Launch::device, the one the CUDA runtime API, cuBLAS and PyTorch use, so cudaMalloc'ed
// pointers are valid); stream = a CUstream / cudaStream_t of that context (nullptr: its legacy
// default stream). The kernels reach them through Halide's CUDA context/stream hooks, which
// gelukit installs on first use (do not install your own Halide CUDA hooks alongside).
// Errors: every bad argument, a missing driver or device, and every failure reported by Halide's
// CUDA runtime throw gelukit::Error (NoDevice, InvalidArgument, Unsupported, TooLarge, Halide);
// nothing aborts. Errors of an asynchronous kernel itself (e.g. an invalid device pointer)
// surface at the next synchronizing call, as in CUDA.
// Threads: calls from several host threads are meant to be allowed (the driver API is
// thread-safe, Halide's per-context module cache takes a lock); not yet exercised on a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gelukit/ffn.h"
#include "gelukit/gelu.h"
#include "gelukit/runtime.h"
#include "gelukit/tensor.h"

namespace gelukit::cuda {

// What cuda_device_available() found. Never throws.
struct DeviceStatus {
    bool available = false;
    std::string reason;        // why not (empty when available)
    int driver_version = 0;    // e.g. 12040 for CUDA 12.4 (0 when no driver)
    int device_count = 0;
    std::string name;          // of the probed device
    int major = 0, minor = 0;  // its compute capability
};

// Probes the driver (dlopen of libcuda.so.1, cuInit) and device `device` without aborting and
// without throwing. available is true when the driver loads, the device exists and its compute
// capability is >= 8.0 (the kernels are PTX for sm_80, which the driver JIT-compiles for newer
// GPUs). gelukit built without GELUKIT_CUDA: always false, with that reason.
DeviceStatus cuda_device_available(int device = 0) noexcept;

// Installs gelukit's Halide CUDA hooks (context, stream; error handler) and retains the primary
// context of `device`; throws Error(NoDevice) with the probe's reason when it is not usable.
// Every call below does this itself; call it first only when you also use Halide's CUDA runtime
// directly: Halide calls with a null user_context (halide_copy_to_device & co.) then use the
// primary context of `device` (of device 0 before any initialize()).
void initialize(int device = 0);

// true when the library was built with the CUDA kernels (GELUKIT_CUDA=ON).
bool built_with_cuda() noexcept;

enum class Schedule {
    Hand,          // gelu_generator.cpp schedule_gpu: gpu_block threads per block (256), gpu_elems (4)
                   // elements per thread on dense views
    Anderson2021,  // Halide's GPU autoscheduler (if the build has these rows: see kernels())
    Tuned,         // the hand schedule with the knobs `gelukit_tune --target cuda` measured best on
                   // a GPU (generators/schedules/cuda.json; the defaults where it has none). Built
                   // for the rows of GELUKIT_CUDA_TUNED_GELU (cmake/GelukitCudaKernels.cmake):
                   // f32 erf forward and backward, bf16 erf forward; kernels() lists them.
};
const char *schedule_name(Schedule s);  // "hand", "anderson2021", "tuned"

struct GeluOptions {
    Form form = Form::Erf;
    float scale = 1.0f;  // s of x * Phi(x / s); Form::Erf only; finite, >= 1.17549435e-38
    Schedule schedule = Schedule::Hand;
};

struct Launch {
    void *context = nullptr;   // CUcontext; nullptr: primary context of `device`
    void *stream = nullptr;    // CUstream of that context; nullptr: its legacy default stream
    int device = 0;            // device ordinal for the primary context
    bool synchronize = false;  // *_device: wait for the kernel before returning
};

// y = GELU(x) on device memory.
void gelu_forward_device(const TensorView &x, const TensorView &y, const GeluOptions &options = {},
                         const Launch &launch = {});
// dx = dy * GELU'(x) on device memory.
void gelu_backward_device(const TensorView &x, const TensorView &dy, const TensorView &dx,
                          const GeluOptions &options = {}, const Launch &launch = {});

// The same on host memory, with explicit copies to and from the device (synchronous).
void gelu_forward_host(const TensorView &x, const TensorView &y, const GeluOptions &options = {},
                       const Launch &launch = {});
void gelu_backward_host(const TensorView &x, const TensorView &dy, const TensorView &dx,
                        const GeluOptions &options = {}, const Launch &launch = {});

// The CUDA GELU libraries built into this binary (empty without GELUKIT_CUDA).
struct KernelInfo {
    std::string name;  // e.g. "cuda_gelu_fwd_f32_erf_hand"
    Direction direction;
    DType dtype;
    Form form;
    Schedule schedule;
};
const std::vector<KernelInfo> &kernels();

// --- Feed-forward blocks on the GPU --------------------------------------------------------------
// The CUDA FFN libraries (cuda_<kind>_f32_<form>_hand): the blocks of gelukit/ffn.h, float32
// storage and accumulation, float32 GELU/SiLU epilogue (no float64 in device code), biases
// added in float32 before the epilogue. Weights: FeedForwardWeights as in ffn.h, in HOST memory
// (PyTorch nn.Linear layout, float32); they are packed into 48-wide panels
// (generators/common/ffn_layout.h) and uploaded once, at construction, into device memory owned
// by the object (freed by its destructor) in Launch::context (or the primary context of
// Launch::device). options.dtype must be F32. options.schedule: Schedule::Hand (every kind and
// form) or Schedule::Tuned (gelukit::Schedule of ffn.h; the rows of GELUKIT_CUDA_TUNED_FFN, f32 erf `ffn`: the hand schedule
// with the GPU knobs of generators/schedules/cuda.json); any other schedule, or a row that is not
// built: ErrorCode::Unsupported. options.kernel pins a row of ffn_kernels() by name instead (it
// must match kind and form, else InvalidArgument). borrow_weights is ignored (the weights are
// always packed and uploaded).
// forward_device: h [M, d_model] and out [M, d_out()] are device memory of that same context,
// rows contiguous (strides [>= cols, 1]); launched asynchronously on Launch::stream unless
// Launch::synchronize. forward_host: host memory, explicit copies, synchronous.
// Errors: as for the GELU calls (gelukit::Error; NoDevice without a usable device, at
// construction).
struct FfnKernelInfo {
    std::string name;  // e.g. "cuda_ffn_f32_erf_hand"
    FfnKind kind;
    DType dtype;
    std::string form;  // "erf", "tanh", "sigmoid" or "silu" (SwiGLU)
    Schedule schedule;  // Hand or Tuned
};
const std::vector<FfnKernelInfo> &ffn_kernels();

class FeedForward {
public:
    FeedForward(const FeedForwardWeights &weights, const FeedForwardOptions &options, const Launch &launch = {});
    ~FeedForward();
    FeedForward(const FeedForward &) = delete;
    FeedForward &operator=(const FeedForward &) = delete;

    void forward_device(const TensorView &h, const TensorView &out, const Launch &launch = {}) const;
    void forward_host(const TensorView &h, const TensorView &out, const Launch &launch = {}) const;

    int64_t d_model() const;
    int64_t d_ff() const;
    int64_t d_out() const;  // w2's rows, or d_ff for LinearGelu

    struct Impl;  // (opaque)

private:
    std::unique_ptr<Impl> impl_;
};

// The Halide target the CUDA libraries were built for (e.g.
// "x86-64-linux-cuda-cuda_capability_80-user_context"), or "" without GELUKIT_CUDA.
const char *halide_target();

}  // namespace gelukit::cuda
