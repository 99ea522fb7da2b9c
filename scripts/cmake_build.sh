#!/usr/bin/env bash
# cmake --build --preset <preset> with Halide's "(b)float16 type operation is emulated" warnings
# folded into one count line. Halide prints that warning once per generated function of every
# bf16/fp16 kernel built for a target without native bf16/fp16 arithmetic (all x86 targets here:
# the conversions are integer shifts and rounding, which is what the kernels want; README,
# "Expected noise"), several hundred lines (492 in the x86-64 build on 2026-12-06) that would bury real warnings
# and errors. Everything else is passed through
# unchanged, and the exit status is cmake's.
set -euo pipefail
preset=${1:?usage: cmake_build.sh <preset>}
cmake --build --preset "$preset" -j "$(nproc)" 2>&1 | awk -v preset="$preset" '
    /\(b\)float16 type operation is emulated/ { n++; next }
    { print; fflush() }
    END { if (n) printf "cmake_build.sh (%s): %d Halide warnings \"(b)float16 type operation is emulated\" not shown (expected: bf16/fp16 conversions in integer arithmetic)\n", preset, n }'
