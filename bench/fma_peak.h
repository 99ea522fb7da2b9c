// fma_peak: the machine's float32 FMA peak, measured, as the roofline ceiling the FFN rows of
// gelukit_bench are compared against.
#pragma once

// Summed float32 GFLOP/s of `threads` std::threads (started together) each running a
// register-blocked FMA loop for about 0.2 s; an FMA counts 2 FLOP per lane. The best of 3
// repetitions is returned. threads < 1 is treated as 1. Takes about 0.6 s of wall time.
double measure_fma_peak_gflops(int threads);

// The ISA the loop uses on this CPU: "avx512f" (zmm), "avx2+fma" (ymm) or "sse2" (xmm, separate
// multiply and add: no FMA instruction, still counted 2 FLOP per lane per multiply-add pair).
const char *fma_peak_isa();
