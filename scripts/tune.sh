#!/usr/bin/env bash
# Tunes the hand schedules of the build's tuned kernels on this machine and writes the schedule
# file the next build ships (generators/schedules/<arch>-linux.json; README, section Tuning):
#   bash scripts/tune.sh                      # every tuned kernel, 60 s search each (~10 min)
#   bash scripts/tune.sh --kernel ffn_f32_erf --budget-s 300
# Arguments go to gelukit_tune (bench/tune/gelukit_tune.cpp; --help lists them). Set-up and the
# tuner's build are the same as the main job's (bootstrap, default preset).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
export PATH="$root/.venv/bin:$PATH"
cmake --preset default
cmake --build --preset default --target gelukit_tune -j "$(nproc)"
build/bench/tune/gelukit_tune "$@"
echo "tune.sh: rebuild (bash scripts/build.sh) to ship the tuned kernels (schedule 'tuned')"
