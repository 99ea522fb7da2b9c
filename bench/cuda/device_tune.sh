#!/usr/bin/env bash
# The CUDA tuning loop of issue 5 on a machine with an NVIDIA GPU (sm_80 or newer) and its
# driver: runs `gelukit_tune --target cuda`, which searches the GPU knobs (gpu_block, gpu_elems
# of the GELU kernels; gpu_rows of the FFN) of the CUDA tuned set plus Anderson2021 on this GPU,
# checks every candidate against the double reference on the device, and writes a CUDA schedule
# file. Copy that file to generators/schedules/cuda.json (or configure with
# -DGELUKIT_CUDA_SCHEDULE_FILE=...) and rebuild to ship the cuda_*_tuned libraries.
#   bash bench/cuda/device_tune.sh                 # builds gelukit_tune here (needs Halide: .venv)
#   bash bench/cuda/device_tune.sh --prebuilt DIR  # DIR from `bash bench/cuda/pack_prebuilt.sh --tune DIR`
# Prebuilt mode is for a GPU machine without Halide or a network (the lent H200): DIR holds
# gelukit_tune, the Anderson2021 plugin and libHalide.so compressed with xz (44 MB; it is
# decompressed here with python3's lzma module, once).
# Budget: GELUKIT_DEVICE_TUNE_TRIALS (default 12) candidates and GELUKIT_DEVICE_TUNE_BUDGET_S
# (default 30) seconds per kernel, 4 kernels, then Anderson2021 and the final tests: ~3-5 min.
# Output: the tuner's table on stdout; DIR/device_tune/ (or build/device_tune/, or
# $GELUKIT_DEVICE_TUNE_OUT): cuda.json and tune.log.
# Exit status: the tuner's (0 done; 3 no usable CUDA device, nothing written; else failed).
set -uo pipefail
caller="$PWD"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$root/bench/cuda/prebuilt_arg.sh"
gelukit_prebuilt_arg device_tune "$@"
cd "$root"
out="${GELUKIT_DEVICE_TUNE_OUT:-}"
[ -n "$out" ] || { [ -n "$prebuilt" ] && out="$prebuilt/device_tune"; } || out="$root/build/device_tune"
case "$out" in /*) ;; *) out="$caller/$out" ;; esac  # GELUKIT_DEVICE_TUNE_OUT: relative to the caller
mkdir -p "$out" || exit 1
if [ -n "$prebuilt" ]; then
    tune_bin="$prebuilt/gelukit_tune"
    [ -x "$tune_bin" ] || { echo "device_tune: $tune_bin is missing (pack_prebuilt.sh --tune DIR)" >&2; exit 1; }
    if [ ! -e "$prebuilt/lib/libHalide.so" ] || [ "$prebuilt/lib/libHalide.so.xz" -nt "$prebuilt/lib/libHalide.so" ]; then
        echo "== decompressing libHalide.so"
        python3 - "$prebuilt/lib/libHalide.so.xz" "$prebuilt/lib/libHalide.so" <<'PY' || exit 1
import lzma, os, shutil, sys
src, dst = sys.argv[1:]
with lzma.open(src) as i, open(dst + ".tmp", "wb") as o:
    shutil.copyfileobj(i, o, 1 << 24)
os.chmod(dst + ".tmp", 0o755)
os.replace(dst + ".tmp", dst)
PY
    fi
    export LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export GELUKIT_TUNE_PLUGIN_DIR="$prebuilt/lib"
    if ldd "$tune_bin" | grep 'not found'; then
        echo "device_tune: $tune_bin misses the libraries above" >&2
        exit 1
    fi
    cat "$prebuilt/PROVENANCE" 2> /dev/null || echo "(no PROVENANCE file: binaries of unknown origin)"
else
    tune_bin="$root/build/bench/tune/gelukit_tune"
    if [ -x "$root/.venv/bin/cmake" ]; then
        export PATH="$root/.venv/bin:$PATH"
    else
        bash scripts/bootstrap.sh && export PATH="$root/.venv/bin:$PATH" || exit 1
    fi
    [ -f build/build.ninja ] || cmake --preset default -DGELUKIT_CUDA=ON > /dev/null || exit 1
    cmake --build build --target gelukit_tune > "$out/build.log" 2>&1 || {
        tail -30 "$out/build.log"
        echo "device_tune: build failed (log: $out/build.log)" >&2
        exit 1
    }
fi
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null
# Anderson2021's parallelism: GELUKIT_DEVICE_TUNE_SMS (the GPU's SM count: H100/H200 132, A100
# 108), else the tuner's default, 108, the value the build's anderson2021 libraries use.
sms="${GELUKIT_DEVICE_TUNE_SMS:-}"
start=$(date +%s)
echo "== gelukit_tune --target cuda (log: $out/tune.log)"
"$tune_bin" --target cuda --trials "${GELUKIT_DEVICE_TUNE_TRIALS:-12}" --budget-s "${GELUKIT_DEVICE_TUNE_BUDGET_S:-30}" \
    ${sms:+--gpu-sms "$sms"} --out "$out/cuda.json" > "$out/tune.log" 2>&1
rc=$?
if grep -E '^\|' "$out/tune.log"; then
    grep -E '^wrote ' "$out/tune.log"
else
    tail -20 "$out/tune.log"
fi
if [ -s "$out/cuda.json" ] && [ "$rc" -eq 0 ]; then
    written="file: $out/cuda.json"
else
    written="no schedule file written"
fi
echo "device_tune: gelukit_tune exit status $rc after $(( $(date +%s) - start )) s; $written"
exit $rc
