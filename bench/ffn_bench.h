// FFN benchmarks of gelukit_bench (see ffn_bench.cpp for names and counters).
#pragma once

namespace gelukit::bench {

// Registers every FFN workload x variant for one thread count (gelukit_bench.cpp calls it once per
// count, in ascending order: Halide's pool only grows).
void register_ffn_benchmarks(int threads);

// Measures the float32 FMA peak for 1..max_threads threads once and records it in the benchmark
// context ("fma_peak_gflops_threads:<t>"); the FFN rows report their % of it.
void add_ffn_context(int max_threads);

}  // namespace gelukit::bench
