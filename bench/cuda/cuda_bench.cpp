// gelukit_cuda_bench: the CUDA GELU libraries against the device's copy bandwidth, and the
// unfused FFN peer (cuBLAS SGEMM + GELU + SGEMM). Google Benchmark with manual timing by CUDA
// events on one stream (style.md, pattern 13).
//
// Rows:
//   cuda_gelu/<kernel>/N:<n>      one call of the CUDA library on device pointers
//                                 (gelukit::cuda::gelu_*_device) on <n> elements;
//   cuda_memcpy_d2d/<dtype>/N:<n> cudaMemcpyAsync device-to-device of the same number of bytes
//                                 that the forward kernel reads and writes (n elements read +
//                                 n written): the bandwidth ceiling GELU is compared with;
//   cuda_ffn_cublas/<form>/M:..   h W1^T (cublasSgemm) -> gelukit CUDA GELU (f32, hand) ->
//                                 a W2^T (cublasSgemm), no biases, float32: the unfused peer;
//   cuda_ffn_gelukit/<kernel>/M:.. gelukit's fused CUDA FFN library (cuda::FeedForward, biases
//                                 included) on the same shapes.
// Counters: bytes_per_second (bytes moved / time), GFLOP/s for the FFN.
// Without a usable device: prints the probe's reason and exits with status 2 (no crash).
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gelukit/cuda.h"
#include "gelukit/error.h"
#include "gelukit/ffn.h"

namespace {

namespace gc = gelukit::cuda;
using gelukit::DType;
using gelukit::TensorView;

#define CUDA_OK(expr)                                                                                \
    do {                                                                                             \
        cudaError_t e_ = (expr);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            state.SkipWithError((std::string(#expr) + ": " + cudaGetErrorString(e_)).c_str());       \
            return;                                                                                  \
        }                                                                                            \
    } while (0)

// Device buffer filled with deterministic values in [-8, 8] of the given dtype: a pattern of
// at most 2^20 random values, repeated (drawing 2^26 values per buffer on the host took seconds
// per benchmark row on the H200 machine; the kernels' speed does not depend on the values
// beyond their range).
struct DeviceArray {
    void *ptr = nullptr;
    std::size_t bytes = 0;
    DeviceArray(std::size_t n, DType dt, unsigned seed) : bytes(n * gelukit::dtype_size(dt)) {
        if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
            ptr = nullptr;
            return;
        }
        const std::size_t esize = gelukit::dtype_size(dt), period = std::min<std::size_t>(n, std::size_t(1) << 20);
        const std::vector<char> pattern = host_values(period, dt, seed);
        for (std::size_t done = 0; done < n; done += period) {
            const std::size_t count = std::min(period, n - done);
            cudaMemcpy(static_cast<char *>(ptr) + done * esize, pattern.data(), count * esize,
                       cudaMemcpyHostToDevice);
        }
    }
    static std::vector<char> host_values(std::size_t n, DType dt, unsigned seed) {
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(-8.0f, 8.0f);
        std::vector<uint16_t> h16;
        std::vector<float> h32(n);
        for (float &v : h32) {
            v = u(rng);
        }
        if (dt == DType::F32) {
            const char *b = reinterpret_cast<const char *>(h32.data());
            return std::vector<char>(b, b + n * 4);
        }
        h16.resize(n);
        for (std::size_t i = 0; i < n; i++) {
            uint32_t b;
            std::memcpy(&b, &h32[i], 4);
            if (dt == DType::BF16) {
                h16[i] = uint16_t((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
            } else {  // fp16 of a value in [-8, 8]: normal range, truncated mantissa is fine for inputs
                const uint32_t sign = (b >> 16) & 0x8000, exp = (b >> 23) & 0xFF, man = (b >> 13) & 0x3FF;
                h16[i] = exp < 113 ? uint16_t(sign) : uint16_t(sign | ((exp - 112) << 10) | man);
            }
        }
        const char *b = reinterpret_cast<const char *>(h16.data());
        return std::vector<char>(b, b + n * 2);
    }
    ~DeviceArray() {
        if (ptr) {
            cudaFree(ptr);
        }
    }
};

struct Stream {
    cudaStream_t s = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    Stream() {
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cudaEventCreate(&start);
        cudaEventCreate(&stop);
    }
    ~Stream() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        cudaStreamDestroy(s);
    }
    double elapsed_s() {
        float ms = 0;
        cudaEventSynchronize(stop);
        cudaEventElapsedTime(&ms, start, stop);
        return ms * 1e-3;
    }
};

// The primary context's current-device stream handle for gelukit (cudaStream_t == CUstream).
gc::Launch launch_on(const Stream &st) {
    gc::Launch l;
    l.stream = st.s;  // context: nullptr = the primary context, which the runtime API uses too
    return l;
}

void BM_cuda_gelu(benchmark::State &state, gc::KernelInfo k) {
    const int64_t n = state.range(0);
    DeviceArray x(std::size_t(n), k.dtype, 1), dy(std::size_t(n), k.dtype, 2), y(std::size_t(n), k.dtype, 3);
    if (!x.ptr || !dy.ptr || !y.ptr) {
        state.SkipWithError("cudaMalloc failed");
        return;
    }
    Stream st;
    gc::GeluOptions o;
    o.form = k.form;
    o.schedule = k.schedule;
    auto view = [&](const DeviceArray &a) { return TensorView::contiguous(a.ptr, k.dtype, {n}); };
    auto call = [&] {
        if (k.direction == gelukit::Direction::Forward) {
            gc::gelu_forward_device(view(x), view(y), o, launch_on(st));
        } else {
            gc::gelu_backward_device(view(x), view(dy), view(y), o, launch_on(st));
        }
    };
    try {
        call();  // warm-up: module load (PTX JIT on first use), launch path
        CUDA_OK(cudaStreamSynchronize(st.s));
        for (auto _ : state) {
            CUDA_OK(cudaEventRecord(st.start, st.s));
            call();
            CUDA_OK(cudaEventRecord(st.stop, st.s));
            state.SetIterationTime(st.elapsed_s());
        }
    } catch (const gelukit::Error &e) {
        state.SkipWithError(e.what());
        return;
    }
    const int64_t tensors = k.direction == gelukit::Direction::Forward ? 2 : 3;
    state.SetBytesProcessed(state.iterations() * n * tensors * int64_t(gelukit::dtype_size(k.dtype)));
    state.SetItemsProcessed(state.iterations() * n);
}

void BM_cuda_memcpy_d2d(benchmark::State &state, DType dt) {
    const int64_t n = state.range(0);
    DeviceArray x(std::size_t(n), dt, 1), y(std::size_t(n), dt, 3);
    if (!x.ptr || !y.ptr) {
        state.SkipWithError("cudaMalloc failed");
        return;
    }
    Stream st;
    CUDA_OK(cudaMemcpyAsync(y.ptr, x.ptr, x.bytes, cudaMemcpyDeviceToDevice, st.s));
    CUDA_OK(cudaStreamSynchronize(st.s));
    for (auto _ : state) {
        CUDA_OK(cudaEventRecord(st.start, st.s));
        CUDA_OK(cudaMemcpyAsync(y.ptr, x.ptr, x.bytes, cudaMemcpyDeviceToDevice, st.s));
        CUDA_OK(cudaEventRecord(st.stop, st.s));
        state.SetIterationTime(st.elapsed_s());
    }
    state.SetBytesProcessed(state.iterations() * 2 * int64_t(x.bytes));  // read + write
}

// Unfused FFN on cuBLAS: z = h W1^T (M x d_ff), a = GELU(z) (gelukit CUDA, f32 hand), out = a W2^T.
// Row-major M x K times (N x K)^T is, in cuBLAS's column-major terms, C^T = W (N x K) * h^T:
// cublasSgemm(OP_T, OP_N, N, M, K, W, K, h, K, C, N).
void BM_cuda_ffn_cublas(benchmark::State &state, gelukit::Form form) {
    const int M = int(state.range(0)), d_model = int(state.range(1)), d_ff = int(state.range(2));
    DeviceArray h(std::size_t(M) * d_model, DType::F32, 1), w1(std::size_t(d_ff) * d_model, DType::F32, 2),
        w2(std::size_t(d_model) * d_ff, DType::F32, 3), z(std::size_t(M) * d_ff, DType::F32, 4),
        out(std::size_t(M) * d_model, DType::F32, 5);
    if (!h.ptr || !w1.ptr || !w2.ptr || !z.ptr || !out.ptr) {
        state.SkipWithError("cudaMalloc failed");
        return;
    }
    Stream st;
    cublasHandle_t blas = nullptr;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        state.SkipWithError("cublasCreate failed");
        return;
    }
    cublasSetStream(blas, st.s);
    const float one = 1.0f, zero = 0.0f;
    gc::GeluOptions o;
    o.form = form;
    auto call = [&] {
        cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, d_ff, M, d_model, &one, static_cast<float *>(w1.ptr), d_model,
                    static_cast<float *>(h.ptr), d_model, &zero, static_cast<float *>(z.ptr), d_ff);
        const TensorView zv = TensorView::contiguous(z.ptr, DType::F32, {M, d_ff});
        gc::gelu_forward_device(zv, zv, o, launch_on(st));  // in place
        cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, d_model, M, d_ff, &one, static_cast<float *>(w2.ptr), d_ff,
                    static_cast<float *>(z.ptr), d_ff, &zero, static_cast<float *>(out.ptr), d_model);
    };
    try {
        call();
        CUDA_OK(cudaStreamSynchronize(st.s));
        for (auto _ : state) {
            CUDA_OK(cudaEventRecord(st.start, st.s));
            call();
            CUDA_OK(cudaEventRecord(st.stop, st.s));
            state.SetIterationTime(st.elapsed_s());
        }
    } catch (const gelukit::Error &e) {
        state.SkipWithError(e.what());
    }
    cublasDestroy(blas);
    const double flops = 2.0 * 2.0 * M * double(d_model) * d_ff;
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// gelukit's CUDA FFN library (weights packed and uploaded once, outside the timed loop).
void BM_cuda_ffn_gelukit(benchmark::State &state, gc::FfnKernelInfo k) {
    const int M = int(state.range(0)), d_model = int(state.range(1)), d_ff = int(state.range(2));
    const bool gated = k.kind == gelukit::FfnKind::GeGLU || k.kind == gelukit::FfnKind::SwiGLU;
    const bool second = k.kind != gelukit::FfnKind::LinearGelu;
    const int d_out = second ? d_model : d_ff;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto host = [&](std::size_t n, float scale) {
        std::vector<float> v(n);
        for (float &e : v) {
            e = nd(rng) * scale;
        }
        return v;
    };
    std::vector<float> w1 = host(std::size_t(d_ff) * d_model, 0.03f), b1 = host(std::size_t(d_ff), 0.1f),
                       v = gated ? host(std::size_t(d_ff) * d_model, 0.03f) : std::vector<float>(),
                       w2 = host(std::size_t(d_model) * d_ff, 0.02f), b2 = host(std::size_t(d_model), 0.1f);
    gelukit::FeedForwardWeights w;
    w.w1 = TensorView::contiguous(w1.data(), DType::F32, {d_ff, d_model});
    w.b1 = TensorView::contiguous(b1.data(), DType::F32, {d_ff});
    if (gated) {
        w.v = TensorView::contiguous(v.data(), DType::F32, {d_ff, d_model});
    }
    if (second) {
        w.w2 = TensorView::contiguous(w2.data(), DType::F32, {d_model, d_ff});
        w.b2 = TensorView::contiguous(b2.data(), DType::F32, {d_model});
    }
    gelukit::FeedForwardOptions o;
    o.kind = k.kind;
    if (k.form != "silu") {
        o.form = gelukit::form_from_name(k.form);
    }
    // Pin this row's kernel (hand or tuned) by name; otherwise the runtime picks the hand one.
    o.kernel = k.name;
    DeviceArray h(std::size_t(M) * d_model, DType::F32, 1), out(std::size_t(M) * d_out, DType::F32, 2);
    if (!h.ptr || !out.ptr) {
        state.SkipWithError("cudaMalloc failed");
        return;
    }
    Stream st;
    try {
        gc::FeedForward ffn(w, o);
        auto call = [&] {
            ffn.forward_device(TensorView::contiguous(h.ptr, DType::F32, {M, d_model}),
                               TensorView::contiguous(out.ptr, DType::F32, {M, d_out}), launch_on(st));
        };
        call();
        CUDA_OK(cudaStreamSynchronize(st.s));
        for (auto _ : state) {
            CUDA_OK(cudaEventRecord(st.start, st.s));
            call();
            CUDA_OK(cudaEventRecord(st.stop, st.s));
            state.SetIterationTime(st.elapsed_s());
        }
    } catch (const gelukit::Error &e) {
        state.SkipWithError(e.what());
        return;
    }
    double flops = 2.0 * M * double(d_model) * d_ff * (gated ? 2 : 1) + (second ? 2.0 * M * double(d_ff) * d_out : 0.0);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const char *dtype_label(DType dt) {
    return gelukit::dtype_name(dt);
}

}  // namespace

int main(int argc, char **argv) {
    const gc::DeviceStatus dev = gc::cuda_device_available();
    if (!dev.available) {
        std::fprintf(stderr, "gelukit_cuda_bench: no usable CUDA device: %s\n", dev.reason.c_str());
        return 2;
    }
    benchmark::AddCustomContext("gpu", dev.name + " (sm_" + std::to_string(dev.major) + std::to_string(dev.minor) +
                                           ", driver " + std::to_string(dev.driver_version) + ")");
    benchmark::AddCustomContext("gelukit_cuda_target", gc::halide_target());
    // BERT-base FFN activation (512 tokens x 3072) and a 64M-element tensor (well beyond L2:
    // 40 MB on A100, 50 MB on H100) for the bandwidth-bound regime.
    const std::vector<int64_t> sizes = {512 * 3072, int64_t(1) << 26};
    for (const gc::KernelInfo &k : gc::kernels()) {
        auto *b = benchmark::RegisterBenchmark(("cuda_gelu/" + k.name).c_str(), BM_cuda_gelu, k);
        for (int64_t n : sizes) {
            b->Arg(n);
        }
        b->ArgName("N")->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        auto *b = benchmark::RegisterBenchmark((std::string("cuda_memcpy_d2d/") + dtype_label(dt)).c_str(),
                                              BM_cuda_memcpy_d2d, dt);
        for (int64_t n : sizes) {
            b->Arg(n);
        }
        b->ArgName("N")->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
    for (gelukit::Form form : {gelukit::Form::Erf, gelukit::Form::Tanh}) {
        benchmark::RegisterBenchmark((std::string("cuda_ffn_cublas/") + gelukit::form_name(form)).c_str(),
                                     BM_cuda_ffn_cublas, form)
            ->Args({512, 768, 3072})
            ->Args({4096, 768, 3072})
            ->ArgNames({"M", "d_model", "d_ff"})
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    }
    for (const gc::FfnKernelInfo &k : gc::ffn_kernels()) {
        if (k.kind != gelukit::FfnKind::Ffn && k.kind != gelukit::FfnKind::LinearGelu) {
            continue;  // the comparison with the cuBLAS peer: the plain FFN and linear + GELU
        }
        benchmark::RegisterBenchmark(("cuda_ffn_gelukit/" + k.name).c_str(), BM_cuda_ffn_gelukit, k)
            ->Args({512, 768, 3072})
            ->Args({4096, 768, 3072})
            ->ArgNames({"M", "d_model", "d_ff"})
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
