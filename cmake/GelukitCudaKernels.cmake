# The CUDA half of the kernel registry (issue 4, part 2).
#
# Separate from GelukitKernels.cmake (the CPU registry) so that builds without CUDA (the aarch64
# cross build, GELUKIT_CUDA=OFF) never read it. Same pattern: one add_halide_library per row, an
# INTERFACE library linking them all, and an X-macro file the runtime and tests expand.
#
# Naming grammar (function name = CMake target = benchmark label component):
#   cuda_gelu_<dir>_<dtype>_<form>_<schedule>
#     dir      fwd | bwd
#     dtype    f32 | bf16 | f16     (storage type of every tensor of the call)
#     form     erf | tanh | sigmoid
#     schedule hand                 (gelu_generator.cpp schedule_gpu: gpu_tile 256)
#              anderson2021         (Halide's GPU autoscheduler, Anderson et al. 2021)
#              tuned                (the hand schedule with the CUDA schedule file's knobs)
#   math is always fast (float32 internals): no float64 in device code (G46, FK-21).
#   cuda_<kind>_<dtype>_<form>_<schedule>  feed-forward blocks (ffn_generator.cpp schedule_gpu)
#     kind     linear_gelu | ffn | geglu | swiglu (form silu)
#     dtype    f32
#     schedule hand | tuned
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/GelukitCudaTarget.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/GelukitSchedules.cmake)

# Tuned CUDA kernels: `gelukit_tune --target cuda` (run on a machine with the GPU) measures the
# GPU knobs of these rows and writes them to GELUKIT_CUDA_SCHEDULE_FILE ("arch": "cuda"; the
# knobs and their ranges: cmake/GelukitSchedules.cmake). Each row is also built as a `tuned`
# library: the hand schedule with the file's knobs, or with the defaults when the file has no
# entry (a missing or corrupt file: a message, and the defaults).
#   GELU rows dir:dtype:form (math fast), FFN rows kind:f32:form.
set(GELUKIT_CUDA_TUNED_GELU fwd:f32:erf bwd:f32:erf fwd:bf16:erf)
set(GELUKIT_CUDA_TUNED_FFN ffn:f32:erf)
set(GELUKIT_CUDA_SCHEDULE_FILE "${PROJECT_SOURCE_DIR}/generators/schedules/cuda.json" CACHE FILEPATH
    "Schedule file of the tuned CUDA kernels (written by gelukit_tune --target cuda)")

# GELUKIT_CUDA: default ON for native x86-64 Linux builds; forced OFF when cross-compiling
# (the aarch64 build) or on another processor/OS, where these libraries are not built at all.
# Nothing of the CUDA toolkit is needed to build or link: Halide embeds the PTX in each library
# and its runtime dlopen()s the driver (libcuda.so) at run time.
if (CMAKE_CROSSCOMPILING OR NOT CMAKE_SYSTEM_NAME STREQUAL "Linux"
    OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    if (GELUKIT_CUDA)
        message(STATUS "gelukit: GELUKIT_CUDA forced OFF (${CMAKE_SYSTEM_NAME}/${CMAKE_SYSTEM_PROCESSOR}, cross-compiling: ${CMAKE_CROSSCOMPILING})")
    endif ()
    set(GELUKIT_CUDA OFF CACHE BOOL "Build the CUDA kernel libraries (x86-64 Linux host only)" FORCE)
else ()
    option(GELUKIT_CUDA "Build the CUDA kernel libraries (x86-64 Linux host only)" ON)
endif ()

# The Halide target of every CUDA library. Capability 8.0 (A100, the oldest data-centre GPU the
# project supports): Halide then emits PTX ISA 7.0 for .target sm_80, which ptxas assembles for
# sm_80 and sm_90 (ctest gelukit_cuda_ptx.ptxas), and which the driver JIT-compiles for any newer
# GPU (sm_86/89 Ampere/Ada, sm_90 H100/H200) on first load; PTX 7.0 needs a CUDA 11.0+ driver.
# A higher capability would exclude A100 and buys nothing for these kernels: they use no
# sm_86+ instruction (and Halide 21 knows capabilities only up to 86).
# The kernels get the user_context feature on top (GELUKIT_CUDA_KERNEL_TARGET): the generated
# functions take a leading void* that reaches Halide's CUDA context and stream hooks, so the
# runtime launches on the caller's context and stream (gelukit/cuda.h).
set(GELUKIT_CUDA_TARGET "x86-64-linux-cuda-cuda_capability_80" CACHE STRING
    "Halide target of the CUDA kernel libraries (must contain the cuda feature)")
# Refuse cuda_capability_* without cuda anywhere in the project's targets (G42), and a CUDA
# target that is not a CUDA target at all.
foreach (_gelukit_list IN ITEMS GELUKIT_X86_TARGETS GELUKIT_CPU_TARGETS)
    foreach (_gelukit_t IN LISTS ${_gelukit_list})
        gelukit_check_halide_target("${_gelukit_t}" "${_gelukit_list}")
    endforeach ()
endforeach ()
gelukit_check_halide_target("${GELUKIT_CUDA_TARGET}" "GELUKIT_CUDA_TARGET")
if (GELUKIT_CUDA AND NOT GELUKIT_CUDA_TARGET MATCHES "(^|-)cuda(-|$)")
    message(FATAL_ERROR "gelukit: GELUKIT_CUDA_TARGET '${GELUKIT_CUDA_TARGET}' lacks the 'cuda' feature: "
                        "the CUDA libraries would contain no device code (G42)")
endif ()
set(GELUKIT_CUDA_KERNEL_TARGET "${GELUKIT_CUDA_TARGET}-user_context")
if (GELUKIT_CUDA)
    gelukit_load_schedule_file("${GELUKIT_CUDA_SCHEDULE_FILE}" cuda)
endif ()

# Both schedules: hand (gelu_generator.cpp schedule_gpu) and Halide's Anderson2021 GPU
# autoscheduler with its bundled default cost-model weights. Build cost measured on this 2-core
# machine (one generator run per library): 15-21 s for each erf forward library (Halide's
# lowering of that float32 expression; the same cost as on the CPU targets), 28 s with
# Anderson2021, 0.4-0.5 s for every other row: ~2.5 CPU-minutes for all 36 libraries.
# Anderson2021 parallelism = 108, the SM count of an A100 (H100 SXM: 132).
set(GELUKIT_CUDA_GELU_SCHEDULES hand anderson2021 CACHE STRING "Schedules of the CUDA GELU libraries (hand;anderson2021)")

# gelukit_add_cuda_gelu_kernels(GENERATOR <gen> RUNTIME <rt> INTERFACE_TARGET <name>
#                               INC_FILE <path> MANIFEST <path>)
# One library per direction x dtype x form x schedule for GELUKIT_CUDA_KERNEL_TARGET, with its
# PTX (DEVICE_CODE) and lowered statement (STMT) next to it; single-target libraries, so these
# outputs have their declared names and come from the same generator run as the library.
# X-macro lines: GELUKIT_CUDA_GELU_KERNEL(name, dir, dtype, form, schedule)
# MANIFEST: one line per library "<name> <dtype> <static library> <.device_code>" for
# scripts/check_cuda_ptx.py.
function(gelukit_add_cuda_gelu_kernels)
    cmake_parse_arguments(PARSE_ARGV 0 ARG "" "GENERATOR;RUNTIME;INTERFACE_TARGET;INC_FILE;MANIFEST" "")
    add_library(${ARG_INTERFACE_TARGET} INTERFACE)
    set(inc "// Generated by cmake/GelukitCudaKernels.cmake -- do not edit.\n")
    set(headers "// Generated by cmake/GelukitCudaKernels.cmake -- do not edit.\n#pragma once\n")
    set(manifest "")
    set(rows)
    foreach (dir IN ITEMS fwd bwd)
        foreach (dtype IN ITEMS f32 bf16 f16)
            foreach (form IN ITEMS erf tanh sigmoid)
                foreach (schedule IN LISTS GELUKIT_CUDA_GELU_SCHEDULES)
                    list(APPEND rows ${dir}:${dtype}:${form}:${schedule})
                endforeach ()
            endforeach ()
        endforeach ()
    endforeach ()
    # Tuned rows: the hand schedule with the CUDA schedule file's knobs.
    foreach (row IN LISTS GELUKIT_CUDA_TUNED_GELU)
        list(APPEND rows ${row}:tuned)
    endforeach ()
    foreach (row IN LISTS rows)
        _gelukit_row_fields(${row} dir dtype form schedule)
        _gelukit_gelu_generator(${dir} ${dtype} generator type_params)
        set(name cuda_gelu_${dir}_${dtype}_${form}_${schedule})
        set(sched_args "")
        if (schedule STREQUAL "anderson2021")
            set(sched_args AUTOSCHEDULER Halide::Anderson2021)
            set(sched_params autoscheduler.parallelism=108)
        elseif (schedule STREQUAL "tuned")
            gelukit_schedule_params(gelu_${dir}_${dtype}_${form}_fast knobs cuda)
            set(sched_params sched=hand ${knobs})
        else ()
            set(sched_params sched=${schedule})
        endif ()
        add_halide_library(
            ${name} FROM ${ARG_GENERATOR}
            GENERATOR ${generator}
            USE_RUNTIME ${ARG_RUNTIME}
            PARAMS form=${form} math=fast ${sched_params} ${type_params}
            TARGETS ${GELUKIT_CUDA_KERNEL_TARGET}
            DEVICE_CODE device_code
            STMT stmt
            ${sched_args})
        target_link_libraries(${ARG_INTERFACE_TARGET} INTERFACE ${name})
        string(APPEND inc "GELUKIT_CUDA_GELU_KERNEL(${name}, ${dir}, ${dtype}, ${form}, ${schedule})\n")
        string(APPEND headers "#include \"${name}.h\"\n")
        string(APPEND manifest "${name} ${dtype} $<TARGET_FILE:${name}> ${device_code}\n")
    endforeach ()
    file(CONFIGURE OUTPUT "${ARG_INC_FILE}" CONTENT "${inc}")
    get_filename_component(inc_dir "${ARG_INC_FILE}" DIRECTORY)
    file(CONFIGURE OUTPUT "${inc_dir}/cuda_kernel_headers.h" CONTENT "${headers}")
    file(GENERATE OUTPUT "${ARG_MANIFEST}" CONTENT "${manifest}")  # generate time: $<TARGET_FILE:...>
    target_include_directories(${ARG_INTERFACE_TARGET} INTERFACE "${PROJECT_BINARY_DIR}/include")
endfunction()

# CUDA feed-forward rows: every kind x GELU form (SwiGLU: silu), float32, math=fast (float32
# epilogue), the GPU schedule of ffn_generator.cpp. bf16 is not built for CUDA yet. Generation:
# ~40 s for each erf row (the float32 erf epilogue), ~1 s for the others.
set(GELUKIT_CUDA_FFN_DTYPES f32)

# gelukit_add_cuda_ffn_kernels(GENERATOR <gen> RUNTIME <rt> INTERFACE_TARGET <name>
#                              INC_FILE <path> MANIFEST <path>)
# X-macro lines: GELUKIT_CUDA_FFN_KERNEL(name, kind, dtype, form, schedule)
function(gelukit_add_cuda_ffn_kernels)
    cmake_parse_arguments(PARSE_ARGV 0 ARG "" "GENERATOR;RUNTIME;INTERFACE_TARGET;INC_FILE;MANIFEST" "")
    add_library(${ARG_INTERFACE_TARGET} INTERFACE)
    set(inc "// Generated by cmake/GelukitCudaKernels.cmake -- do not edit.\n")
    set(headers "// Generated by cmake/GelukitCudaKernels.cmake -- do not edit.\n#pragma once\n")
    set(manifest "")
    set(rows)
    foreach (kind IN ITEMS linear_gelu ffn geglu swiglu)
        foreach (dtype IN LISTS GELUKIT_CUDA_FFN_DTYPES)
            set(forms erf tanh sigmoid)
            if (kind STREQUAL "swiglu")
                set(forms silu)
            endif ()
            foreach (form IN LISTS forms)
                list(APPEND rows ${kind}:${dtype}:${form}:hand)
            endforeach ()
        endforeach ()
    endforeach ()
    foreach (row IN LISTS GELUKIT_CUDA_TUNED_FFN)
        list(APPEND rows ${row}:tuned)
    endforeach ()
    foreach (row IN LISTS rows)
        _gelukit_row_fields(${row} kind dtype form schedule)
        _gelukit_halide_type(${dtype} htype)
        set(name cuda_${kind}_${dtype}_${form}_${schedule})
        set(form_param ${form})
        if (form STREQUAL "silu")
            set(form_param erf)  # unused by swiglu
        endif ()
        set(knobs)
        if (schedule STREQUAL "tuned")
            gelukit_schedule_params(${kind}_${dtype}_${form} knobs cuda)
        endif ()
        add_halide_library(
            ${name} FROM ${ARG_GENERATOR}
            GENERATOR ffn
            USE_RUNTIME ${ARG_RUNTIME}
            PARAMS kind=${kind} form=${form_param} dtype=${htype} math=fast ${knobs}
            TARGETS ${GELUKIT_CUDA_KERNEL_TARGET}
            DEVICE_CODE device_code
            STMT stmt)
        target_link_libraries(${ARG_INTERFACE_TARGET} INTERFACE ${name})
        string(APPEND inc "GELUKIT_CUDA_FFN_KERNEL(${name}, ${kind}, ${dtype}, ${form}, ${schedule})\n")
        string(APPEND headers "#include \"${name}.h\"\n")
        string(APPEND manifest "${name} ${dtype} $<TARGET_FILE:${name}> ${device_code}\n")
    endforeach ()
    file(CONFIGURE OUTPUT "${ARG_INC_FILE}" CONTENT "${inc}")
    get_filename_component(inc_dir "${ARG_INC_FILE}" DIRECTORY)
    file(CONFIGURE OUTPUT "${inc_dir}/cuda_ffn_kernel_headers.h" CONTENT "${headers}")
    file(GENERATE OUTPUT "${ARG_MANIFEST}" CONTENT "${manifest}")
    target_include_directories(${ARG_INTERFACE_TARGET} INTERFACE "${PROJECT_BINARY_DIR}/include")
endfunction()
