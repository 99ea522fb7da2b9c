// The packed weight layout shared by the FFN generators and the runtime that packs weights.
//
// A PyTorch nn.Linear weight W [N out][K in] (row-major, K contiguous) is stored as panels of
// kPanel output features:
//   packed[po][ko][pi][kk] = W[po * kPanel + pi][ko * kpair + kk]    (zero where out of range)
// po < ceil(N / kPanel), ko < ceil(K / kpair), pi < kPanel, kk < kpair.
// kpair = 1 for float32, 2 for bfloat16 (AVX512_BF16's vdpbf16ps multiplies adjacent bf16 pairs
// along K and sums them into one float32 lane, so a pair must be adjacent in memory).
//
// Why panels: the GEMM micro-kernel reads kPanel consecutive weights per k step. In the
// PyTorch layout they are K apart (a gather); in a plain transposed [K][N] layout they are
// contiguous but each k step lands N*4 bytes further on, a new 4 KiB page for N >= 1024, which
// cost half the speed (64 vs 142 GFLOP/s, 512x768x3072 on one Sapphire Rapids core, Halide JIT,
// /tmp experiment noted in the README). A panel is one contiguous stream.
// Why 48: three AVX-512 float32 vectors (16 lanes) per row of the register tile (8 rows x 3
// vectors = 24 of the 32 zmm accumulators); also 6 AVX2 vectors and 12 SSE vectors, so every
// x86 sub-target's tile covers whole panels (Halide can then prove each tile's panel index is a
// single value and keep the accumulators in registers).
#pragma once

namespace gelukit {
namespace ffn_layout {

constexpr int kPanel = 48;

// Intel AMX kernels (ffn_generator.cpp schedule_amx / schedule_amx_panels; the runtime pads and
// checks for them): K per tile step (one 64-byte bf16 tile row), token rows per task of the
// row-task kernel (large / small: the runtime chooses, amx_task_rows), and weight panels per
// task of the panel kernel. Shared so that the kernels and the runtime cannot disagree.
constexpr int kAmxK = 32, kAmxRows = 64, kAmxMinRows = 16, kAmxPanelsPerTask = 2;

constexpr int kpair_for_bits(int storage_bits) {
    return storage_bits == 16 ? 2 : 1;
}

}  // namespace ffn_layout
}  // namespace gelukit
