# Cross build for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu; tests run under
# qemu-aarch64 (Debian's qemu-user) through CMAKE_CROSSCOMPILING_EMULATOR.
#
# Used by the `aarch64` configure preset (CMakePresets.json). The Halide generators are host
# (x86-64) programs: they are imported from the host build (gelukit-halide_generators_DIR, set
# by the preset), the way Halide's CMake documentation describes cross-compiling.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Target libraries and headers come from the cross sysroot only; CMake packages may also come
# from the host (Halide's helpers and generators, header-only nlohmann-json and CLI11). Binary
# packages of the host (GTest) are not used: the suite builds GoogleTest from Debian's source.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# -L: where qemu finds the aarch64 dynamic loader and libc. QEMU_CPU (environment) selects the
# emulated CPU; the default "max" has every ARMv8 extension qemu implements, FP16 included.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
