// The GELU activation and its gradient.
//
// Definitions (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016, arXiv:1606.08415):
//   Form::Erf      GELU(x) = x * Phi(x / s),  Phi(x) = 0.5 * erfc(-x / sqrt(2)); s = 1 is the
//                  standard ("exact") GELU of BERT, PyTorch approximate="none", HF "gelu".
//                  s > 0 gives the scaled family (s -> 0: ReLU, s -> inf: x/2); gelukit
//                  accepts s in [2^-126, 4096] ([2^-126, 8] with Math::Fast; see scale below).
//   Form::Tanh     0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (paper Sec. 2; GPT-2,
//                  PyTorch approximate="tanh", HF "gelu_new"/"gelu_pytorch_tanh"/"gelu_fast").
//   Form::Sigmoid  x * sigmoid(1.702 x)  (paper Sec. 2; "QuickGELU" of CLIP, HF "quick_gelu").
//   Backward:      dx = dy * GELU'(x), GELU'(x) = Phi(z) + z phi(z) with z = x/s for Form::Erf.
// The default form is Form::Erf (exact), as in PyTorch and TensorFlow (JAX defaults to tanh).
//
// Special values: NaN -> NaN; +inf -> +inf (gradient 1); -inf -> -0.0 (the limit; gradient
// -0.0, so dx = -0 times dy's sign; for dy = +-inf, NaN with Math::Accurate, -+inf, the limit
// of dy GELU'(x), with Math::Fast and on CUDA). PyTorch returns NaN for GELU(-inf) (it
// evaluates -inf * 0); gelukit returns the limit.
// Subnormal outputs are produced, never flushed to zero.
//
// Accuracy (float32 ULPs against the value computed in double and rounded once; see README):
//   Math::Accurate  float64 internals; <= 1 ULP of the storage type for every input.
//   Math::Fast      float32 internals; a few float32 ULP (README lists the measured maxima).
//
// Shapes: x, y (and dy, dx) are views of equal shape, rank 1 to 4, equal dtype, any positive
// strides. y may be the very same view as x (in place). Otherwise the byte ranges spanned by an
// output and each input must not intersect (a conservative check: interleaved but disjoint
// views of one buffer, e.g. even and odd columns, are rejected too; copy one of them first).
// scale: Form::Erf only; finite, a normal float (>= 1.17549435e-38, 1/s must not overflow) and
// at most 4096 (kGeluMaxScale), or 8 with Math::Fast and on CUDA (kGeluMaxScaleFast). Why the
// upper bounds: the kernels evaluate Phi's tail through a Mills-ratio fit on t = |x/s| <= 15 and
// return -0 beyond, where x Phi(x/s) is below float32's smallest subnormal as long as
// |x| Phi(-15) = 15 s * 3.67e-51 < 0.7e-45, i.e. s < ~1.27e4. For larger s the true value can be
// a representable float (found by the fuzz target: s = 2.1e35, x = -3.47e36 gave -0 for
// -1.5e-24). The float32 formulation already returns 0 where its result falls below ~1.7e-42
// (t > 14.4); the error that costs grows with s and passes the fast kernels' 8-ULP bound near
// s = 15. Such scales are refused rather than answered wrongly.
// Threads: kernels run on Halide's thread pool; see gelukit/runtime.h.
// Errors: every bad argument throws gelukit::Error (see error.h); nothing aborts.
#pragma once

#include <string>
#include <string_view>

#include "gelukit/tensor.h"

namespace gelukit {

enum class Form { Erf, Tanh, Sigmoid };
enum class Math { Accurate, Fast };
// naive: scalar, serial loops (the unscheduled algorithm); hand: vectorised at the target's
// natural width with a masked tail and parallel chunks; adams2019: Halide's Adams2019
// autoscheduler (unit innermost stride; other views are packed through a dense copy); tuned:
// the hand schedule with the knobs gelukit_tune found on the build's machine, read by the
// build from generators/schedules/<arch>-linux.json (built for the kernels the registry lists
// in GELUKIT_TUNED_*; without a schedule file they carry the hand schedule's default knobs).
enum class Schedule { Naive, Hand, Adams2019, Tuned };

// Range of GeluOptions::scale (see "scale" above).
constexpr float kGeluMinScale = 1.17549435e-38f;  // FLT_MIN
constexpr float kGeluMaxScale = 4096.0f;
constexpr float kGeluMaxScaleFast = 8.0f;  // Math::Fast and every CUDA kernel

struct GeluOptions {
    Form form = Form::Erf;
    float scale = 1.0f;  // s of x * Phi(x / s); Form::Erf only; in [kGeluMinScale, kGeluMaxScale]
    Math math = Math::Accurate;
    Schedule schedule = Schedule::Hand;
};

// y = GELU(x), elementwise.
void gelu_forward(const TensorView &x, const TensorView &y, const GeluOptions &options = {});

// dx = dy * GELU'(x), elementwise.
void gelu_backward(const TensorView &x, const TensorView &dy, const TensorView &dx,
                   const GeluOptions &options = {});

// Names used by model configs and frameworks, mapped to forms (case-sensitive):
//   "gelu", "gelu_python", "gelu_exact", "none", "erf"              -> Form::Erf
//   "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_tanh",
//   "tanh", "gelu_accurate" (HF's name for the tanh form)          -> Form::Tanh
//   "quick_gelu", "sigmoid"                                        -> Form::Sigmoid
// PyTorch's approximate="none"/"tanh" and ONNX's approximate attribute use the same strings.
// Unknown names throw Error(InvalidArgument), never fall back to a default.
Form form_from_name(std::string_view name);

const char *form_name(Form form);          // "erf", "tanh", "sigmoid"
const char *math_name(Math math);          // "acc", "fast"
const char *schedule_name(Schedule sched);  // "naive", "hand", "adams2019", "tuned"

}  // namespace gelukit
