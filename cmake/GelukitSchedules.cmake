# Tuned schedules: the knob values gelukit_tune (bench/tune) measured best on a machine, read
# from a versioned JSON file per architecture and built as the `tuned` schedule of the kernels
# listed in GELUKIT_TUNED_GELU / GELUKIT_TUNED_FFN (cmake/GelukitKernels.cmake).
#
# File (GELUKIT_SCHEDULE_FILE, default generators/schedules/<arch>-linux.json), version 1:
#   { "format": "gelukit-schedules", "version": 1, "arch": "x86-64-linux",
#     "tuned_on": {...},                                  (informational: host target, CPU, date)
#     "kernels": { "<kernel>": { "generator": "gelu_forward" | "gelu_backward" | "ffn",
#                                "params": { "<knob>": <integer>, ... }, ... }, ... } }
# <kernel> is the library name without its schedule suffix (gelu_fwd_f32_erf_acc, ffn_f32_erf).
# Knobs and their ranges (the GeneratorParams of generators/*.cpp), CPU files:
#   gelu_forward, gelu_backward: vector_multiple 1-8, parallel_grain 256-16777216
#   ffn:                         m_block 0-4096 (0 = default), avx512_tile_rows 0-9, avx2_tile_rows 0-12,
#                                avx2_tile_vectors 0-6 (0, 1, 2, 3, 6), k_block 0-4096 (multiple
#                                of 8), epilogue_at -1-1 (-1 = default; 1 not for linear_gelu_*),
#                                pack_weights 0-1, acc_block -1-4096 (-1 = default, 0 = one chain)
# The CUDA file (GELUKIT_CUDA_SCHEDULE_FILE, default generators/schedules/cuda.json, "arch":
# "cuda"; cmake/GelukitCudaKernels.cmake) holds the GPU knobs, which the CPU files refuse (a
# GPU is tuned on its own machine, and a knob the CPU libraries never read must not look
# applied):
#   gelu_forward, gelu_backward: gpu_block 32-1024 (multiple of 32), gpu_elems 1-16
#   ffn:                         gpu_rows 8-128 (multiple of 8)
# Kernel names: the library name without its schedule suffix and, for CUDA, without "cuda_"
# (gelu_fwd_f32_erf_fast, ffn_f32_erf).
# A missing file is normal (nothing tuned yet): a message, and every tuned kernel is built with
# the hand schedule's default knobs. A corrupt file (not JSON, wrong format/version/arch, an
# unknown knob, a value that is not an integer in range) is reported with the reason and
# ignored as a whole: defaults again, never a half-applied file.
include_guard(GLOBAL)

# name:min:max:step (gpu_block: whole warps of 32 threads).
set(_gelukit_knobs_gelu vector_multiple:1:8:1 parallel_grain:256:16777216:1)
set(_gelukit_knobs_ffn m_block:0:4096:1 avx512_tile_rows:0:9:1 avx2_tile_rows:0:12:1 avx2_tile_vectors:0:6:1 k_block:0:4096:8 epilogue_at:-1:1:1
    pack_weights:0:1:1 acc_block:-1:4096:1)
set(_gelukit_knobs_cuda_gelu gpu_block:32:1024:32 gpu_elems:1:16:1)
set(_gelukit_knobs_cuda_ffn gpu_rows:8:128:8)

# The property namespace of a file: "cuda" for the CUDA file, "cpu" for an architecture's.
macro(_gelukit_schedule_set arch out_var)
    if ("${arch}" STREQUAL "cuda")
        set(${out_var} cuda)
    else ()
        set(${out_var} cpu)
    endif ()
endmacro()

# Fails the load: the reason is printed, the parsed kernels are dropped.
macro(_gelukit_schedule_reject reason)
    if (_gelukit_set STREQUAL "cuda")
        set(_gelukit_retune "gelukit_tune --target cuda")
    else ()
        set(_gelukit_retune "gelukit_tune")
    endif ()
    message(WARNING "gelukit: schedule file ${path} is corrupt: ${reason}. Every tuned kernel "
                    "is built with the hand schedule's default knobs; re-run ${_gelukit_retune} or "
                    "delete the file.")
    set_property(GLOBAL PROPERTY GELUKIT_SCHEDULE_KERNELS_${_gelukit_set} "")
    return()
endmacro()

# _gelukit_object_length(<out_var> <reason> <json path...>): the member count of the JSON object
# at <json path> in ${text}, or the load fails with <reason> (a variable's name). TYPE comes
# first: MEMBER on an array or a scalar is a fatal CMake error, not a reported one.
macro(_gelukit_object_length out_var reason_var)
    string(JSON _gelukit_type ERROR_VARIABLE _gelukit_err TYPE "${text}" ${ARGN})
    if (NOT _gelukit_err)
        string(JSON ${out_var} ERROR_VARIABLE _gelukit_err LENGTH "${text}" ${ARGN})
    endif ()
    if (_gelukit_err OR NOT _gelukit_type STREQUAL "OBJECT")
        _gelukit_schedule_reject("${${reason_var}}")
    endif ()
endmacro()

# gelukit_load_schedule_file(<path> <arch>): parses the file once; gelukit_schedule_params()
# then answers per kernel. <arch> "cuda" loads the CUDA file (GPU knobs), any other a CPU one.
function(gelukit_load_schedule_file path arch)
    _gelukit_schedule_set("${arch}" _gelukit_set)
    set_property(GLOBAL PROPERTY GELUKIT_SCHEDULE_KERNELS_${_gelukit_set} "")
    # Re-configure when the tuner writes the file: it renames a temporary file into place, which
    # also changes its directory, the dependency that works before the first file exists.
    get_filename_component(dir "${path}" DIRECTORY)
    if (NOT CMAKE_SCRIPT_MODE_FILE AND IS_DIRECTORY "${dir}")
        set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${dir}")
    endif ()
    if (NOT EXISTS "${path}")
        message(STATUS "gelukit: no schedule file at ${path} (gelukit_tune writes one): tuned "
                       "kernels use the hand schedule's default knobs")
        return()
    endif ()
    # Re-configure when the file changes, so the next build picks the winners up.
    if (NOT CMAKE_SCRIPT_MODE_FILE)
        set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
    endif ()
    file(READ "${path}" text)
    string(JSON format ERROR_VARIABLE err GET "${text}" format)
    if (err)
        _gelukit_schedule_reject("not a gelukit schedule file (${err})")
    endif ()
    string(JSON version ERROR_VARIABLE err GET "${text}" version)
    string(JSON file_arch ERROR_VARIABLE err2 GET "${text}" arch)
    if (NOT format STREQUAL "gelukit-schedules" OR err OR err2)
        _gelukit_schedule_reject("\"format\" must be \"gelukit-schedules\" with \"version\" and \"arch\"")
    endif ()
    if (NOT version STREQUAL "1")
        _gelukit_schedule_reject("version ${version}, this build reads version 1")
    endif ()
    if (NOT file_arch STREQUAL arch)
        _gelukit_schedule_reject("tuned for ${file_arch}, this build is ${arch}")
    endif ()
    set(reason "no \"kernels\" object")
    _gelukit_object_length(n reason kernels)
    set(names)
    if (n GREATER 0)
        math(EXPR last "${n} - 1")
        foreach (i RANGE ${last})
            string(JSON kernel ERROR_VARIABLE err MEMBER "${text}" kernels ${i})
            # Names are checked before they appear in any message (a name holding "${" must not
            # be expanded by the reject macro).
            if (err OR NOT kernel MATCHES "^[a-z0-9_]+$")
                _gelukit_schedule_reject("a kernel name is not a gelukit kernel name (lower-case letters, digits, _)")
            endif ()
            string(JSON generator ERROR_VARIABLE err GET "${text}" kernels "${kernel}" generator)
            if (err)
                _gelukit_schedule_reject("kernel ${kernel} has no \"generator\"")
            endif ()
            # The generator is implied by the kernel's name (gelu_fwd_*, gelu_bwd_*, the FFN
            # kinds): a mismatch would hand one generator the other's knobs at build time.
            if (kernel MATCHES "^gelu_fwd_")
                set(expected gelu_forward)
            elseif (kernel MATCHES "^gelu_bwd_")
                set(expected gelu_backward)
            elseif (kernel MATCHES "^(ffn|linear_gelu|geglu|swiglu)_")
                set(expected ffn)
            else ()
                _gelukit_schedule_reject("kernel ${kernel}: not a GELU or FFN kernel name")
            endif ()
            if (NOT generator STREQUAL expected)
                _gelukit_schedule_reject("kernel ${kernel}: generator '${generator}', its name says '${expected}'")
            endif ()
            if (generator MATCHES "^gelu_")
                set(knobs ${_gelukit_knobs_gelu})
                set(other ${_gelukit_knobs_cuda_gelu})
            else ()
                set(knobs ${_gelukit_knobs_ffn})
                set(other ${_gelukit_knobs_cuda_ffn})
            endif ()
            if (_gelukit_set STREQUAL "cuda")
                # The CUDA rows (cmake/GelukitCudaKernels.cmake; gelukit_tune's cuda_kernel_name()).
                if (NOT kernel MATCHES "^(gelu_(fwd|bwd)_(f32|bf16|f16)_(erf|tanh|sigmoid)_fast|(ffn|linear_gelu|geglu)_f32_(erf|tanh|sigmoid)|swiglu_f32_silu)$")
                    _gelukit_schedule_reject("kernel ${kernel}: not a CUDA kernel name (gelu_<fwd|bwd>_<f32|bf16|f16>_<erf|tanh|sigmoid>_fast, <ffn|linear_gelu|geglu>_f32_<erf|tanh|sigmoid> or swiglu_f32_silu)")
                endif ()
                set(swap "${knobs}")
                set(knobs "${other}")
                set(other "${swap}")
            endif ()
            # The other file's knobs, for the message.
            set(other_names)
            foreach (spec IN LISTS other)
                string(REPLACE ":" ";" fields "${spec}")
                list(GET fields 0 name)
                list(APPEND other_names "${name}")
            endforeach ()
            set(reason "kernel ${kernel} has no \"params\" object")
            _gelukit_object_length(np reason kernels "${kernel}" params)
            set(params)
            if (np GREATER 0)
                math(EXPR plast "${np} - 1")
                foreach (j RANGE ${plast})
                    string(JSON knob ERROR_VARIABLE err MEMBER "${text}" kernels "${kernel}" params ${j})
                    if (err)
                        _gelukit_schedule_reject("kernel ${kernel}: unreadable params (${err})")
                    endif ()
                    if (NOT knob MATCHES "^[a-z0-9_]+$")
                        _gelukit_schedule_reject("kernel ${kernel}: a knob name is not a gelukit knob name")
                    endif ()
                    string(JSON value ERROR_VARIABLE err GET "${text}" kernels "${kernel}" params "${knob}")
                    # Knob names are compared as strings (never pasted into a regex).
                    set(range)
                    foreach (spec IN LISTS knobs)
                        string(REPLACE ":" ";" fields "${spec}")
                        list(GET fields 0 name)
                        if (name STREQUAL knob)
                            list(SUBLIST fields 1 3 range)
                        endif ()
                    endforeach ()
                    if (NOT range AND knob IN_LIST other_names)
                        if (_gelukit_set STREQUAL "cuda")
                            _gelukit_schedule_reject("kernel ${kernel}: '${knob}' is a CPU knob; it belongs in the CPU schedule file")
                        else ()
                            _gelukit_schedule_reject("kernel ${kernel}: '${knob}' is a GPU knob; it belongs in the CUDA schedule file (GELUKIT_CUDA_SCHEDULE_FILE, by default generators/schedules/cuda.json)")
                        endif ()
                    elseif (NOT range)
                        _gelukit_schedule_reject("kernel ${kernel}: unknown knob '${knob}' for ${generator}")
                    endif ()
                    list(GET range 0 lo)
                    list(GET range 1 hi)
                    list(GET range 2 step)
                    if (err OR NOT value MATCHES "^-?[0-9]+$" OR value LESS lo OR value GREATER hi)
                        _gelukit_schedule_reject("kernel ${kernel}: ${knob} = ${value} is not an integer in [${lo}, ${hi}]")
                    endif ()
                    math(EXPR rem "${value} % ${step}")
                    if (NOT rem EQUAL 0)
                        _gelukit_schedule_reject("kernel ${kernel}: ${knob} = ${value} is not a multiple of ${step}")
                    endif ()
                    if (knob STREQUAL "avx2_tile_vectors" AND (value EQUAL 4 OR value EQUAL 5))
                        _gelukit_schedule_reject("kernel ${kernel}: avx2_tile_vectors = ${value} does not divide the 6-vector panel")
                    endif ()
                    # linear_gelu has no second GEMM: its epilogue is always in the output tile
                    # (the generator refuses epilogue_at 1).
                    if (knob STREQUAL "epilogue_at" AND kernel MATCHES "^linear_gelu_" AND value GREATER 0)
                        _gelukit_schedule_reject("kernel ${kernel}: epilogue_at applies only to kernels with a second GEMM")
                    endif ()
                    list(APPEND params "${knob}=${value}")
                endforeach ()
            endif ()
            set(GELUKIT_SCHEDULE_PARAMS_${kernel} "${params}")
            list(APPEND names ${kernel})
        endforeach ()
    endif ()
    foreach (kernel IN LISTS names)
        set_property(GLOBAL PROPERTY GELUKIT_SCHEDULE_PARAMS_${_gelukit_set}_${kernel} "${GELUKIT_SCHEDULE_PARAMS_${kernel}}")
    endforeach ()
    set_property(GLOBAL PROPERTY GELUKIT_SCHEDULE_KERNELS_${_gelukit_set} "${names}")
    list(LENGTH names count)
    message(STATUS "gelukit: ${count} tuned kernel(s) from ${path}")
endfunction()

# gelukit_schedule_params(<kernel> <out_var> [cuda]): the tuned knobs of <kernel> as k=v PARAMS,
# or nothing (the defaults) when the loaded file has no entry for it; from the CPU file, or with
# "cuda" from the CUDA file.
function(gelukit_schedule_params kernel out_var)
    set(set_name cpu)
    if (ARGC GREATER 2)
        _gelukit_schedule_set("${ARGV2}" set_name)
    endif ()
    get_property(names GLOBAL PROPERTY GELUKIT_SCHEDULE_KERNELS_${set_name})
    set(params)
    if (kernel IN_LIST names)
        get_property(params GLOBAL PROPERTY GELUKIT_SCHEDULE_PARAMS_${set_name}_${kernel})
    endif ()
    set(${out_var} "${params}" PARENT_SCOPE)
endfunction()

# Script mode (tests/CMakeLists.txt, gelukit_schedules.*): cmake -DSCHEDULE_FILE=<f>
# -DARCH=<arch> -DKERNEL=<k> -P GelukitSchedules.cmake prints "params: <k=v;...>".
if (CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
    gelukit_load_schedule_file("${SCHEDULE_FILE}" "${ARCH}")
    gelukit_schedule_params("${KERNEL}" params "${ARCH}")
    message(STATUS "params: ${params}")
endif ()
