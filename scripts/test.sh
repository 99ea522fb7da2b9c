#!/usr/bin/env bash
# The whole test suite: bootstrap, build, ctest -- natively (x86-64), then the arm-64 cross
# build (preset aarch64: the same kernels, runtime and suite, run under qemu-aarch64).
# Exit status: non-zero at the first failing build or test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
export PATH="$root/.venv/bin:$PATH"
ctest --preset default -j 1

echo "test.sh: arm-64 cross build (build-aarch64/, tests under qemu-aarch64)"
cmake --preset aarch64 -Wno-dev
cmake --build --preset aarch64 -j "$(nproc)"
ctest --preset aarch64 -j 1
