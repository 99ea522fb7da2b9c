#!/usr/bin/env bash
# Packs what runs on a GPU machine that has the NVIDIA driver but neither Halide nor a network.
#   bash bench/cuda/pack_prebuilt.sh DIR         for `device_check.sh --prebuilt DIR`: the test
#       binary, the CUDA benchmark and the shared libraries they use that such a machine may lack
#       (Google Benchmark). glibc, libstdc++, cuBLAS and the driver are expected there (cuBLAS is
#       searched for by device_check.sh). ~28 MB.
#   bash bench/cuda/pack_prebuilt.sh --tune DIR  for `device_tune.sh --prebuilt DIR`: gelukit_tune,
#       the Anderson2021 plugin and libHalide.so, which the tuner's JIT needs, compressed with xz
#       (165 MB -> 44 MB; ~2 min of xz here). ~47 MB: a separate directory, so that each pack
#       stays under the 64 MiB a device call carries.
# Both build their targets first when needed (build/ configured with GELUKIT_CUDA=ON).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tune=0
if [ "${1:-}" = "--tune" ]; then
    tune=1
    shift
fi
if [ $# -ne 1 ] || [ "${1:0:1}" = "-" ]; then
    echo "usage: pack_prebuilt.sh [--tune] DIR (got: $*)" >&2
    exit 1
fi
dir="$1"
mkdir -p "$dir"
dir="$(CDPATH='' cd -- "$dir" > /dev/null && pwd)"  # relative to the caller's directory
cd "$root"
[ -x .venv/bin/cmake ] && export PATH="$root/.venv/bin:$PATH"
grep -q '^GELUKIT_CUDA:BOOL=ON' build/CMakeCache.txt || {
    echo "pack_prebuilt: build/ is not configured with GELUKIT_CUDA=ON" >&2
    exit 1
}
mkdir -p "$dir/lib"
# The non-system shared libraries a binary needs, copied into DIR/lib (libHalide: see below).
copy_libs() {
    ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
        case "$name" in
            libc.so* | libm.so* | libgcc_s.so* | libstdc++.so* | libpthread.so* | libdl.so* | \
                librt.so* | libcublas*.so* | libcudart*.so* | libcuda.so* | libHalide.so*) ;;
            *) cp -L "$path" "$dir/lib/$name" ;;
        esac
    done
}
if [ $tune -eq 0 ]; then
    cmake --build build --target gelukit_tests gelukit_cuda_bench
    cp build/tests/gelukit_tests build/bench/cuda/gelukit_cuda_bench "$dir/"
    copy_libs "$dir/gelukit_tests"
    copy_libs "$dir/gelukit_cuda_bench"
else
    cmake --build build --target gelukit_tune
    cp build/bench/tune/gelukit_tune "$dir/"
    copy_libs "$dir/gelukit_tune"
    halide="$(ldd "$dir/gelukit_tune" | awk '$1 ~ /^libHalide\.so/ {print $3}')"
    [ -f "$halide" ] || { echo "pack_prebuilt: gelukit_tune's libHalide.so not found" >&2; exit 1; }
    # The plugin's file as the tuner's compile definition names it (loaded from
    # GELUKIT_TUNE_PLUGIN_DIR, which device_tune.sh sets to DIR/lib).
    cp -L "$(dirname "$halide")/libautoschedule_anderson2021.so" "$dir/lib/"
    if [ ! -f "$dir/lib/libHalide.so.xz" ] || [ "$halide" -nt "$dir/lib/libHalide.so.xz" ]; then
        xz -9 -T"$(nproc)" -c "$halide" > "$dir/lib/libHalide.so.xz.tmp"
        mv "$dir/lib/libHalide.so.xz.tmp" "$dir/lib/libHalide.so.xz"
    fi
    rm -f "$dir/lib/libHalide.so"  # decompressed on the GPU machine, not carried
fi
# Which source the binaries come from (device_check.sh and device_tune.sh print it): the commit
# and a hash of the uncommitted changes, so that a run on the GPU machine can be matched to its
# source.
{
    echo "commit $(git rev-parse HEAD 2> /dev/null || echo unknown)"
    echo "uncommitted diff sha256 $(git diff HEAD 2> /dev/null | sha256sum | cut -d' ' -f1)"
    echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$dir/PROVENANCE"
ls -la "$dir" "$dir/lib"
du -sh "$dir"
