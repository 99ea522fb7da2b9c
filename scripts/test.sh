#!/usr/bin/env bash
# The whole test suite: bootstrap, build, ctest -- natively (x86-64), then the arm-64 cross
# build (preset aarch64: the same kernels, runtime and suite, run under qemu-aarch64).
# Exit status: non-zero at the first failing build or test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
export PATH="$root/.venv/bin:$PATH"

# The hardening checks must run, not drop out because a tool is missing: fail if one is not
# registered (ctest -N lists the tests without running them).
require_tests() {
    local preset=$1; shift
    local listed
    listed=$(ctest --preset "$preset" -N)
    for t in "$@"; do
        if ! grep -qE ": ${t//./\\.}\$" <<<"$listed"; then
            echo "test.sh: ctest preset $preset has no test $t (a tool or option is missing; see scripts/bootstrap.sh)" >&2
            exit 1
        fi
    done
}
require_tests default gelukit_tests.sanitized sanitizer_selftest.leak gelukit_concurrency.tsan \
    sanitizer_selftest.race gelukit_fuzz.runtime gelukit_install.example gelukit_large_tests \
    gelukit_report.plots gelukit_tune.tiny_space
ctest --preset default -j 1

echo "test.sh: arm-64 cross build (build-aarch64/, tests under qemu-aarch64)"
cmake --preset aarch64 -Wno-dev
bash scripts/cmake_build.sh aarch64
require_tests aarch64 gelukit_tests.neon_fp16 gelukit_concurrency.qemu gelukit_install.example
ctest --preset aarch64 -j 1
