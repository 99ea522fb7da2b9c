#!/usr/bin/env bash
# The CUDA device check (issue 4, part 3), for a machine with an NVIDIA GPU (sm_80 or newer),
# its driver, and the CUDA toolkit (cudart + cuBLAS, for the benchmark's peers):
#   1. builds (reusing build/ when present: only what changed is rebuilt) the CUDA kernel
#      libraries, the test suite and gelukit_cuda_bench;
#   2. runs the CUDA tests (gtest filter Cuda*, every CUDA kernel against the double reference)
#      and the ctest CUDA checks (PTX: device code, no f64, ptxas sm_80/sm_90; G42 target check);
#   3. runs gelukit_cuda_bench (GELU vs device-to-device copy of the same bytes; FFN as cuBLAS
#      SGEMM + gelukit CUDA GELU + SGEMM) and prints one table.
# Budget: under 5 minutes on a GPU machine with 16 cores when build/ is already built (a build
# from scratch adds the CPU kernel libraries: ~2-3 minutes on 16 cores).
# Exit status: 0 when the tests passed and the benchmark ran; 2 when no usable CUDA device was
# found (nothing else is attempted beyond the probe); 1 otherwise.
# Output: the table on stdout; raw files in build/device_check/ (tests.xml, bench.json, the
# benchmark's console table bench.txt, logs).
#
# Prebuilt mode, for a GPU machine that has the driver but neither Halide nor a network (the
# lent H200 here): build on the development machine, pack the two binaries with
#   bash bench/cuda/pack_prebuilt.sh DIR
# and on the GPU machine run
#   bash bench/cuda/device_check.sh --prebuilt DIR
# which skips the build and the ctest PTX checks (those are offline checks that CI runs) and
# writes its raw files under DIR/device_check/ (or $GELUKIT_DEVICE_CHECK_OUT when set).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$root/bench/cuda/prebuilt_arg.sh"
gelukit_prebuilt_arg device_check "$@"
cd "$root"
out="${GELUKIT_DEVICE_CHECK_OUT:-$root/build/device_check}"
[ -z "$prebuilt" ] || out="${GELUKIT_DEVICE_CHECK_OUT:-$prebuilt/device_check}"
tests_bin="$root/build/tests/gelukit_tests"
bench_bin="$root/build/bench/cuda/gelukit_cuda_bench"
jobs="$(nproc)"
start=$(date +%s)

if [ -n "$prebuilt" ]; then
    tests_bin="$prebuilt/gelukit_tests"
    bench_bin="$prebuilt/gelukit_cuda_bench"
    # The packed non-system libraries (Google Benchmark), then cuBLAS wherever this machine
    # keeps it (the CUDA toolkit, or the nvidia-cublas wheel of a Python environment).
    libpath="$prebuilt/lib"
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -e "$d/libcublas.so.13" ] && libpath="$libpath:$d"
    done
    for f in $(find /opt /usr/local /usr/lib -name 'libcublas.so.13' 2> /dev/null | head -3); do
        libpath="$libpath:$(dirname "$f")"
    done
    export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif [ -x "$root/.venv/bin/cmake" ]; then
    export PATH="$root/.venv/bin:$PATH"
elif ! command -v cmake > /dev/null; then
    bash scripts/bootstrap.sh && export PATH="$root/.venv/bin:$PATH"
fi
if ! command -v nvidia-smi > /dev/null; then
    echo "device_check: nvidia-smi not found (no NVIDIA driver?); the gtest probe below says why" >&2
else
    nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader || true
fi

mkdir -p "$out" || exit 1
if [ -z "$prebuilt" ]; then
    echo "== build (jobs: $jobs)"
    [ -f build/build.ninja ] || cmake --preset default -DGELUKIT_CUDA=ON > /dev/null || exit 1
    if ! cmake --build build -j "$jobs" --target gelukit_tests gelukit_cuda_bench > "$out/build.log" 2>&1; then
        tail -30 "$out/build.log"
        echo "device_check: build failed (log: $out/build.log)" >&2
        exit 1
    fi
else
    echo "== prebuilt binaries from $prebuilt (no build); LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    cat "$prebuilt/PROVENANCE" 2> /dev/null || echo "(no PROVENANCE file: binaries of unknown origin)"
    for b in "$tests_bin" "$bench_bin"; do
        [ -x "$b" ] || { echo "device_check: $b is missing" >&2; exit 1; }
        if ldd "$b" | grep 'not found'; then
            echo "device_check: $b misses the libraries above" >&2
            exit 1
        fi
    done
fi
build_s=$(( $(date +%s) - start ))

# The probe (gelukit::cuda::cuda_device_available, via the benchmark binary: exit status 2 and
# the reason when there is no usable device).
"$bench_bin" --benchmark_list_tests > /dev/null 2> "$out/probe.log"
probe_rc=$?

echo "== CUDA tests"
"$tests_bin" --gtest_filter='Cuda*' --gtest_brief=1 --gtest_output="xml:$out/tests.xml" \
    > "$out/tests.log" 2>&1
tests_rc=$?
tail -5 "$out/tests.log"
if [ $probe_rc -eq 2 ]; then
    cat "$out/probe.log" >&2
    echo "device_check: no usable CUDA device: the CUDA kernel tests were skipped (rc $tests_rc) and no benchmark was run" >&2
    exit 2
fi
if [ -z "$prebuilt" ]; then
    (cd build && ctest -L cuda --output-on-failure > "$out/ctest.log" 2>&1)
    ctest_rc=$?
    tail -3 "$out/ctest.log"
else
    echo "(prebuilt: the ctest PTX checks are not run here; CI runs them)"
    ctest_rc="not run"
fi

echo "== benchmark"
# GELUKIT_DEVICE_BENCH_FILTER: a --benchmark_filter regex (default: every row).
"$bench_bin" --benchmark_min_time=0.1 --benchmark_filter="${GELUKIT_DEVICE_BENCH_FILTER:-.}" \
    --benchmark_out="$out/bench.json" --benchmark_out_format=json > "$out/bench.txt" 2> "$out/bench.log"
bench_rc=$?
[ $bench_rc -eq 0 ] || { cat "$out/bench.log" >&2; }

python3 - "$out/bench.json" "$out/tests.xml" "$tests_rc" "$ctest_rc" "$build_s" "$start" <<'EOF'
import json, sys, time, re, xml.etree.ElementTree as ET
bench_path, tests_path, tests_rc, ctest_rc, build_s, start = sys.argv[1:]
try:
    t = ET.parse(tests_path).getroot()
    tests = f"{t.get('tests')} run, {t.get('failures')} failed, {t.get('disabled', '0')} disabled, " \
            f"{sum(1 for c in t.iter('testcase') if c.find('skipped') is not None)} skipped"
except Exception as e:
    tests = f"(no test report: {e})"
built = "prebuilt binaries" if ctest_rc == "not run" else f"build {build_s} s"
print(f"\ngelukit CUDA device check — {built}; gtest Cuda*: {tests} (rc {tests_rc}); "
      f"ctest -L cuda rc {ctest_rc}")
try:
    b = json.load(open(bench_path))
except Exception as e:
    print(f"(no benchmark results: {e})")
    sys.exit(0)
ctx = b.get("context", {})
print(f"GPU: {ctx.get('gpu', '?')}; kernels: {ctx.get('gelukit_cuda_target', '?')}")
rows = [r for r in b["benchmarks"] if r.get("run_type", "iteration") == "iteration"]
copy = {}
for r in rows:
    m = re.match(r"cuda_memcpy_d2d/(\w+)/N:(\d+)", r["name"])
    if m:
        copy[(m.group(1), m.group(2))] = r.get("bytes_per_second", 0)
print(f"{'benchmark':58} {'time us':>10} {'GB/s':>8} {'% of copy':>9} {'GFLOP/s':>8}")
for r in rows:
    if "error_message" in r:
        print(f"{r['name']:58} ERROR {r['error_message']}")
        continue
    gbs = r.get("bytes_per_second", 0) / 1e9
    pct = ""
    m = re.match(r"cuda_gelu/cuda_gelu_\w+?_(f32|bf16|f16)_\w+/N:(\d+)", r["name"])
    if m and copy.get((m.group(1), m.group(2))):
        pct = f"{100.0 * r['bytes_per_second'] / copy[(m.group(1), m.group(2))]:.0f}%"
    gf = f"{r['GFLOP/s']:.0f}" if "GFLOP/s" in r else ""
    print(f"{r['name']:58} {r['real_time']:10.1f} {gbs:8.1f} {pct:>9} {gf:>8}")
print(f"total wall time {int(time.time()) - int(start)} s")
EOF
if [ $tests_rc -ne 0 ] || { [ "$ctest_rc" != "not run" ] && [ "$ctest_rc" -ne 0 ]; } || [ $bench_rc -ne 0 ]; then
    exit 1
fi
exit 0
