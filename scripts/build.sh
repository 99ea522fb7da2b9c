#!/usr/bin/env bash
# Bootstraps (idempotent) and builds every kernel library, the runtime, tests and benchmarks
# into build/ with the default CMake preset.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
export PATH="$root/.venv/bin:$PATH"
cmake --preset default
bash scripts/cmake_build.sh default
