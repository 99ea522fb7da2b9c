#!/usr/bin/env bash
# The whole test suite: bootstrap, build, ctest. Exit status is ctest's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
export PATH="$root/.venv/bin:$PATH"
ctest --preset default -j 1
