#!/usr/bin/env bash
# Packs what `device_check.sh --prebuilt DIR` needs on a GPU machine that has the NVIDIA driver
# but neither Halide nor a network: the test binary, the CUDA benchmark and the shared libraries
# they use that such a machine may lack (Google Benchmark). glibc, libstdc++, cuBLAS and the
# driver are expected there (cuBLAS is searched for by device_check.sh).
# Usage: bash bench/cuda/pack_prebuilt.sh DIR   (builds the two targets first when needed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:?usage: pack_prebuilt.sh DIR}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"  # relative to the caller's directory
cd "$root"
[ -x .venv/bin/cmake ] && export PATH="$root/.venv/bin:$PATH"
grep -q '^GELUKIT_CUDA:BOOL=ON' build/CMakeCache.txt || {
    echo "pack_prebuilt: build/ is not configured with GELUKIT_CUDA=ON" >&2
    exit 1
}
cmake --build build --target gelukit_tests gelukit_cuda_bench
mkdir -p "$dir/lib"
cp build/tests/gelukit_tests build/bench/cuda/gelukit_cuda_bench "$dir/"
for b in "$dir/gelukit_tests" "$dir/gelukit_cuda_bench"; do
    ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
        case "$name" in
            libc.so* | libm.so* | libgcc_s.so* | libstdc++.so* | libpthread.so* | libdl.so* | \
                librt.so* | libcublas*.so* | libcudart*.so* | libcuda.so*) ;;
            *) cp -L "$path" "$dir/lib/$name" ;;
        esac
    done
done
# Which source the binaries come from (device_check.sh prints it): the commit and a hash of the
# uncommitted changes, so that a run on the GPU machine can be matched to its source.
{
    echo "commit $(git rev-parse HEAD 2> /dev/null || echo unknown)"
    echo "uncommitted diff sha256 $(git diff HEAD 2> /dev/null | sha256sum | cut -d' ' -f1)"
    echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$dir/PROVENANCE"
ls -la "$dir" "$dir/lib"
