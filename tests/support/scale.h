// Test sizes: native, or reduced when the suite runs under an emulator.
//
// The arm-64 suite runs under qemu-aarch64 (tests/CMakeLists.txt defines
// GELUKIT_TESTS_UNDER_EMULATOR there), which is one to two orders of magnitude slower than native
// execution, so it keeps every tensor <= 1M elements and samples fewer points. It runs the same
// cases: the same special values, tails around every vector width, strides, ranks, dtypes, model
// shapes (MiniLM's 384 -> 1536) and handed cases.
#pragma once

namespace gelukit::test {

#if defined(GELUKIT_TESTS_UNDER_EMULATOR)
constexpr bool kUnderEmulator = true;
#else
constexpr bool kUnderEmulator = false;
#endif

// `native` normally, `emulated` under an emulator.
template<typename T>
constexpr T scaled(T native, T emulated) {
    return kUnderEmulator ? emulated : native;
}

}  // namespace gelukit::test
