# The registry of gelukit kernel instantiations.
#
# Every kernel library is one row built here; the build, the runtime's dispatch table
# (${PROJECT_BINARY_DIR}/include/gelukit/generated/gelu_kernels.inc), the tests and the benchmarks all expand
# from it, so a new variant gets tests and benchmarks without further edits.
#
# Naming grammar (function name = CMake target = benchmark label component):
#   gelu_<dir>_<dtype>_<form>_<math>_<schedule>
#     dir      fwd | bwd
#     dtype    f32 | bf16 | f16           (storage type of every tensor of the call)
#     form     erf | tanh | sigmoid       (erf = exact x*Phi(x/s))
#     math     acc | fast                 (float64 | float32 internals)
#     schedule naive | hand | adams2019 | tuned
include_guard(GLOBAL)

# CPU targets of the architecture being built (CMAKE_SYSTEM_PROCESSOR: the host's, or aarch64 in
# the cross build of cmake/toolchains/aarch64-linux-gnu.cmake), most specific first: each
# library is a multi-target one whose wrapper dispatches at run time to the first sub-target
# whose features the CPU has (runtime/src/halide_glue.cpp adds gelukit's cap and vendor rules).
# Never "host": a library built for the build machine's CPU crashes on older ones.
#
# x86-64: SSE4.1 is the floor (every x86-64 CPU since 2008). The vendor-tuned Sapphire Rapids
#   and Zen 4 sub-targets are taken only on their vendor's CPUs (LLVM's znver4 code uses AMD's
#   SSE4a `insertq`, which faulted on Intel in the FFN kernels).
# arm-64: NEON (Advanced SIMD) is the AArch64 floor. arm_fp16 (ARMv8.2-A FP16: Graviton 2+,
#   Ampere Altra, Apple M1+) makes the fp16 <-> fp32 conversions of the fp16 kernels native
#   fcvtl/fcvtn vector instructions; without it Halide emulates them in integer code (G49).
#   arm_dot_prod is not a sub-target: it only adds int8 dot products, and the test
#   arm_features_change_code (tests/CMakeLists.txt) checks that our float kernels' assembly
#   is identical with and without it.
if (CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(GELUKIT_ARCH x86-64)
    set(GELUKIT_CPU_TARGETS
        x86-64-linux-avx512_sapphirerapids
        x86-64-linux-avx512_zen4
        x86-64-linux-avx512_skylake
        x86-64-linux-avx2-fma-f16c
        x86-64-linux-sse41)
elseif (CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(GELUKIT_ARCH arm-64)
    set(GELUKIT_CPU_TARGETS
        arm-64-linux-arm_fp16
        arm-64-linux)
else ()
    message(FATAL_ERROR "gelukit: no CPU targets for processor '${CMAKE_SYSTEM_PROCESSOR}' "
                        "(supported: x86_64, aarch64)")
endif ()
# The plain triple, for the one Halide runtime of the binary (it carries no ISA-specific code).
set(GELUKIT_HALIDE_RUNTIME_TARGET ${GELUKIT_ARCH}-linux)

# Tuned schedules (cmake/GelukitSchedules.cmake; written by gelukit_tune): the kernels below get a
# `tuned` library, the hand schedule with the file's knobs (the defaults without a file). A
# small set, each one more library to build: the exact-GELU f32 kernels the BERT-class models
# use, a bf16 one, and the f32 exact-GELU FFN and linear_gelu.
include("${CMAKE_CURRENT_LIST_DIR}/GelukitSchedules.cmake")
set(GELUKIT_SCHEDULE_FILE "${PROJECT_SOURCE_DIR}/generators/schedules/${GELUKIT_ARCH}-linux.json"
    CACHE FILEPATH "Tuned schedule file read by the build (gelukit_tune writes it)")
gelukit_load_schedule_file("${GELUKIT_SCHEDULE_FILE}" "${GELUKIT_ARCH}-linux")
set(GELUKIT_TUNED_GELU fwd:f32:erf:acc bwd:f32:erf:acc fwd:bf16:erf:acc)
set(GELUKIT_TUNED_FFN ffn:f32:erf linear_gelu:f32:erf)
# Halide's stmt + assembly of every library (targets gelukit_inspect, gelukit_inspect_ffn; one
# more generator run per library). Part of the default build natively; in cross builds on demand
# (`cmake --build --preset aarch64 --target gelukit_inspect gelukit_inspect_ffn`), which keeps
# the test command's cross build ~2 minutes shorter on the 2-core CI machine.
if (CMAKE_CROSSCOMPILING)
    set(_gelukit_inspect_default OFF)
else ()
    set(_gelukit_inspect_default ON)
endif ()
option(GELUKIT_INSPECT "Emit Halide stmt + assembly of every kernel library in the default build"
       ${_gelukit_inspect_default})
if (GELUKIT_INSPECT)
    set(_gelukit_inspect_all ALL)
else ()
    set(_gelukit_inspect_all)
endif ()
# Features common to every CPU kernel: 64-bit indexing, so tensors >= 2^31 bytes work (G38).
set(GELUKIT_CPU_FEATURES large_buffers)

set(GELUKIT_GELU_DIRECTIONS fwd bwd)
set(GELUKIT_GELU_DTYPES f32 bf16 f16)
set(GELUKIT_GELU_FORMS erf tanh sigmoid)
# (math, schedule) pairs. The float32-internal math is built with the hand schedule, and for
# float32 storage only: the acc kernels are already correctly rounded for fp16/bf16, and Halide
# takes 15-40 s per target to lower the float32 form (its bounds passes; the float64 form
# takes 0.5 s), which the build time budget pays for only where the variant is useful.
set(GELUKIT_GELU_VARIANTS acc:naive acc:hand acc:adams2019)
set(GELUKIT_GELU_F32_ONLY_VARIANTS fast:hand)

function(_gelukit_halide_type dtype out_var)
    if (dtype STREQUAL "f32")
        set(${out_var} float32 PARENT_SCOPE)
    elseif (dtype STREQUAL "bf16")
        set(${out_var} bfloat16 PARENT_SCOPE)
    elseif (dtype STREQUAL "f16")
        set(${out_var} float16 PARENT_SCOPE)
    else ()
        message(FATAL_ERROR "gelukit: unknown dtype '${dtype}'")
    endif ()
endfunction()

# Splits a registry row "<field>:<field>:..." into the named variables, in order.
function(_gelukit_row_fields row)
    string(REPLACE ":" ";" parts "${row}")
    set(i 0)
    foreach (var IN LISTS ARGN)
        list(GET parts ${i} value)
        set(${var} "${value}" PARENT_SCOPE)
        math(EXPR i "${i} + 1")
    endforeach ()
endfunction()

# The registered generator and the buffer-type PARAMS of a GELU row.
function(_gelukit_gelu_generator dir dtype out_generator out_params)
    _gelukit_halide_type(${dtype} htype)
    if (dir STREQUAL "fwd")
        set(${out_generator} gelu_forward PARENT_SCOPE)
        set(${out_params} x.type=${htype} y.type=${htype} PARENT_SCOPE)
    else ()
        set(${out_generator} gelu_backward PARENT_SCOPE)
        set(${out_params} x.type=${htype} dy.type=${htype} dx.type=${htype} PARENT_SCOPE)
    endif ()
endfunction()

# The Halide target of the inspection outputs: the first (most specific) of the caller's
# ARG_TARGETS plus its ARG_FEATURES.
function(_gelukit_inspect_target out_var)
    list(GET ARG_TARGETS 0 target)
    list(JOIN ARG_FEATURES "-" features)
    if (features)
        set(target "${target}-${features}")
    endif ()
    set(${out_var} "${target}" PARENT_SCOPE)
endfunction()

# _gelukit_kernel_library(<name> REGISTERED <generator name> SCHEDULE <naive|hand|adams2019>
#                         PARAMS <k=v ...>)
# One registry row, called from the gelukit_add_*_kernels functions (it reads their ARG_* and
# inspect_* variables): add_halide_library, linked into ARG_INTERFACE_TARGET, plus the separate
# stmt + assembly run for inspect_target (appended to the caller's inspect_outputs). The
# element "@SCHED@" of PARAMS becomes the schedule's parameter: Adams2019 with its defaults plus
# the core count of the CI/dev machines (autoscheduler.parallelism=2), else sched=<schedule>.
function(_gelukit_kernel_library name)
    cmake_parse_arguments(PARSE_ARGV 1 ROW "" "REGISTERED;SCHEDULE" "PARAMS")
    set(sched_args)
    set(inspect_plugin)
    if (ROW_SCHEDULE STREQUAL "adams2019")
        set(sched_args AUTOSCHEDULER Halide::Adams2019)
        set(param_sched autoscheduler.parallelism=2)
        set(inspect_plugin -p $<TARGET_FILE:Halide::Adams2019> autoscheduler=Adams2019)
    else ()
        set(param_sched sched=${ROW_SCHEDULE})
    endif ()
    list(TRANSFORM ROW_PARAMS REPLACE "^@SCHED@$" "${param_sched}")
    add_halide_library(
        ${name} FROM ${ARG_GENERATOR}
        GENERATOR ${ROW_REGISTERED}
        USE_RUNTIME ${ARG_RUNTIME}
        PARAMS ${ROW_PARAMS}
        TARGETS ${ARG_TARGETS}
        FEATURES ${ARG_FEATURES}
        ${sched_args})
    add_custom_command(
        OUTPUT "${inspect_dir}/${name}.stmt" "${inspect_dir}/${name}.s"
        COMMAND $<TARGET_FILE:${ARG_GENERATOR}> -g ${ROW_REGISTERED} -f ${name} -e stmt,assembly
                -o "${inspect_dir}" ${inspect_plugin} target=${inspect_target}-no_runtime ${ROW_PARAMS}
        DEPENDS ${ARG_GENERATOR}
        COMMENT "Halide stmt + assembly of ${name} for ${inspect_target}"
        VERBATIM)
    target_link_libraries(${ARG_INTERFACE_TARGET} INTERFACE ${name})
    set(inspect_outputs ${inspect_outputs} "${inspect_dir}/${name}.stmt" "${inspect_dir}/${name}.s" PARENT_SCOPE)
endfunction()

# gelukit_add_gelu_kernels(
#     GENERATOR <generator target>   RUNTIME <halide runtime target>
#     TARGETS <halide targets...>    [FEATURES <features...>]
#     INTERFACE_TARGET <name>        INC_FILE <path of the generated X-macro file>)
# Creates one add_halide_library per registry row, an INTERFACE library <INTERFACE_TARGET>
# linking them all, the X-macro file, and Halide's lowered statement (.stmt) and assembly (.s)
# of every library for its first (most specific) target under <binary dir>/inspect/ (target
# gelukit_inspect, part of ALL). They are produced by a separate generator run because
# add_halide_library's STMT/ASSEMBLY outputs of a multi-target library are written with
# per-target suffixes that do not match the declared names, which made every build regenerate
# every kernel. The X-macro lines are:
#   GELUKIT_GELU_KERNEL(name, dir, dtype, form, math, schedule, unit_stride_only)
function(gelukit_add_gelu_kernels)
    cmake_parse_arguments(PARSE_ARGV 0 ARG "" "GENERATOR;RUNTIME;INTERFACE_TARGET;INC_FILE"
                          "TARGETS;FEATURES")
    add_library(${ARG_INTERFACE_TARGET} INTERFACE)
    set(inspect_dir "${CMAKE_CURRENT_BINARY_DIR}/inspect")
    file(MAKE_DIRECTORY "${inspect_dir}")
    _gelukit_inspect_target(inspect_target)
    set(inspect_outputs)
    set(inc "// Generated by cmake/GelukitKernels.cmake -- do not edit.\n")
    set(headers "// Generated by cmake/GelukitKernels.cmake -- do not edit.\n#pragma once\n")
    foreach (dir IN LISTS GELUKIT_GELU_DIRECTIONS)
        foreach (dtype IN LISTS GELUKIT_GELU_DTYPES)
            _gelukit_gelu_generator(${dir} ${dtype} generator type_params)
            set(variants ${GELUKIT_GELU_VARIANTS})
            if (dtype STREQUAL "f32")
                list(APPEND variants ${GELUKIT_GELU_F32_ONLY_VARIANTS})
            endif ()
            foreach (form IN LISTS GELUKIT_GELU_FORMS)
                foreach (variant IN LISTS variants)
                    string(REPLACE ":" ";" parts "${variant}")
                    list(GET parts 0 math)
                    list(GET parts 1 schedule)
                    set(name gelu_${dir}_${dtype}_${form}_${math}_${schedule})
                    set(unit_stride_only false)
                    if (schedule STREQUAL "adams2019")
                        set(unit_stride_only true)
                    endif ()
                    _gelukit_kernel_library(${name} REGISTERED ${generator} SCHEDULE ${schedule}
                                            PARAMS form=${form} math=${math} @SCHED@ ${type_params})
                    string(APPEND inc "GELUKIT_GELU_KERNEL(${name}, ${dir}, ${dtype}, ${form}, ${math}, ${schedule}, ${unit_stride_only})\n")
                    string(APPEND headers "#include \"${name}.h\"\n")
                endforeach ()
            endforeach ()
        endforeach ()
    endforeach ()
    # Tuned rows: the hand schedule with the schedule file's knobs.
    foreach (row IN LISTS GELUKIT_TUNED_GELU)
        string(REPLACE ":" ";" parts "${row}")
        list(GET parts 0 dir)
        list(GET parts 1 dtype)
        list(GET parts 2 form)
        list(GET parts 3 math)
        _gelukit_gelu_generator(${dir} ${dtype} generator type_params)
        set(name gelu_${dir}_${dtype}_${form}_${math}_tuned)
        gelukit_schedule_params(gelu_${dir}_${dtype}_${form}_${math} knobs)
        _gelukit_kernel_library(${name} REGISTERED ${generator} SCHEDULE hand
                                PARAMS form=${form} math=${math} @SCHED@ ${knobs} ${type_params})
        string(APPEND inc "GELUKIT_GELU_KERNEL(${name}, ${dir}, ${dtype}, ${form}, ${math}, tuned, false)\n")
        string(APPEND headers "#include \"${name}.h\"\n")
    endforeach ()
    add_custom_target(gelukit_inspect ${_gelukit_inspect_all} DEPENDS ${inspect_outputs})
    file(CONFIGURE OUTPUT "${ARG_INC_FILE}" CONTENT "${inc}")
    get_filename_component(inc_dir "${ARG_INC_FILE}" DIRECTORY)
    file(CONFIGURE OUTPUT "${inc_dir}/kernel_headers.h" CONTENT "${headers}")
endfunction()

# ---------------------------------------------------------------------------------------------
# Feed-forward kernels (generators/ffn_generator.cpp).
#
# Naming grammar: <kind>_<dtype>_<form>_<schedule>
#   kind     linear_gelu | ffn | geglu | swiglu
#   dtype    f32 | bf16        (storage of h, weights, out; float32 accumulation)
#   form     erf | tanh | sigmoid, or silu for swiglu
#   schedule naive | hand | adams2019 | tuned
#   [_unpacked] the kernel reads the caller's nn.Linear weight matrices and packs panels per
#            task itself (pack_weights=0; FeedForwardOptions::borrow_weights); row suffix
#            ":unpacked". Tuned kernels get it from the schedule file's pack_weights.
# Rows: every kind x form x dtype with the hand schedule; the naive and autoscheduled
# schedules for the f32 exact-GELU ffn and linear_gelu (the comparison the benchmark reports),
# and their unpacked hand schedule.
set(GELUKIT_FFN_KINDS linear_gelu ffn geglu swiglu)
# The hand rows take the generator's knob defaults (generators/ffn_generator.cpp:
# effective_m_block(), effective_epilogue_at(), per kernel and target).
set(GELUKIT_FFN_DTYPES f32 bf16)
# The Adams2019 rows read their weights with the panel index clamped (generators/ffn_generator.cpp,
# clamped_read), so they run on any shape through the runtime's scratch output.
set(GELUKIT_FFN_EXTRA_ROWS
    ffn:f32:erf:naive ffn:f32:erf:adams2019 linear_gelu:f32:erf:naive linear_gelu:f32:erf:adams2019
    ffn:f32:erf:hand:unpacked linear_gelu:f32:erf:hand:unpacked)

# gelukit_add_ffn_kernels(GENERATOR <gen> RUNTIME <rt> TARGETS <...> [FEATURES <...>]
#                         INTERFACE_TARGET <name> INC_FILE <path>)
# Like gelukit_add_gelu_kernels; X-macro lines:
# GELUKIT_FFN_KERNEL(name, kind, dtype, form, schedule, packed) (packed: 1 = runtime-packed panels)
function(gelukit_add_ffn_kernels)
    cmake_parse_arguments(PARSE_ARGV 0 ARG "" "GENERATOR;RUNTIME;INTERFACE_TARGET;INC_FILE"
                          "TARGETS;FEATURES")
    add_library(${ARG_INTERFACE_TARGET} INTERFACE)
    set(inspect_dir "${CMAKE_CURRENT_BINARY_DIR}/inspect")
    file(MAKE_DIRECTORY "${inspect_dir}")
    _gelukit_inspect_target(inspect_target)
    set(rows)
    foreach (kind IN LISTS GELUKIT_FFN_KINDS)
        foreach (dtype IN LISTS GELUKIT_FFN_DTYPES)
            if (kind STREQUAL "swiglu")
                list(APPEND rows ${kind}:${dtype}:silu:hand)
            else ()
                foreach (form IN LISTS GELUKIT_GELU_FORMS)
                    list(APPEND rows ${kind}:${dtype}:${form}:hand)
                endforeach ()
            endif ()
        endforeach ()
    endforeach ()
    list(APPEND rows ${GELUKIT_FFN_EXTRA_ROWS})
    foreach (row IN LISTS GELUKIT_TUNED_FFN)
        list(APPEND rows ${row}:tuned)
    endforeach ()
    set(inspect_outputs)
    set(inc "// Generated by cmake/GelukitKernels.cmake -- do not edit.\n")
    set(headers "// Generated by cmake/GelukitKernels.cmake -- do not edit.\n#pragma once\n")
    foreach (row IN LISTS rows)
        string(REPLACE ":" ";" parts "${row}")
        list(GET parts 0 kind)
        list(GET parts 1 dtype)
        list(GET parts 2 form)
        list(GET parts 3 schedule)
        list(LENGTH parts nparts)
        set(packed 1)
        set(name ${kind}_${dtype}_${form}_${schedule})
        if (nparts GREATER 5)
            message(FATAL_ERROR "gelukit: FFN registry row '${row}' has more than five fields")
        elseif (nparts GREATER 4)
            list(GET parts 4 layout)
            if (NOT layout STREQUAL "unpacked" OR NOT schedule STREQUAL "hand")
                message(FATAL_ERROR "gelukit: FFN registry row '${row}': only hand:unpacked has a fifth field")
            endif ()
            set(packed 0)
            string(APPEND name _unpacked)
        endif ()
        _gelukit_halide_type(${dtype} htype)
        set(form_param ${form})
        if (form STREQUAL "silu")
            set(form_param erf)  # unused by swiglu
        endif ()
        set(params kind=${kind} form=${form_param} dtype=${htype} @SCHED@)
        set(row_schedule ${schedule})
        if (schedule STREQUAL "hand" AND NOT packed)
            # The kernel packs each weight panel once per task: tasks of 512 rows (one per
            # panel at BERT-base M = 512) and, with a second GEMM, the d_ff activation computed
            # for all rows first (epilogue_at=1). Measured (gelukit_tune, Halide JIT, Zen 3, 2
            # threads, 512 x 768 x 3072, interleaved): ffn 92.9 / 78.9 / 53.2 ms at m_block 128 /
            # 256 / 512 with the fused epilogue, 77.5 / 59.7 / 49.7 ms with epilogue_at=1;
            # linear_gelu 84.9 / 42.4 / 35.2 / 36.4 ms at 32 / 128 / 256 / 512 (256 and 512 equal
            # within the noise; 512 for one task per panel at M = 512, like ffn). The copy is paid
            # at least once per call: at M = 1 it dominates (README).
            list(APPEND params m_block=512 pack_weights=0)
            if (NOT kind STREQUAL "linear_gelu")
                list(APPEND params epilogue_at=1)
            endif ()
        elseif (schedule STREQUAL "tuned")
            # The hand schedule with the schedule file's knobs (the generator's defaults for
            # the knobs the file does not set, as for the hand rows).
            set(row_schedule hand)
            gelukit_schedule_params(${kind}_${dtype}_${form} knobs)
            list(APPEND params ${knobs})
            if ("pack_weights=0" IN_LIST knobs)
                set(packed 0)
            endif ()
        endif ()
        _gelukit_kernel_library(${name} REGISTERED ffn SCHEDULE ${row_schedule} PARAMS ${params})
        string(APPEND inc "GELUKIT_FFN_KERNEL(${name}, ${kind}, ${dtype}, ${form}, ${schedule}, ${packed})\n")
        string(APPEND headers "#include \"${name}.h\"\n")
    endforeach ()
    # Intel AMX (x86-64 builds): the bf16 exact-GELU FFN with both GEMMs on AMX tiles
    # (generators/ffn_generator.cpp, schedule_amx). One target only, Sapphire Rapids: there is
    # no dispatch wrapper, the runtime calls it only where AMX is usable (halide_glue.cpp,
    # amx_allowed) and else the hand kernel. math=fast: the GELU epilogue in float32 (the bf16
    # activation is 1 bf16 ULP off the correctly rounded value for 2.1e-6 of the float32
    # pre-activations, README "Intel AMX"; 9.24 -> 8.10 ms at BERT-base M = 512, one thread,
    # bench/RESULTS.md "Intel AMX (history)").
    # Without large_buffers: Halide 21's AMX matcher needs 32-bit tile indices, so the runtime
    # also keeps tensors of 2^31 bytes or more on the hand kernel.
    if (GELUKIT_ARCH STREQUAL "x86-64")
        set(saved_targets ${ARG_TARGETS})
        set(saved_features ${ARG_FEATURES})
        set(saved_inspect ${inspect_target})
        set(ARG_TARGETS x86-64-linux-avx512_sapphirerapids)
        set(ARG_FEATURES)
        set(inspect_target x86-64-linux-avx512_sapphirerapids)
        _gelukit_kernel_library(ffn_bf16_erf_amx REGISTERED ffn SCHEDULE hand
                                PARAMS kind=ffn form=erf dtype=bfloat16 @SCHED@ amx=1 math=fast)
        string(APPEND inc "GELUKIT_FFN_KERNEL(ffn_bf16_erf_amx, ffn, bf16, erf, hand, 1)\n")
        string(APPEND headers "#include \"ffn_bf16_erf_amx.h\"\n")
        # Its small-M companion, parallel over weight panels (schedule_amx_panels): the runtime
        # takes it where the 16-row tasks would be fewer than the threads (use_amx_panels).
        _gelukit_kernel_library(ffn_bf16_erf_amx_panels REGISTERED ffn SCHEDULE hand
                                PARAMS kind=ffn form=erf dtype=bfloat16 @SCHED@ amx=1 amx_panels=1 math=fast)
        string(APPEND inc "GELUKIT_FFN_KERNEL(ffn_bf16_erf_amx_panels, ffn, bf16, erf, hand, 1)\n")
        string(APPEND headers "#include \"ffn_bf16_erf_amx_panels.h\"\n")
        set(ARG_TARGETS ${saved_targets})
        set(ARG_FEATURES ${saved_features})
        set(inspect_target ${saved_inspect})
    endif ()
    add_custom_target(gelukit_inspect_ffn ${_gelukit_inspect_all} DEPENDS ${inspect_outputs})
    file(CONFIGURE OUTPUT "${ARG_INC_FILE}" CONTENT "${inc}")
    get_filename_component(inc_dir "${ARG_INC_FILE}" DIRECTORY)
    file(CONFIGURE OUTPUT "${inc_dir}/ffn_kernel_headers.h" CONTENT "${headers}")
endfunction()
