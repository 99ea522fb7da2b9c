#!/usr/bin/env bash
# The main job: bootstrap, build every kernel library, run the benchmark that compares the
# schedules against each other and against the peers (oneDNN, the scalar reference loop, a
# memcpy floor) at BERT-base size, the FFN workloads (incl. the real all-MiniLM-L6-v2 weights,
# with their error against a double reference), print the comparison tables and write
# build/report/bench.json + build/report/report.md with PNG plots in build/report/plots/
# (scripts/gelukit_report.py).
#   GELUKIT_BENCH_FILTER   override the benchmark filter (regex)
#   GELUKIT_BENCH_MIN_TIME seconds per benchmark (default 0.2)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh
mkdir -p build/report
# GELU at BERT-base activation size, and every FFN workload (BERT-base, real MiniLM weights,
# GPT-2, GeGLU) with its oneDNN peers.
filter=${GELUKIT_BENCH_FILTER:-'^(gelu/.*/N:(4096|1572864)/|ffn/)'}
min_time=${GELUKIT_BENCH_MIN_TIME:-0.2}
build/bench/gelukit_bench \
    --benchmark_filter="$filter" \
    --benchmark_min_time="$min_time" \
    --benchmark_out=build/report/bench.json \
    --benchmark_out_format=json
# ULP error against x of each forward float32 form, accurate and fast math (plotted in the report).
mkdir -p build/report/ulp
profiles=()
for form in erf tanh sigmoid; do
    for math in acc fast; do
        build/tests/gelukit_accuracy --form "$form" --math "$math" --samples 65536 \
            --profile "build/report/ulp/fwd_f32_${form}_${math}.csv" --profile-range -12 6 --profile-points 9001
        profiles+=(--ulp-profile "$form $math=build/report/ulp/fwd_f32_${form}_${math}.csv")
    done
done
.venv/bin/python3 scripts/gelukit_report.py build/report/bench.json --out build/report/report.md \
    --plots-dir build/report/plots "${profiles[@]}"
echo "main job: wrote build/report/bench.json, build/report/report.md, build/report/plots/*.png and build/report/ulp/*.csv"
