# Validation of Halide target strings that mention CUDA (handed case G42, FK-29).
#
# Halide accepts `x86-64-linux-cuda_capability_86` without the `cuda` feature and then builds
# CPU-only code: the capability alone selects no GPU backend. gelukit refuses such strings at
# configure time. Kept in its own file (no project commands) so that the ctest
# gelukit_cuda_target_refused can run it with `cmake -P`.
include_guard(GLOBAL)

# gelukit_check_halide_target(<target string> [<what> ...])
# FATAL_ERROR when <target string> names a cuda_capability_* feature without the cuda feature.
# <what> says where the string came from (for the message).
function(gelukit_check_halide_target target)
    string(REPLACE "-" ";" features "${target}")
    set(capability "")
    foreach (f IN LISTS features)
        if (f MATCHES "^cuda_capability_[0-9]+$")
            set(capability "${f}")
        endif ()
    endforeach ()
    list(FIND features cuda cuda_index)  # (not IN_LIST: also runs under `cmake -P`, no policies set)
    if (capability AND cuda_index EQUAL -1)
        message(FATAL_ERROR
            "gelukit: Halide target '${target}' (${ARGN}) has ${capability} but not the 'cuda' "
            "feature: Halide would silently build CPU-only code (G42). Write e.g. "
            "'x86-64-linux-cuda-${capability}'.")
    endif ()
endfunction()

# Script mode (ctest): cmake -DGELUKIT_CHECK_TARGET=<target> -P GelukitCudaTarget.cmake
if (CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED GELUKIT_CHECK_TARGET)
    gelukit_check_halide_target("${GELUKIT_CHECK_TARGET}" "command line")
    message(STATUS "gelukit: Halide target '${GELUKIT_CHECK_TARGET}' accepted")
endif ()
