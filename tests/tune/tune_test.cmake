# ctest gelukit_tune.tiny_space (tests/CMakeLists.txt): the tuner on a tiny knob space and time
# budget, and the build reading what it wrote. Run as
#   cmake -DTUNE=<gelukit_tune> -DSOURCE_DIR=<gelukit source> -DWORK=<scratch dir>
#         -DARCH=<arch>-linux [-DCONFIGURE_ARGS=...] -P tune_test.cmake
# Checks, each failing the test with a message:
#  1. a corrupt schedule file in the way is moved aside (<file>.corrupt), not merged or lost;
#  2. a GELU kernel (2 x 2 knob values, Adams2019 as a candidate), linear_gelu (small space, odd
#     shapes; and unpacked, pack_weights=0, in a file of its own) and the whole FFN (all
#     2 x 2 x 2 x 2 combinations) are tuned within the budget and merged into one valid
#     version-1 file whose knob values come from the restricted space or are the defaults (the
#     incumbent to beat);
#  3. cmake/GelukitSchedules.cmake (the build's reader) returns those knobs; a corrupt file and a
#     missing file give their messages and no knobs (the defaults); the FFN knobs' sentinels
#     (m_block 0, epilogue_at -1, also for linear_gelu) are accepted by the reader and kept by
#     the tuner when it merges into a file holding them, out-of-range values are rejected;
#  4. configuring gelukit with -DGELUKIT_SCHEDULE_FILE=<that file> puts the knobs on the tuned
#     libraries' generator command lines (build.ninja): the next build uses the result;
#  5. with -DCUDA=ON (GELUKIT_CUDA builds): `gelukit_tune --target cuda --compile-only` JIT-compiles
#     GPU candidates (hand knobs and Anderson2021) without a device; the CPU file as its --out is
#     refused before anything runs and left byte-identical; without a device a real run
#     stops with exit status 3 and a message and writes no file (with one, it writes a valid
#     "cuda" file); the reader takes a CUDA file's GPU knobs and refuses CPU knobs and non-CUDA
#     names there, and GPU knobs in a CPU file; the configure of 4 with
#     -DGELUKIT_CUDA_SCHEDULE_FILE puts the GPU knobs on the CUDA tuned libraries' command lines.
cmake_minimum_required(VERSION 3.28)

# expect(<if() condition as one string> <message>): the condition is evaluated as written.
function(expect cond msg)
    cmake_language(EVAL CODE "if (NOT (${cond}))\n set(failed TRUE)\nendif ()")
    if (failed)
        message(FATAL_ERROR "gelukit_tune test: ${msg}")
    endif ()
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(file "${WORK}/schedules.json")

# 1 + 2 (GELU): a corrupt file is in the way.
file(WRITE "${file}" "{ \"format\": \"gelukit-schedules\", \"version\": ")
execute_process(
    COMMAND "${TUNE}" --kernel gelu_fwd_f32_erf_acc --trials 4 --budget-s 60 --repetitions 5
            --space vector_multiple=1,2 --space parallel_grain=16384,65536 --gelu-n 786432
            --autoschedulers Adams2019 --threads 2 --out "${file}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}")
expect("rc EQUAL 0" "tuning the GELU kernel failed (${rc}): ${err}")
expect("EXISTS \"${file}.corrupt\"" "the corrupt file was not moved aside: ${err}")
string(FIND "${err}" "moved to ${file}.corrupt" pos)
expect("pos GREATER -1" "no message about the corrupt file: ${err}")
string(FIND "${out}" "| gelu_fwd_f32_erf_acc | N=786432 |" pos)
expect("pos GREATER -1" "no summary row for the GELU kernel: ${out}")

# 2 (FFN): merged into the same file; d_ff = 100 is not a multiple of the 48-wide panels,
# d_model = 100 not a multiple of the K blocks, M = 37 not a multiple of the m blocks. The
# whole FFN's space (2 x 2 x 2 x 2 = 16 candidates, all with acc_block=16: partial sums of 16 K terms,
# with k_block 32 two per K block; K = 100 leaves a short last block of 4 (16 in the packed second
# GEMM, whose K is d_ff padded to 144); the two linear_gelu runs that come first have
# acc_block 64 > k_block 32, one partial sum per K block; the default,
# m_block 0 and epilogue_at -1, i.e. the generator's defaults, is a 17th) is measured completely,
# so every combination of K blocking, epilogue level and weight layout
# (runtime-packed panels or nn.Linear matrices packed in the kernel) is JIT-compiled and
# checked against the double reference; none may be discarded.
execute_process(
    COMMAND "${TUNE}" --kernel linear_gelu_f32_erf --trials 3 --budget-s 60 --repetitions 5
            --space m_block=8,16 --space avx512_tile_rows=0,4 --space avx2_tile_rows=0,1
            --space avx2_tile_vectors=0,2 --space k_block=0,32 --space acc_block=64 --ffn-m 16
            --ffn-d-model 64 --ffn-d-ff 100 --autoschedulers none --threads 2 --out "${file}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}")
expect("rc EQUAL 0" "tuning the FFN kernel failed (${rc}): ${err}")
string(FIND "${err}" "discarded" pos)
expect("pos EQUAL -1" "a linear_gelu candidate failed its reference check: ${err}")
# linear_gelu with weights read as nn.Linear matrices (pack_weights=0), every point of a small
# space (4 + the default), into a file of its own (the merged file keeps the run above).
execute_process(
    COMMAND "${TUNE}" --kernel linear_gelu_f32_erf --trials 5 --budget-s 60 --repetitions 3
            --space m_block=8,16 --space k_block=0,32 --space pack_weights=0 --space acc_block=64 --space avx512_tile_rows=0
            --space avx2_tile_rows=0 --space avx2_tile_vectors=0 --ffn-m 37 --ffn-d-model 7
            --ffn-d-ff 100 --autoschedulers none --threads 2 --out "${WORK}/unpacked.json"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect("rc EQUAL 0" "tuning unpacked linear_gelu failed (${rc}): ${err}")
file(READ "${WORK}/unpacked.json" utext)
string(JSON u_trials GET "${utext}" kernels linear_gelu_f32_erf measured trials)
string(JSON u_discarded GET "${utext}" kernels linear_gelu_f32_erf measured discarded)
expect("u_trials EQUAL 5 AND u_discarded EQUAL 0" "unpacked linear_gelu: ${u_trials} trials (5 wanted), ${u_discarded} discarded: ${err}")
execute_process(
    COMMAND "${TUNE}" --kernel ffn_f32_erf --trials 17 --budget-s 180 --repetitions 3
            --space m_block=8,16 --space k_block=0,32 --space epilogue_at=0,1 --space pack_weights=0,1
            --space acc_block=16
            --space avx512_tile_rows=0
            --space avx2_tile_rows=0 --space avx2_tile_vectors=0
            --ffn-m 37 --ffn-d-model 100 --ffn-d-ff 100 --autoschedulers none --threads 2 --out "${file}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}")
expect("rc EQUAL 0" "tuning the whole FFN failed (${rc}): ${err}")
string(FIND "${err}" "discarded" pos)
expect("pos EQUAL -1" "an FFN candidate failed its reference check: ${err}")

file(READ "${file}" text)
string(JSON version GET "${text}" version)
string(JSON trials GET "${text}" kernels gelu_fwd_f32_erf_acc measured trials)
string(JSON adams_ok GET "${text}" kernels gelu_fwd_f32_erf_acc autoschedulers 0 ok)
expect("version EQUAL 1" "version ${version}")
expect("trials EQUAL 4" "the GELU search ran ${trials} trials, not the 4 asked for")
string(JSON ffn_trials GET "${text}" kernels ffn_f32_erf measured trials)
string(JSON ffn_discarded GET "${text}" kernels ffn_f32_erf measured discarded)
expect("ffn_trials EQUAL 17 AND ffn_discarded EQUAL 0" "the FFN search measured ${ffn_trials} candidates (17 wanted), ${ffn_discarded} discarded")
# ... and they are the 16 points of the space (plus the default, which lies outside it).
string(JSON n_cand LENGTH "${text}" kernels ffn_f32_erf measured candidates)
set(labels "")
math(EXPR last_cand "${n_cand} - 1")
foreach (i RANGE ${last_cand})
    string(JSON label GET "${text}" kernels ffn_f32_erf measured candidates ${i} knobs)
    string(APPEND labels "[${label}]")
endforeach ()
foreach (e IN ITEMS 0 1)
    foreach (kb IN ITEMS 0 32)
        foreach (mb IN ITEMS 8 16)
            foreach (pw IN ITEMS 0 1)
                set(want "epilogue_at=${e} k_block=${kb} m_block=${mb} pack_weights=${pw}")
                string(FIND "${labels}" "${want}" pos)
                expect("pos GREATER -1" "${want} was not measured: ${labels}")
            endforeach ()
        endforeach ()
    endforeach ()
endforeach ()
expect("adams_ok" "Adams2019 was not measured as a candidate: ${text}")

# 3: the build's reader. linear_gelu's entry is set to pack_weights=0 first (its run above does
# not search that knob), so that the configure below must build an unpacked tuned kernel and say
# so in the runtime's registry.
string(JSON text SET "${text}" kernels linear_gelu_f32_erf params pack_weights 0)
file(WRITE "${file}" "${text}")
include("${SOURCE_DIR}/cmake/GelukitSchedules.cmake")
set(PROJECT_SOURCE_DIR "${SOURCE_DIR}")
gelukit_load_schedule_file("${file}" "${ARCH}")
gelukit_schedule_params(gelu_fwd_f32_erf_acc gelu_knobs)
gelukit_schedule_params(linear_gelu_f32_erf ffn_knobs)
expect("gelu_knobs MATCHES \"^parallel_grain=(16384|65536);vector_multiple=(1|2)$\"" "GELU knobs '${gelu_knobs}'")
# (the defaults, m_block 0 (the generator's) and tile rows 0, stay when no candidate beats them significantly)
# (avx512_tile_rows is searched only on an AVX-512 host, the avx2_tile_* knobs only elsewhere)
expect("ffn_knobs MATCHES \"^(acc_block=(-1|64);)?(avx2_tile_rows=(0|1);avx2_tile_vectors=(0|2);)?(avx512_tile_rows=(0|4);)?k_block=(0|32);m_block=(0|8|16);pack_weights=0$\"" "FFN knobs '${ffn_knobs}'")
# Each case: the file's "kernels" value (or none: no file) and the message the reader must give.
set(head "{\"format\": \"gelukit-schedules\", \"version\": 1, \"arch\": \"${ARCH}\", \"kernels\": ")
set(k "\"gelu_fwd_f32_erf_acc\"")
set(cases range kernels_array params_array regex_knob generator gpu_block missing)
set(body_range "{${k}: {\"generator\": \"gelu_forward\", \"params\": {\"vector_multiple\": 99}}}")
set(want_range "is corrupt: kernel gelu_fwd_f32_erf_acc: vector_multiple = 99 is not an integer in [1, 8]")
set(body_kernels_array "[{}]")
set(want_kernels_array "is corrupt: no \"kernels\" object")
set(body_params_array "{${k}: {\"generator\": \"gelu_forward\", \"params\": [64]}}")
set(want_params_array "is corrupt: kernel gelu_fwd_f32_erf_acc has no \"params\" object")
set(body_regex_knob "{${k}: {\"generator\": \"gelu_forward\", \"params\": {\"(\": 1, \"vector.multiple\": 2}}}")
set(want_regex_knob "is corrupt: kernel gelu_fwd_f32_erf_acc: a knob name is not a gelukit knob name")
set(body_generator "{${k}: {\"generator\": \"ffn\", \"params\": {\"m_block\": 64}}}")
set(want_generator "is corrupt: kernel gelu_fwd_f32_erf_acc: generator 'ffn', its name says 'gelu_forward'")
set(body_gpu_block "{${k}: {\"generator\": \"gelu_forward\", \"params\": {\"gpu_block\": 100}}}")
set(want_gpu_block "is corrupt: kernel gelu_fwd_f32_erf_acc: 'gpu_block' is a GPU knob; it belongs in the CUDA schedule file")
set(want_missing "no schedule file at")
# The FFN knobs' sentinels: epilogue_at -1 (the generator's default) is valid for linear_gelu,
# whose only other value is 0; below -1, above 0 for linear_gelu, and m_block below 0 are not.
list(APPEND cases lg_unfused ffn_epilogue ffn_m_block)
set(kernel_lg_unfused linear_gelu_f32_erf)
set(body_lg_unfused "{\"linear_gelu_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"epilogue_at\": 1}}}")
set(want_lg_unfused "is corrupt: kernel linear_gelu_f32_erf: epilogue_at applies only to kernels with a second GEMM")
set(kernel_ffn_epilogue ffn_f32_erf)
set(body_ffn_epilogue "{\"ffn_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"epilogue_at\": -2}}}")
set(want_ffn_epilogue "is corrupt: kernel ffn_f32_erf: epilogue_at = -2 is not an integer in [-1, 1]")
set(kernel_ffn_m_block ffn_f32_erf)
set(body_ffn_m_block "{\"ffn_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"m_block\": -1}}}")
set(want_ffn_m_block "is corrupt: kernel ffn_f32_erf: m_block = -1 is not an integer in [0, 4096]")
# CUDA files ("arch": "cuda"): GPU knobs only, CUDA kernel names (math fast for GELU).
set(cuda_head "{\"format\": \"gelukit-schedules\", \"version\": 1, \"arch\": \"cuda\", \"kernels\": ")
list(APPEND cases cuda_cpu_knob cuda_step cuda_name)
set(arch_cuda_cpu_knob cuda)
set(kernel_cuda_cpu_knob gelu_fwd_f32_erf_fast)
set(body_cuda_cpu_knob "{\"gelu_fwd_f32_erf_fast\": {\"generator\": \"gelu_forward\", \"params\": {\"vector_multiple\": 2}}}")
set(want_cuda_cpu_knob "is corrupt: kernel gelu_fwd_f32_erf_fast: 'vector_multiple' is a CPU knob; it belongs in the CPU schedule file")
set(arch_cuda_step cuda)
set(kernel_cuda_step ffn_f32_erf)
set(body_cuda_step "{\"ffn_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"gpu_rows\": 20}}}")
set(want_cuda_step "is corrupt: kernel ffn_f32_erf: gpu_rows = 20 is not a multiple of 8")
set(arch_cuda_name cuda)
set(body_cuda_name "{${k}: {\"generator\": \"gelu_forward\", \"params\": {\"gpu_block\": 128}}}")
set(want_cuda_name "is corrupt: kernel gelu_fwd_f32_erf_acc: not a CUDA kernel name")
# A name of the right shape that is no CUDA row (SwiGLU has only SiLU).
list(APPEND cases cuda_row)
set(arch_cuda_row cuda)
set(kernel_cuda_row swiglu_f32_erf)
set(body_cuda_row "{\"swiglu_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"gpu_rows\": 32}}}")
set(want_cuda_row "is corrupt: kernel swiglu_f32_erf: not a CUDA kernel name")
foreach (case IN LISTS cases)
    set(want "${want_${case}}")
    set(kernel gelu_fwd_f32_erf_acc)
    if (DEFINED kernel_${case})
        set(kernel ${kernel_${case}})
    endif ()
    set(case_arch "${ARCH}")
    set(case_head "${head}")
    if (DEFINED arch_${case})
        set(case_arch cuda)
        set(case_head "${cuda_head}")
    endif ()
    if (case STREQUAL "missing")
        file(REMOVE "${WORK}/bad.json")
    else ()
        file(WRITE "${WORK}/bad.json" "${case_head}${body_${case}}}")
    endif ()
    execute_process(
        COMMAND "${CMAKE_COMMAND}" -DSCHEDULE_FILE=${WORK}/bad.json -DARCH=${case_arch} -DKERNEL=${kernel}
                -P "${SOURCE_DIR}/cmake/GelukitSchedules.cmake"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    string(REPLACE "\n" " " msg "${out} ${err}")
    string(REGEX REPLACE " +" " " msg "${msg}")
    string(FIND "${msg}" "${want}" pos)
    expect("rc EQUAL 0" "the reader failed on a ${case} file: ${msg}")
    expect("pos GREATER -1" "no clear message for a ${case} file: ${msg}")
    string(REGEX MATCH "params: [a-z_]+=" knobs_given "${msg}")
    expect("NOT knobs_given" "a ${case} file gave knobs: ${msg}")
endforeach ()

# 3b: the sentinels are valid where the generator takes them: the reader returns
# linear_gelu's epilogue_at -1 and the FFN's m_block 0 / epilogue_at -1, and the tuner keeps
# such stored entries when it merges a new result into the file (it once dropped them).
set(sentinels "{\"linear_gelu_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"epilogue_at\": -1}}, \"ffn_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"epilogue_at\": -1, \"m_block\": 0}}}")
file(WRITE "${WORK}/sentinels.json" "${head}${sentinels}}")
gelukit_load_schedule_file("${WORK}/sentinels.json" "${ARCH}")
gelukit_schedule_params(linear_gelu_f32_erf lg_knobs)
gelukit_schedule_params(ffn_f32_erf ffn_sentinel_knobs)
expect("lg_knobs STREQUAL \"epilogue_at=-1\"" "the reader returned linear_gelu knobs '${lg_knobs}', not epilogue_at=-1")
expect("ffn_sentinel_knobs STREQUAL \"epilogue_at=-1;m_block=0\""
       "the reader returned FFN knobs '${ffn_sentinel_knobs}', not epilogue_at=-1;m_block=0")
execute_process(
    COMMAND "${TUNE}" --kernel gelu_fwd_f32_erf_acc --trials 1 --budget-s 30 --repetitions 3
            --space vector_multiple=1 --space parallel_grain=16384 --gelu-n 65536
            --autoschedulers none --threads 1 --out "${WORK}/sentinels.json"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect("rc EQUAL 0" "tuning into the file with sentinel entries failed (${rc}): ${err}")
string(FIND "${err}" "dropping" pos)
expect("pos EQUAL -1" "the tuner dropped a stored entry with a sentinel value: ${err}")
expect("NOT EXISTS \"${WORK}/sentinels.json.corrupt\"" "the tuner took the file with sentinel entries for corrupt: ${err}")
file(READ "${WORK}/sentinels.json" sentinels_text)
string(JSON lg_epilogue GET "${sentinels_text}" kernels linear_gelu_f32_erf params epilogue_at)
string(JSON ffn_m_block GET "${sentinels_text}" kernels ffn_f32_erf params m_block)
string(JSON gelu_entry TYPE "${sentinels_text}" kernels gelu_fwd_f32_erf_acc)
expect("gelu_entry STREQUAL \"OBJECT\"" "the new GELU result was not merged next to the stored entries")
expect("lg_epilogue EQUAL -1 AND ffn_m_block EQUAL 0" "stored sentinels changed: epilogue_at ${lg_epilogue}, m_block ${ffn_m_block}")

# 5 (CUDA, before the configure of 4, which also reads the CUDA file written here).
set(cuda_file "${WORK}/cuda.json")
set(cuda_args "")
if (CUDA)
    # 5a: GPU candidates compile without a device: 2 x 2 GELU hand points + Anderson2021, 2 FFN
    # block sizes + Anderson2021.
    execute_process(
        COMMAND "${TUNE}" --target cuda --compile-only --kernel gelu_fwd_f32_erf_fast --kernel ffn_f32_erf
                --space gpu_block=128,512 --space gpu_elems=2,8 --space gpu_rows=32,128
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    expect("rc EQUAL 0" "compiling the CUDA candidates failed (${rc}): ${out} ${err}")
    string(FIND "${out}" "compile-only: 8 compiled, 0 refused by the generator, 0 failed" pos)
    expect("pos GREATER -1" "not every CUDA candidate compiled: ${out} ${err}")
    # 5b: the other target's file as --out is refused before anything runs, and left as it was.
    file(READ "${file}" cpu_before)
    file(READ "${file}.corrupt" corrupt_before)  # step 1's
    execute_process(
        COMMAND "${TUNE}" --target cuda --kernel gelu_fwd_f32_erf_fast --trials 1 --budget-s 5 --out "${file}"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    file(READ "${file}" cpu_after)
    file(READ "${file}.corrupt" corrupt_after)
    string(FIND "${err}" "is the schedule file of \"${ARCH}\", not of \"cuda\"" pos)
    expect("rc EQUAL 2 AND pos GREATER -1" "--target cuda with the CPU file as --out was not refused (${rc}): ${err}")
    expect("cpu_before STREQUAL cpu_after AND corrupt_before STREQUAL corrupt_after" "--target cuda touched the CPU file")
    # 5c: a real run: without a device, exit status 3, a message, no file; with one, a valid
    # CUDA file (either block size may win: 128 and 256 threads are within a few % on an H200).
    execute_process(
        COMMAND "${TUNE}" --target cuda --kernel gelu_fwd_f32_erf_fast --trials 2 --budget-s 30 --repetitions 6
                --gelu-n 1048576 --space gpu_block=128,256 --space gpu_elems=4 --out "${WORK}/cuda_run.json"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if (rc EQUAL 3)
        string(FIND "${err}" "--target cuda needs a CUDA device, and none is usable here" pos)
        expect("pos GREATER -1" "no clear message without a CUDA device: ${err}")
        expect("NOT EXISTS \"${WORK}/cuda_run.json\"" "a schedule file was written without a device")
        message(STATUS "gelukit_tune test: no CUDA device here; --target cuda stopped with its message")
    else ()
        expect("rc EQUAL 0" "gelukit_tune --target cuda failed (${rc}): ${err}")
        file(READ "${WORK}/cuda_run.json" run_text)
        string(JSON run_arch GET "${run_text}" arch)
        string(JSON run_block GET "${run_text}" kernels gelu_fwd_f32_erf_fast params gpu_block)
        string(JSON run_discarded GET "${run_text}" kernels gelu_fwd_f32_erf_fast measured discarded)
        expect("run_arch STREQUAL \"cuda\" AND (run_block EQUAL 128 OR run_block EQUAL 256)"
               "the CUDA run wrote arch ${run_arch}, gpu_block ${run_block}")
        expect("run_discarded EQUAL 0" "the CUDA run discarded ${run_discarded} candidate(s) as wrong: ${err}")
        message(STATUS "gelukit_tune test: a CUDA device is present; the tuner ran on it: ${out}")
    endif ()
    # 5d: the reader takes a CUDA file's GPU knobs, and the CPU answers stay as they were.
    gelukit_schedule_params(ffn_f32_erf cpu_before_cuda)
    file(WRITE "${cuda_file}" "${cuda_head}{\"gelu_fwd_f32_erf_fast\": {\"generator\": \"gelu_forward\", \"params\": {\"gpu_block\": 512, \"gpu_elems\": 8}}, \"ffn_f32_erf\": {\"generator\": \"ffn\", \"params\": {\"gpu_rows\": 32}}}}")
    gelukit_load_schedule_file("${cuda_file}" cuda)
    gelukit_schedule_params(gelu_fwd_f32_erf_fast cuda_gelu_knobs cuda)
    gelukit_schedule_params(ffn_f32_erf cuda_ffn_knobs cuda)
    gelukit_schedule_params(ffn_f32_erf cpu_after_cuda)
    expect("cuda_gelu_knobs STREQUAL \"gpu_block=512;gpu_elems=8\" AND cuda_ffn_knobs STREQUAL \"gpu_rows=32\""
           "the reader returned CUDA knobs '${cuda_gelu_knobs}' / '${cuda_ffn_knobs}'")
    expect("NOT cpu_before_cuda STREQUAL \"\" AND cpu_before_cuda STREQUAL cpu_after_cuda"
           "loading the CUDA file changed the CPU answer for ffn_f32_erf: '${cpu_before_cuda}' -> '${cpu_after_cuda}'")
    # The configure of 4 builds the CUDA rows too (CONFIGURE_ARGS turns them off otherwise).
    list(REMOVE_ITEM CONFIGURE_ARGS -DGELUKIT_CUDA=OFF)
    set(cuda_args -DGELUKIT_CUDA=ON -DGELUKIT_CUDA_SCHEDULE_FILE=${cuda_file})
endif ()

# 4: a configure of gelukit with this file.
execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK}/configure" -G Ninja
            -DGELUKIT_SCHEDULE_FILE=${file} ${cuda_args} ${CONFIGURE_ARGS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect("rc EQUAL 0" "configuring gelukit with the tuned file failed: ${out} ${err}")
string(FIND "${out}" "gelukit: 3 tuned kernel(s) from ${file}" pos)
expect("pos GREATER -1" "the configure did not report the tuned file: ${out}")
file(READ "${WORK}/configure/build.ninja" ninja)
string(REGEX MATCH "-f gelu_fwd_f32_erf_acc_tuned[^\n]*" gelu_cmd "${ninja}")
string(REGEX MATCH "-f linear_gelu_f32_erf_tuned[^\n]*" ffn_cmd "${ninja}")
string(REPLACE ";" " " gelu_words "${gelu_knobs}")
string(REPLACE ";" " " ffn_words "${ffn_knobs}")
foreach (pair IN LISTS gelu_knobs)
    string(FIND "${gelu_cmd}" " ${pair}" pos)
    expect("pos GREATER -1" "gelu_fwd_f32_erf_acc_tuned is not generated with ${pair}: ${gelu_cmd}")
endforeach ()
foreach (pair IN LISTS ffn_knobs)
    string(FIND "${ffn_cmd}" " ${pair}" pos)
    expect("pos GREATER -1" "linear_gelu_f32_erf_tuned is not generated with ${pair}: ${ffn_cmd}")
endforeach ()
# The runtime's registry marks the weight layout each tuned kernel expects (0: nn.Linear).
file(READ "${WORK}/configure/include/gelukit/generated/ffn_kernels.inc" inc)
string(FIND "${inc}" "GELUKIT_FFN_KERNEL(linear_gelu_f32_erf_tuned, linear_gelu, f32, erf, tuned, 0)" pos)
expect("pos GREATER -1" "linear_gelu_f32_erf_tuned (pack_weights=0) is not registered as unpacked: ${inc}")
string(JSON ffn_pack GET "${text}" kernels ffn_f32_erf params pack_weights)
string(FIND "${inc}" "GELUKIT_FFN_KERNEL(ffn_f32_erf_tuned, ffn, f32, erf, tuned, ${ffn_pack})" pos)
expect("pos GREATER -1" "ffn_f32_erf_tuned (pack_weights=${ffn_pack}) is registered with another layout: ${inc}")
if (CUDA)
    string(FIND "${out}" "gelukit: 2 tuned kernel(s) from ${cuda_file}" pos)
    expect("pos GREATER -1" "the configure did not report the CUDA file: ${out}")
    string(REGEX MATCH "-f cuda_gelu_fwd_f32_erf_tuned[^\n]*" cuda_gelu_cmd "${ninja}")
    string(REGEX MATCH "-f cuda_ffn_f32_erf_tuned[^\n]*" cuda_ffn_cmd "${ninja}")
    foreach (pair IN ITEMS gpu_block=512 gpu_elems=8)
        string(FIND "${cuda_gelu_cmd}" " ${pair}" pos)
        expect("pos GREATER -1" "cuda_gelu_fwd_f32_erf_tuned is not generated with ${pair}: ${cuda_gelu_cmd}")
    endforeach ()
    string(FIND "${cuda_ffn_cmd}" " gpu_rows=32" pos)
    expect("pos GREATER -1" "cuda_ffn_f32_erf_tuned is not generated with gpu_rows=32: ${cuda_ffn_cmd}")
    file(READ "${WORK}/configure/include/gelukit/generated/cuda_ffn_kernels.inc" cuda_inc)
    string(FIND "${cuda_inc}" "GELUKIT_CUDA_FFN_KERNEL(cuda_ffn_f32_erf_tuned, ffn, f32, erf, tuned)" pos)
    expect("pos GREATER -1" "cuda_ffn_f32_erf_tuned is not registered: ${cuda_inc}")
endif ()
message(STATUS "gelukit_tune test: GELU knobs ${gelu_words}, FFN knobs ${ffn_words}; the build uses them")
