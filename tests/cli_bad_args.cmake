# ctest gelukit_tune.bad_args and gelukit_accuracy.bad_args (tests/CMakeLists.txt): the tools
# refuse bad arguments with a message and exit status 2, never with std::terminate (SIGABRT) or
# a silent success. Run as
#   cmake -DTOOL=<gelukit_tune | gelukit_accuracy> -DKIND=<tune | accuracy> -DWORK=<scratch dir>
#         -P cli_bad_args.cmake
# Every gelukit_tune case fails its checks before anything is tuned (and names a scratch --out
# and a tiny workload, so that a regression costs seconds, not a tuning run, and never touches
# the source tree's schedule file); every gelukit_accuracy case fails before the sweep.
cmake_minimum_required(VERSION 3.28)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(failures "")

# refused(<message substring> <arguments...>): status 2, the substring in stderr + stdout, and no
# "terminate called". The tool runs under ${prefix} where that is set (a shell setting a ulimit).
set(prefix "")
function(refused want)
    execute_process(COMMAND ${prefix} "${TOOL}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                    TIMEOUT 60)
    set(all "${out}${err}")
    string(FIND "${all}" "${want}" pos)
    string(FIND "${all}" "terminate called" term)
    if (NOT rc STREQUAL "2" OR pos EQUAL -1 OR NOT term EQUAL -1)
        string(APPEND failures "\n  [${ARGN}]: status ${rc} (2 wanted), message '${want}' wanted, got: ${all}")
    else ()
        message(STATUS "refused as wanted: [${ARGN}]: ${err}")
    endif ()
    set(failures "${failures}" PARENT_SCOPE)
endfunction()

function(check cond msg)
    cmake_language(EVAL CODE "if (NOT (${cond}))\n set(bad TRUE)\nendif ()")
    if (bad)
        string(APPEND failures "\n  ${msg}")
        set(failures "${failures}" PARENT_SCOPE)
    endif ()
endfunction()

if (KIND STREQUAL "tune")
    set(tiny --kernel gelu_fwd_f32_erf_acc --trials 1 --budget-s 1 --repetitions 3 --gelu-n 1024
             --autoschedulers none --threads 1)
    set(scratch_out --out "${WORK}/never.json")

    # --out: a directory (its content stays), with and without a trailing slash.
    file(MAKE_DIRECTORY "${WORK}/dir")
    file(WRITE "${WORK}/dir/important.txt" "keep\n")
    refused("gelukit_tune: error: --out ${WORK}/dir is a directory" ${tiny} --out "${WORK}/dir")
    refused("is a directory" ${tiny} --out "${WORK}/dir/")
    file(GLOB left RELATIVE "${WORK}/dir" "${WORK}/dir/*" "${WORK}/dir/.*")
    check("left STREQUAL \"important.txt\"" "the --out directory's content changed: ${left}")
    # ... a path under a regular file, a missing directory named with a trailing slash, not a
    # regular file.
    file(WRITE "${WORK}/plain" "x\n")
    refused("gelukit_tune: error: --out ${WORK}/plain/x.json: ${WORK}/plain is not a directory"
            ${tiny} --out "${WORK}/plain/x.json")
    refused("names a directory" ${tiny} --out "${WORK}/missing/")
    if (EXISTS /dev/null)
        refused("gelukit_tune: error: --out /dev/null exists and is not a regular file" ${tiny} --out /dev/null)
    endif ()
    # ... where no file can be created (a file of /proc, whose move aside as "corrupt" threw
    # std::filesystem_error from load_existing; a directory to create under /proc).
    if (EXISTS /proc/version)
        refused("gelukit_tune: error: --out /proc/version: cannot create files in /proc" ${tiny} --out /proc/version)
        refused("gelukit_tune: error: --out /proc/gelukit-none/x.json: cannot create files in /proc"
                ${tiny} --out /proc/gelukit-none/x.json)
    endif ()
    # ... the other architecture's file: refused before anything runs, left byte-identical.
    set(other "{\"format\": \"gelukit-schedules\", \"version\": 1, \"arch\": \"other-linux\", \"kernels\": {}}\n")
    file(WRITE "${WORK}/other.json" "${other}")
    refused("is the schedule file of \"other-linux\"" ${tiny} --out "${WORK}/other.json")
    file(READ "${WORK}/other.json" other_after)
    check("other_after STREQUAL other" "the other architecture's file was changed")

    # --space: the whole value must be an integer (std::stoi read "2abc" as 2, "1.9" as 1).
    refused("gelukit_tune: error: --space vector_multiple=2abc: '2abc' is not an integer"
            ${tiny} ${scratch_out} --space vector_multiple=2abc)
    refused("gelukit_tune: error: --space vector_multiple=1.9,8e5: '1.9' is not an integer"
            ${tiny} ${scratch_out} --space vector_multiple=1.9,8e5)
    refused("'8e5' is not an integer" ${tiny} ${scratch_out} --space vector_multiple=1,8e5)
    refused("'+-2' is not an integer" ${tiny} ${scratch_out} --space vector_multiple=+-2)
    refused("'99999999999' is out of range" ${tiny} ${scratch_out} --space vector_multiple=99999999999)
    # A CLI11 error exits 2 as well (it used CLI11's own status, 106).
    refused("--threads: Value 0 not in range 1 to 1024" ${tiny} ${scratch_out} --threads 0)

    # Nothing was written anywhere: no schedule file, temporary file, probe or moved-aside file.
    file(GLOB_RECURSE stray "${WORK}/*.tmp" "${WORK}/*.corrupt" "${WORK}/*probe*" "${WORK}/never.json"
         "${WORK}/missing")
    check("stray STREQUAL \"\"" "files were left behind: ${stray}")
    # (GLOB_RECURSE lists no directories: the directory --out would have created is checked apart.)
    check("NOT EXISTS \"${WORK}/missing\"" "the directory ${WORK}/missing was created")
elseif (KIND STREQUAL "accuracy")
    # --samples: 1 to 2^32; negative values refused explicitly (CLI11 read -1 as 2^64 - 1, and
    # samples + 131072 wrapped); all of these ended in std::bad_alloc.
    set(bounds "--samples: must be an integer from 1 to 4294967296")
    refused("${bounds}" --samples 1099511627776)
    refused("${bounds}" --samples 18446744073709551615)
    refused("010 has a leading 0" --samples 010)
    refused("${bounds}" --samples 18446744073709551616)
    refused("${bounds}" --samples 4294967297)
    refused("${bounds}" --samples 0)
    refused("--samples: must not be negative" --samples -1)
    refused("--samples: 2abc is not an integer" --samples 2abc)
    # --threads: 1 to 1024, with a readable message (CLI::PositiveNumber printed DBL_MAX's 300
    # digits); 2e9 threads ended in bad_alloc, 1e5 in std::system_error.
    refused("--threads: Value 0 not in range 1 to 1024" --threads 0)
    refused("--threads: Value -3 not in range 1 to 1024" --threads -3)
    refused("--threads: Value 100000 not in range 1 to 1024" --threads 100000)
    refused("--threads: Value 2000000000 not in range 1 to 1024" --dtype bf16 --threads 2000000000)
    # --profile-range: finite in the storage type, lo < hi (NaN, inf and reversed ranges wrote
    # nonsense rows and exited 0). The profile file is not created.
    set(p --profile "${WORK}/p.csv")
    set(finite "gelukit_accuracy: error: --profile-range")
    refused("${finite} nan 5: both ends must be finite f32 values" --samples 1024 ${p} --profile-range nan 5)
    refused("${finite} inf 5: both ends must be finite" --samples 1024 ${p} --profile-range inf 5)
    refused("${finite} -5 inf: both ends must be finite" --samples 1024 ${p} --profile-range -5 inf)
    refused("${finite} -1e+39 1e+39: both ends must be finite f32 values" --samples 1024 ${p} --profile-range -1e39 1e39)
    refused("${finite} -100000 100000: both ends must be finite f16 values" --dtype f16 ${p} --profile-range -1e5 1e5)
    refused("${finite} 5 -5: lo must be less than hi" --samples 1024 ${p} --profile-range 5 -5)
    refused("${finite} 3 3: lo must be less than hi" --samples 1024 ${p} --profile-range 3 3)
    check("NOT EXISTS \"${WORK}/p.csv\"" "a refused --profile-range still created the profile file")
    # Threads that cannot all be started (1024 + the kernel's pool of 256 stacks do not fit in
    # 1 GB of address space): a message and status 2; it was std::system_error or, once some
    # threads ran, std::terminate from their unjoined std::thread objects.
    if (EXISTS /bin/sh)
        set(prefix /bin/sh -c "ulimit -v 1000000 && exec \"$0\" \"$@\"")
        refused("gelukit_accuracy: error:" --samples 1024 --threads 1024)
        # The last resort: 2^32 samples (16 GiB of inputs) in 1 GB: std::bad_alloc, a message.
        refused("gelukit_accuracy: error: out of memory" --samples 4294967296 --threads 1)
        set(prefix "")
    endif ()
    # --range: finite in the storage type, lo <= hi, not with --exhaustive; --dy: finite in the
    # storage type, backward only (a forward run would silently ignore it).
    set(r "gelukit_accuracy: error: --range")
    refused("${r} nan 1: both ends must be finite f32 values" --range nan 1)
    refused("${r} -inf 1: both ends must be finite" --range -inf 1)
    refused("${r} -70000 1: both ends must be finite f16 values" --dtype f16 --range -7e4 1)
    refused("${r} 2 1: lo must not exceed hi" --range 2 1)
    refused("--range and --exhaustive exclude each other" --range 1 2 --exhaustive)
    refused("--range and --samples exclude each other" --range 1 2 --samples 5)
    refused("gelukit_accuracy: error: --range 1.0001 1.0002: no f16 value lies in it" --dtype f16 --range 1.0001 1.0002)
    refused("gelukit_accuracy: error: --range 1e-50 1e-50: no f32 value lies in it" --range 1e-50 1e-50 --max-ulp 0)
    refused("--range: At least 2 required but received 1" --range 1)
    refused("gelukit_accuracy: error: --dy 3: only for --direction backward" --dy 3)
    refused("gelukit_accuracy: error: --dy inf: must be a finite f32 value" --direction backward --dy inf)
    refused("gelukit_accuracy: error: --dy nan: must be a finite" --direction backward --dy nan)
    refused("gelukit_accuracy: error: --dy 1e+39: must be a finite bf16 value" --direction backward --dtype bf16 --dy 1e39)
    # --range's good side: exactly the storage values in [lo, hi] (bf16 has 129 in [1, 2]; f32 one
    # in [1, 1], both zeros in [-0, 0] and in [-1e-45, 1e-45] (the smallest subnormal, 1.4e-45, is
    # outside), four in [-2e-45, 2e-45]; [0, -0] is [-0, 0]).
    foreach (case IN ITEMS "bf16;1;2;129" "f32;1;1;1" "f32;-0.0;0;2" "f32;0;-0.0;2" "f32;-1e-45;1e-45;2"
                           "f32;-2e-45;2e-45;4")
        list(GET case 0 dt)
        list(GET case 1 lo)
        list(GET case 2 hi)
        list(GET case 3 n)
        execute_process(COMMAND "${TOOL}" --dtype ${dt} --range ${lo} ${hi} --threads 1
                        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
        string(FIND "${out}" "inputs=${n} " pos)
        check("rc STREQUAL \"0\" AND NOT pos EQUAL -1" "--dtype ${dt} --range ${lo} ${hi}: ${n} inputs wanted (${rc}): ${out} ${err}")
    endforeach ()
    # The bounds' good side still runs (a small sample; seconds).
    execute_process(COMMAND "${TOOL}" --samples 1024 --threads 1 --profile "${WORK}/ok.csv" --profile-range -12 6
                            --profile-points 11
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    check("rc STREQUAL \"0\" AND EXISTS \"${WORK}/ok.csv\"" "a valid run failed (${rc}): ${out} ${err}")
else ()
    message(FATAL_ERROR "cli_bad_args.cmake: KIND must be tune or accuracy, not '${KIND}'")
endif ()

if (failures)
    message(FATAL_ERROR "${KIND}: bad arguments not refused cleanly:${failures}")
endif ()
message(STATUS "${KIND}: every bad argument was refused with status 2 and a message")
